"""`acp-journeys init`: write the PR-check workflow (`workflow`) or a matrix of agents (`matrix`)
into an agent repository.

Rules of this package: the workflow file is the only file written; a file that is not a workflow
is an `InitError` (exit 2) and stays untouched.
"""

from __future__ import annotations

import argparse
import sys

from acp_journeys.cli.common import EXIT_PASS, UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    init = sub.add_parser("init", help="write the PR-check workflow into an agent repo")
    init.add_argument("--path", default=".", metavar="REPO")
    init.add_argument("--agent-command", required=True, metavar="CMD")
    init.add_argument("--dockerfile", metavar="PATH")
    init.add_argument("--matrix", action="store_true",
                      help="a new workflow that spreads the journeys over a matrix, with one merged check")


def run(args: argparse.Namespace) -> int:
    from acp_journeys.cli.init.workflow import InitError, init_workflow

    try:
        if args.matrix:
            from acp_journeys.cli.init.matrix import init_matrix_workflow

            outcome = init_matrix_workflow(args.path, args.agent_command, args.dockerfile)
        else:
            outcome = init_workflow(args.path, args.agent_command, args.dockerfile)
    except InitError as exc:
        raise UsageError(str(exc)) from None
    print(outcome.message)
    for note in outcome.notes:
        print(f"note: {note}")
    for warning in outcome.warnings:
        print(f"acp-journeys: warning: {warning}", file=sys.stderr)
    return EXIT_PASS


