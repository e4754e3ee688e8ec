"""One journey's container: the Sandbox of the docker launcher (see launcher.py for the rules).

Rules of this module: the container is made from the launcher's settings and holds our holder as
PID 1; agent processes are `docker exec`s; files move as tar archives; processes are listed with
`docker top` (frozen while leftovers are listed) and killed by host pid or through the holder.

Our own processes in the container are known by identity, never by their command line (which
any agent can choose): the holder by the host pid the engine gives for the container, our helper
execs (`holder ps`, `holder kill`) by the host pid the engine gives for each exec while it runs,
and the model relay by its exec's host pid (or, in the holder's list, its in-container pid). The
helpers run one at a time, so the holder's `ps` (which leaves out itself and PID 1) never lists
another of them.

The scripted model endpoint (`model_endpoint`): our relay listens on the container's own
loopback (MODEL_PORT) and joins each connection to a Unix socket in the folder shared with the
runner, where the runner serves the endpoint. That relay is ours, not the agent's: it is known by
its pid and never listed among the agent's processes or leftovers. A kill of
all but the holder takes it too, so it is started again before the next agent process.

This module does not know the launcher's class: what a sandbox needs of it is `ContainerHost`
(the launcher imports this module, never the other way).
"""

from __future__ import annotations

import asyncio
import logging
import os
import posixpath
import shutil
import signal
import tempfile
import time
import uuid
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Awaitable, Callable, Protocol

import acp_journeys.launch.agent_side as agent_side
import acp_journeys.launch.docker.engine as engine
import acp_journeys.launch.docker.labels as labels
import acp_journeys.launch.docker.tar as tar
from acp_journeys.launch.docker.holder_kill import kill_all_but_holder
from acp_journeys.launch.docker.engine import docker_module, short_error
from acp_journeys.launch.docker.exec_stream import DockerAgentProcess
from acp_journeys.launch.seam import AgentProcess, LaunchError, ProcInfo, Sandbox

log = logging.getLogger("acp_journeys.launch.docker")

WORKSPACE_ROOT = "/workspace"
MCP_MOUNT = agent_side.IN_CONTAINER_DIR + "/mcp"
SHARED_MOUNT = agent_side.IN_CONTAINER_DIR + "/shared"
KILL_GRACE_MS = 2000
MODEL_PORT = 4179  # on the container's own loopback: its network namespace is the journey's alone
MODEL_BASE_URL = f"http://127.0.0.1:{MODEL_PORT}"
MODEL_RELAY_READY_S = 5.0
HELPER_PID_WAIT_S = 2.0  # for the engine to tell the host pid of a helper exec that is starting


@dataclass
class _ModelRelay:
    """Our listening relay to the runner's model endpoint (one start of it: `argv` is unique)."""

    socket_runner: str
    socket_in_container: str
    argv: tuple[str, ...] = ()
    exec_id: str = ""
    pid: int | None = None  # as the container sees it (the relay's ready file)
    host_pid: int | None = None  # as the engine's host sees it (exec_inspect, docker top)
    starts: int = 0

    def is_it(self, pid: int, *, host: bool) -> bool:
        """By its pid alone (a command line can be copied): the host pid of its exec, or the
        in-container pid it wrote once it listened. Not known yet: it is nobody's process."""
        known = self.host_pid if host else self.pid
        return known is not None and pid == known


class ContainerHost(Protocol):
    """What a sandbox needs of the launcher that made it (DockerLauncher is the one)."""

    api: Any
    executor: Executor
    run_id: str
    owner: str
    created: float
    image: str
    image_id: str | None
    network_name: str | None
    pids_limit: int
    memory_bytes: int
    cpus: float
    nofile: int
    disk_bound: str | None
    volume_root: str
    shared: tuple[str, str, str]
    helpers_source: str | None

    @property
    def on_engine_host(self) -> bool: ...

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Awaitable[Any]: ...

    def environment(self) -> list[str]: ...

    def static_mounts(self) -> list[Any]: ...

    def setup_tar(self, workspace: str) -> bytes: ...

    def setup_folders(self, workspace: str) -> list[tuple[str, int]]: ...

    async def agent_user(self) -> tuple[str, int, int]: ...


class DockerSandbox(Sandbox):
    """One journey's container."""

    sees_every_process = True  # every process of the container is the agent's

    def __init__(self, launcher: ContainerHost, journey_id: str) -> None:
        self.launcher = launcher
        self.journey_id = journey_id
        self.sid = f"{labels.safe_name(journey_id, 30)}-{uuid.uuid4().hex[:6]}"
        self.workspace = f"{WORKSPACE_ROOT}/{labels.safe_name(journey_id, 60)}"
        self.container_id: str | None = None
        self._runner_dir: str | None = None  # the MCP folder on the runner's side
        self._socket_in_container = ""
        self._socket_runner = ""
        self._processes: list[DockerAgentProcess] = []
        self._current: DockerAgentProcess | None = None
        self._closed = False
        self.extra_env: dict[str, str] = {}  # the class's default is shared: each sandbox gets its own
        self._model: _ModelRelay | None = None
        self._seen_empty = False
        """Did the last listing find nothing alive (not even the current agent process)?"""
        self._engine_listed = False
        self._holder_host_pid: int | None = None
        """The holder's pid on the engine's host (the container's State.Pid)."""
        self._helper_execs: set[str] = set()
        """The exec ids of our helper execs that run now (their host pids come from the engine)."""
        self._helper_lock = asyncio.Lock()

    # --- making it ------------------------------------------------------------------------

    async def create(self) -> None:
        la = self.launcher
        docker = docker_module()
        mounts = list(la.static_mounts())
        mode, volume, shared_dir = la.shared
        if mode in ("volume", "mirror"):
            self._runner_dir = os.path.join(shared_dir, self.sid)
        else:
            self._runner_dir = tempfile.mkdtemp(prefix="acpj-", dir="/tmp")
        os.makedirs(self._runner_dir, exist_ok=True)
        os.chmod(self._runner_dir, 0o755)
        # The journey's own socket folder, read-only: a Unix socket still connects, and nothing
        # the agent makes (a setuid file, a device node) can reach the runner's side.
        if mode == "volume" and la.volume_root:
            source = posixpath.join(la.volume_root, self.sid)  # the volume's folder, on the engine's host
            mounts.append(docker.types.Mount(MCP_MOUNT, source, type="bind", read_only=True))
            self._socket_in_container = f"{MCP_MOUNT}/mcp.sock"
        elif mode == "volume":
            # A volume the engine cannot show as a host folder: all of it, read-only.
            mounts.append(docker.types.Mount(SHARED_MOUNT, volume, type="volume", read_only=True))
            self._socket_in_container = f"{SHARED_MOUNT}/{self.sid}/mcp.sock"
        else:
            mounts.append(docker.types.Mount(MCP_MOUNT, self._runner_dir, type="bind", read_only=True))
            self._socket_in_container = f"{MCP_MOUNT}/mcp.sock"
        self._socket_runner = os.path.join(self._runner_dir, "mcp.sock")
        entrypoint = [agent_side.HOLDER, "hold"]
        if la.helpers_source is not None:
            # The helpers mounted, the folders made by the holder as it starts: no archive to
            # copy in before the start. Each exec waits for the holder's ready file.
            mounts.append(docker.types.Mount(agent_side.HELPERS_DIR, la.helpers_source, type="bind", read_only=True))
            entrypoint += ["--ready", agent_side.READY_FILE,
                           *(f"{mode:o}:{path}" for path, mode in la.setup_folders(self.workspace))]

        api = la.api
        host_config = api.create_host_config(
            network_mode=la.network_name or "none",
            pids_limit=la.pids_limit,
            mem_limit=la.memory_bytes,
            memswap_limit=la.memory_bytes,  # the same number: no swap on top of the limit
            nano_cpus=int(la.cpus * 1e9),
            storage_opt={"size": la.disk_bound} if la.disk_bound else None,
            security_opt=["no-new-privileges"],
            # No capability at all: an agent needs none to read, write its own files, run tools
            # and listen on a high port, and without them it cannot mknod, chown, or override
            # file permissions (see docs/security.md).
            cap_drop=["ALL"],
            mounts=mounts,
        )
        name = f"acpj-{labels.safe_name(la.run_id, 20)}-{self.sid}"
        tags = labels.run_labels(la.run_id, la.owner, la.created, journey=self.journey_id)
        try:
            created = await la.call(
                api.create_container, la.image_id or la.image, entrypoint=entrypoint,
                command=[], name=name, labels=tags, environment=la.environment(),
                working_dir=self.workspace, host_config=host_config,
            )
            self.container_id = created["Id"]
            if la.helpers_source is None:
                await la.call(api.put_archive, self.container_id, "/", la.setup_tar(self.workspace))
            await la.call(api.start, self.container_id)
            state = (await la.call(api.inspect_container, self.container_id)).get("State") or {}
            self._holder_host_pid = state.get("Pid") or None
        except docker.errors.DockerException as exc:
            await self.close()
            raise LaunchError(f"cannot make the journey's container from {la.image}: {short_error(exc)}") from exc

    # --- Sandbox ----------------------------------------------------------------------------

    @property
    def mcp_socket_path(self) -> str:
        return self._socket_runner

    def mcp_command(self) -> list[str]:
        return [agent_side.RELAY, self._socket_in_container]

    async def model_endpoint(self) -> tuple[str, str] | None:
        if self.container_id is None or self._closed or self._runner_dir is None:
            raise LaunchError("the journey's container is gone")
        if self._model is None:
            # Beside the MCP socket: that folder is already shared in every mode (bind or volume).
            inside = posixpath.join(posixpath.dirname(self._socket_in_container), "model.sock")
            self._model = _ModelRelay(os.path.join(self._runner_dir, "model.sock"), inside)
        await self._ensure_model_relay()
        return self._model.socket_runner, MODEL_BASE_URL

    async def _ensure_model_relay(self) -> None:
        """Start our listening relay unless it runs (a kill of all but the holder ends it)."""
        relay = self._model
        if relay is None:
            return
        try:
            if relay.exec_id:
                info = await self.launcher.call(self.launcher.api.exec_inspect, relay.exec_id)
                if info.get("Running"):
                    return
                log.debug("the model relay of %s ended (exit %s): starting it again", self.sid, info.get("ExitCode"))
            await self._start_model_relay(relay)
        except docker_module().errors.DockerException as exc:
            raise LaunchError(f"cannot start the model endpoint's relay: {short_error(exc)}") from exc

    async def _start_model_relay(self, relay: _ModelRelay) -> None:
        la = self.launcher
        relay.starts += 1
        ready = f"{agent_side.PID_DIR}/model-relay-{relay.starts}.pid"
        relay.argv = (agent_side.RELAY, "--listen", str(MODEL_PORT), relay.socket_in_container, ready)
        relay.pid = relay.host_pid = None

        def start() -> str:
            # As root: the runner makes the endpoint's socket with its own umask (0755 as a
            # rule), and the image's user may be anyone. Detached: no stream of ours to keep.
            after = [*self._holder_run(), f"{ready}.run"]
            exec_id = la.api.exec_create(self.container_id, [*after, *relay.argv], user="0",
                                         stdout=False, stderr=False)["Id"]
            la.api.exec_start(exec_id, detach=True)
            return exec_id

        relay.exec_id = await la.call(start)
        # The relay writes its ready file once it listens: from then on a connect is accepted.
        deadline = time.monotonic() + MODEL_RELAY_READY_S
        while time.monotonic() < deadline:
            data = await la.call(self._read_file, ready)
            info = await la.call(la.api.exec_inspect, relay.exec_id)
            if data and data.strip().isdigit() and info.get("Running"):
                relay.pid, relay.host_pid = int(data.strip()), info.get("Pid") or None
                return
            if not info.get("Running") and info.get("ExitCode") is not None:
                raise LaunchError(f"the model endpoint's relay could not listen on {MODEL_BASE_URL} "
                                  f"in the container (exit {info.get('ExitCode')})")
            await asyncio.sleep(0.02)
        raise LaunchError(f"the model endpoint's relay did not listen within {MODEL_RELAY_READY_S:.0f} s")

    async def start_agent(self, argv: list[str]) -> AgentProcess:
        if not argv:
            raise LaunchError("no agent command")
        if self.container_id is None or self._closed:
            raise LaunchError("the journey's container is gone")
        la = self.launcher
        await self._ensure_model_relay()
        if posixpath.isabs(argv[0]) and await self._stat(argv[0]) is None:
            raise LaunchError(f"agent command not found in the container: {argv[0]}")
        pidfile = f"{agent_side.PID_DIR}/{len(self._processes) + 1}.pid"
        try:
            exec_id, response, sock, pending = await la.call(self._exec_attached, [*self._holder_run(), pidfile, *argv])
        except (docker_module().errors.DockerException, TypeError, OSError) as exc:
            raise LaunchError(f"cannot start the agent in its container: {short_error(exc)}") from exc
        proc = DockerAgentProcess(la.api, la.executor, exec_id, response, sock, pending,
                                  read_pid=lambda: self._read_pid(pidfile), kill_pid=self._kill_pid)
        self._processes.append(proc)
        self._current = proc
        self._seen_empty = False  # a new agent process: only a listing after its start counts
        # Wait (briefly) for the pid, so that the journey's evidence has it from the start.
        await proc.known_pid(3.0)
        return proc

    def _holder_run(self) -> list[str]:
        """`holder run` up to its PIDFILE: after the ready file, with the open-files limit. That
        limit is set by the holder, not the engine (whose ulimit cannot go above its own)."""
        return [agent_side.HOLDER, "run", "--after", agent_side.READY_FILE, "--nofile", str(self.launcher.nofile)]

    def _exec_attached(self, cmd: list[str]) -> tuple[str, Any, Any, bytes]:
        """exec_create + a hijacked exec_start; the socket comes back non-blocking."""
        assert self.container_id is not None
        # extra_env on top of the container's env (the launcher's); its values are never logged.
        env = [f"{name}={value}" for name, value in self.extra_env.items()] or None
        return engine.exec_attached(self.launcher.api, self.container_id, cmd, workdir=self.workspace, env=env)

    async def _read_pid(self, pidfile: str) -> int | None:
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and not self._closed:
            data = await self.launcher.call(self._read_file, pidfile)
            if data and data.strip().isdigit():
                return int(data.strip())
            await asyncio.sleep(0.05)
        return None

    def _read_file(self, path: str) -> bytes | None:
        assert self.container_id is not None
        return engine.read_file(self.launcher.api, self.container_id, path)

    async def _kill_pid(self, proc: DockerAgentProcess) -> None:
        """SIGTERM, then SIGKILL after a grace; when neither can be sent, all but the holder.

        On the engine's host we signal the host pid ourselves: an exec needs a free pid and CPU,
        which a fork bomb leaves little of. Elsewhere the holder's `kill` does the same inside.
        """
        holder = self._holder_host_pid
        if self.launcher.on_engine_host and _same_process(proc.host_pid, proc.pid, holder):
            assert proc.host_pid is not None
            for sig, grace in ((signal.SIGTERM, KILL_GRACE_MS / 1000), (signal.SIGKILL, 5.0)):
                if sig == signal.SIGKILL and not _same_process(proc.host_pid, proc.pid, holder):
                    return  # it ended in the grace: its number may be another's by now
                try:
                    os.kill(proc.host_pid, sig)
                except ProcessLookupError:
                    return
                except PermissionError:
                    break  # a rootless engine's processes: let the holder do it
                if await proc.wait(grace) is not None:
                    return
        elif proc.pid is not None:
            code, _ = await self._helper(["kill", str(KILL_GRACE_MS), str(proc.pid)])
            if code == 0:
                return
        await self._signal_holder_kill_all()

    async def _helper(self, args: list[str]) -> tuple[int | None, bytes]:
        """Run the holder with `args` in the container: (exit code or None, stdout).

        One at a time (so `holder ps` lists no other helper), and known by its exec id while it
        runs: a listing meanwhile asks the engine for its host pid (`_our_host_pids`)."""
        api = self.launcher.api

        def run() -> tuple[int | None, bytes]:
            exec_id = api.exec_create(self.container_id, [agent_side.HOLDER, *args], stdout=True, stderr=False)["Id"]
            self._helper_execs.add(exec_id)
            try:
                out = api.exec_start(exec_id)
                info = api.exec_inspect(exec_id)
                deadline = time.monotonic() + HELPER_PID_WAIT_S
                while info.get("Running") and time.monotonic() < deadline:
                    time.sleep(0.01)  # its output ended: it is ending; only then is it not ours to list
                    info = api.exec_inspect(exec_id)
                return info.get("ExitCode"), out or b""
            finally:
                self._helper_execs.discard(exec_id)

        async with self._helper_lock:
            try:
                return await self.launcher.call(run)
            except Exception as exc:  # an exec that cannot start (pids limit): the caller falls back
                log.debug("holder %s failed: %s", args[0], short_error(exc))
                return None, b""

    async def _our_host_pids(self) -> set[int]:
        """The host pids of our processes in the container: the holder, the model relay, and each
        helper exec that runs now (waiting briefly for the engine to know the pid of one that is
        starting: until then it shows as `runc init`, with the pid it then keeps)."""
        ours = {self._holder_host_pid, self._model.host_pid if self._model else None}
        api = self.launcher.api

        def helper_pids() -> set[int]:
            found: set[int] = set()
            deadline = time.monotonic() + HELPER_PID_WAIT_S
            for exec_id in list(self._helper_execs):
                pid = 0
                while True:
                    try:
                        pid = api.exec_inspect(exec_id).get("Pid") or 0
                    except Exception:
                        break
                    if pid or exec_id not in self._helper_execs or time.monotonic() >= deadline:
                        break
                    time.sleep(0.01)
                if pid:
                    found.add(int(pid))
            return found

        if self._helper_execs:
            ours |= await self.launcher.call(helper_pids)
        return {pid for pid in ours if pid}

    async def _signal_holder_kill_all(self) -> None:
        try:
            await self.launcher.call(self.launcher.api.kill, self.container_id, "SIGUSR1")
        except Exception as exc:
            log.debug("SIGUSR1 to the holder failed: %s", short_error(exc))

    async def _stat(self, path: str) -> dict[str, Any] | None:
        return await self.launcher.call(engine.stat_path, self.launcher.api, self.container_id, path)

    async def write_file(self, path: str, data: bytes) -> None:
        await self._put_file(path, data)

    async def write_home_file(self, relative: str, data: bytes) -> str:
        rel = PurePosixPath(relative.removeprefix("~/"))
        if rel.is_absolute() or not rel.parts or ".." in rel.parts:
            raise ValueError(f"not a path inside the home: {relative}")
        home, uid, gid = await self.launcher.agent_user()
        path = posixpath.join(home, *rel.parts)
        # The agent's own (folders made here too), and private: a config may hold a key.
        await self._put_file(path, data, mode=0o600, owner=(uid, gid))
        return path

    async def _put_file(self, path: str, data: bytes, *, mode: int = 0o644,
                        owner: tuple[int, int] = (0, 0)) -> None:
        parts = list(PurePosixPath(path).parts)
        if not parts or parts[0] != "/":
            raise ValueError(f"not an absolute path: {path}")
        parts = parts[1:]
        # put_archive needs an existing folder: find the deepest one, make the rest in the tar.
        for depth in range(len(parts) - 1, -1, -1):
            folder = "/" + "/".join(parts[:depth])
            if depth == 0 or await self._stat(folder) is not None:
                break
        archive = tar.file_tar(parts[depth:], data, mode=mode, owner=owner)
        await self.launcher.call(self.launcher.api.put_archive, self.container_id, folder, archive)

    async def file_exists(self, path: str) -> bool:
        return await self._stat(path) is not None

    async def snapshot(self, folder: str) -> dict[str, str]:
        api = self.launcher.api
        docker = docker_module()

        def take() -> dict[str, str]:
            try:
                chunks, _ = api.get_archive(self.container_id, folder)
            except docker.errors.NotFound:
                return {}
            return tar.snapshot_tar(tar.chunk_file(chunks))

        return await self.launcher.call(take)

    async def _list(self) -> list[ProcInfo]:
        """Every process in the container but the holder and our helper execs.

        `docker top` first: it runs `ps` on the engine's side, costs about 20 ms, and needs no
        free pid in the container (an exec waits seconds for the IO of an exec whose leftover
        still holds its stdout). On the engine's host we then read the exact argv and the
        in-container pid from /proc; elsewhere the holder's own `ps` gives them.
        """
        rows = await self._top()
        self._engine_listed = rows is not None
        if rows is None:
            return await self._list_with_holder()
        if not rows:
            return []
        if self.launcher.on_engine_host:
            return await self.launcher.call(_enrich_from_proc, rows)
        listed = await self._list_with_holder()
        return listed if listed else [ProcInfo(pid=pid, cmdline=(cmd,)) for pid, cmd in rows]

    async def _top(self) -> list[tuple[int, str]] | None:
        """(host pid, command) of every process but ours, or None when the engine cannot say."""
        try:
            top = await self.launcher.call(self.launcher.api.top, self.container_id)
        except Exception as exc:
            log.debug("docker top failed: %s", short_error(exc))
            return None
        titles = top.get("Titles") or []
        try:
            pid_col, cmd_col = titles.index("PID"), titles.index("CMD")
        except ValueError:
            return None
        ours = await self._our_host_pids()
        return [(int(row[pid_col]), row[cmd_col]) for row in top.get("Processes") or []
                if int(row[pid_col]) not in ours]

    def _is_model_relay(self, pid: int, *, host: bool) -> bool:
        return self._model is not None and self._model.is_it(pid, host=host)

    async def _list_with_holder(self) -> list[ProcInfo]:
        # `holder ps` leaves out PID 1 and itself; no other helper runs meanwhile (`_helper`).
        code, out = await self._helper(["ps"])
        if code != 0:
            return []
        return [ProcInfo(pid=pid, cmdline=args, name=name) for pid, _ppid, name, args in parse_ps(out)
                if not self._is_model_relay(pid, host=False)]

    async def agent_processes(self) -> list[ProcInfo]:
        if self.container_id is None or self._current is None:
            return []
        found = await self._list()
        # Only the engine's own empty list counts: the holder's `ps` can fail for want of a pid.
        self._seen_empty = not found and self._engine_listed
        return found

    async def collect_leftovers(self) -> list[ProcInfo]:
        if self.container_id is None or self._current is None:
            return []
        agent = self._current
        mine = {agent.pid, agent.host_pid} - {None}
        if self._seen_empty:
            # The last listing found nothing alive, the agent included: nothing was left that
            # could start anything since, so there is nothing to freeze and list again.
            found = []
        else:
            # Frozen, the container's processes can neither fork nor burn the CPU that `ps` needs
            # (a fork bomb makes an unfrozen listing take seconds), and the list is a true picture.
            paused = await self._pause(True)
            try:
                found = [p for p in await self._list() if p.pid not in mine]
            finally:
                if paused:
                    await self._pause(False)
        if found:
            await self._kill_all_but_holder()
        await agent.aclose()
        return found

    async def _pause(self, frozen: bool) -> bool:
        api = self.launcher.api
        try:
            await self.launcher.call(api.pause if frozen else api.unpause, self.container_id)
            return True
        except Exception as exc:
            log.debug("could not %s %s: %s", "pause" if frozen else "unpause", self.sid, short_error(exc))
            return False

    async def _kill_all_but_holder(self) -> None:
        await kill_all_but_holder(self.launcher.call, self.launcher.api, self.container_id, self._top,
                                  self._signal_holder_kill_all, self.sid)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for proc in self._processes:
            try:
                await proc.aclose()
            except Exception:
                pass
        if self.container_id is not None:
            try:
                await self.launcher.call(self.launcher.api.remove_container, self.container_id, v=True, force=True)
            except Exception as exc:
                if "No such container" not in str(exc):
                    log.warning("could not remove container %s: %s", self.sid, short_error(exc))
        if self._runner_dir:
            shutil.rmtree(self._runner_dir, ignore_errors=True)


def _same_process(host_pid: int | None, pid: int | None, holder_host_pid: int | None) -> bool:
    """Is host pid `host_pid` (still) the process that holder `holder_host_pid`'s container knows
    as `pid`? That pid alone is no proof: every container's agent has about the same one."""
    if host_pid is None or pid is None or holder_host_pid is None:
        return False
    try:
        if os.readlink(f"/proc/{host_pid}/ns/pid") != os.readlink(f"/proc/{holder_host_pid}/ns/pid"):
            return False  # another container's (or the host's) process now
        status = Path(f"/proc/{host_pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            return line.split()[-1] == str(pid)
    return False


def _enrich_from_proc(rows: list[tuple[int, str]]) -> list[ProcInfo]:
    """Host pids -> in-container pid, exact argv and name, read from the engine host's /proc.
    Our own processes are already left out (by host pid); PID 1 of the namespace is the holder."""
    found = []
    for host_pid, command in rows:
        try:
            status = Path(f"/proc/{host_pid}/status").read_text()
            raw = Path(f"/proc/{host_pid}/cmdline").read_bytes()
        except OSError:
            found.append(ProcInfo(pid=host_pid, cmdline=(command,)))
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        nspids = fields.get("NSpid", "").split()
        pid = int(nspids[-1]) if nspids else host_pid
        args = tuple(a.decode("utf-8", "replace") for a in raw.split(b"\0")[:-1]) if raw else (command,)
        if pid == 1:
            continue
        found.append(ProcInfo(pid=pid, cmdline=args, name=fields.get("Name", "").strip()))
    return found


def parse_ps(output: bytes) -> list[tuple[int, int, str, tuple[str, ...]]]:
    """Records of `holder ps`: pid, ppid, name, argc, then argc args, each field NUL-ended."""
    fields = output.split(b"\0")
    out: list[tuple[int, int, str, tuple[str, ...]]] = []
    i = 0
    while i + 4 <= len(fields) - 1:
        try:
            pid, ppid, argc = int(fields[i]), int(fields[i + 1]), int(fields[i + 3])
        except ValueError:
            break
        name = fields[i + 2].decode("utf-8", "replace")
        args = tuple(f.decode("utf-8", "replace") for f in fields[i + 4:i + 4 + argc])
        out.append((pid, ppid, name, args))
        i += 4 + argc
    return out
