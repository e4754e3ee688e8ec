"""`acp-journeys action cleanup WORK`: the action's last step (`if: always()`), in a root runner
container with the engine's socket. It removes what this job's run left, also when its runner
was killed: the runner container (ACPJ_RUNNER_NAME), every container, volume and network whose
owner label names it, and what is inside the MCP sockets' folder that WORK/mcp-dir names
(mounted at its own path; the agents' files in it may be root's, the folder itself the user's).

Rules of this module: it never fails the job: what cannot be removed is one warning each, and
the exit code is 0. Only objects labelled with the runner's name, and only a folder named like
the run step's (/tmp/acpj.*), are touched.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping

from acp_journeys.cli.action.inputs import annotate
from acp_journeys.launch import remove_owned_by

MCP_DIR = re.compile(r"^/tmp/acpj\.[A-Za-z0-9_]+$")
"""The run step's `mktemp -d /tmp/acpj.XXXXXX`: nothing else is ever emptied."""


def cleanup(environ: Mapping[str, str], work: str) -> int:
    name = environ.get("ACPJ_RUNNER_NAME", "")
    if not name:
        return 0
    problems = remove_owned_by(name) + empty_mcp_dir(work)
    for problem in problems:
        annotate("warning", problem, environ)
    return 0


def empty_mcp_dir(work: str) -> list[str]:
    try:
        with open(os.path.join(work, "mcp-dir"), encoding="utf-8") as fh:
            folder = fh.readline().strip()
    except OSError:
        return []  # the run step did not get so far
    if not MCP_DIR.match(folder) or not os.path.isdir(folder) or os.path.islink(folder):
        return []
    problems: list[str] = []
    for entry in os.scandir(folder):
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError as exc:
            problems.append(f"could not remove {entry.path}: {exc.strerror or exc}")
    return problems
