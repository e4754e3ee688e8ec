"""`acp-journeys action JOB`: the logic of the GitHub Action's steps (action.yml, merge/action.yml),
run in the runner image by the thin shell of action/steps.sh, which keeps only docker's part.

  prepare          check every input (the run's through plan_run), make the work folder, write
                   what the shell hands to docker; outputs work, result-path, html-path, ...
  run WORK         the run step's journeys (WORK/run.cli), the env input's values set here
  report WORK      the check run, the job summary and the outputs
  gate WORK        verify WORK/result.json: fail the job as fail-on-failure says
  merge-prepare    the merge action's inputs and work folder
  merge WORK       merge the matrix's results, and write their HTML report
  cleanup          remove what the job's run left (with the engine's socket)

Rules of this package: one module per job, each reads the step's inputs from the environment
(`ACPJ_*`, see inputs.py) and, after prepare, from WORK/inputs.json (the inputs that prepare
checked, which win), and nothing else; exit 2 with one `::error::` line for a bad input.
"""

from __future__ import annotations

import argparse
import os
import sys

from acp_journeys.cli.common import EXIT_USAGE, UsageError
from acp_journeys.output.logtext import one_line

JOBS = ("prepare", "run", "report", "gate", "merge-prepare", "merge", "cleanup")


def add_parser(sub: argparse._SubParsersAction) -> None:
    action = sub.add_parser("action", help="a step of the GitHub Action (its inputs from ACPJ_* variables)")
    action.add_argument("job", choices=JOBS)
    action.add_argument("work", nargs="?", help="the work folder that prepare made (every job but prepare and cleanup)")


def run(args: argparse.Namespace) -> int:
    from acp_journeys.cli.action import cleanup, merge, prepare, report, run_step
    from acp_journeys.cli.action.inputs import annotate

    environ = os.environ
    try:
        if args.job in ("prepare", "merge-prepare"):
            return prepare.main(environ) if args.job == "prepare" else merge.prepare(environ)
        if args.job == "cleanup":
            return cleanup.cleanup(environ)
        if not args.work:
            raise UsageError(f"action {args.job} WORK: give the work folder that prepare made")
        jobs = {"run": run_step.main, "report": report.report, "gate": report.gate, "merge": merge.merge}
        return jobs[args.job](environ, args.work)
    except UsageError as exc:
        annotate("error", str(exc), environ)
        if environ.get("ACPJ_MESSAGES"):  # printed after the pause; a line of the log now, too
            print(f"acp-journeys: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
