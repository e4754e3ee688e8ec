"""Agents as local processes: a temp tree per journey and a tracker per agent process.

Rules of this module: the agent sees this machine's file system, so paths are real paths. The
session-files folder that Rondar names is fixed (/tmp/.rondar-session-files), so a journey that
writes there holds a lock on it until it ends: two runs at once wait for each other instead of
overwriting each other's note.

Each journey is a world of its own, as a container is in docker mode: its own TMPDIR,
XDG_RUNTIME_DIR, XDG_CACHE_HOME and XDG_STATE_HOME (and its own HOME when asked, always under
--model-stub), all inside the journey's temp tree, which is removed when the journey ends. So a
daemon that an agent keeps in $TMPDIR is never shared by two journeys. The agent starts with a
minimal environment (`MINIMAL_ENV`) plus what the journey sets plus --env and --setting, unless
the run inherits the runner's whole environment. Under `--tracking subreaper` each agent process
starts under a holder of its own (`agent_side/subreaper.py`, see proctrack.py), which reports the
agent's pid and its end; the pipes are the agent's.

It must not know ACP, the journeys or the judge: it starts processes and reports what it sees.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
import shutil
import signal
import stat
import tempfile
import time
import uuid
from pathlib import Path

from acp_journeys.launch.agent_side import relay_command
from acp_journeys.launch.proctrack import (
    OWN_CHILDREN,
    DescentTracker,
    ProcInfo,
    Tracker,
    TrackerFactory,
    TrackingError,
)
from acp_journeys.launch.seam import SESSION_FILES_DIR, AgentProcess, Launcher, LaunchError, Sandbox

LOCK_WAIT_S = 600.0
HOLDER_START_S = 60.0
"""How long a holder (`--tracking subreaper`) may take to say that the agent runs: a Python start."""

MINIMAL_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TZ")
"""What an agent gets of the runner's environment by default (with every LC_*): enough to find
programs, the user and the locale; no token or setting of the runner's own."""


def minimal_environment(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k in MINIMAL_ENV or k.startswith("LC_")}


class LocalAgentProcess(AgentProcess):
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.pid = proc.pid
        self._ended = _process_end(proc)

    async def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        if self.proc.stdin.is_closing():
            raise BrokenPipeError("stdin is closed")
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def close_stdin(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
            try:
                await self.proc.stdin.wait_closed()
            except (BrokenPipeError, ConnectionError, OSError):
                pass

    async def read_stdout(self, n: int) -> bytes:
        assert self.proc.stdout is not None
        return await self.proc.stdout.read(n)

    async def read_stderr(self, n: int) -> bytes:
        assert self.proc.stderr is not None
        return await self.proc.stderr.read(n)

    async def wait(self, timeout: float) -> int | None:
        # The end of the process itself (its pidfd), never of its pipes: a helper that holds the
        # agent's stderr (as MCP SDKs leave their stdio servers) must not make an agent that
        # ended at once look late.
        if self.proc.returncode is None:
            try:
                await asyncio.wait_for(asyncio.shield(self._ended), timeout)
            except asyncio.TimeoutError:
                return None
        return self.proc.returncode

    async def kill(self) -> None:
        if self.proc.returncode is not None:
            return
        for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                return
            if await self.wait(grace) is not None:
                return


class HolderReport:
    """What a holder (`agent_side/subreaper.py`) says on its status pipe: the agent's pid, then
    how the agent ended. Read by the loop itself (no thread): two short lines per agent process."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        loop = asyncio.get_running_loop()
        self.started: asyncio.Future[int] = loop.create_future()
        """The agent's pid (or LaunchError: the holder could not start it)."""
        self.exited: asyncio.Future[int | None] = loop.create_future()
        """The agent's exit code, as asyncio gives it (None: the holder ended first, killed)."""
        self._buffer = b""
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        try:
            data = os.read(self.fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            word, _, rest = line.decode("utf-8", "replace").partition(" ")
            if word == "pid" and not self.started.done():
                self.started.set_result(int(rest))
            elif word == "exit" and not self.exited.done():
                self.exited.set_result(int(rest))
            elif word == "error" and not self.started.done():
                self.started.set_exception(LaunchError(rest))
        if not data or len(self._buffer) > 4096:  # its end (or not a holder's words): done reading
            self.close()
            if not self.started.done():
                self.started.set_exception(LaunchError("the holder ended before it started the agent"))
            if not self.exited.done():
                self.exited.set_result(None)

    def finish(self) -> None:
        """The holder has ended: read what it wrote to the end (its last line may still wait)."""
        for _ in range(64):  # each read takes up to 4 KiB; the holder writes three short lines
            if self.fd < 0:
                return
            self._readable()
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            asyncio.get_running_loop().remove_reader(self.fd)
            os.close(self.fd)
            self.fd = -1


class HeldAgentProcess(LocalAgentProcess):
    """An agent process under a holder of its own: the pipes are the agent's (the holder let go
    of them), the pid and the end are the agent's, as the holder reports them."""

    def __init__(self, holder: asyncio.subprocess.Process, report: HolderReport, agent_pid: int) -> None:
        super().__init__(holder)  # the pipes; and the holder's own end, so its pid is freed
        self.pid = agent_pid
        try:
            self._pidfd: int | None = os.pidfd_open(agent_pid)  # a signal never reaches a reused pid
        except (AttributeError, OSError):
            self._pidfd = None
        loop = asyncio.get_running_loop()
        self._end: asyncio.Future[int] = loop.create_future()
        """The agent's exit code once it has ended."""

        def reported(done: asyncio.Future[int | None]) -> None:
            code = done.result()
            if code is not None:
                self._end.set_result(code)
            elif self._pidfd is not None and not self._end.done():
                # The holder was killed and took the code with it: the agent may live on (the
                # runner's now); its pidfd says when it ends.
                fd = self._pidfd

                def gone() -> None:
                    loop.remove_reader(fd)
                    if not self._end.done():
                        self._end.set_result(255)

                loop.add_reader(fd, gone)
            elif not self._end.done():
                self._end.set_result(255)

        report.exited.add_done_callback(reported)

    async def wait(self, timeout: float) -> int | None:
        if not self._end.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._end), timeout)
            except asyncio.TimeoutError:
                return None
        return self._end.result()

    async def kill(self) -> None:
        for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
            if self._end.done():
                return
            try:
                if self._pidfd is not None:
                    signal.pidfd_send_signal(self._pidfd, sig)
                else:
                    os.kill(self.pid, sig)
            except OSError:
                return
            if await self.wait(grace) is not None:
                return

    def release(self) -> None:
        if self._pidfd is not None:
            asyncio.get_running_loop().remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None


def _process_end(proc: asyncio.subprocess.Process) -> asyncio.Future[None]:
    """Done once `proc` has ended and asyncio's child watcher has its exit code."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()

    async def code_known() -> None:
        # After the pidfd fires, the watcher reaps the process at once; poll its code briefly.
        delay = 0.002
        while proc.returncode is None:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
        OWN_CHILDREN.discard(proc.pid)  # reaped: the pid may now be reused by an orphan
        if not ended.done():
            ended.set_result(None)

    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd here (or already reaped): poll the code alone
        _keep(loop.create_task(code_known()))
        return ended

    def readable() -> None:
        loop.remove_reader(fd)
        os.close(fd)
        _keep(loop.create_task(code_known()))

    loop.add_reader(fd, readable)
    return ended


_WATCHES: set[asyncio.Task[None]] = set()


def _keep(task: asyncio.Task[None]) -> None:
    """Hold a reference to a task nobody awaits, so that it is not collected mid-way."""
    _WATCHES.add(task)
    task.add_done_callback(_WATCHES.discard)


class LocalSandbox(Sandbox):
    def __init__(self, launcher: "LocalLauncher", journey_id: str) -> None:
        self.launcher = launcher
        self.journey_id = journey_id
        self.root = Path(tempfile.mkdtemp(prefix=f"acp-journeys-{journey_id}-")).resolve()
        self.workspace = str(self.root / "workspace")
        os.mkdir(self.workspace)
        self.home: Path | None = None
        self.journey_env = self._make_world(launcher.isolate_home)
        self.extra_env: dict[str, str] = {}  # the class's default is shared: each sandbox gets its own
        self._socket = os.path.join(launcher.socket_dir, f"{uuid.uuid4().hex[:8]}.sock")
        self._trackers: list[Tracker] = []
        self._current: Tracker | None = None
        self._held: list[HeldAgentProcess] = []
        self._agent_pid: int | None = None
        self._lock_fd: int | None = None
        self._written: list[tuple[str, os.stat_result]] = []
        self._closed = False

    def _make_world(self, own_home: bool) -> dict[str, str]:
        """The journey's own folders, named in the environment of its agent processes."""
        folders = {"TMPDIR": "tmp", "XDG_RUNTIME_DIR": "run", "XDG_CACHE_HOME": "cache",
                   "XDG_STATE_HOME": "state"}
        env = {}
        for name, folder in folders.items():
            path = self.root / folder
            path.mkdir(mode=0o700)  # XDG_RUNTIME_DIR must be the user's alone
            env[name] = str(path)
        if own_home:
            env.update(self._own_home())
        return env

    def _own_home(self) -> dict[str, str]:
        if self.home is None:
            self.home = self.root / "home"
            self.home.mkdir(mode=0o700)
        # Set too, so that an inherited XDG_CONFIG_HOME cannot lead back to the user's home.
        return {"HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / ".config"),
                "XDG_DATA_HOME": str(self.home / ".local" / "share")}

    def environment(self, tracker_env: dict[str, str]) -> dict[str, str]:
        """The journey's folders first, then --env and --setting (the user's word wins), then
        what the runner sets for this journey (the model stub's address) and the tracker's token."""
        return {**self.launcher.base_env, **self.journey_env, **self.launcher.env, **self.extra_env, **tracker_env}

    @property
    def mcp_socket_path(self) -> str:
        return self._socket

    def mcp_command(self) -> list[str]:
        return relay_command(self._socket)

    async def start_agent(self, argv: list[str]) -> AgentProcess:
        tracker = self.launcher.trackers.make(self.journey_id)
        self._trackers.append(tracker)
        self._current = tracker
        env = self.environment(tracker.env())
        if isinstance(tracker, DescentTracker) and tracker.holder:
            return await self._start_held(tracker, argv, env)
        try:
            proc = await asyncio.create_subprocess_exec(
                *tracker.wrap(argv), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=self.workspace, env=env,
                # Its own session: a Ctrl-C in the terminal reaches the runner, which then closes
                # the agent the way the journeys do, instead of killing it mid-frame.
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            raise LaunchError(f"cannot start {argv[0]!r}: {exc}") from exc
        OWN_CHILDREN.add(proc.pid)
        tracker.root_pid = proc.pid
        self._agent_pid = proc.pid
        return LocalAgentProcess(proc)

    async def _start_held(self, tracker: DescentTracker, argv: list[str], env: dict[str, str]) -> AgentProcess:
        """The agent under a holder of its own (a child subreaper), which starts it in a session
        of its own and reports its pid and its end on a pipe."""
        read_fd, write_fd = os.pipe()
        try:
            holder = await asyncio.create_subprocess_exec(
                *tracker.holder_argv(write_fd, argv), stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=self.workspace,
                env=env, start_new_session=True, pass_fds=(write_fd,))
        except (OSError, ValueError) as exc:
            os.close(read_fd)
            raise LaunchError(f"cannot start {argv[0]!r} under its holder: {exc}") from exc
        finally:
            os.close(write_fd)
        OWN_CHILDREN.add(holder.pid)
        tracker.held(holder.pid)
        report = HolderReport(read_fd)

        def holder_ended(_: object) -> None:
            tracker.holder_exit = holder.returncode
            report.finish()

        process = None
        try:
            agent_pid = await asyncio.wait_for(asyncio.shield(report.started), HOLDER_START_S)
            tracker.root_pid = agent_pid
            self._agent_pid = agent_pid
            process = HeldAgentProcess(holder, report, agent_pid)
            self._held.append(process)
            return process
        except (LaunchError, asyncio.TimeoutError) as exc:
            if holder.returncode is None:
                holder.kill()
            raise LaunchError(f"cannot start {argv[0]!r}: {exc or 'its holder did not say it ran'}") from None
        finally:
            ended = process._ended if process is not None else _process_end(holder)
            ended.add_done_callback(holder_ended)

    async def write_home_file(self, relative: str, data: bytes) -> str:
        # A home of this journey's own: the user's real home stays untouched, and journeys at
        # once never share a config file (each has its own endpoint address).
        self.journey_env.update(self._own_home())
        assert self.home is not None
        target = self.home / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return str(target)

    async def write_file(self, path: str, data: bytes) -> None:
        if path.startswith(SESSION_FILES_DIR + "/"):
            await self._lock_session_files()
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.parent == Path(SESSION_FILES_DIR):
            os.chmod(target.parent, 0o1777)  # shared like /tmp: another user's run may use it too
        target.write_bytes(data)
        self._written.append((path, os.stat(target)))

    async def file_exists(self, path: str) -> bool:
        return os.path.lexists(path)

    async def snapshot(self, folder: str) -> dict[str, str]:
        return await asyncio.to_thread(snapshot_tree, folder)

    @property
    def sees_every_process(self) -> bool:  # type: ignore[override]
        return self._current is not None and self._current.exact

    async def agent_processes(self) -> list[ProcInfo]:
        if self._current is None:
            return []
        return await asyncio.to_thread(self._current.processes)

    async def collect_leftovers(self) -> list[ProcInfo]:
        tracker = self._current
        if tracker is None:
            return []
        return await asyncio.to_thread(self._leftovers, tracker)

    def _leftovers(self, tracker: Tracker) -> list[ProcInfo]:
        """List, then kill, in one trip to a thread (each trip costs the loop a wake-up)."""
        found = [p for p in tracker.processes() if p.pid != self._agent_pid]
        tracker.kill_all()
        return found

    async def close(self) -> None:
        # Idempotent: the runner closes each journey's sandbox and the launcher closes them all
        # again; a second pass must not touch a note that another run now holds the lock for.
        if self._closed:
            return
        self._closed = True
        for process in self._held:
            process.release()  # in the loop, which may watch its pidfd
        await asyncio.to_thread(self._release)

    def _release(self) -> None:
        """Everything close does, in order, in one thread: it kills, unlinks and removes a tree."""
        for tracker in self._trackers:
            tracker.close()
        for path, written in self._written:
            if not path.startswith(str(self.root)):
                _unlink_if_same(path, written)
        self._written.clear()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock, only after our note is gone
            self._lock_fd = None
        remove_tree(self.root)
        try:
            os.unlink(self._socket)
        except OSError:
            pass

    async def _lock_session_files(self) -> None:
        if self._lock_fd is not None:
            return
        os.makedirs(SESSION_FILES_DIR, exist_ok=True)
        fd = os.open(os.path.join(SESSION_FILES_DIR, ".lock"), os.O_RDWR | os.O_CREAT, 0o666)
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise TimeoutError(f"{SESSION_FILES_DIR} stayed locked by another run")
                await asyncio.sleep(0.2)
        self._lock_fd = fd


class LocalLauncher(Launcher):
    kind = "local"

    def __init__(self, run_id: str, env: dict[str, str] | None = None, tracking: str | None = None, *,
                 settings: dict[str, str] | None = None, isolate_home: bool = False,
                 inherit_env: bool = False) -> None:
        self.run_id = run_id
        self.secret_names = sorted(env or {})
        self.settings = dict(settings or {})
        self.env = {**self.settings, **(env or {})}
        self.isolate_home = isolate_home
        self.inherit_env = inherit_env
        # Read once a run: os.environ decodes every entry on each pass, for every agent process.
        self.base_env = dict(os.environ) if inherit_env else minimal_environment(os.environ)
        # Unix socket paths must stay short (about 100 bytes): a short folder under /tmp.
        self.socket_dir = tempfile.mkdtemp(prefix="acpj-", dir="/tmp")
        self._tracking_error: str | None = None
        try:
            self.trackers = TrackerFactory(run_id, prefer=tracking)
        except TrackingError as exc:  # said by check(), before any journey: exit 2
            self._tracking_error = str(exc)
            self.trackers = TrackerFactory(run_id, prefer="subreaper")
        self._sandboxes: list[LocalSandbox] = []

    async def check(self, argv: list[str]) -> None:
        if self._tracking_error:
            raise LaunchError(self._tracking_error)
        if not argv:
            raise LaunchError("no agent command: give it after --")
        program = argv[0]
        if os.sep in program:
            if not (os.path.isfile(program) and os.access(program, os.X_OK)):
                raise LaunchError(f"agent command not found or not executable: {program}")
        elif shutil.which(program, path=self.env.get("PATH", os.environ.get("PATH"))) is None:
            raise LaunchError(f"agent command not found on PATH: {program}")

    async def open_sandbox(self, journey_id: str) -> Sandbox:
        sandbox = LocalSandbox(self, journey_id)
        self._sandboxes.append(sandbox)
        return sandbox

    async def close(self) -> None:
        for sandbox in self._sandboxes:
            await sandbox.close()
        self._sandboxes.clear()
        await asyncio.to_thread(self.trackers.close)
        shutil.rmtree(self.socket_dir, ignore_errors=True)

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "tracking": self.trackers.method,
                "environment": "inherited" if self.inherit_env else "minimal",
                "own_home": self.isolate_home,
                "env": self.secret_names,  # names only: values are secrets
                "settings": self.settings}


def remove_tree(root: Path) -> None:
    """rm -rf, also of what an agent made read-only (a folder of mode 0o500 keeps its files)."""
    shutil.rmtree(root, ignore_errors=True)
    if not os.path.lexists(root):
        return
    try:
        os.chmod(root, stat.S_IRWXU)
    except OSError:
        pass
    for folder, subfolders, _ in os.walk(root):
        for name in subfolders:  # before os.walk descends into them
            path = os.path.join(folder, name)
            try:
                if not os.path.islink(path):
                    os.chmod(path, stat.S_IRWXU)
            except OSError:
                pass
    shutil.rmtree(root, ignore_errors=True)


def _unlink_if_same(path: str, written: os.stat_result) -> None:
    """Removes the file we wrote, never one that replaced it since."""
    try:
        now = os.lstat(path)
        if (now.st_dev, now.st_ino) == (written.st_dev, written.st_ino):
            os.unlink(path)
    except OSError:
        pass


def snapshot_tree(folder: str) -> dict[str, str]:
    out: dict[str, str] = {}
    root = Path(folder)
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            out[rel] = digest.hexdigest()
        elif path.is_dir():
            out[rel + "/"] = "dir"
    return out
