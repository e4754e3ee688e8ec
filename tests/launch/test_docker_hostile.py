"""A hostile agent against the docker launcher: nothing it makes may reach the runner's side.

Real engine, real containers. The agent (python3 in the test image) runs as the image's user
(root) and tries what a hostile pull request would: device nodes, a setuid copy of a shell in
the socket folder, writes into another journey's folder, a connection to another journey's
socket, traffic to another journey's container. The three ways the runner shares its socket
folders (a host temp folder, a mirrored host folder, a named volume) are each tried; the host
folders are watched the whole time for setuid or device files.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

docker = pytest.importorskip("docker")

from acp_journeys.launch.docker import labels  # noqa: E402
from acp_journeys.launch.docker.launcher import DockerLauncher, DockerSandbox  # noqa: E402
from acp_journeys.launch.docker.sandbox import MCP_MOUNT, SHARED_MOUNT  # noqa: E402
from conftest import agent_image_or_skip, docker_engine_or_skip  # noqa: E402

HOSTILE = r'''
import errno, json, os, shutil, socket, stat, sys
own, others = sys.argv[1], sys.argv[2:]
found = {}
def attempt(name, fn):
    try:
        fn()
        found[name] = "ok"
    except OSError as exc:
        found[name] = errno.errorcode.get(exc.errno, str(exc.errno))
def setuid_copy(folder):
    shutil.copy("/bin/sh", folder + "/sh")
    os.chmod(folder + "/sh", 0o4755)
def write(path):
    with open(path, "w") as f:
        f.write("planted")
def connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect(path)
attempt("mknod-tmp", lambda: os.mknod("/tmp/blk", 0o666 | stat.S_IFBLK, os.makedev(7, 0)))
attempt("mknod-own", lambda: os.mknod(own + "/blk", 0o666 | stat.S_IFBLK, os.makedev(7, 0)))
attempt("mkdir-own", lambda: os.mkdir(own + "/deep"))
attempt("write-own", lambda: write(own + "/planted"))
attempt("setuid-own", lambda: setuid_copy(own))
attempt("chown-tmp", lambda: (write("/tmp/mine"), os.chown("/tmp/mine", 4321, 4321)))
for i, other in enumerate(others):
    attempt(f"mkdir-other-{i}", lambda: os.mkdir(other + "/deep"))
    attempt(f"write-other-{i}", lambda: write(other + "/planted"))
    attempt(f"connect-other-{i}", lambda: connect(other + "/mcp.sock"))
print(json.dumps(found), flush=True)
'''


@pytest.fixture(scope="module")
def engine() -> Any:
    return docker_engine_or_skip()


@pytest.fixture(scope="module")
def image(engine: Any) -> str:
    return agent_image_or_skip(engine)


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))


def bad_files(folder: str) -> list[str]:
    """Setuid/setgid files and device nodes below `folder` (a missing folder has none)."""
    out = []
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if mode & (stat.S_ISUID | stat.S_ISGID) or stat.S_ISBLK(mode) or stat.S_ISCHR(mode):
                out.append(path)
    return out


class Watcher:
    """Scans folders for setuid or device files every few milliseconds until stopped."""

    def __init__(self, folders: list[str]) -> None:
        self.folders = folders
        self.seen: set[str] = set()
        self.scans = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            for folder in self.folders:
                self.seen.update(bad_files(folder))
            self.scans += 1
            time.sleep(0.005)

    def stop(self) -> set[str]:
        self._stop.set()
        self._thread.join(5)
        return self.seen


@pytest.mark.parametrize("mode", ["host", "mirror", "volume"])
def test_a_hostile_agent_leaves_nothing_on_the_runners_side(image: str, engine: Any, mode: str,
                                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = f"test-hostile-{uuid.uuid4().hex[:8]}"
    # A pid owner, as on the engine's host: a run of another test in parallel keeps its objects.
    monkeypatch.setenv("ACP_JOURNEYS_OWNER", labels.own_owner(False))
    volume = None
    if mode == "mirror":
        monkeypatch.setenv("ACP_JOURNEYS_SHARED_DIR", str(tmp_path))
    elif mode == "volume":
        # Labelled with a run of its own, as run.sh's volume is: the launcher leaves it alone.
        volume = engine.api.create_volume(name=f"acpj-{run_id}",
                                          labels=labels.run_labels(f"{run_id}-volume", "test", time.time()))
        # This test runs on the engine's host: the volume's folder is the runner's view of it.
        monkeypatch.setenv("ACP_JOURNEYS_SHARED_VOLUME", volume["Name"])
        monkeypatch.setenv("ACP_JOURNEYS_SHARED_DIR", volume["Mountpoint"])

    async def body() -> None:
        launcher = DockerLauncher(image, run_id=run_id)
        try:
            a = await launcher.open_sandbox("journey-a")
            b = await launcher.open_sandbox("journey-b")
            assert isinstance(a, DockerSandbox) and isinstance(b, DockerSandbox)
            folders = [os.path.dirname(a.mcp_socket_path), os.path.dirname(b.mcp_socket_path)]
            if volume is not None:
                folders.append(volume["Mountpoint"])
            servers = [await asyncio.start_unix_server(lambda r, w: w.close(), path=sb.mcp_socket_path)
                       for sb in (a, b)]
            own = os.path.dirname(a.mcp_command()[1])
            # Every path another journey's folder could have in A's container.
            others = [f"{SHARED_MOUNT}/{b.sid}", f"{MCP_MOUNT}/../shared/{b.sid}", folders[1]]
            watcher = Watcher(folders)
            try:
                proc = await a.start_agent(["python3", "-c", HOSTILE, own, *others])
                out = b""
                while chunk := await asyncio.wait_for(proc.read_stdout(1 << 16), 30):
                    out += chunk
                assert await proc.wait(10) == 0, (await proc.read_stderr(1 << 16)).decode()
            finally:
                seen = watcher.stop()
            found = json.loads(out)
            assert watcher.scans > 0
            assert seen == set(), f"setuid or device files on the runner's side: {sorted(seen)}"
            # No capabilities: no device node even in the container's own /tmp, no chown.
            assert found["mknod-tmp"] == "EPERM", found
            assert found["chown-tmp"] == "EPERM", found
            # The own socket folder is read-only.
            for what in ("mknod-own", "mkdir-own", "write-own", "setuid-own"):
                assert found[what] in ("EROFS", "EPERM", "EACCES"), (what, found)
            # Another journey's folder is not there at all (or not writable).
            for key, value in found.items():
                if "-other-" in key:
                    assert value != "ok", (key, found)
            for folder in folders[:2]:
                assert sorted(os.listdir(folder)) == ["mcp.sock"], (folder, os.listdir(folder))
            # The socket itself still connects through the read-only folder.
            relay = await a.start_agent(a.mcp_command())
            await relay.close_stdin()
            assert await relay.wait(10) == 0
            for server in servers:
                server.close()
        finally:
            await launcher.close()
        for folder in folders[:2]:
            assert not os.path.exists(folder), f"{folder} outlived the run"

    try:
        run(body())
    finally:
        if volume is not None:
            engine.api.remove_volume(volume["Name"], force=True)


def test_journeys_on_the_network_cannot_reach_each_other(image: str, engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`network`: a network of the run's own, not the default bridge, with no inter-container traffic."""
    monkeypatch.setenv("ACP_JOURNEYS_OWNER", labels.own_owner(False))
    run_id = f"test-net-{uuid.uuid4().hex[:8]}"

    async def body() -> None:
        launcher = DockerLauncher(image, run_id=run_id, network=True)
        try:
            a = await launcher.open_sandbox("journey-a")
            b = await launcher.open_sandbox("journey-b")
            assert isinstance(a, DockerSandbox) and isinstance(b, DockerSandbox)
            info = await launcher.call(engine.api.inspect_container, a.container_id)
            networks = info["NetworkSettings"]["Networks"]
            assert list(networks) == [launcher.network_name] and "bridge" not in networks
            net = engine.api.inspect_network(launcher.network_name)
            assert net["Options"].get("com.docker.network.bridge.enable_icc") == "false"
            assert net["Labels"][labels.LABEL_RUN] == run_id
            address = networks[launcher.network_name]["IPAddress"]
            listen = ("import socket,time\ns=socket.socket(); s.bind(('0.0.0.0', 8111)); s.listen()\n"
                      "print('up', flush=True)\ntime.sleep(30)")
            server = await a.start_agent(["python3", "-c", listen])
            up = await asyncio.wait_for(server.read_stdout(3), 20)
            if up == b"up":  # unbuffered print(): the newline may come as a frame of its own
                up += await asyncio.wait_for(server.read_stdout(1), 20)
            assert up == b"up\n"
            probe = ("import socket\ns=socket.socket(); s.settimeout(3)\n"
                     f"try:\n s.connect(({address!r}, 8111)); print('connected')\n"
                     "except OSError as e: print('blocked', type(e).__name__)")
            proc = await b.start_agent(["python3", "-c", probe])
            out = b""
            while chunk := await asyncio.wait_for(proc.read_stdout(1 << 16), 20):
                out += chunk
            assert out.startswith(b"blocked"), out
            # The same connect from inside A itself works: the port was really open.
            self_probe = probe.replace(address, "127.0.0.1")
            proc = await a.start_agent(["python3", "-c", self_probe])
            out = b""
            while chunk := await asyncio.wait_for(proc.read_stdout(1 << 16), 20):
                out += chunk
            assert out.startswith(b"connected"), out
            # A CPU limit besides the memory and pids limits.
            host = info["HostConfig"]
            assert host["NanoCpus"] == int(launcher.cpus * 1e9) > 0
            assert host["CapDrop"] == ["ALL"] and not host.get("CapAdd")
        finally:
            await launcher.close()
        assert engine.api.networks(filters={"label": f"{labels.LABEL_RUN}={run_id}"}) == []

    run(body())
