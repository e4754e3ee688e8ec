"""Which processes belong to one agent process, on this machine.

Rules of this module: find every process an agent started, also a daemon made with double fork
and `setsid`, which no parent/child walk from the agent can see. Best first: a cgroup of its own
(v2, else the v1 `pids` hierarchy), where membership cannot be escaped. Else a holder of its own
(`agent_side/subreaper.py`): a child subreaper started for this agent process alone, whose only
child is the agent, so every orphan of the agent is re-parented to it and to no other agent's
holder, and "a process below the holder" is exactly "a process of this agent" (seven agents at
once never mix). Both are exact (`Tracker.exact`): a command the agent runs is seen when it runs.
Should an agent kill its holder, what it held comes to the runner (a child subreaper too), and
tracking goes on by descent: a process is the agent's when it descends from the agent's pid, from
a process already seen as the agent's, or is in the agent's session (the agent starts as a
session leader), or carries the agent's environment token. Where even the subreaper call fails,
the method says "descent", the scan covers every process of the machine, and it is not exact.
It records and kills; it never judges.

It must not know ACP or any sandbox: pids and processes of this machine only.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
import uuid
from pathlib import Path


import psutil

from acp_journeys.launch.agent_side import SUBREAPER_SCRIPT
from acp_journeys.launch.seam import ProcInfo

TOKEN_ENV = "ACP_JOURNEYS_TRACK"
PR_SET_CHILD_SUBREAPER = 36
_CGROUP_ROOT = Path("/sys/fs/cgroup")


class TrackingError(Exception):
    """The tracking asked for cannot be set up on this machine."""


class Tracker:
    """One agent process's group of processes."""

    method = "none"
    exact = False
    """Every process of the agent is seen, however it was started (a cgroup, a holder of its own)."""
    holder = False
    """The agent process starts under a holder of its own (`holder_argv`)."""

    def __init__(self, name: str, reaps_orphans: bool = False) -> None:
        self.name = name
        self.token = f"{name}-{uuid.uuid4().hex[:12]}"
        self.root_pid: int | None = None
        """The agent's own pid, once started."""
        self.reaps_orphans = reaps_orphans
        """Orphans come to us (a subreaper, or pid 1 in a container): their zombies are ours."""

    def env(self) -> dict[str, str]:
        return {TOKEN_ENV: self.token}

    def wrap(self, argv: list[str]) -> list[str]:
        """The command line that starts `argv` already inside this group."""
        return argv

    def pids(self) -> list[int]:
        raise NotImplementedError

    def processes(self) -> list[ProcInfo]:
        found = []
        for pid in self.pids():
            try:
                proc = psutil.Process(pid)
                with proc.oneshot():  # the status and the name from one read of its stat file
                    if proc.status() == psutil.STATUS_ZOMBIE:
                        continue  # dead: only its parent's wait is missing
                    found.append(ProcInfo(pid, tuple(proc.cmdline()), proc.name()))
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def kill_all(self, bound_s: float = 5.0) -> None:
        deadline = time.monotonic() + bound_s
        while time.monotonic() < deadline:
            live = self.processes()
            if not live:
                break
            for info in live:
                try:
                    os.kill(info.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.05)
        if self.reaps_orphans:
            _reap_orphans()

    def close(self) -> None:
        self.kill_all()


class CgroupTracker(Tracker):
    def __init__(self, name: str, path: Path, version: int, reaps_orphans: bool = False) -> None:
        super().__init__(name, reaps_orphans)
        self.path = path
        self.method = f"cgroup-v{version}"
        self.exact = True

    def wrap(self, argv: list[str]) -> list[str]:
        # The shell joins the cgroup, then becomes the agent (same pid): so the agent is inside
        # before it can start anything. A preexec hook would do the same but forces a full
        # fork of the runner for every agent process, which costs far more.
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs"), *argv]

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def kill_all(self, bound_s: float = 5.0) -> None:
        kill_file = self.path / "cgroup.kill"
        if kill_file.exists():
            try:
                kill_file.write_text("1")
            except OSError:
                pass
        super().kill_all(bound_s)

    def close(self) -> None:
        # A cgroup with a live process in it cannot be removed: when the first rmdir works,
        # nothing was left to kill (the usual case: collect_leftovers killed and listed it all),
        # and a kill and a listing less per agent process.
        for attempt in range(21):
            try:
                self.path.rmdir()
                if attempt == 0 and self.reaps_orphans:
                    _reap_orphans()  # as kill_all would have: zombies of its orphans are ours
                return
            except FileNotFoundError:
                return
            except OSError:
                if attempt == 0:
                    self.kill_all()
                else:
                    time.sleep(0.05)


class DescentTracker(Tracker):
    """Below a holder of its own, else by descent from the agent's pid, its session and its token
    (see the module's rules)."""

    def __init__(self, name: str, subreaper: bool) -> None:
        super().__init__(name, reaps_orphans=subreaper or os.getpid() == 1)
        self.subreaper = subreaper
        self.holder = subreaper  # a holder can be a subreaper where the runner could become one
        self.method = "subreaper" if subreaper else "descent"
        self._holder: psutil.Process | None = None
        self.holder_exit: int | None = None
        """How the holder ended, once it has (set by the launcher): 0 when nothing was left below it."""
        self._seen: set[tuple[int, float]] = set()
        """(pid, start time) of every process once seen as the agent's: its orphans stay ours.
        A pid alone is no identity: under load pids wrap in minutes, and a number once the
        agent's (a shell's, the agent's own) may be another run's process now, a container's
        shim with every process below it."""
        self._root_started: float | None = None

    @property
    def root_pid(self) -> int | None:
        return self._root_pid

    @root_pid.setter
    def root_pid(self, pid: int | None) -> None:
        # Its start time now, while it surely runs: the identity its orphans and session keep.
        self._root_pid, self._root_started = pid, None
        if pid is not None:
            try:
                self._root_started = psutil.Process(pid).create_time()
            except psutil.Error:
                pass

    def holder_argv(self, status_fd: int, argv: list[str]) -> list[str]:
        """The command line that starts `argv` under a holder of its own, reporting on `status_fd`."""
        return [sys.executable, "-I", "-S", str(SUBREAPER_SCRIPT), str(status_fd), *argv]

    def held(self, holder_pid: int) -> None:
        """The holder is running (its pid); the agent's pid is `root_pid`."""
        try:
            self._holder = psutil.Process(holder_pid)  # with its start time: a reused pid is not it
        except psutil.Error:
            self._holder = None

    @property
    def exact(self) -> bool:  # type: ignore[override]
        return self._holder is not None and self.holder_exit in (None, 0)

    def pids(self) -> list[int]:
        if self._holder is not None:
            if self.holder_exit == 0:
                return []  # it ends only once nothing is left below it
            below = self._below_holder()
            if below is not None:
                return below
            # The holder was killed: what it held is the runner's now; go on by descent.
        # As a subreaper, every orphan of the agent is re-parented under us: our descendants are
        # enough. Without it, orphans go to init, so every process must be looked at.
        candidates = psutil.Process().children(recursive=True) if self.subreaper else psutil.process_iter()
        ours = set(self._seen)
        if self.root_pid is not None and self._root_started is not None:
            ours.add((self.root_pid, self._root_started))
        session = self._session_is_ours()
        found: list[int] = []
        for proc in candidates:
            try:
                if self._belongs(proc, ours, session):
                    found.append(proc.pid)
                    self._seen.add((proc.pid, proc.create_time()))
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return [pid for pid in found if self._holder is None or pid != self._holder.pid]

    def _below_holder(self) -> list[int] | None:
        """Every process below the live holder; None once it is gone (or was never its pid)."""
        holder = self._holder
        if holder is None or self.holder_exit is not None:
            return None
        try:
            if not holder.is_running() or holder.status() == psutil.STATUS_ZOMBIE:
                return None
        except psutil.Error:
            return None
        below = descendants(holder.pid)
        if below is None:
            return None
        for pid in below:  # remembered, should the holder be killed later
            try:
                self._seen.add((pid, psutil.Process(pid).create_time()))
            except psutil.Error:
                continue
        return below

    def kill_all(self, bound_s: float = 5.0) -> None:
        super().kill_all(bound_s)
        holder = self._holder
        if holder is not None and self.holder_exit is None:
            # Nothing is left below it: it ends by itself in a moment; a holder that does not
            # (stopped by a signal) is ended here. Its exit code is asyncio's to collect.
            deadline = time.monotonic() + 1.0
            try:
                while holder.is_running() and holder.status() != psutil.STATUS_ZOMBIE:
                    if time.monotonic() > deadline:
                        holder.kill()
                        break
                    time.sleep(0.01)
            except psutil.Error:
                pass

    def _session_is_ours(self) -> bool:
        """May a process in session `root_pid` count as the agent's? Not once that number is
        another process's: a session id lives only while its leader or a member does, so a
        live process of that pid but another start time leads a new session, not the agent's."""
        if self.root_pid is None:
            return False
        try:
            started = psutil.Process(self.root_pid).create_time()
        except psutil.Error:
            return True  # the agent is gone; whoever is still in its session is what it left
        return self._root_started is not None and abs(started - self._root_started) < 0.01

    def _belongs(self, proc: psutil.Process, ours: set[tuple[int, float]], session: bool) -> bool:
        if proc.pid == os.getpid():
            return False
        if (proc.pid, proc.create_time()) in self._seen:
            return True
        if session and self.root_pid is not None:
            try:
                if os.getsid(proc.pid) == self.root_pid:
                    return True
            except OSError:
                pass
        if any((parent.pid, parent.create_time()) in ours for parent in proc.parents()):
            return True
        try:
            return proc.environ().get(TOKEN_ENV) == self.token
        except (psutil.AccessDenied, psutil.ZombieProcess):
            return False


def descendants(root: int) -> list[int] | None:
    """Every process below `root` (not itself), from the kernel's lists of children of each
    thread: a walk of the tree itself, not of every process of the machine. None when `root` is
    gone."""
    if not _HAS_CHILDREN_LISTS:
        try:
            return [p.pid for p in psutil.Process(root).children(recursive=True)]
        except psutil.Error:
            return None
    found: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            if pid == root:
                return None
            continue  # ended meanwhile: its children (if any) are the holder's now, seen next time
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    children = [int(x) for x in f.read().split()]
            except OSError:
                continue
            found.extend(children)
            todo.extend(children)
    return found


_HAS_CHILDREN_LISTS = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


class TrackerFactory:
    """Picks the best way this machine allows, once per run, and makes one tracker per process."""

    def __init__(self, run_id: str, prefer: str | None = None) -> None:
        """prefer: None (the best this machine allows), "cgroup" (or TrackingError) or "subreaper"."""
        self.run_id = run_id
        self.base: Path | None = None
        self.version = 0
        self.subreaper = False
        if prefer != "subreaper":
            for version, base in _cgroup_candidates():
                run_dir = base / "acp-journeys" / run_id
                try:
                    run_dir.mkdir(parents=True, exist_ok=True)
                    probe = run_dir / "probe"
                    probe.mkdir()
                    (probe / "cgroup.procs").read_text()
                    probe.rmdir()
                except OSError:
                    continue
                self.base, self.version = run_dir, version
                break
            if self.base is None and prefer == "cgroup":
                raise TrackingError("--tracking cgroup: no cgroup (v2, or v1 pids) can be made here")
        if self.base is None:
            # Never claim a subreaper that failed to set up: the method then says "descent".
            self.subreaper = become_subreaper()
        # As pid 1 (the runner in its container) orphans come to us even without the subreaper.
        self.reaps_orphans = self.subreaper or os.getpid() == 1
        self._count = 0

    @property
    def method(self) -> str:
        if self.base is not None:
            return f"cgroup-v{self.version}"
        return "subreaper" if self.subreaper else "descent"

    def make(self, name: str) -> Tracker:
        self._count += 1
        if self.base is not None:
            path = self.base / f"{name}-{self._count}"
            path.mkdir(exist_ok=True)
            return CgroupTracker(name, path, self.version, self.reaps_orphans)
        return DescentTracker(name, self.subreaper)

    def close(self) -> None:
        if self.base is None:
            return
        for child in sorted(self.base.iterdir(), reverse=True):
            if child.is_dir():  # the other entries are the cgroup's own control files
                CgroupTracker("cleanup", child, self.version, self.reaps_orphans).close()
        for path in (self.base, self.base.parent):
            try:
                path.rmdir()
            except OSError:
                pass


def _cgroup_candidates() -> list[tuple[int, Path]]:
    """Writable places for our cgroups: v2 first (pure or the hybrid `unified` mount), then v1 pids."""
    out: list[tuple[int, Path]] = []
    own_v2 = ""
    own_pids = ""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controllers == "":
                own_v2 = path
            elif "pids" in controllers.split(","):
                own_pids = path
    except OSError:
        return out
    if (_CGROUP_ROOT / "cgroup.controllers").exists():
        out.append((2, _CGROUP_ROOT / own_v2.lstrip("/")))
    elif (_CGROUP_ROOT / "unified" / "cgroup.procs").exists():
        out.append((2, _CGROUP_ROOT / "unified" / own_v2.lstrip("/")))
    if (_CGROUP_ROOT / "pids" / "cgroup.procs").exists():
        out.append((1, _CGROUP_ROOT / "pids" / own_pids.lstrip("/")))
    return out


def become_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _reap_orphans() -> None:
    """Reap zombies re-parented to us (as a subreaper) that no asyncio watcher waits for."""
    for pid in _own_children():
        if pid in OWN_CHILDREN:
            continue  # asyncio's child watcher waits for it and wants its exit code
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                os.waitpid(pid, os.WNOHANG)
        except (psutil.Error, ChildProcessError, OSError):
            continue


def _own_children() -> list[int]:
    """Our direct children. The kernel lists them per thread; psutil's own way reads the stat
    file of every process of the machine, which cost more than all the rest of a run's tracking."""
    if not _HAS_CHILDREN_LISTS:  # a kernel without the list
        try:
            return [child.pid for child in psutil.Process().children()]
        except psutil.Error:
            return []
    pids: list[int] = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids.extend(int(x) for x in f.read().split())
        except OSError:
            continue  # a thread that ended since the listing
    return pids


OWN_CHILDREN: set[int] = set()
"""Pids of the processes we started ourselves; their exit belongs to asyncio's child watcher."""
