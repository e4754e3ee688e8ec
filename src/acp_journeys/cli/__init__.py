"""The command line: run, verify, list (and the parts other modules add).

Rules of this module: parse, wire, print, pick the exit code. 0: every journey passed. 1: a
journey failed (or verify found a failing result). 2: the run could not be done or the input is
bad, with a message and no traceback. 130/143: stopped by Ctrl-C/SIGTERM (a partial result.json
is still written).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import shutil
import signal
import sys
import tempfile
import uuid
from importlib import resources
from typing import Sequence

from acp_journeys import __version__
from acp_journeys.rules import catalog
from acp_journeys.output.logtext import command_data, one_line

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def reference_agent_path() -> str:
    return str(resources.files("acp_journeys").joinpath("demo/reference_agent.py"))


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
                     help="set an environment variable for the agent; NAME alone passes this "
                          "environment's value (values are secrets: never printed or stored)")
    run.add_argument("--setting", action="append", default=[], metavar="NAME[=VALUE]",
                     help="set an environment variable for the agent that is no secret (a path, a "
                          "model name): shown as it is in result.json and every output; NAME alone "
                          "passes this environment's value")
    run.add_argument("--isolate-home", action="store_true",
                     help="local mode: each journey gets an empty HOME of its own (always so with "
                          "--model-stub, and in docker mode)")
    run.add_argument("--inherit-env", action="store_true",
                     help="local mode: the agent gets this whole environment, not only PATH, HOME, "
                          "USER, the locale and TERM (plus --env and --setting)")
    run.add_argument("--image", metavar="IMAGE",
                     help="run each journey in its own container made from IMAGE (docker mode)")
    run.add_argument("--network", action="store_true", help="docker mode: give the agent the default bridge")
    run.add_argument("--login", action="append", default=[], metavar="SRC[:DEST]",
                     help="docker mode: mount a file or folder read-only (DEST: same path under the "
                          "container user's home); its content is a secret")
    run.add_argument("--pull", choices=("never", "missing"), default="never",
                     help="docker mode: pull IMAGE when it is missing (default: never)")
    run.add_argument("--agent-dir", metavar="DIR", help="docker mode: mount DIR at /agent in each container")
    run.add_argument("--subject-sha", metavar="SHA", help="the commit under test, for release gates")
    run.add_argument("--model-stub", action="store_true",
                     help="serve a scripted model endpoint for the run; {model_url} in --env values "
                          "(and config templates) becomes its address")
    run.add_argument("--model-stub-config-template", action="append", default=[], metavar="SRC:DEST",
                     help="with --model-stub: write SRC, {model_url} filled, at DEST under the agent's home")
    _add_report_options(run)
    run.add_argument("--tracking", choices=("auto", "cgroup", "subreaper"), default="auto",
                     help="local mode: how the agent's processes are found (default auto: a cgroup where "
                          "one can be made, else by descent under a subreaper); result.json says which")
    run.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    run.add_argument("agent", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")

    verify = sub.add_parser("verify", help="judge a result.json again from its evidence")
    verify.add_argument("path")
    verify.add_argument("--journey", action="append", dest="journeys", metavar="ID",
                        help="a journey the file must hold (repeatable; default: all 7); a file without "
                             "one of them is a partial verdict (exit 1)")
    verify.add_argument("--expect-sha", metavar="SHA",
                        help="also fail when the result belongs to another commit or agent image")
    _add_report_options(verify)

    report = sub.add_parser("report", help="publish a result.json (a GitHub check run and job summary, an HTML page)")
    report.add_argument("path")
    report.add_argument("--github", action="store_true",
                        help="post a check run and write the job summary and step outputs")
    report.add_argument("--html", metavar="OUT", help="write the self-contained HTML report of the result")
    report.add_argument("--artifact-url", metavar="URL",
                        help="with --github: the artifact that holds the HTML report, linked from the summaries")
    report.add_argument("--token", help="the GitHub token (default: $GITHUB_TOKEN)")
    report.add_argument("--check-name", default="ACP journeys")
    report.add_argument("--docs-url", default=None, help="the base of failure links (default: the result's)")
    report.add_argument("--baseline", metavar="FILE", help="the expected-failures baseline (YAML)")
    report.add_argument("--no-check-run", action="store_false", dest="post_check",
                        help="write the job summary and step outputs only (a matrix job: the merge posts the check)")

    init = sub.add_parser("init", help="write the PR-check workflow into an agent repo")
    init.add_argument("--path", default=".", metavar="REPO")
    init.add_argument("--agent-command", required=True, metavar="CMD")
    init.add_argument("--dockerfile", metavar="PATH")
    init.add_argument("--matrix", action="store_true",
                      help="a new workflow that spreads the journeys over a matrix, with one merged check")

    from acp_journeys.cli import merge as merge_cli

    merge_cli.add_parser(sub)

    sub.add_parser("mcp-server", help="serve the rondar MCP tools on stdio (to try them by hand)")

    sub.add_parser("list", help="the journeys and the checks, with failure ids and doc anchors")
    sub.add_parser("schema", help="print the JSON Schema of result.json")
    return parser


def _add_report_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--junit", metavar="PATH", help="also write a JUnit XML report")
    parser.add_argument("--html", metavar="OUT", help="also write a self-contained HTML report with a timeline "
                                                      "of each journey")
    parser.add_argument("--baseline", metavar="FILE",
                        help="expected failures (YAML): pass when only these fail; a stale entry fails")


def main(argv: Sequence[str] | None = None) -> int:
    # Agent text may hold lone surrogates (JSON allows "\ud800"): print them escaped, never crash.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "verify":
            return _verify(args)
        if args.command == "report":
            return _report(args)
        if args.command == "init":
            return _init(args)
        if args.command == "merge":
            from acp_journeys.cli import merge as merge_cli

            return merge_cli.run(args)
        if args.command == "mcp-server":
            from acp_journeys.services.mcp_hub import serve_stdio

            asyncio.run(serve_stdio())
            return EXIT_PASS
        if args.command == "list":
            print(list_text())
            return EXIT_PASS
        if args.command == "schema":
            import json

            from acp_journeys.output.result_file import json_schema

            print(json.dumps(json_schema(), indent=2))
            return EXIT_PASS
    except UsageError as exc:
        print(f"acp-journeys: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): stop quietly, as Unix tools do on SIGPIPE.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # our bug: one line, never a traceback, and exit 2 (never the agent's fault)
        print(f"acp-journeys: internal error: {_one_line(exc, show_message=args.command != 'run')} (please "
              "report it at https://github.com/rondar/acp-journeys/issues with the command you ran)",
              file=sys.stderr)
        return EXIT_USAGE
    return EXIT_USAGE


def _one_line(exc: BaseException, show_message: bool) -> str:
    """The error and where in our code it happened; not the message of `run`, which may hold a
    secret that no redactor saw."""
    frame = exc.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    where = f" at {os.path.basename(frame.tb_frame.f_code.co_filename)}:{frame.tb_lineno}" if frame else ""
    message = " ".join(str(exc).split())[:300] if show_message else ""
    return f"{type(exc).__name__}{where}{': ' + message if message else ''}"


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
    kind = catalog.FAILURES["evidence-incomplete"]
    lines += ["", "On a result.json that verify judges:", f"  {kind.id:<30} #{kind.anchor} {kind.message}"]
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


def absolute_paths(argv: list[str]) -> list[str]:
    """Relative paths of the command, taken from where the user runs us: the agent's process
    starts in the journey's workspace, where `./agent.py` would name nothing."""
    out = []
    for i, arg in enumerate(argv):
        relative = not arg.startswith(("-", "/")) and (os.sep in arg or i > 0)
        out.append(os.path.abspath(arg) if relative and os.path.exists(arg) else arg)
    return out


def _run(args: argparse.Namespace) -> int:
    from acp_journeys.editor.session import Bounds
    from acp_journeys.launch import LaunchError
    from acp_journeys.launch import LocalLauncher
    from acp_journeys.output.redact import Redactor, parse_env_option
    from acp_journeys.output import console, result_file
    from acp_journeys.runner import ModelStubConfig, Run, RunConfig

    argv = _agent_argv(args)
    if not args.image:
        argv = absolute_paths(argv)
    journeys = _journey_ids(args.journeys or list(catalog.JOURNEY_IDS))
    if args.parallel is not None and args.parallel < 1:
        raise UsageError("--parallel takes a whole number of 1 or more")
    if not args.timeout_scale > 0:
        raise UsageError("--timeout-scale takes a number above 0")

    baseline = _load_baseline(args.baseline)
    redactor = Redactor()
    env: dict[str, str] = {}
    stub_env: dict[str, str] = {}
    from acp_journeys.services.model_stub.placeholders import PLACEHOLDER, parse_config_template

    for option in args.env:
        try:
            name, value = parse_env_option(option)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if args.model_stub and PLACEHOLDER in value:
            stub_env[name] = value  # an address template, filled per journey; not a secret
            continue
        env[name] = value
        redactor.add(value)
    settings: dict[str, str] = {}
    for option in args.setting:
        try:
            name, value = parse_env_option(option, flag="--setting")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if name in env or name in stub_env:
            raise UsageError(f"{name} is given with --env and --setting: one or the other")
        if args.model_stub and PLACEHOLDER in value:
            stub_env[name] = value
            continue
        settings[name] = value
    stub_files: list[tuple[str, str]] = []
    for option in args.model_stub_config_template:
        if not args.model_stub:
            raise UsageError("--model-stub-config-template goes with --model-stub")
        try:
            source, dest = parse_config_template(option)
            stub_files.append((open(source, encoding="utf-8").read(), dest))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"--model-stub-config-template {option}: {exc.strerror or exc}") from None
    if args.model_stub and not stub_env and not stub_files:
        print(f"acp-journeys: warning: --model-stub, but no --env or --setting value or config template holds "
              f"{PLACEHOLDER}: the agent is not told where the endpoint is", file=sys.stderr)
    demo_state = None
    if args.demo:
        # The reference agent keeps its sessions here; the run removes it at the end.
        demo_state = tempfile.mkdtemp(prefix="acp-journeys-demo-")
        env.setdefault("ACP_REFERENCE_AGENT_STATE", demo_state)

    logins = []
    for option in args.login:
        source, _, dest = option.partition(":")
        if not os.path.exists(source):
            raise UsageError(f"--login {source}: no such file or folder")
        redactor.add_path(source)
        logins.append((os.path.abspath(source), dest))
    if not args.image and (args.network or logins or args.agent_dir):
        raise UsageError("--network, --login and --agent-dir need docker mode (--image IMAGE)")
    if args.image and args.inherit_env:
        raise UsageError("--inherit-env is for local mode: a container gets only --env and --setting")

    run_id = uuid.uuid4().hex[:12]
    if args.image:
        from acp_journeys.launch import DockerLauncher

        if args.demo:
            # The runner image carries the reference agent at a fixed path.
            argv = ["python3", "/opt/acp-journeys/reference_agent.py"]
            env["ACP_REFERENCE_AGENT_STATE"] = "/tmp/acp-reference-agent"
        launcher = DockerLauncher(args.image, run_id=run_id, network=args.network, env=env, settings=settings,
                                  logins=logins,
                                  pull=args.pull, agent_dir=os.path.abspath(args.agent_dir) if args.agent_dir else None)
    else:
        # A home of its own under --model-stub: the config templates go there, and the user's
        # own configuration (a real model's endpoint and login) must not mix with the stub's.
        launcher = LocalLauncher(run_id, env=env, tracking=None if args.tracking == "auto" else args.tracking,
                                 settings=settings, isolate_home=args.isolate_home or args.model_stub,
                                 inherit_env=args.inherit_env)
    progress = console.Progress(redactor=redactor, quiet=args.quiet)
    subject = {}
    if args.subject_sha or os.environ.get("GITHUB_SHA"):
        subject["sha"] = args.subject_sha or os.environ["GITHUB_SHA"]
    if args.image:
        subject["image"] = args.image
    try:
        try:
            asyncio.run(launcher.check(argv))
        except LaunchError as exc:
            asyncio.run(launcher.close())
            raise UsageError(str(exc)) from None
        where = f"in containers of {args.image}" if args.image else \
            f"here, {launcher.describe().get('tracking')} tracking"
        progress.say(f"running {len(journeys)} journey(s) against: {' '.join(argv)} ({where})")
        config = RunConfig(argv=argv, journeys=journeys, parallel=args.parallel,
                           bounds=Bounds(scale=args.timeout_scale), strict=args.strict,
                           transcripts=args.transcripts, docs_url=args.docs_url, subject=subject,
                           model_stub=ModelStubConfig(stub_env, stub_files, redactor.redact)
                           if args.model_stub else None)
        result, stopped_by = asyncio.run(_execute(Run(config, launcher, progress)))
    finally:
        if demo_state:
            shutil.rmtree(demo_state, ignore_errors=True)
    # Everything printed or written from here on comes from the masked copy, judged as verify will.
    masked = result_file.masked_and_judged(result, redactor)
    changed = [j.id for j, m in zip(result.journeys, masked.journeys)
               if (j.verdict, [f.id for f in j.failures]) != (m.verdict, [f.id for f in m.failures])]
    if changed:
        print(f"acp-journeys: warning: masking the secrets changed the verdict of {', '.join(changed)}: a "
              "secret value also occurs in what the judge reads; the verdict shown is the one of the "
              "written file", file=sys.stderr)
    result = masked
    try:
        result_file.write(result, args.output)
        write_error = None
    except Exception as exc:  # our own failure: the verdicts are still printed, then exit 2
        write_error = str(exc) if isinstance(exc, result_file.ResultFileError) else f"{type(exc).__name__}: {exc}"
    code = _publish(result, args, baseline)
    if write_error is not None:
        print(f"acp-journeys: error: runner-error: {args.output} could not be written ({write_error}); the "
              "verdicts above are not stored (not a finding about the agent)", file=sys.stderr)
        return EXIT_USAGE
    print(f"result: {args.output}")
    if stopped_by is not None:
        print(f"acp-journeys: stopped by {signal.Signals(stopped_by).name}; {args.output} is partial",
              file=sys.stderr)
        return 128 + stopped_by
    return code


def _load_baseline(path: str | None):
    if not path:
        return None
    from acp_journeys.output.bounded_file import load_baseline
    from acp_journeys.rules.baseline import BaselineError

    try:
        return load_baseline(path)
    except BaselineError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"--baseline {path}: {exc.strerror or exc}") from None


def _publish(result, args: argparse.Namespace, baseline) -> int:
    """The table, the baseline's word and the JUnit file; returns the exit code of the verdict."""
    from acp_journeys.output import console

    print(console.table(result))
    outcome = None
    verdict = result.verdict
    if baseline is not None:
        from acp_journeys.rules.baseline import apply_baseline

        outcome = apply_baseline(result, baseline)
        print("")
        for message in outcome.messages:
            print(f"baseline: {one_line(message)}")
        print(f"verdict under the baseline: {outcome.verdict.upper()}")
        verdict = outcome.verdict
    if args.junit:
        from acp_journeys.output.junit import write_junit

        write_junit(result, args.junit, docs_url=result.docs_url, baseline=outcome)
        print(f"junit: {args.junit}")
    if args.html and not _write_html(result, args.html, result.docs_url, outcome):
        return EXIT_USAGE
    ours = [j.id for j in result.journeys if any(f.id == "runner-error" for f in j.failures)]
    if ours:
        # Our own failure is no finding about the agent: a gate must not blame the agent for it.
        print(f"acp-journeys: error: acp-journeys itself failed in {one_line(', '.join(ours))} (not a finding about "
              "the agent); see runner_error in the result", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_PASS if verdict == "pass" else EXIT_FAIL


def _write_html(result, path: str, docs_url: str, outcome) -> bool:
    from acp_journeys.output.html.report import write_html

    try:
        write_html(result, path, docs_url=docs_url, baseline=outcome)
    except OSError as exc:
        print(f"acp-journeys: error: cannot write the HTML report {path}: {exc.strerror or exc}", file=sys.stderr)
        return False
    print(f"html: {path}")
    return True


async def _execute(run) -> tuple[object, int | None]:
    """Runs with SIGINT/SIGTERM turned into a clean stop of every journey."""
    loop = asyncio.get_running_loop()
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
    return result, (stopped[0] if stopped else None)


def _verify(args: argparse.Namespace) -> int:
    accepted = _journey_ids(args.journeys) if args.journeys else list(catalog.JOURNEY_IDS)
    baseline = _load_baseline(args.baseline)
    stored = _read_result(args.path)
    result = _judged(stored, args.path)
    code = _publish(result, args, baseline)
    # A file without some journeys is a partial verdict, unless told to accept that.
    listed = {e.journey for e in baseline.entries} if baseline is not None else set()
    missing = [j for j in accepted if j not in {x.id for x in result.journeys} and j not in listed]
    if missing:
        print(f"acp-journeys: {args.path} lacks the journeys {', '.join(missing)}: a partial verdict; "
              "name the journeys to accept with --journey ID (or list them in the baseline)", file=sys.stderr)
        code = code if code == EXIT_USAGE else EXIT_FAIL
    changed = [j.id for j, s in zip(result.journeys, stored.journeys)
               if j.verdict != s.verdict or [f.id for f in j.failures] != [f.id for f in s.failures]]
    if changed:
        print(f"note: the stored verdicts of {one_line(', '.join(changed))} do not match their evidence; "
              "the verdict above is the one computed from the evidence", file=sys.stderr)
    if args.expect_sha:
        tested = {result.subject.get("sha"), result.subject.get("image")} - {None}
        if not any(args.expect_sha == t or (len(args.expect_sha) >= 7 and t.startswith(args.expect_sha))
                   for t in tested):
            what = one_line(", ".join(sorted(tested))) or "no recorded commit or image"
            print(f"acp-journeys: this result is not of {args.expect_sha}: it tested {what}", file=sys.stderr)
            return EXIT_FAIL
    return code


def _read_result(path: str):
    from acp_journeys.output import result_file

    try:
        return result_file.read(path)
    except result_file.ResultFileError as exc:
        raise UsageError(str(exc)) from None


def _judged(stored, path: str):
    """The verdict from the evidence; evidence that the judge cannot read is a bad file (exit 2)."""
    from acp_journeys.rules.judge import judge_result

    try:
        return judge_result(stored)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise UsageError(f"{path}: its evidence cannot be judged ({type(exc).__name__}: {exc})") from None


def _journey_ids(ids: list[str]) -> list[str]:
    unknown = [j for j in ids if j not in catalog.JOURNEYS_BY_ID]
    if unknown:
        raise UsageError(f"unknown journey {', '.join(unknown)}; the journeys are: {', '.join(catalog.JOURNEY_IDS)}")
    return list(dict.fromkeys(ids))


def _report(args: argparse.Namespace) -> int:
    from acp_journeys.output.github import report_github

    if not args.github and not args.html:
        raise UsageError("report: say what to make: --github, --html OUT, or both")
    result = _judged(_read_result(args.path), args.path)  # what we publish is what the evidence says
    outcome = None
    baseline = _load_baseline(args.baseline)
    if baseline is not None:
        from acp_journeys.rules.baseline import apply_baseline

        outcome = apply_baseline(result, baseline)
    if args.html and not _write_html(result, args.html, args.docs_url or result.docs_url, outcome):
        return EXIT_USAGE
    if not args.github:
        return EXIT_PASS
    report = report_github(result, env=os.environ, token=args.token or os.environ.get("GITHUB_TOKEN"),
                           docs_url=args.docs_url or result.docs_url, check_name=args.check_name,
                           baseline=outcome, result_path=args.path, artifact_url=args.artifact_url,
                           post_check=args.post_check)
    for warning in report.warnings:
        print(f"::warning::{command_data(warning)}")
    if report.check_url:
        print(f"check run: {one_line(report.check_url)}")
    print(f"verdict: {report.verdict}")
    return EXIT_PASS  # publishing never fails the job; the gate step does


def _init(args: argparse.Namespace) -> int:
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


if __name__ == "__main__":
    raise SystemExit(main())
