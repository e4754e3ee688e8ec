"""The scripted model endpoint in docker mode: a real ModelStub, real containers with no network.

The agent in the container reaches the endpoint at `http://127.0.0.1:4179` on its own loopback:
our listening relay joins each connection to the stub's Unix socket in the folder shared with the
runner. These tests check that an agent's HTTP (plain, streamed, keep-alive) gets through and is
recorded, that the relay is never one of the agent's processes or leftovers (but an agent's own
relay is), that it comes back after a kill of all but the holder, that extra_env and home files
reach the agent, and that nothing is left after close. Skipped when no Docker engine answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest

docker = pytest.importorskip("docker")

from acp_journeys.launch import agent_side  # noqa: E402
from acp_journeys.launch.docker import labels  # noqa: E402
from acp_journeys.launch.docker.launcher import DockerLauncher, DockerSandbox, resolve_user  # noqa: E402
from acp_journeys.launch.docker.sandbox import MODEL_BASE_URL  # noqa: E402
from acp_journeys.rules import prompts  # noqa: E402
from acp_journeys.services.model_stub import ModelStub  # noqa: E402
from conftest import agent_image_or_skip, build_user_image, docker_engine_or_skip  # noqa: E402

MARK = "REPLY-DOCK4179"


@pytest.fixture(scope="module")
def engine() -> Any:
    return docker_engine_or_skip()


@pytest.fixture(scope="module")
def image(engine: Any) -> str:
    return agent_image_or_skip(engine, base_will_do=False)


@pytest.fixture(scope="module")
def user_image(engine: Any, image: str) -> str:
    """The agent image with a non-root user whose home exists (built with no network)."""
    return build_user_image(engine, image)


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))


async def with_sandbox(image: str, body: Callable[[DockerSandbox, DockerLauncher], Awaitable[Any]],
                       **kw: Any) -> Any:
    launcher = DockerLauncher(image, run_id=f"test-model-{uuid.uuid4().hex[:8]}", **kw)
    try:
        sandbox = await launcher.open_sandbox("journey")
        assert isinstance(sandbox, DockerSandbox)
        return await body(sandbox, launcher)
    finally:
        await launcher.close()


async def open_endpoint(sb: DockerSandbox, stub: ModelStub) -> str:
    """As the runner does it: the endpoint, then the stub on its socket; the agent's base URL."""
    endpoint = await sb.model_endpoint()
    assert endpoint is not None
    socket_path, base = endpoint
    assert base == MODEL_BASE_URL == "http://127.0.0.1:4179"
    # In the folder shared with the container, and not made yet: the stub binds it.
    assert os.path.dirname(socket_path) == os.path.dirname(sb.mcp_socket_path)
    assert not os.path.exists(socket_path)
    stub.add_unix_listener(socket_path)
    return f"{base}/t/x/v1"


async def read_line(proc: Any, limit: float = 30) -> bytes:
    out = b""
    while not out.endswith(b"\n"):
        chunk = await asyncio.wait_for(proc.read_stdout(1 << 16), limit)
        if not chunk:
            break
        out += chunk
    return out


def py(code: str) -> list[str]:
    return ["python3", "-c", code]


def host_processes_with(args: tuple[str, ...]) -> list[int]:
    """Pids on this machine whose command line is `args` (a container's processes show here)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                raw = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if tuple(a.decode() for a in raw.split(b"\0")[:-1]) == args:
                found.append(int(entry.name))
    return found


# The agent: only the standard library (the image has no `openai`). It prints what it got, then
# waits for a line on stdin so that its processes can be listed while it runs.
AGENT = r"""
import http.client, json, os, sys, urllib.request
base = os.environ["MODEL_BASE"]
out = {"secret": os.environ.get("SECRET_ONE"), "launcher": os.environ.get("FROM_LAUNCHER"),
       "interfaces": sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:])}
with urllib.request.urlopen(base + "/models", timeout=10) as r:
    out["models"] = json.load(r)["data"][0]["id"]

def chat(stream):
    body = json.dumps({"model": "stub", "stream": stream, "messages": [{"role": "user", "content": PROMPT}]})
    req = urllib.request.Request(base + "/chat/completions", body.encode(),
                                 {"Content-Type": "application/json", "Authorization": "Bearer stub"})
    with urllib.request.urlopen(req, timeout=10) as r:
        if not stream:
            return json.load(r)["choices"][0]["message"]["content"]
        events, text = 0, ""
        for line in r:  # server-sent events, one at a time
            line = line.strip()
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                events += 1
                for choice in json.loads(line[6:]).get("choices") or []:
                    text += (choice.get("delta") or {}).get("content") or ""
        return [text, events]

out["plain"], out["stream"] = chat(False), chat(True)
conn = http.client.HTTPConnection("127.0.0.1", 4179, timeout=10)
for _ in range(2):  # keep-alive: one connection, two requests, through the relay
    conn.request("GET", "/t/x/v1/models")
    answer = conn.getresponse()
    answer.read()
out["keepalive"] = [answer.status, answer.getheader("Connection")]
print(json.dumps(out), flush=True)
sys.stdin.readline()
""".replace("PROMPT", repr(prompts.reply_exactly(MARK)))


def test_an_agent_with_no_network_reaches_the_stub_on_its_own_loopback(
        image: str, engine: Any, stub: ModelStub, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    canary = "CANARY-" + uuid.uuid4().hex

    async def body(sb: DockerSandbox, launcher: DockerLauncher) -> tuple[str, tuple[str, ...], str]:
        base = await open_endpoint(sb, stub)
        sb.extra_env = {"MODEL_BASE": base, "SECRET_ONE": canary}
        proc = await sb.start_agent(py(AGENT))
        got = json.loads(await read_line(proc))
        assert got["interfaces"] == ["lo"], got  # still no network: only the loopback
        assert got["secret"] == canary and got["launcher"] == "from-launcher"
        assert got["models"] == "acp-journeys-stub"
        assert got["plain"] == MARK
        assert got["stream"][0] == MARK and got["stream"][1] >= 2, got["stream"]
        assert got["keepalive"][0] == 200

        # The relay runs, as root, but is not among the agent's processes, by any listing.
        assert sb._model is not None
        relay = sb._model.argv
        assert [p.pid for p in await sb.agent_processes()] == [proc.pid]
        assert [p.pid for p in await sb._list_with_holder()] == [proc.pid]  # the runner-in-a-container way
        top = await launcher.call(launcher.api.top, sb.container_id)
        assert any(row[-1] == " ".join(relay) for row in top["Processes"]), top

        await proc.close_stdin()
        assert await proc.wait(10) == 0
        assert await sb.collect_leftovers() == []

        records = stub.records.snapshot(tag="x")
        assert [(r.method, r.dialect, r.stream, r.status) for r in records] == [
            ("GET", "models", False, 200),
            ("POST", "openai-chat", False, 200),
            ("POST", "openai-chat", True, 200),
            ("GET", "models", False, 200),
            ("GET", "models", False, 200),
        ]
        assert all(r.decision == {"text": MARK} for r in records if r.dialect == "openai-chat")
        assert host_processes_with(relay), "the relay should show on the engine's host while it runs"
        return launcher.run_id, relay, os.path.dirname(sb.mcp_socket_path)

    run_id, relay, folder = run(with_sandbox(image, body, env={"FROM_LAUNCHER": "from-launcher"}))
    # Nothing left: no container, no relay process, no shared folder (so no socket).
    assert engine.api.containers(all=True, filters={"label": f"{labels.LABEL_RUN}={run_id}"}) == []
    assert host_processes_with(relay) == []
    assert not os.path.exists(folder)
    assert canary not in caplog.text  # extra_env values are secrets


DAEMON_AND_OWN_RELAY = """
import os, subprocess, sys, time
subprocess.Popen([sys.argv[1], "--listen", "4180", "/nowhere.sock"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(300)
    os._exit(0)
os.wait()
"""

MODELS = """
import json, os, urllib.request
print(json.load(urllib.request.urlopen(os.environ["MODEL_BASE"] + "/models", timeout=10))["data"][0]["id"])
"""


def test_the_relay_is_never_a_leftover_and_comes_back_after_a_kill_of_all(image: str, stub: ModelStub) -> None:
    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        sb.extra_env = {"MODEL_BASE": await open_endpoint(sb, stub)}
        # An agent that leaves a daemon and a listening relay of its own: both are leftovers,
        # ours is not (it is known by pid and by its whole command line).
        proc = await sb.start_agent(py(DAEMON_AND_OWN_RELAY) + [agent_side.RELAY])
        assert await proc.wait(10) == 0  # Popen returned: its relay runs already
        leftovers = await sb.collect_leftovers()
        commands = sorted(p.command for p in leftovers)
        assert len(commands) == 2, commands
        assert commands[0] == f"{agent_side.RELAY} --listen 4180 /nowhere.sock", commands
        assert "python3" in commands[1], commands
        assert await sb.agent_processes() == []

        # That kill of all but the holder took our relay too: the next agent process gets it back.
        again = await sb.start_agent(py(MODELS))
        assert await read_line(again) == b"acp-journeys-stub\n"
        assert await again.wait(10) == 0
        assert await sb.collect_leftovers() == []
        assert sb._model is not None and sb._model.starts == 2
        assert [r.dialect for r in stub.records.snapshot(tag="x")] == ["models"]

    run(with_sandbox(image, body))


HOME_CHECK = """
import os, sys
path = sys.argv[1]
st = os.stat(path)
folder = os.path.dirname(path)
os.makedirs(os.path.join(folder, "sessions"))  # the agent can write beside its config
print(open(path).read().strip(), st.st_uid == os.getuid(), oct(st.st_mode & 0o777),
      os.stat(folder).st_uid == os.getuid(), os.path.expanduser("~"))
"""


@pytest.mark.parametrize("which", ["root", "user"])
def test_write_home_file_lands_in_the_home_of_the_images_user(image: str, user_image: str, which: str,
                                                              stub: ModelStub) -> None:
    chosen, home = (image, "/root") if which == "root" else (user_image, "/home/agent")

    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        # Our relay runs as root whatever the image's user: the agent's user reaches it all the same.
        sb.extra_env = {"MODEL_BASE": await open_endpoint(sb, stub)}
        models = await sb.start_agent(py(MODELS))
        assert await read_line(models) == b"acp-journeys-stub\n"
        assert await models.wait(10) == 0

        path = await sb.write_home_file(".config/some-agent/config.toml", b'base_url = "http://127.0.0.1:4179"\n')
        assert path == f"{home}/.config/some-agent/config.toml"
        assert await sb.write_home_file("~/.other.json", b"{}") == f"{home}/.other.json"
        for bad in ("../etc/passwd", "/etc/passwd", ""):
            with pytest.raises(ValueError):
                await sb.write_home_file(bad, b"x")
        proc = await sb.start_agent(py(HOME_CHECK) + [path])
        out = (await read_line(proc)).decode().split()
        assert await proc.wait(10) == 0
        assert out == ['base_url', '=', '"http://127.0.0.1:4179"', "True", "0o600", "True", home], out

    run(with_sandbox(chosen, body))


IN_CONTAINER = """
import asyncio, sys
sys.path.insert(0, '/src')
from acp_journeys.launch.docker.launcher import DockerLauncher
from acp_journeys.services.model_stub import ModelStub

AGENT = '''
import json, os, sys, urllib.request
print(json.load(urllib.request.urlopen(os.environ["MODEL_BASE"] + "/models", timeout=10))["data"][0]["id"], flush=True)
sys.stdin.readline()
'''

async def main():
    la = DockerLauncher(sys.argv[1], run_id=sys.argv[2])
    stub = ModelStub().start()
    sb = await la.open_sandbox('in-container')
    socket_path, base = await sb.model_endpoint()
    stub.add_unix_listener(socket_path)
    sb.extra_env = {'MODEL_BASE': base + '/t/v/v1'}
    agent = await sb.start_agent(['python3', '-c', AGENT])
    # A read returns what one chunk of the stream held: read on to the line's end.
    line = b''
    while not line.endswith(b'\\n'):
        chunk = await asyncio.wait_for(agent.read_stdout(100), 20)
        if not chunk:
            break
        line += chunk
    print(line.decode(), end='')
    print('listed', [p.pid for p in await sb.agent_processes()] == [agent.pid])
    await agent.close_stdin()
    print('exit', await agent.wait(10))
    print('leftovers', await sb.collect_leftovers())
    print('records', [r.dialect for r in stub.records.snapshot(tag='v')])
    await la.close()
    stub.stop()

asyncio.run(main())
"""


def test_a_runner_in_a_container_serves_the_stub_through_the_named_volume(image: str, engine: Any) -> None:
    """As run.sh runs it: the endpoint's socket on the volume shared with the journey's container,
    the agent's processes listed by the holder (this runner cannot read the engine's /proc)."""
    sock = (os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock").removeprefix("unix://")
    if not os.path.exists(sock):
        pytest.skip("the engine is not on a local Unix socket")
    helpers = agent_side.find_helpers()
    assert helpers is not None
    root = Path(__file__).resolve().parents[2]
    run_id = f"test-model-inside-{uuid.uuid4().hex[:8]}"
    volume = engine.api.create_volume(name=f"acpj-{run_id}", labels=labels.run_labels(run_id, "test", time.time()))["Name"]
    try:
        # The helpers built from this tree, not the image's: the image may predate them.
        out = subprocess.run(
            ["docker", "run", "--rm", "--network", "none", "--entrypoint", "python3",
             "-v", f"{sock}:/var/run/docker.sock", "-v", f"{volume}:/shared",
             "-v", f"{root / 'src'}:/src:ro", "-v", f"{helpers}:/helpers:ro",
             "-e", "ACP_JOURNEYS_HELPERS=/helpers",
             "-e", f"ACP_JOURNEYS_SHARED_VOLUME={volume}", "-e", "ACP_JOURNEYS_SHARED_DIR=/shared",
             image, "-c", IN_CONTAINER, image, run_id],
            capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-3000:]
        assert out.stdout == ("acp-journeys-stub\nlisted True\nexit 0\nleftovers []\nrecords ['models']\n"), \
            out.stdout + out.stderr[-2000:]
        assert engine.api.containers(all=True, filters={"label": f"{labels.LABEL_RUN}={run_id}"}) == []
    finally:
        engine.api.remove_volume(volume, force=True)


def test_resolve_user_as_the_runtime_does() -> None:
    passwd = b"root:x:0:0:root:/root:/bin/bash\nagent:x:1000:1001::/home/agent:/bin/sh\nbad:x:y:z\n"
    group = b"root:x:0:\nstaff:x:50:agent\n"
    assert resolve_user("", passwd, group) == (0, 0)
    assert resolve_user("agent", passwd, group) == (1000, 1001)
    assert resolve_user("1000", passwd, group) == (1000, 1001)
    assert resolve_user("2000", None, None) == (2000, 0)  # not in passwd: the root group
    assert resolve_user("agent:staff", passwd, group) == (1000, 50)
    assert resolve_user("2000:7", None, None) == (2000, 7)
    for spec in ("nobody", "agent:nogroup", "bad"):
        with pytest.raises(ValueError):
            resolve_user(spec, passwd, group)
