"""Where agent processes run: `local` (this machine) or `docker` (one container per journey).

Rules of this package: it imports only `launch/` (and the standard library, psutil, docker),
never the rest of acp_journeys. Code outside `launch/` imports from this module only: the seam
types, the two launchers, the agent-side relay command and the action's clean-up of a runner's
objects (remove_owned_by). These load on first use, so importing the seam costs no psutil and no
docker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_journeys.launch.agent_side import RELAY_SCRIPT, relay_command
from acp_journeys.launch.seam import (
    SESSION_FILES_DIR,
    AgentFiles,
    AgentProcess,
    AgentProcesses,
    Launcher,
    LaunchError,
    ProcInfo,
    Sandbox,
    ServiceLinks,
)

if TYPE_CHECKING:
    from acp_journeys.launch.docker.cleanup import remove_owned_by
    from acp_journeys.launch.docker.launcher import DockerLauncher
    from acp_journeys.launch.local import LocalLauncher

__all__ = [
    "SESSION_FILES_DIR", "AgentFiles", "AgentProcess", "AgentProcesses", "Launcher", "LaunchError",
    "ProcInfo", "Sandbox", "ServiceLinks",
    "LocalLauncher", "DockerLauncher", "RELAY_SCRIPT", "relay_command", "remove_owned_by",
]


def __getattr__(name: str) -> Any:
    if name == "LocalLauncher":
        from acp_journeys.launch.local import LocalLauncher

        return LocalLauncher
    if name == "DockerLauncher":
        from acp_journeys.launch.docker.launcher import DockerLauncher

        return DockerLauncher
    if name == "remove_owned_by":
        from acp_journeys.launch.docker.cleanup import remove_owned_by

        return remove_owned_by
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
