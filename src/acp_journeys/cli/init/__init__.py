"""`acp-journeys init`: write the PR-check workflow (`workflow`) or a matrix of agents (`matrix`)
into an agent repository.

Rules of this package: the workflow file is the only file written; a file that is not a workflow
is an `InitError` (exit 2) and stays untouched.
"""

from __future__ import annotations

import argparse
import os
import sys

from acp_journeys.cli.common import EXIT_PASS, UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    init = sub.add_parser(
        "init", help="write the PR-check workflow into an agent repo",
        description="Write (or update in place) .github/workflows/acp-journeys.yml in an agent repository: "
                    "on pull requests and pushes to the default branch, it builds the agent's image from its "
                    "Dockerfile, runs the journeys and posts the verdict as a check run.")
    init.add_argument("--path", default=".", metavar="REPO",
                      help="the agent repository (default: the current folder)")
    init.add_argument("--agent-command", required=True, metavar="CMD",
                      help="the command line that starts the agent in ACP mode, inside its image "
                           "(e.g. '/agent/bin/my-agent --acp')")
    init.add_argument("--dockerfile", metavar="PATH",
                      help="the agent's Dockerfile, relative to REPO (default: Dockerfile); it must exist")
    init.add_argument("--matrix", action="store_true",
                      help="a new workflow that spreads the journeys over a matrix, with one merged check")


def run(args: argparse.Namespace) -> int:
    from acp_journeys.cli.init.workflow import InitError, default_branch, init_workflow, missing_dockerfile

    # Checked before anything is written: a workflow whose image cannot be built would only go red.
    problem = missing_dockerfile(args.path, args.dockerfile) if os.path.isdir(args.path) else None
    if problem:
        raise UsageError(problem)
    branch = default_branch(args.path) if os.path.isdir(args.path) else None
    try:
        if args.matrix:
            from acp_journeys.cli.init.matrix import init_matrix_workflow

            outcome = init_matrix_workflow(args.path, args.agent_command, args.dockerfile, branch=branch)
        else:
            outcome = init_workflow(args.path, args.agent_command, args.dockerfile, branch=branch)
    except InitError as exc:
        raise UsageError(str(exc)) from None
    print(outcome.message)
    if outcome.action == "created" and branch is not None:
        print(f"on: pull requests, and pushes to {branch[0]} ({branch[1]})")
    for note in outcome.notes:
        print(f"note: {note}")
    for warning in outcome.warnings:
        print(f"acp-journeys: warning: {warning}", file=sys.stderr)
    if outcome.action != "unchanged":
        for step in next_steps(outcome.path, args.path, args.agent_command, args.dockerfile):
            print(f"next: {step}")
    return EXIT_PASS


def next_steps(workflow, repo: str, agent_command: str, dockerfile: str | None) -> list[str]:
    """What to do after init: try it here, then commit and push."""
    import shlex

    relative = os.path.relpath(workflow, repo)
    image = "my-agent:dev"
    # As the action builds it: the repository is the context, the Dockerfile relative to it.
    if os.path.abspath(repo) == os.path.abspath("."):
        build = f"docker build -t {image}" + (f" -f {shlex.quote(dockerfile)}" if dockerfile else "") + " ."
    else:
        build = (f"docker build -t {image} -f {shlex.quote(os.path.join(repo, dockerfile or 'Dockerfile'))} "
                 f"{shlex.quote(repo)}")
    return [f"try it here first: {build} && acp-journeys run --image {image} -- {agent_command}",
            f"commit {relative} and push it: the check 'ACP journeys' then runs on every pull request",
            "for the release gate: https://github.com/rondar/acp-journeys/blob/v1/examples/workflows/release-gate.yml"]
