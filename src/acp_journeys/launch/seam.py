"""The seam between the journeys and the place an agent runs.

Rules of this module: interfaces only, at the bottom of `launch/` (every other module of
`launch/` may import it; it imports none of them). A journey talks to a `Sandbox` (one per
journey: a temp tree here, or a container) and to the `AgentProcess`es it starts; it never knows
which kind. Paths given to and taken from a sandbox are paths as the agent sees them.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass


SESSION_FILES_DIR = "/tmp/.rondar-session-files"
"""The folder outside the workspace where Rondar's session files live (the note of image-and-file).
A sandbox shares it like /tmp (mode 1777). The prompts name the same folder
(`rules.prompts.SESSION_FILES_DIR`); both are constants because neither layer may import the
other, and a test holds them equal."""


class LaunchError(Exception):
    """The agent could not be started at all (command not found, image missing). Exit 2."""


@dataclass(frozen=True)
class ProcInfo:
    """A process seen among an agent's processes."""

    pid: int
    cmdline: tuple[str, ...]
    name: str = ""

    @property
    def command(self) -> str:
        return " ".join(self.cmdline) or self.name


class AgentProcess(abc.ABC):
    """One running agent process with its three byte streams."""

    pid: int | None = None

    @abc.abstractmethod
    async def write(self, data: bytes) -> None:
        """Write to the agent's stdin. Raises `BrokenPipeError` once the agent is gone."""

    @abc.abstractmethod
    async def close_stdin(self) -> None:
        """Close the agent's stdin so that it sees end of file."""

    @abc.abstractmethod
    async def read_stdout(self, n: int) -> bytes:
        """Up to n bytes of stdout; b"" at end of file."""

    @abc.abstractmethod
    async def read_stderr(self, n: int) -> bytes:
        """Up to n bytes of stderr; b"" at end of file."""

    @abc.abstractmethod
    async def wait(self, timeout: float) -> int | None:
        """The exit code, or None when it has not exited within `timeout` seconds."""

    @abc.abstractmethod
    async def kill(self) -> None:
        """End the agent process itself (SIGTERM, then SIGKILL). Idempotent."""


class AgentFiles(abc.ABC):
    """A journey's files, at paths as the agent sees them: what the journeys write and compare."""

    workspace: str
    """The session `cwd`, as the agent sees it: fresh and empty for each journey."""

    @abc.abstractmethod
    async def write_file(self, path: str, data: bytes) -> None:
        """Write a file (creating folders) at a path as the agent sees it."""

    @abc.abstractmethod
    async def file_exists(self, path: str) -> bool: ...

    @abc.abstractmethod
    async def snapshot(self, folder: str) -> dict[str, str]:
        """Every file below `folder`: relative path -> sha256 of its bytes."""

    async def write_home_file(self, relative: str, data: bytes) -> str:
        """Write a file under the agent's home (a config file); returns its path as the agent sees it."""
        raise NotImplementedError(f"{type(self).__name__} has no agent home to write into")


class AgentProcesses(abc.ABC):
    """A journey's agent processes: starting one, and whatever it started, seen and killed."""

    extra_env: dict[str, str]
    """Environment for this journey's agent processes only, on top of the run's (set by the
    runner before the first agent starts, e.g. the scripted model endpoint's address). Each
    sandbox sets its own (empty) dict in `__init__`: a class-level default would be shared."""

    sees_every_process: bool = False
    """`agent_processes` shows every process of the agent however it was started (a cgroup, a
    container, a holder of its own), so a command it runs is seen when it runs. False where
    tracking is by descent alone and a process may escape it."""

    @abc.abstractmethod
    async def start_agent(self, argv: list[str]) -> AgentProcess:
        """Start one agent process. Raises `LaunchError` when it cannot start at all."""

    @abc.abstractmethod
    async def agent_processes(self) -> list[ProcInfo]:
        """The live processes that belong to the current agent process (itself included)."""

    @abc.abstractmethod
    async def collect_leftovers(self) -> list[ProcInfo]:
        """After the agent process ended: record every process it left, then kill them."""


class ServiceLinks(abc.ABC):
    """How the agent reaches the run's services (the rondar MCP hub, the scripted model), which
    live in the runner: the sandbox only says where, it never serves them."""

    @abc.abstractmethod
    def mcp_command(self) -> list[str]:
        """The command the agent runs for the `rondar` stdio MCP server (a relay to the runner)."""

    @property
    @abc.abstractmethod
    def mcp_socket_path(self) -> str:
        """Where the runner listens for this journey's MCP relay (a path on the runner's side)."""

    async def model_endpoint(self) -> tuple[str, str] | None:
        """Where the agent reaches the scripted model endpoint, when the agent cannot reach the
        runner's loopback (a container with no network): (a Unix socket path on the runner's
        side for the endpoint to listen on, the base URL the agent uses). None: the agent
        reaches the endpoint's own loopback address."""
        return None


class Sandbox(AgentFiles, AgentProcesses, ServiceLinks):
    """The place one journey runs (a temp tree here, or a container): its files, its processes
    and its links to the run's services, three small roles kept apart so that each reads alone;
    `close` removes all of it."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Remove everything this sandbox made. Idempotent; must not raise."""


class Launcher(abc.ABC):
    """Makes sandboxes for one run; `close` removes whatever the run left."""

    kind: str
    """"local" or "docker": each launcher says which it is (result.json's `launcher.kind`)."""

    @abc.abstractmethod
    async def open_sandbox(self, journey_id: str) -> Sandbox: ...

    async def check(self, argv: list[str]) -> None:
        """Fail fast with `LaunchError` before any journey when the run cannot be done."""

    async def close(self) -> None:
        """Remove what the run made. Idempotent."""

    def describe(self) -> dict[str, object]:
        """Facts about where the agent ran, for result.json."""
        return {"kind": self.kind}
