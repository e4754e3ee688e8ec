"""The command line: run, verify, list (and the parts other modules add).

Rules of this module: parse, wire, print, pick the exit code. 0: every journey passed. 1: a
journey failed (or verify found a failing result). 2: the run could not be done or the input is
bad, with a message and no traceback. 130/143: stopped by Ctrl-C/SIGTERM (a partial result.json
is still written).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
import tempfile
import uuid
from importlib import resources
from typing import Sequence

from acp_journeys import __version__, catalog

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def reference_agent_path() -> str:
    return str(resources.files("acp_journeys").joinpath("bundled/reference_agent.py"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-journeys",
        description="Drive an ACP agent through Rondar's user journeys and judge what it does.")
    parser.add_argument("--version", action="version", version=f"acp-journeys {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the journeys against an agent command",
                         usage="acp-journeys run [options] (--demo | -- COMMAND [ARG...])")
    run.add_argument("--journey", action="append", dest="journeys", metavar="ID",
                     help="a journey to run (repeatable; default: all 7)")
    run.add_argument("--output", "-o", default="result.json", help="where to write result.json")
    run.add_argument("--parallel", type=int, default=None, metavar="N",
                     help="journeys at once (default: all at once)")
    run.add_argument("--timeout-scale", type=float, default=1.0, metavar="F",
                     help="multiply the initialize/request/turn bounds (not Rondar's 10 s and 30 s rules)")
    run.add_argument("--transcripts", action="store_true", help="keep the transcripts of passing journeys too")
    run.add_argument("--strict", action="store_true", help="schema violations and stdout noise fail the journey")
    run.add_argument("--demo", action="store_true", help="run against the bundled reference agent")
    run.add_argument("--docs-url", default=catalog.DEFAULT_DOCS_URL, help="the base of failure links")
    run.add_argument("--env", action="append", default=[], metavar="NAME[=VALUE]",
                     help="set an environment variable for the agent (its value is a secret)")
    run.add_argument("--tracking", choices=("auto", "subreaper"), default="auto", help=argparse.SUPPRESS)
    run.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    run.add_argument("agent", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")

    verify = sub.add_parser("verify", help="judge a result.json again from its evidence")
    verify.add_argument("path")

    sub.add_parser("list", help="the journeys and the checks, with failure ids and doc anchors")
    sub.add_parser("schema", help="print the JSON Schema of result.json")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "verify":
            return _verify(args)
        if args.command == "list":
            print(list_text())
            return EXIT_PASS
        if args.command == "schema":
            import json

            from acp_journeys.report.result_json import json_schema

            print(json.dumps(json_schema(), indent=2))
            return EXIT_PASS
    except UsageError as exc:
        print(f"acp-journeys: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_USAGE


def list_text(docs_url: str = catalog.DEFAULT_DOCS_URL) -> str:
    lines = ["Checks on every agent process (" + catalog.doc_link("step-2", docs_url) + "):"]
    for failure_id, text in catalog.PROCESS_CHECKS:
        lines.append(f"  {failure_id:<30} {text}")
    for journey in catalog.JOURNEYS:
        lines += ["", f"{journey.id}: {journey.title} ({catalog.doc_link(journey.anchor, docs_url)})"]
        for failure_id in catalog.JOURNEY_FAILURES[journey.id]:
            kind = catalog.FAILURES[failure_id]
            anchor = catalog.anchor_for(failure_id, journey.id)
            lines.append(f"  {failure_id:<30} #{anchor:<8} {kind.message}")
    lines += ["", "With --strict:"]
    for kind in catalog.FAILURES.values():
        if kind.tier == "strict":
            lines.append(f"  {kind.id:<30} #{kind.anchor:<8} {kind.message}")
    return "\n".join(lines)


def _agent_argv(args: argparse.Namespace) -> list[str]:
    agent = list(args.agent)
    if agent and agent[0] == "--":
        agent = agent[1:]
    if args.demo:
        if agent:
            raise UsageError("--demo runs the bundled reference agent: give no COMMAND with it")
        return [sys.executable, reference_agent_path()]
    if not agent:
        raise UsageError("no agent command: acp-journeys run [options] -- COMMAND [ARG...] (or --demo)")
    return agent


def _run(args: argparse.Namespace) -> int:
    from acp_journeys.journeys.driver import Bounds
    from acp_journeys.launch.base import LaunchError
    from acp_journeys.launch.local import LocalLauncher
    from acp_journeys.redact import Redactor, parse_env_option
    from acp_journeys.report import console, result_json
    from acp_journeys.runner import Run, RunConfig

    argv = _agent_argv(args)
    journeys = args.journeys or list(catalog.JOURNEY_IDS)
    unknown = [j for j in journeys if j not in catalog.JOURNEYS_BY_ID]
    if unknown:
        raise UsageError(f"unknown journey {', '.join(unknown)}; the journeys are: {', '.join(catalog.JOURNEY_IDS)}")
    journeys = list(dict.fromkeys(journeys))
    if args.parallel is not None and args.parallel < 1:
        raise UsageError("--parallel takes a whole number of 1 or more")
    if not args.timeout_scale > 0:
        raise UsageError("--timeout-scale takes a number above 0")

    redactor = Redactor()
    env: dict[str, str] = {}
    for option in args.env:
        try:
            name, value = parse_env_option(option)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        env[name] = value
        redactor.add(value)
    demo_state = None
    if args.demo:
        # The reference agent keeps its sessions here; the run removes it at the end.
        demo_state = tempfile.mkdtemp(prefix="acp-journeys-demo-")
        env.setdefault("ACP_REFERENCE_AGENT_STATE", demo_state)

    run_id = uuid.uuid4().hex[:12]
    launcher = LocalLauncher(run_id, env=env, tracking=None if args.tracking == "auto" else args.tracking)
    progress = console.Progress(redactor=redactor, quiet=args.quiet)
    config = RunConfig(argv=argv, journeys=journeys, parallel=args.parallel,
                       bounds=Bounds(scale=args.timeout_scale), strict=args.strict,
                       transcripts=args.transcripts, docs_url=args.docs_url)
    try:
        try:
            asyncio.run(launcher.check(argv))
        except LaunchError as exc:
            asyncio.run(launcher.close())
            raise UsageError(str(exc)) from None
        progress.say(f"running {len(journeys)} journey(s) against: {' '.join(argv)} "
                     f"({launcher.describe().get('tracking')} tracking)")
        result, stopped_by = asyncio.run(_execute(Run(config, launcher, progress)))
    finally:
        if demo_state:
            shutil.rmtree(demo_state, ignore_errors=True)
    result_json.write(result, args.output, redactor)
    print(redactor.redact(console.table(result)))
    print(f"result: {args.output}")
    if stopped_by is not None:
        print(f"acp-journeys: stopped by {signal.Signals(stopped_by).name}; {args.output} is partial",
              file=sys.stderr)
        return 128 + stopped_by
    return EXIT_PASS if result.verdict == "pass" else EXIT_FAIL


async def _execute(run) -> tuple[object, int | None]:
    """Runs with SIGINT/SIGTERM turned into a clean stop of every journey."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    stopped: list[int] = []
    inner = asyncio.create_task(run.execute())

    def stop(signum: int) -> None:
        if not stopped:
            stopped.append(signum)
            inner.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop, signum)
    try:
        result = await inner
    except asyncio.CancelledError:
        result = run.result
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
    del task
    return result, (stopped[0] if stopped else None)


def _verify(args: argparse.Namespace) -> int:
    from acp_journeys.judge import judge_result
    from acp_journeys.report import console, result_json

    try:
        stored = result_json.read(args.path)
    except result_json.ResultFileError as exc:
        raise UsageError(str(exc)) from None
    result = judge_result(stored)
    print(console.table(result))
    changed = [j.id for j, s in zip(result.journeys, stored.journeys)
               if j.verdict != s.verdict or [f.id for f in j.failures] != [f.id for f in s.failures]]
    if changed:
        print(f"note: the stored verdicts of {', '.join(changed)} do not match their evidence; "
              "the verdict above is the one computed from the evidence", file=sys.stderr)
    return EXIT_PASS if result.verdict == "pass" else EXIT_FAIL


if __name__ == "__main__":
    raise SystemExit(main())
