"""The docker launcher against a real engine: real containers, real limits, real clean-up.

Skipped (with the reason) only when no Docker engine answers; scripts/test.sh starts one and
builds the local images. The agent image is $ACP_JOURNEYS_TEST_IMAGE, else the runner image,
else the local base image (both have python3, which the test agents here are written in).
Nothing in these tests sends a packet off this machine: the network test only looks at the
interfaces a container has and sees a connect fail for want of a route.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest

docker = pytest.importorskip("docker")

from acp_journeys.launch import agent_side  # noqa: E402
from acp_journeys.launch.docker import labels  # noqa: E402
from acp_journeys.launch.docker.holder_kill import kills_done  # noqa: E402
from acp_journeys.launch.docker.launcher import DockerLauncher, DockerSandbox  # noqa: E402
from acp_journeys.launch.seam import LaunchError  # noqa: E402
from acp_journeys.launch.docker import engine as engine_calls  # noqa: E402
from acp_journeys.launch.seam import SESSION_FILES_DIR  # noqa: E402
from conftest import (  # noqa: E402
    agent_image_or_skip,
    build_user_image,
    docker_engine_or_skip,
    fixture_agent_dir,
    make_empty_image,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def engine() -> Any:
    return docker_engine_or_skip()


@pytest.fixture(scope="module")
def image(engine: Any) -> str:
    return agent_image_or_skip(engine)


@pytest.fixture(scope="module")
def empty_image(engine: Any) -> str:
    return make_empty_image(engine)


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))


def labelled(engine: Any, run_id: str) -> tuple[list[Any], list[Any]]:
    flt = {"label": f"{labels.LABEL_RUN}={run_id}"}
    return engine.api.containers(all=True, filters=flt), engine.api.volumes(filters=flt).get("Volumes") or []


async def with_sandbox(image: str, body: Callable[[DockerSandbox, DockerLauncher], Awaitable[Any]],
                       **kw: Any) -> Any:
    launcher = DockerLauncher(image, run_id=f"test-{uuid.uuid4().hex[:8]}", **kw)
    try:
        sandbox = await launcher.open_sandbox("journey")
        assert isinstance(sandbox, DockerSandbox)
        return await body(sandbox, launcher)
    finally:
        await launcher.close()


async def read_all(read: Callable[[int], Awaitable[bytes]], limit: float = 20) -> bytes:
    out = b""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        chunk = await asyncio.wait_for(read(1 << 16), deadline - time.monotonic())
        if not chunk:
            return out
        out += chunk
    raise AssertionError("no end of file")


def py(code: str) -> list[str]:
    return ["python3", "-c", code]


async def read_bytes(read: Callable[[int], Awaitable[bytes]], n: int, limit: float = 10) -> bytes:
    """Up to `n` bytes, or fewer at end of file. One read is not enough: the image's Python is
    unbuffered, so print() writes its text and its newline apart, and they may come as two frames."""
    out = b""
    deadline = time.monotonic() + limit
    while len(out) < n:
        chunk = await asyncio.wait_for(read(n - len(out)), max(0.0, deadline - time.monotonic()))
        if not chunk:
            break
        out += chunk
    return out


# --- streams ---------------------------------------------------------------------------------------

def test_stdin_eof_reaches_an_agent_that_only_ends_on_eof(image: str) -> None:
    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        agent = py("import sys\nfor line in sys.stdin: print('echo', line.strip(), flush=True)\nprint('eof')")
        proc = await sb.start_agent(agent)
        await proc.write(b"one\ntwo\n")
        await asyncio.sleep(1.0)
        assert await proc.wait(0.1) is None, "the agent must still wait for input"
        await proc.close_stdin()
        assert await proc.wait(10) == 0
        assert await read_all(proc.read_stdout) == b"echo one\necho two\neof\n"
        with pytest.raises(BrokenPipeError):
            await proc.write(b"late\n")

    run(with_sandbox(image, body))


def test_stdout_and_stderr_come_apart_and_whole(image: str) -> None:
    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        code = ("import sys\nfor i in range(2000):\n sys.stdout.write('o%05d' % i + 'x' * 500 + '\\n')\n"
                " sys.stderr.write('e%05d\\n' % i)\n")
        proc = await sb.start_agent(py(code))
        await proc.close_stdin()
        out, err = await asyncio.gather(read_all(proc.read_stdout), read_all(proc.read_stderr))
        assert await proc.wait(10) == 0
        assert out == b"".join(b"o%05d" % i + b"x" * 500 + b"\n" for i in range(2000))
        assert err == b"".join(b"e%05d\n" % i for i in range(2000))
        assert proc.pid is not None and proc.pid > 1, "the agent's pid as the container sees it"

    run(with_sandbox(image, body))


def test_the_agent_pid_is_the_holders_first_stderr_line_and_no_file_is_read(
        image: str, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    read_file = engine_calls.read_file

    def counted(api: Any, container_id: str, path: str) -> bytes | None:
        reads.append(path)
        return read_file(api, container_id, path)

    monkeypatch.setattr(engine_calls, "read_file", counted)

    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        proc = await sb.start_agent(py("import os, sys\nsys.stderr.write('its own\\n')\nprint(os.getpid())"))
        await proc.close_stdin()
        out, err = await asyncio.gather(read_all(proc.read_stdout), read_all(proc.read_stderr))
        assert proc.pid == int(out), "the pid the holder said is the agent's own, as the container sees it"
        assert err == b"its own\n", "the pid line is never part of the agent's stderr"
        assert reads == [], "no pid file was read"

    run(with_sandbox(image, body))


SETUP_PROBE = """
import errno, os, stat, sys
for path in sys.argv[1:]:
    print(path, oct(stat.S_IMODE(os.stat(path).st_mode)))
open(os.path.join(os.getcwd(), 'mine'), 'w').write('x')
try:  # a file beside the holder (the running holder itself would be ETXTBSY whatever its folder)
    open(%r + '/planted', 'w')
    print('helpers writable')
except OSError as exc:
    print('helpers', errno.errorcode[exc.errno])
"""


async def _probe_setup(sb: DockerSandbox) -> list[str]:
    folders = [agent_side.PID_DIR, sb.workspace, "/tmp", SESSION_FILES_DIR]
    proc = await sb.start_agent(py(SETUP_PROBE % agent_side.HELPERS_DIR) + folders)
    await proc.close_stdin()
    out, err = await asyncio.gather(read_all(proc.read_stdout), read_all(proc.read_stderr))
    assert await proc.wait(10) == 0, err
    return out.decode().splitlines()


def _mounts(launcher: DockerLauncher, engine: Any, sb: DockerSandbox) -> dict[str, Any]:
    return {m["Destination"]: m for m in engine.api.inspect_container(sb.container_id)["Mounts"]}


def test_as_root_the_helpers_are_mounted_read_only_and_the_holder_makes_the_folders(image: str, engine: Any) -> None:
    async def body(sb: DockerSandbox, launcher: DockerLauncher) -> None:
        assert launcher.helpers_source is not None
        helpers = _mounts(launcher, engine, sb)[agent_side.HELPERS_DIR]
        assert helpers["Type"] == "bind" and helpers["RW"] is False
        assert await _probe_setup(sb) == [f"{agent_side.PID_DIR} 0o1777", f"{sb.workspace} 0o777", "/tmp 0o1777",
                                          f"{SESSION_FILES_DIR} 0o1777", "helpers EROFS"]

    run(with_sandbox(image, body))


def test_another_user_gets_the_helpers_copied_in_and_the_same_folders(image: str, engine: Any) -> None:
    user_image = build_user_image(engine, image)

    async def body(sb: DockerSandbox, launcher: DockerLauncher) -> None:
        assert launcher.helpers_source is None, "a non-root holder cannot make the folders"
        assert agent_side.HELPERS_DIR not in _mounts(launcher, engine, sb)
        assert await _probe_setup(sb) == [f"{agent_side.PID_DIR} 0o1777", f"{sb.workspace} 0o777", "/tmp 0o1777",
                                          f"{SESSION_FILES_DIR} 0o1777", "helpers EACCES"]

    run(with_sandbox(user_image, body))


def test_kill_ends_an_agent_that_ignores_sigterm(image: str) -> None:
    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('up', flush=True)\ntime.sleep(600)"
        proc = await sb.start_agent(py(code))
        assert await read_bytes(proc.read_stdout, 3) == b"up\n"
        started = time.monotonic()
        await proc.kill()
        assert await proc.wait(1) is not None
        assert time.monotonic() - started < 8
        await proc.kill()  # idempotent

    run(with_sandbox(image, body))


def test_a_missing_command_is_a_launch_error(image: str) -> None:
    async def body(sb: DockerSandbox, launcher: DockerLauncher) -> None:
        with pytest.raises(LaunchError, match="not found"):
            await sb.start_agent(["/no/such/agent"])
        with pytest.raises(LaunchError, match="not found"):
            await launcher.check(["/no/such/agent", "--acp"])
        with pytest.raises(LaunchError, match="PATH"):
            await launcher.check(["no-such-agent-anywhere"])
        await launcher.check(["python3", "-c", "pass"])

    run(with_sandbox(image, body))


# --- processes ---------------------------------------------------------------------------------------

DAEMON = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(300)  # the daemon: DAEMON-MARK
    os._exit(0)
os.wait()
print('parent done', flush=True)
"""


def test_a_double_forked_setsid_daemon_is_found_and_killed(image: str) -> None:
    async def body(sb: DockerSandbox, launcher: DockerLauncher) -> None:
        proc = await sb.start_agent(py(DAEMON))
        assert await proc.wait(10) == 0
        assert any("DAEMON-MARK" in p.command for p in await sb.agent_processes())
        leftovers = await sb.collect_leftovers()
        assert len(leftovers) == 1 and "DAEMON-MARK" in leftovers[0].command, leftovers
        assert leftovers[0].pid > 1
        assert await sb.agent_processes() == []
        # The holder's kill(-1) rounds were over before the collect returned (its log says so):
        # a round still to come would kill the next agent process (exit 137 under load).
        assert await kills_done(launcher.call, launcher.api, sb.container_id) == 1
        # The container is still usable for the journey's next agent process.
        again = await sb.start_agent(py("print('second')"))
        assert await again.wait(10) == 0
        assert await sb.collect_leftovers() == []
        third = await sb.start_agent(py(DAEMON))
        assert await third.wait(10) == 0 and len(await sb.collect_leftovers()) == 1
        assert await kills_done(launcher.call, launcher.api, sb.container_id) == 2

    run(with_sandbox(image, body))


def test_with_no_holder_log_to_read_the_listing_ends_the_kill(image: str, monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    """An engine whose log driver gives no log back: the kill of a leftover ends when the listing
    is empty, as before the holder's mark, with no warning, and the next process runs."""
    from acp_journeys.launch.docker import holder_kill

    async def no_log(*_: Any) -> None:
        return None

    monkeypatch.setattr(holder_kill, "kills_done", no_log)

    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        proc = await sb.start_agent(py(DAEMON))
        assert await proc.wait(10) == 0
        assert len(await sb.collect_leftovers()) == 1
        assert await sb.agent_processes() == []
        again = await sb.start_agent(py("print('second')"))
        assert await again.wait(10) == 0

    with caplog.at_level(logging.WARNING, logger="acp_journeys.launch.docker"):
        run(with_sandbox(image, body))
    assert "survived the kill" not in caplog.text


# Daemons whose command lines read as our own processes': `cat` run under the holder's name, each
# waiting for ever on a FIFO that nobody writes (named as its last word; the bare holder reads one
# on stdin). A command line is the agent's to choose: only pids tell ours.
DISGUISED = """
import os, subprocess, sys, tempfile
holder = sys.argv[1]
for words in ([], ["hold"], ["ps"], ["kill"], ["run"]):
    folder = tempfile.mkdtemp()
    fifo = os.path.join(folder, words[-1] if words else "stdin")
    os.mkfifo(fifo)
    stdin = os.open(fifo, os.O_RDWR) if not words else subprocess.DEVNULL
    subprocess.Popen([holder, *words], executable="/bin/cat", cwd=folder, stdin=stdin,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
print('disguised', flush=True)
"""


def test_a_daemon_named_as_our_holder_is_a_leftover(image: str) -> None:
    async def body(sb: DockerSandbox, launcher: DockerLauncher) -> None:
        proc = await sb.start_agent([*py(DISGUISED), agent_side.HOLDER])
        assert await read_bytes(proc.read_stdout, 10) == b"disguised\n"
        assert await proc.wait(10) == 0
        expected = sorted([(agent_side.HOLDER,), (agent_side.HOLDER, "hold"), (agent_side.HOLDER, "ps"),
                           (agent_side.HOLDER, "kill"), (agent_side.HOLDER, "run")])
        # The holder's own `ps` (as off the engine's host) sees them too, and not itself or PID 1.
        assert sorted(p.cmdline for p in await sb._list_with_holder()) == expected
        leftovers = await sb.collect_leftovers()
        assert sorted(p.cmdline for p in leftovers) == expected, leftovers
        assert all(p.pid > 1 for p in leftovers)
        assert await sb.agent_processes() == []

    run(with_sandbox(image, body))


def test_a_helper_exec_of_ours_is_never_listed_while_it_runs(image: str) -> None:
    """`holder kill` of an agent that ignores SIGTERM runs for its whole grace: a listing meanwhile
    knows the helper by its exec's host pid and lists only the agent."""
    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('deaf', flush=True)\ntime.sleep(60)"
        proc = await sb.start_agent(py(code))
        assert await read_bytes(proc.read_stdout, 5) == b"deaf\n"
        kill = asyncio.ensure_future(sb._helper(["kill", "1500", str(proc.pid)]))
        try:
            deadline = time.monotonic() + 1.0
            while not sb._helper_execs and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert sb._helper_execs, "the helper did not start"
            listed = []
            grace_ends = time.monotonic() + 1.2  # before the SIGKILL (the agent is then a zombie a while)
            while time.monotonic() < grace_ends:
                listed.append([p.cmdline for p in await sb.agent_processes()])
            assert sb._helper_execs, "the helper ended before its grace"
            assert listed and all(seen == [tuple(py(code))] for seen in listed), [s for s in listed if s != [tuple(py(code))]]
        finally:
            assert (await kill)[0] == 0
        assert await proc.wait(5) is not None  # SIGKILLed after the grace
        assert await sb.collect_leftovers() == []

    run(with_sandbox(image, body))


def test_the_mcp_relay_reaches_the_runner_and_counts_as_a_leftover(image: str) -> None:
    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        async def upper(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while line := await reader.readline():
                writer.write(line.upper())
                await writer.drain()
            writer.close()

        server = await asyncio.start_unix_server(upper, path=sb.mcp_socket_path)
        try:
            relay = await sb.start_agent(sb.mcp_command())
            await relay.write(b"ping\n")
            assert await read_bytes(relay.read_stdout, 5) == b"PING\n"
            await relay.close_stdin()
            assert await relay.wait(5) == 0
            # An agent that starts the relay and leaves it running: a leftover.
            cmd = " ".join(sb.mcp_command())
            code = f"import subprocess\nsubprocess.Popen({sb.mcp_command()!r}, start_new_session=True)\n"
            agent = await sb.start_agent(py(code + "import time; time.sleep(0.5)"))
            assert await agent.wait(10) == 0
            leftovers = await sb.collect_leftovers()
            assert [p.command for p in leftovers] == [cmd]
        finally:
            server.close()

    run(with_sandbox(image, body))


def test_a_fork_bomb_is_held_by_the_pids_limit(image: str) -> None:
    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        bomb = py("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass")
        proc = await sb.start_agent(bomb)
        await asyncio.sleep(3)
        seen = await sb.agent_processes()
        assert 10 < len(seen) <= 64, len(seen)
        # This machine is fine meanwhile.
        assert subprocess.run(["true"], timeout=10).returncode == 0
        await proc.kill()
        assert await proc.wait(5) is not None
        await sb.collect_leftovers()
        assert await sb.agent_processes() == []
        again = await sb.start_agent(py("print('after the bomb')"))
        assert await read_bytes(again.read_stdout, 15) == b"after the bomb\n"

    run(with_sandbox(image, body, pids_limit=64))


def test_a_memory_hog_is_held_by_the_memory_limit(image: str) -> None:
    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        hog = py("x = []\nwhile True:\n    x.append(bytearray(16 << 20))")
        proc = await sb.start_agent(hog)
        code = await proc.wait(60)
        assert code is not None and code != 0, code
        again = await sb.start_agent(py("print('after the hog')"))
        assert await read_bytes(again.read_stdout, 14) == b"after the hog\n"

    run(with_sandbox(image, body, memory="128m"))


NOFILE_PROBE = """
import resource, subprocess, sys
print(*resource.getrlimit(resource.RLIMIT_NOFILE))
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    print('raised')
except (ValueError, OSError):
    print('kept')
print(subprocess.run(['sh', '-c', 'ulimit -n'], capture_output=True, text=True).stdout.strip())
"""


def test_open_files_are_limited_and_the_disk_where_the_engine_can(image: str, engine: Any) -> None:
    async def body(sb: DockerSandbox, launcher: DockerLauncher) -> None:
        proc = await sb.start_agent(py(NOFILE_PROBE))
        limits, raised, child = (await read_all(proc.read_stdout)).decode().splitlines()
        # Ours, whatever the engine's default (20,000 here, often 1,048,576), and the agent's
        # processes cannot raise it (no CAP_SYS_RESOURCE), nor their children.
        assert limits.split() == ["1000", "1000"] and raised == "kept" and child == "1000"
        assert launcher.describe()["nofile"] == 1000
        host_config = engine.api.inspect_container(sb.container_id)["HostConfig"]
        facts = launcher.describe()
        info = engine.api.info()
        status = dict(info.get("DriverStatus") or [])
        if info["Driver"] == "overlay2" and status.get("Backing Filesystem") != "xfs":
            assert facts["disk"] is None and "overlay2 on " in facts["disk_note"], facts
            assert not host_config.get("StorageOpt")
            # An engine asked anyway (as for a driver whose status tells nothing) refuses: no bound,
            # the engine's reason, and the run goes on.
            bound, note = await launcher._disk_bound(docker, {"Driver": "overlay2",
                                                             "DriverStatus": [["Backing Filesystem", "xfs"]]})
            assert bound is None and "refused a size" in note, note
        elif facts["disk"] is not None:
            assert host_config["StorageOpt"] == {"size": facts["disk"]}
        else:
            assert facts["disk_note"] and not host_config.get("StorageOpt")

    run(with_sandbox(image, body, nofile=1000))


def test_the_default_open_files_limit_is_at_most_65536(image: str) -> None:
    async def body(sb: DockerSandbox, launcher: DockerLauncher) -> None:
        proc = await sb.start_agent(py(NOFILE_PROBE))
        soft, hard = map(int, (await read_all(proc.read_stdout)).decode().split()[:2])
        assert soft == hard <= 65536 and launcher.describe()["nofile"] == 65536

    run(with_sandbox(image, body))


ENVIRON_PROBE = """
import os
seen = set()
for name in os.listdir('/proc'):
    if name.isdigit():
        try:
            seen |= set(open(f'/proc/{name}/environ', 'rb').read().split(b'\\0'))
        except OSError:
            pass
print(os.getppid(), len(seen))
print('\\n'.join(sorted(e.decode('utf-8', 'replace') for e in seen if e)))
"""


def test_the_runners_environment_is_out_of_the_agents_reach(image: str, engine: Any) -> None:
    """Unlike local mode (test_local_isolation), no process of the runner is in the container's
    pid namespace: no /proc/<pid>/environ there holds the runner's environment."""
    ours = {e.decode() for e in Path("/proc/self/environ").read_bytes().split(b"\0") if e}
    marker = f"ACPJ_PROBE_{uuid.uuid4().hex[:8]}"

    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        proc = await sb.start_agent(py(ENVIRON_PROBE))
        first, *entries = (await read_all(proc.read_stdout)).decode().splitlines()
        assert first.split()[0] == "0"  # the exec's parent is outside the namespace
        assert f"{marker}=1" in entries  # the agent's own, given with env: the probe sees what there is
        # Of the runner's own environment, only what the image's own happens to share (or HOME,
        # which the engine sets).
        shared = {e for e in entries if e in ours} - image_env
        assert {e.split("=", 1)[0] for e in shared} <= {"HOME"}, shared

    image_env = set(engine.api.inspect_image(image)["Config"].get("Env") or [])
    run(with_sandbox(image, body, env={marker: "1"}))


NET_PROBE = """
import socket, sys
names = sorted(line.split(':')[0].strip() for line in open('/proc/net/dev').read().splitlines()[2:])
print(','.join(names))
s = socket.socket()
s.settimeout(5)
try:
    s.connect((sys.argv[1], 9))
    print('connected')
except OSError as exc:
    print('errno', exc.errno)
"""


def test_no_network_by_default(image: str, engine: Any) -> None:
    import ipaddress

    config = engine.api.inspect_network("bridge")["IPAM"]["Config"][0]
    # The bridge's address on this host (engines leave Gateway out when it is the default one).
    gateway = config.get("Gateway") or str(ipaddress.ip_network(config["Subnet"])[1])

    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        proc = await sb.start_agent(["python3", "-c", NET_PROBE, gateway])
        out = (await read_all(proc.read_stdout)).decode()
        assert await proc.wait(10) == 0
        interfaces, outcome = out.split("\n")[:2]
        assert interfaces == "lo", interfaces
        import errno

        assert outcome == f"errno {errno.ENETUNREACH}", outcome  # no route: nothing was sent

    run(with_sandbox(image, body))


def test_network_gives_a_bridge_network(image: str) -> None:
    async def body(sb: DockerSandbox, launcher: DockerLauncher) -> None:
        code = "print(sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:]))"
        proc = await sb.start_agent(py(code))
        assert "eth0" in (await read_all(proc.read_stdout)).decode()
        assert launcher.describe()["network"] == "bridge"

    run(with_sandbox(image, body, network=True))


# --- files -----------------------------------------------------------------------------------------

def test_files_and_snapshots_inside_the_container(image: str) -> None:
    async def body(sb: DockerSandbox, _: DockerLauncher) -> None:
        assert sb.workspace == "/workspace/journey"
        assert await sb.snapshot(sb.workspace) == {}
        await sb.write_file("/tmp/.rondar-session-files/note.txt", b"WORD-1\n")
        await sb.write_file(sb.workspace + "/src/deep/a.txt", b"a")
        assert await sb.file_exists("/tmp/.rondar-session-files/note.txt")
        assert not await sb.file_exists(sb.workspace + "/missing")
        before = await sb.snapshot(sb.workspace)
        assert set(before) == {"src/", "src/deep/", "src/deep/a.txt"}
        code = ("import os\nprint(open('/tmp/.rondar-session-files/note.txt').read(), end='')\n"
                "print(os.getcwd())\nopen('made.txt', 'w').write('m')\n"
                "print(oct(os.stat('/tmp').st_mode & 0o7777))")
        proc = await sb.start_agent(py(code))
        assert (await read_all(proc.read_stdout)).decode() == f"WORD-1\n{sb.workspace}\n0o1777\n"
        after = await sb.snapshot(sb.workspace)
        assert set(after) - set(before) == {"made.txt"}
        assert after["src/deep/a.txt"] == before["src/deep/a.txt"]
        assert await sb.snapshot("/no/such/folder") == {}

    run(with_sandbox(image, body))


def test_an_image_with_no_shell_and_no_python(empty_image: str) -> None:
    async def body(sb: DockerSandbox, launcher: DockerLauncher) -> None:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while data := await reader.read(100):
                writer.write(data)
                await writer.drain()
            writer.close()

        server = await asyncio.start_unix_server(echo, path=sb.mcp_socket_path)
        try:
            relay = await sb.start_agent(sb.mcp_command())
            await relay.write(b"hello")
            assert await read_bytes(relay.read_stdout, 5) == b"hello"
            assert [p.cmdline for p in await sb.agent_processes()] == [tuple(sb.mcp_command())]
            await relay.close_stdin()
            assert await relay.wait(5) == 0
        finally:
            server.close()
        await sb.write_file(sb.workspace + "/x.txt", b"x")
        assert list(await sb.snapshot(sb.workspace)) == ["x.txt"]
        with pytest.raises(LaunchError):
            await launcher.check(["python3"])

    run(with_sandbox(empty_image, body))


# --- env, logins, agent folder -----------------------------------------------------------------------

def test_env_logins_and_agent_dir(image: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    canary = "CANARY-" + uuid.uuid4().hex
    login = tmp_path / "login.json"
    login.write_text(canary)
    agent_dir = tmp_path / "agent"
    (agent_dir / "bin").mkdir(parents=True)
    (agent_dir / "bin" / "hello.py").write_text("print('hi from /agent')\n")
    caplog.set_level(logging.DEBUG)

    async def body(sb: DockerSandbox, launcher: DockerLauncher) -> None:
        await launcher.check(["/agent/bin/hello.py"])
        with pytest.raises(LaunchError, match="not found"):
            await launcher.check(["/agent/bin/missing"])
        code = ("import os\nprint(os.environ['SECRET_TOKEN'] == %r)\nprint(open('/root/login.json').read() == %r)\n"
                "print(open('/etc/acpj/login.json').read() == %r)\n"
                "try:\n    open('/root/login.json', 'w')\nexcept OSError:\n    print('read-only')\n"
                "exec(open('/agent/bin/hello.py').read())") % (canary, canary, canary)
        proc = await sb.start_agent(py(code))
        assert (await read_all(proc.read_stdout)).decode().split() == ["True", "True", "True", "read-only", "hi", "from", "/agent"]
        described = repr(launcher.describe())
        assert "SECRET_TOKEN" in described and canary not in described

    home = str(tmp_path)
    os.environ["ACP_JOURNEYS_HOST_HOME"] = home  # login.json is then ~/login.json: DEST /root/login.json
    try:
        run(with_sandbox(image, body, env={"SECRET_TOKEN": canary}, agent_dir=str(agent_dir),
                         logins=[(str(login), ""), (str(login), "/etc/acpj/login.json")]))
    finally:
        del os.environ["ACP_JOURNEYS_HOST_HOME"]
    assert canary not in caplog.text


# --- checks, clean-up --------------------------------------------------------------------------------

def test_check_explains_a_missing_image_and_an_unreachable_engine(image: str, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = DockerLauncher("acp-journeys/no-such-image:nope", run_id="test-missing")
    with pytest.raises(LaunchError, match="not on this engine.*--pull"):
        run(missing.check(["agent"]))
    run(missing.close())
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    away = DockerLauncher(image, run_id="test-away")
    with pytest.raises(LaunchError, match="cannot reach the Docker engine"):
        run(away.check(["agent"]))
    run(away.close())


def test_close_leaves_nothing_with_the_run_label(image: str, engine: Any) -> None:
    run_id = f"test-close-{uuid.uuid4().hex[:8]}"

    async def go() -> None:
        launcher = DockerLauncher(image, run_id=run_id)
        boxes = await asyncio.gather(*(launcher.open_sandbox(f"j{i}") for i in range(3)))
        procs = [await b.start_agent(py(DAEMON)) for b in boxes]
        for p in procs:
            assert await p.wait(10) == 0
        containers, _ = labelled(engine, run_id)
        assert len(containers) == 3
        assert all(c["Labels"][labels.LABEL_CREATED] for c in containers)
        described = launcher.describe()
        assert described["kind"] == "docker" and described["cgroup_version"] in ("1", "2")
        await launcher.close()
        await launcher.close()  # idempotent

    run(go())
    assert labelled(engine, run_id) == ([], [])


def test_a_host_pid_is_signalled_only_as_its_own_containers_process(image: str, engine: Any) -> None:
    """The runner signals an agent's host pid itself (on the engine's host) only while that pid
    is the process of the agent's own container: every container's agent has about the same pid
    inside, so a reused host pid in another container passed the old check (the pid in the
    container alone), and a kill there would end another journey's agent."""
    from acp_journeys.launch.docker.sandbox import _same_process

    async def go() -> None:
        launcher = DockerLauncher(image, run_id=f"test-samepid-{uuid.uuid4().hex[:8]}")
        try:
            a, b = await asyncio.gather(launcher.open_sandbox("a"), launcher.open_sandbox("b"))
            assert isinstance(a, DockerSandbox) and isinstance(b, DockerSandbox)
            pa, pb = await a.start_agent(["sleep", "60"]), await b.start_agent(["sleep", "60"])
            assert await pa.known_pid(10) is not None and await pb.known_pid(10) is not None
            assert await pa.wait(0.2) is None and await pb.wait(0.2) is None  # a poll tells the host pid
            assert pa.host_pid and pb.host_pid and pa.host_pid != pb.host_pid
            assert _same_process(pa.host_pid, pa.pid, a._holder_host_pid)
            assert _same_process(pb.host_pid, pb.pid, b._holder_host_pid)
            # B's process, with B's pid in the container (whatever A's is), is never A's.
            assert not _same_process(pb.host_pid, pb.pid, a._holder_host_pid)
            assert not _same_process(pb.host_pid, pb.pid, None)
            await pa.kill()
            assert await pa.wait(10) is not None
            assert not _same_process(pa.host_pid, pa.pid, a._holder_host_pid)  # gone
            assert await pb.wait(0.2) is None, "B's agent lives on"
        finally:
            await launcher.close()

    run(go())


def test_a_killed_runs_leftovers_go_at_the_next_start(image: str, engine: Any) -> None:
    dead_pid = _dead_pid()
    old = time.time() - 60
    host = socket.gethostname()
    dead = labels.run_labels("test-dead-run", f"pid:{host}:{dead_pid}:{old:.0f}", old)
    live = labels.run_labels("test-live-run", labels.own_owner(False), old)
    api = engine.api
    made = []
    for tags in (dead, live):
        made.append(api.create_container(image, command=["true"], labels=tags)["Id"])
    volume = api.create_volume(name=f"acpj-test-{uuid.uuid4().hex[:8]}", labels=dead)["Name"]
    try:
        launcher = DockerLauncher(image, run_id="test-next-run")
        run(launcher.check(["python3"]))
        run(launcher.close())
        ids = {c["Id"] for c in api.containers(all=True, filters={"label": labels.LABEL})}
        assert made[0] not in ids, "the dead run's container must go"
        assert made[1] in ids, "a live run's container must stay"
        names = {v["Name"] for v in api.volumes(filters={"label": labels.LABEL}).get("Volumes") or []}
        assert volume not in names
    finally:
        for cid in made:
            try:
                api.remove_container(cid, force=True)
            except docker.errors.NotFound:
                pass
        try:
            api.remove_volume(volume, force=True)
        except docker.errors.NotFound:
            pass


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


# --- the runner in a container -------------------------------------------------------------------------

IN_CONTAINER = """
import asyncio, sys
sys.path.insert(0, '/src')
from acp_journeys.launch.docker.launcher import DockerLauncher

async def main():
    la = DockerLauncher(sys.argv[1], run_id=sys.argv[2])
    await la.check(['python3'])
    sb = await la.open_sandbox('in-container')
    async def upper(r, w):
        while line := await r.readline():
            w.write(line.upper()); await w.drain()
        w.close()
    server = await asyncio.start_unix_server(upper, path=sb.mcp_socket_path)
    relay = await sb.start_agent(sb.mcp_command())
    await relay.write(b'through the volume\\n')
    out = b''
    while not out.endswith(b'\\n'):
        chunk = await asyncio.wait_for(relay.read_stdout(100), 10)
        if not chunk:
            break
        out += chunk
    print(out.decode(), end='')
    await relay.close_stdin()
    print('exit', await relay.wait(5))
    server.close()
    await la.close()

asyncio.run(main())
"""


def test_a_runner_in_a_container_shares_the_mcp_socket_through_a_named_volume(image: str, engine: Any) -> None:
    """As run.sh runs it: the Docker socket mounted, a labelled volume mounted in both."""
    runner = os.environ.get("ACP_JOURNEYS_RUNNER_IMAGE", "acp-journeys/runner:dev")
    try:
        engine.images.get(runner)
    except docker.errors.ImageNotFound:
        pytest.skip("needs the runner image (scripts/setup/build-runner-image.sh)")
    sock = (os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock").removeprefix("unix://")
    if not os.path.exists(sock):
        pytest.skip("the engine is not on a local Unix socket")
    run_id = f"test-inside-{uuid.uuid4().hex[:8]}"
    volume = engine.api.create_volume(name=f"acpj-{run_id}",
                                      labels=labels.run_labels(run_id, "test", time.time()))["Name"]
    helpers = agent_side.find_helpers()
    assert helpers is not None
    try:
        out = subprocess.run(
            ["docker", "run", "--rm", "--network", "none", "--entrypoint", "python3",
             "-v", f"{sock}:/var/run/docker.sock", "-v", f"{volume}:/shared",
             "-v", f"{ROOT / 'src'}:/src:ro",
             "-e", f"ACP_JOURNEYS_SHARED_VOLUME={volume}", "-e", "ACP_JOURNEYS_SHARED_DIR=/shared",
             runner, "-c", IN_CONTAINER, image, run_id],
            capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-3000:]
        assert out.stdout == "THROUGH THE VOLUME\nexit 0\n", out.stdout + out.stderr[-2000:]
        assert labelled(engine, run_id)[0] == []
    finally:
        engine.api.remove_volume(volume, force=True)


# --- the whole command in docker mode ------------------------------------------------------------------

BUNDLED = ROOT / "src" / "acp_journeys" / "demo"


def cli(image: str, tmp_path: Path, *args: str, defects: tuple[str, ...] = (),
        timeout: float = 300) -> tuple[int, str, dict[str, list[str]]]:
    """`acp-journeys run --image` against the reference agent (with defects: their fixture agent),
    mounted at /agent."""
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, "-m", "acp_journeys", "run", "-q", "-o", str(out), "--image", image,
         "--agent-dir", str(fixture_agent_dir(tmp_path / "agents")), *args, "--", "python3",
         f"/agent/{'+'.join(defects) or 'reference_agent'}.py"],
        capture_output=True, text=True, timeout=timeout, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    import json

    result = json.loads(out.read_text()) if out.exists() else {"journeys": []}
    failures = {j["id"]: sorted(f["id"] for f in j["failures"]) for j in result["journeys"] if j["verdict"] != "pass"}
    return proc.returncode, proc.stdout + proc.stderr, failures


def test_cli_the_reference_agent_passes_all_seven_in_containers(image: str, tmp_path: Path) -> None:
    code, output, failures = cli(image, tmp_path)
    assert (code, failures) == (0, {}), output[-3000:]


@pytest.mark.parametrize("defect, journey, expected", [
    ("leave-daemon", "turn-to-end", ["process-left"]),
    ("ignore-stdin-eof", "turn-to-end", ["no-exit-after-stdin-close"]),
    ("leave-sleep", "stop-running-turn", ["process-left", "sleep-left"]),
    ("plan-writes-file", "plan-turn-saved-plan", ["plan-changed-workspace"]),
])
def test_cli_fixtures_get_their_exact_verdicts_in_containers(image: str, tmp_path: Path, defect: str,
                                                             journey: str, expected: list[str]) -> None:
    code, output, failures = cli(image, tmp_path, "--journey", journey, defects=(defect,))
    assert (code, failures) == (1, {journey: expected}), output[-3000:]


def test_cli_sigterm_mid_run_leaves_no_container_or_volume(image: str, engine: Any, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "acp_journeys", "run", "-q", "-o", str(tmp_path / "result.json"), "--image", image,
         "--agent-dir", str(fixture_agent_dir(tmp_path / "agents")), "--", "python3", "/agent/ignore-stdin-eof.py"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})

    def ours() -> list[Any]:
        return [c for c in engine.api.containers(all=True, filters={"label": labels.LABEL})
                if f":{proc.pid}:" in c["Labels"].get(labels.LABEL_OWNER, "")]

    try:
        deadline = time.monotonic() + 60
        while len(ours()) < 7 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(ours()) == 7, "the run did not make its 7 containers"
        time.sleep(1)
        proc.send_signal(15)
        assert proc.wait(60) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
    assert ours() == []
    assert (tmp_path / "result.json").exists()


def test_run_sh_runs_the_runner_image_with_the_agent_dir(engine: Any, tmp_path: Path) -> None:
    runner = os.environ.get("ACP_JOURNEYS_RUNNER_IMAGE", "acp-journeys/runner:dev")
    try:
        engine.images.get(runner)
    except docker.errors.ImageNotFound:
        pytest.skip("needs the runner image (scripts/setup/build-runner-image.sh)")
    secret = "run-sh-canary-5e1f2a9b"
    command = [str(ROOT / "run.sh"), "--agent-dir", str(BUNDLED), "-q", "--journey", "turn-to-end",
               "--journey", "follow-up-after-restart", "--env", f"AGENT_TOKEN={secret}",
               "--setting", "AGENT_MODEL=stub-model", "--setting", "AGENT_KERNEL",
               "--", "python3", "/agent/reference_agent.py"]
    runner = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                              env={**os.environ, "AGENT_KERNEL": "/opt/kernel/bin/python"})
    # While it runs, the runner container's command line holds the name, never the value.
    seen_args: list[str] = []
    seen: dict[str, Any] = {}
    options: dict[str, str] = {}
    deadline = time.monotonic() + 120
    while runner.poll() is None and time.monotonic() < deadline and not seen_args:
        for c in engine.api.containers(filters={"name": "acpj-runner-"}):
            found = engine.api.inspect_container(c["Id"])
            # Ours only: another suite on the same engine runs runner containers too; ours mounts
            # this test's folder (run.sh's cwd, where result.json goes).
            if not any(m.get("Source", "").startswith(str(tmp_path)) for m in found["Mounts"]):
                continue
            seen, seen_args = found, found["Args"]
            volumes = [m["Name"] for m in seen["Mounts"] if m["Type"] == "volume"]
            options = engine.api.inspect_volume(volumes[0]).get("Options") or {} if volumes else {}
        time.sleep(0.2)
    stdout, stderr = runner.communicate(timeout=300)
    assert runner.returncode == 0, stdout + stderr
    assert seen_args and "AGENT_TOKEN" in seen_args and not any(secret in a for a in seen_args)
    # The runner is bounded too, and the sockets' volume is a nosuid, nodev tmpfs.
    assert seen["HostConfig"]["Memory"] == 2 << 30 and seen["HostConfig"]["PidsLimit"] == 1024
    assert options.get("type") == "tmpfs" and {"nosuid", "nodev"} <= set(options.get("o", "").split(",")), options
    assert secret not in stdout + stderr + (tmp_path / "result.json").read_text()
    import json

    result = json.loads((tmp_path / "result.json").read_text())
    assert result["passed"] == 2 and result["launch"]["kind"] == "docker"
    # Settings are no secrets: on the command line, in result.json as they are (NAME alone: this shell's value).
    assert "AGENT_MODEL=stub-model" in seen_args and "AGENT_KERNEL=/opt/kernel/bin/python" in seen_args
    assert result["launch"]["settings"] == {"AGENT_MODEL": "stub-model", "AGENT_KERNEL": "/opt/kernel/bin/python"}
    name = seen["Name"].lstrip("/")
    left = [c for c in engine.api.containers(all=True, filters={"label": labels.LABEL})
            if c["Labels"].get(labels.LABEL_OWNER, "") == f"container:{name}"]
    assert left == []
    ours = {m["Name"] for m in seen["Mounts"] if m["Type"] == "volume"}
    assert ours and not [v for v in engine.api.volumes(filters={"label": labels.LABEL}).get("Volumes") or []
                         if v["Name"] in ours]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
