"""`acp-journeys action cleanup`: the action's last step (`if: always()`), in a runner container
with the engine's socket. It removes what this job's run left, also when its runner was killed:
the runner container (ACPJ_RUNNER_NAME) and every container, volume (the MCP sockets' among them)
and network whose owner label names it.

Rules of this module: it never fails the job: what cannot be removed is one warning each, and
the exit code is 0. Only objects labelled with the runner's name are touched.
"""

from __future__ import annotations

from collections.abc import Mapping

from acp_journeys.cli.action.inputs import annotate
from acp_journeys.launch import remove_owned_by


def cleanup(environ: Mapping[str, str]) -> int:
    name = environ.get("ACPJ_RUNNER_NAME", "")
    if not name:
        return 0
    for problem in remove_owned_by(name):
        annotate("warning", problem, environ)
    return 0
