"""`acp-journeys run`: drive an agent command through the journeys and write result.json.

Rules of this module: two steps. `plan_run` turns the options into a `RunPlan`, a pure function
of the options, the environment it is handed and two paths (no file, no process, no clock), so
every usage error is found before anything starts and is tested without a process. `run` then
does what the plan says: it reads the files the plan names, makes the launcher, runs, masks,
judges as verify will, writes and publishes.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from acp_journeys.cli.common import (EXIT_USAGE, UsageError, add_report_options, check_outputs, journey_ids,
                                     load_baseline, publish)
from acp_journeys.rules import catalog

DOCKER_DEMO_ARGV = ["python3", "/opt/acp-journeys/reference_agent.py"]
"""The runner image carries the reference agent at a fixed path."""
DOCKER_DEMO_STATE = "/tmp/acp-reference-agent"


def reference_agent_path() -> str:
    return str(resources.files("acp_journeys").joinpath("demo/reference_agent.py"))


def add_parser(sub: argparse._SubParsersAction) -> None:
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
    run.add_argument("--tier", action="append", default=[], choices=("protocol",), dest="tiers",
                     help="also run an opt-in tier with its own verdict beside Rondar's: `protocol` checks "
                          "ACP rules the journeys do not judge (one more agent process; see docs/protocol-tier.md)")
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
                     help="local mode: the agent gets this whole environment, not only the minimal one "
                          "(PATH, HOME, USER, LOGNAME, LANG, LANGUAGE, LC_*, TERM, TZ, plus --env and --setting)")
    run.add_argument("--image", metavar="IMAGE",
                     help="run each journey in its own container made from IMAGE (docker mode)")
    run.add_argument("--network", action="store_true",
                     help="docker mode: give the agent a network (a model API): each run gets a bridge network "
                          "of its own, with no traffic between its containers (default: no network)")
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
    add_report_options(run)
    run.add_argument("--tracking", choices=("auto", "cgroup", "subreaper"), default="auto",
                     help="local mode: how the agent's processes are found (default auto: a cgroup where "
                          "one can be made, else by descent under a subreaper); result.json says which")
    run.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    run.add_argument("agent", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")


@dataclass
class RunPlan:
    """What a run will do, as the options say it; made by `plan_run`, done by `run`."""

    argv: list[str]
    """The agent command, as given (local mode makes its relative paths absolute when it runs)."""
    journeys: list[str]
    image: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    """--env: secrets, masked everywhere (`secrets` lists their values)."""
    settings: dict[str, str] = field(default_factory=dict)
    stub_env: dict[str, str] = field(default_factory=dict)
    """--env/--setting values that hold the model stub's address placeholder: filled per journey."""
    stub_templates: list[tuple[str, str]] = field(default_factory=list)
    """--model-stub-config-template: (a file here, a path under the agent's home)."""
    logins: list[tuple[str, str]] = field(default_factory=list)
    """--login: (source as given, DEST or "")."""
    secrets: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    subject: dict[str, str] = field(default_factory=dict)
    local_demo_state: bool = False
    """A local --demo run: the reference agent keeps its sessions in a temp folder of the run."""
    tiers: list[str] = field(default_factory=list)
    """--tier: the opt-in tiers to run beside Rondar's journeys."""
    heartbeat_s: float = 10.0
    """How often the progress says what the journeys wait on (HEARTBEAT_ENV, for tests: 10 s)."""


HEARTBEAT_ENV = "ACP_JOURNEYS_HEARTBEAT_S"
"""Seconds between the progress's heartbeat lines; not an option: tests shorten it, users need not."""


def plan_run(args: argparse.Namespace, environ: Mapping[str, str], *, python: str,
             reference_agent: str) -> RunPlan:
    """The plan of `args`, or a `UsageError`. Pure: `environ` stands for this environment
    (--env NAME passes its value, GITHUB_SHA names the subject), `python` and `reference_agent`
    for the interpreter and the file that --demo runs."""
    from acp_journeys.output.redact import parse_env_option
    from acp_journeys.services.model_stub.placeholders import PLACEHOLDER, parse_config_template

    argv = agent_argv(args, python, reference_agent)
    journeys = journey_ids(args.journeys or list(catalog.JOURNEY_IDS))
    if args.parallel is not None and args.parallel < 1:
        raise UsageError("--parallel takes a whole number of 1 or more")
    if not args.timeout_scale > 0:
        raise UsageError("--timeout-scale takes a number above 0")
    plan = RunPlan(argv=argv, journeys=journeys, image=args.image, tiers=list(dict.fromkeys(args.tiers)))
    for flag, options in (("--env", args.env), ("--setting", args.setting)):
        for option in options:
            variable_name(option, flag)
    if environ.get(HEARTBEAT_ENV):
        try:
            plan.heartbeat_s = float(environ[HEARTBEAT_ENV])
        except ValueError:
            plan.heartbeat_s = 0.0
        if not 0 < plan.heartbeat_s < float("inf"):
            raise UsageError(f"{HEARTBEAT_ENV} takes a number of seconds above 0")
    for option in args.env:
        try:
            name, value = parse_env_option(option, dict(environ))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if args.model_stub and PLACEHOLDER in value:
            plan.stub_env[name] = value  # an address template, filled per journey; not a secret
            continue
        plan.env[name] = value
        plan.secrets.append(value)
    for option in args.setting:
        try:
            name, value = parse_env_option(option, dict(environ), flag="--setting")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if name in plan.env or name in plan.stub_env:
            raise UsageError(f"{name} is given with --env and --setting: one or the other")
        if args.model_stub and PLACEHOLDER in value:
            plan.stub_env[name] = value
            continue
        plan.settings[name] = value
    for option in args.model_stub_config_template:
        if not args.model_stub:
            raise UsageError("--model-stub-config-template goes with --model-stub")
        try:
            plan.stub_templates.append(parse_config_template(option))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.model_stub and not plan.stub_env and not plan.stub_templates:
        plan.warnings.append(f"--model-stub, but no --env or --setting value or config template holds "
                             f"{PLACEHOLDER}: the agent is not told where the endpoint is")
    for option in args.login:
        source, _, dest = option.partition(":")
        plan.logins.append((source, dest))
    if not args.image and (args.network or plan.logins or args.agent_dir):
        raise UsageError("--network, --login and --agent-dir need docker mode (--image IMAGE)")
    if args.image and args.inherit_env:
        raise UsageError("--inherit-env is for local mode: a container gets only --env and --setting")
    if args.demo and args.image:
        plan.argv = list(DOCKER_DEMO_ARGV)
        plan.env["ACP_REFERENCE_AGENT_STATE"] = DOCKER_DEMO_STATE
    elif args.demo:
        plan.local_demo_state = True
    if args.subject_sha or environ.get("GITHUB_SHA"):
        plan.subject["sha"] = args.subject_sha or environ["GITHUB_SHA"]
    if args.image:
        plan.subject["image"] = args.image
    return plan


VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""What a shell, `env` and docker take as an environment variable's name (ASCII, no leading digit)."""


def variable_name(option: str, flag: str) -> str:
    """The NAME of `NAME[=VALUE]`, or a `UsageError` that shows the name only (the value may be a secret)."""
    name = option.partition("=")[0]
    if not VARIABLE_NAME.fullmatch(name):
        shown = repr(name[:40] + ("..." if len(name) > 40 else ""))
        raise UsageError(f"{flag} {shown}: not an environment variable name (letters, digits and _, not "
                         "starting with a digit); expected NAME or NAME=VALUE")
    return name


def agent_argv(args: argparse.Namespace, python: str, reference_agent: str) -> list[str]:
    agent = list(args.agent)
    if agent and agent[0] == "--":
        agent = agent[1:]
    if args.demo:
        if agent:
            raise UsageError("--demo runs the bundled reference agent: give no COMMAND with it")
        return [python, reference_agent]
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


@dataclass
class _Inputs:
    """What `run` reads and makes from the plan before anything starts."""

    argv: list[str]
    redactor: Any
    stub_files: list[tuple[str, str]]
    logins: list[tuple[str, str]]
    env: dict[str, str]
    demo_state: str | None


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: every command's parser imports this module, and `verify` must load
    # no event loop and no launcher.
    import asyncio
    import shutil

    from acp_journeys.output import console

    plan = plan_run(args, os.environ, python=sys.executable, reference_agent=reference_agent_path())
    check_outputs([("--output", args.output), ("--junit", args.junit), ("--html", args.html)],
                  [("--baseline", args.baseline),
                   *((f"--model-stub-config-template {s}:{d}", s) for s, d in plan.stub_templates),
                   *((f"--login {s}", s) for s, _ in plan.logins)])
    baseline = load_baseline(args.baseline)
    inputs = _read_inputs(plan)
    launcher = _make_launcher(args, plan, inputs)
    progress = console.Progress(redactor=inputs.redactor, quiet=args.quiet)
    try:
        result, stopped_by = asyncio.run(_check_and_execute(args, plan, inputs, launcher, progress))
    finally:
        if inputs.demo_state:
            shutil.rmtree(inputs.demo_state, ignore_errors=True)
    return _write_and_publish(args, result, stopped_by, inputs.redactor, baseline)


def _read_inputs(plan: RunPlan) -> _Inputs:
    """The agent's command, the secrets to mask, the files the plan names (read now: a missing
    one is a usage error before anything starts) and the agent's environment."""
    import tempfile

    from acp_journeys.output.redact import Redactor

    argv = plan.argv if plan.image else absolute_paths(plan.argv)
    redactor = Redactor()
    for secret in plan.secrets:
        redactor.add(secret)
    stub_files: list[tuple[str, str]] = []
    for source, dest in plan.stub_templates:
        try:
            stub_files.append((open(source, encoding="utf-8").read(), dest))
        except OSError as exc:
            raise UsageError(f"--model-stub-config-template {source}:{dest}: {exc.strerror or exc}") from None
    for warning in plan.warnings:
        print(f"acp-journeys: warning: {warning}", file=sys.stderr)
    logins = []
    for source, dest in plan.logins:
        if not os.path.exists(source):
            raise UsageError(f"--login {source}: no such file or folder")
        redactor.add_path(source)
        logins.append((os.path.abspath(source), dest))
    env = dict(plan.env)
    demo_state = None
    if plan.local_demo_state:
        # The reference agent keeps its sessions here; the run removes it at the end.
        demo_state = tempfile.mkdtemp(prefix="acp-journeys-demo-")
        env.setdefault("ACP_REFERENCE_AGENT_STATE", demo_state)
    return _Inputs(argv, redactor, stub_files, logins, env, demo_state)


def _make_launcher(args: argparse.Namespace, plan: RunPlan, inputs: _Inputs) -> Any:
    import uuid

    from acp_journeys.launch import LocalLauncher

    run_id = uuid.uuid4().hex[:12]
    if plan.image:
        from acp_journeys.launch import DockerLauncher  # only now: a local run never loads the docker modules

        return DockerLauncher(plan.image, run_id=run_id, network=args.network, env=inputs.env,
                              settings=plan.settings, logins=inputs.logins, pull=args.pull,
                              agent_dir=os.path.abspath(args.agent_dir) if args.agent_dir else None)
    # A home of its own under --model-stub: the config templates go there, and the user's
    # own configuration (a real model's endpoint and login) must not mix with the stub's.
    return LocalLauncher(run_id, env=inputs.env, tracking=None if args.tracking == "auto" else args.tracking,
                         settings=plan.settings, isolate_home=args.isolate_home or args.model_stub,
                         inherit_env=args.inherit_env)


async def _check_and_execute(args: argparse.Namespace, plan: RunPlan, inputs: _Inputs, launcher: Any,
                             progress: Any) -> tuple[Any, int | None]:
    """The launcher's check of the command (a failed one is a usage error), then the run, in one
    event loop."""
    from acp_journeys.editor.session import Bounds
    from acp_journeys.launch import LaunchError
    from acp_journeys.runner import ModelStubConfig, Run, RunConfig

    try:
        await launcher.check(inputs.argv)
    except LaunchError as exc:
        await launcher.close()
        raise UsageError(str(exc)) from None
    where = f"in containers of {plan.image}" if plan.image else \
        f"here, {launcher.describe().get('tracking')} tracking"
    progress.say(f"running {len(plan.journeys)} journey(s) against: {' '.join(inputs.argv)} ({where})")
    config = RunConfig(argv=inputs.argv, journeys=plan.journeys, parallel=args.parallel,
                       bounds=Bounds(scale=args.timeout_scale), strict=args.strict,
                       transcripts=args.transcripts, docs_url=args.docs_url, subject=plan.subject,
                       tiers=plan.tiers,
                       heartbeat_s=plan.heartbeat_s,
                       model_stub=ModelStubConfig(plan.stub_env, inputs.stub_files, inputs.redactor.redact)
                       if args.model_stub else None)
    return await _execute(Run(config, launcher, progress))


def _write_and_publish(args: argparse.Namespace, result: Any, stopped_by: int | None, redactor: Any,
                       baseline: Any) -> int:
    """Mask, judge as verify will, write result.json, publish; the exit code."""
    import signal

    from acp_journeys.output import result_file

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
    code = publish(result, args, baseline)
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


async def _execute(run) -> tuple[object, int | None]:
    """Runs with SIGINT/SIGTERM turned into a clean stop of every journey."""
    import asyncio
    import signal

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
