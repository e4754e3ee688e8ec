"""`acp-journeys action run WORK`: the run step's command inside the runner container. It runs
the `acp-journeys run` command line that prepare wrote (WORK/run.cli), with the values of the
env input's NAME=VALUE lines set in its own environment.

Rules of this module: the values reach this process only through its environment (ACPJ_ENV, and
the step's own variables for NAME alone), never a command line or a file; the run's redactor
masks them as it masks every --env value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

from acp_journeys.cli.action.inputs import Inputs, read_args


def environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The values of the env input's NAME=VALUE lines (checked as prepare checked them)."""
    return {name: value for name, value in Inputs(environ).env_lines() if value is not None}


def main(environ: MutableMapping[str, str], work: str) -> int:
    from acp_journeys.cli import main as cli_main

    argv = read_args(os.path.join(work, "run.cli"))
    environ.update(environment(environ))  # `--env NAME` in run.cli reads each from here
    return cli_main(argv)
