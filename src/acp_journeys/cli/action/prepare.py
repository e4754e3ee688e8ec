"""`acp-journeys action prepare`: the first step of the action, in the runner image. It checks
every input (the run's through `plan_run`, as `acp-journeys run` checks its options), makes the
work folder, and writes down what the shell steps that follow hand to docker.

Rules of this module: every check is made here, before minutes of building; a rule that the
command line has (`--env` and `--setting` apart, templates with the model stub, `parallel`,
`timeout-scale`, the journey ids) is `plan_run`'s, never restated. What it leaves for the shell,
in the work folder: `build.args` (the `docker build` arguments, when the agent image is built),
`run.args` (the `docker run` options of the run step's runner container), `volume.args` (the
`docker volume create` arguments of the MCP sockets' volume) and `run.cli` (the `acp-journeys run`
command line it runs), NUL-separated, and `inputs.json` (the inputs that the later steps read); no value of the env input is in any of
them (only names: the docker client passes the values).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field

from acp_journeys.cli.action.inputs import (InputError, Inputs, annotate, keep_inputs, path_of, say,
                                            set_outputs, workspace_file, write_args)
from acp_journeys.cli import run as run_cli
from acp_journeys.cli.common import UsageError

# Which input a message of `plan_run` is about, by the option it names (the first that matches).
_INPUT_OF = [("--timeout-scale", "timeout-scale"), ("--parallel", "parallel"),
             ("--model-stub-config-template", "model-stub-config-templates"), ("--setting", "settings"),
             ("--env", "env"), ("--login", "login"), ("journey", "journeys"), ("agent command", "agent-command")]
_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?|\.[0-9]+")
SHARED_DIR = "/acp-journeys-shared"
"""Where the runner container mounts the MCP sockets' volume (as run.sh does): a short path, for a
socket's path has a bound of about 100 bytes."""
SOCKETS_VOLUME_OPTIONS = ("--driver", "local", "--opt", "type=tmpfs", "--opt", "device=tmpfs",
                          "--opt", "o=nosuid,nodev,noexec,size=16m,mode=1777")
"""The MCP sockets' volume, here and in run.sh (a test holds them equal): a small tmpfs where
nothing can be a setuid file, a device or a program, even for the engine's host."""


@dataclass
class Prepared:
    """What the later steps need: the step's outputs and the argument lists of docker and the run."""

    outputs: dict[str, str]
    build: list[str] | None
    run_options: list[str] = field(default_factory=list)
    run_cli: list[str] = field(default_factory=list)
    volume: list[str] = field(default_factory=list)


def check_run_inputs(inp: Inputs, environ: Mapping[str, str], image: str) -> tuple[list[str], run_cli.RunPlan]:
    """The inputs of the run, through `plan_run`: (the run's options and command, with the env
    input's names only, no value; the plan). Files are not looked at here."""
    options: list[str] = ["--image", image]
    for id_ in inp.journeys():
        options += ["--journey", id_]
    for name in ("network", "model-stub", "strict"):
        if inp.flag(name, False):
            options.append(f"--{name}")
    scale = inp.text("timeout-scale")
    if scale:
        if not _NUMBER.fullmatch(scale):
            raise InputError("timeout-scale", f"expected a number above 0 (like 2 or 1.5), got {scale!r}")
        options += ["--timeout-scale", scale]
    parallel = inp.text("parallel")
    if parallel:
        if not parallel.isdigit() or len(parallel) > 4:
            raise InputError("parallel", f"expected a whole number of 1 or more, got {parallel!r}")
        options += ["--parallel", parallel]
    tier = inp.text("tier")
    if tier not in ("", "protocol"):
        raise InputError("tier", f"expected protocol or nothing, got {tier!r}")
    if tier:
        options += ["--tier", tier]  # its own verdict: the job's stays Rondar's
    for line in inp.lines("settings"):
        options += ["--setting", line]
    for line in inp.lines("model-stub-config-templates"):
        options += ["--model-stub-config-template", line]
    for line in inp.lines("login"):
        options += ["--login", line]
    named, valued = list(options), list(options)
    for name, value in inp.env_lines():
        named += ["--env", name]  # NAME alone: the runner reads the value from its environment
        valued += ["--env", name if value is None else f"{name}={value}"]
    argv = inp.command()
    top = argparse.ArgumentParser(prog="acp-journeys")
    run_cli.add_parser(top.add_subparsers())
    try:
        args = top.parse_args(["run", *valued, "--", *argv])
        plan = run_cli.plan_run(args, environ, python=sys.executable, reference_agent="")
    except UsageError as exc:
        message = str(exc)
        name = next((n for flag, n in _INPUT_OF if flag in message), "inputs")
        if message.endswith("not set in this environment"):
            message += " (set it with env: on the step)"
        raise InputError(name, message) from None
    except SystemExit:
        raise UsageError("internal: the action's inputs made a command line that `acp-journeys run` refuses") from None
    return named + ["--", *argv], plan


def prepare(environ: Mapping[str, str]) -> Prepared:
    inp = Inputs(environ)
    workspace = environ.get("GITHUB_WORKSPACE") or os.getcwd()
    home = environ.get("HOME", "/")
    image = inp.text("image")
    for name in ("runner-image", "check-name", "docs-url"):
        inp.text(name)
    inp.flag("fail-on-failure", True)
    inp.flag("post-check", True)
    named, plan = check_run_inputs(inp, environ, image or "agent")
    values = {**plan.stub_env, **plan.settings}
    settings = [f"{n}={values[n]}" for n in dict.fromkeys(line.partition("=")[0] for line in inp.lines("settings"))]
    mounts: list[str] = []
    logins: list[str] = []
    for source, dest in plan.logins:
        if not source:
            raise InputError("login", f"a line has no source ({source}:{dest})")
        path = path_of(source, workspace, home)
        if not os.path.exists(path):
            raise InputError("login", f"{path} does not exist (write the login file in an earlier step)")
        if "," in path:
            raise InputError("login", f"{path}: a path with a comma cannot be mounted")
        mounts += ["-v", f"{path}:{path}:ro"]
        logins.append(path + (f":{dest}" if dest else ""))
    templates = [(workspace_file("model-stub-config-templates", s, workspace, home), d) for s, d in plan.stub_templates]
    baseline = inp.text("baseline")
    baseline_file = workspace_file("baseline", baseline, workspace, home) if baseline else ""
    build = None if image else build_args(inp, environ, workspace, home)
    result_given = inp.text("result-path")

    work = tempfile.mkdtemp(prefix="acp-journeys.", dir=environ.get("ACPJ_TEMP") or tempfile.gettempdir())
    os.chmod(work, 0o755)
    suffix = work.rsplit(".", 1)[1].lower()
    result = os.path.join(work, "result.json")
    if result_given:
        result = path_of(result_given, workspace, home)
        os.makedirs(os.path.dirname(result), exist_ok=True)
    agent_image = image or f"acp-journeys-agent:{(environ.get('GITHUB_SHA') or 'local')[:12]}-{suffix}"
    runner = f"acp-journeys-runner-{suffix}"
    cli = ["run", "--image", agent_image, "--output", f"{work}/result.json", "--html", f"{work}/result.html"]
    if environ.get("GITHUB_SHA"):
        cli += ["--subject-sha", environ["GITHUB_SHA"]]
    if inp.text("docs-url"):
        cli += ["--docs-url", inp.text("docs-url")]
    head = named[2:named.index("--")]  # the checked options, less --image
    cli += _drop(head, {"--setting", "--model-stub-config-template", "--login"})
    for setting in settings:  # NAME alone: the step's value, no secret, on the command line as it is
        cli += ["--setting", setting]
    for i, (source, dest) in enumerate(templates, 1):
        os.makedirs(f"{work}/templates/{i}")
        copy = f"{work}/templates/{i}/{os.path.basename(source)}"
        shutil.copyfile(source, copy)
        cli += ["--model-stub-config-template", f"{copy}:{dest}"]
    if baseline_file:
        os.makedirs(f"{work}/baseline")
        shutil.copyfile(baseline_file, f"{work}/baseline/{os.path.basename(baseline_file)}")
        cli += ["--baseline", f"{work}/baseline/{os.path.basename(baseline_file)}"]
    for login in logins:
        cli += ["--login", login]
    cli += named[named.index("--"):]
    # The MCP sockets: a labelled volume shared with the agents' containers, so the cleanup step
    # finds it by its owner.
    volume = f"acpj-shared-{suffix}"
    owner = f"acp-journeys.owner=container:{runner}"
    volume_args = ["--label", "acp-journeys.action=1", "--label", owner, *SOCKETS_VOLUME_OPTIONS, volume]
    options = ["--name", runner, "--label", owner, "-v", f"{volume}:{SHARED_DIR}",
               "-e", f"ACP_JOURNEYS_SHARED_VOLUME={volume}", "-e", f"ACP_JOURNEYS_SHARED_DIR={SHARED_DIR}",
               "-e", f"ACP_JOURNEYS_OWNER=container:{runner}", "-e", f"ACP_JOURNEYS_HOST_HOME={home}",
               "-e", "ACPJ_ENV", *mounts]
    for name, value in inp.env_lines():
        if value is None:
            options += ["-e", name]  # the docker client passes the step's value; NAME=VALUE: ACPJ_ENV
    outputs = {"work": work, "result-path": result, "html-path": result.removesuffix(".json") + ".html",
               "agent-image": agent_image, "runner-name": runner, "report-network": report_network(environ)}
    return Prepared(outputs, None if build is None else [*build[:-1], "-t", agent_image, build[-1]], options, cli,
                    volume_args)


def _drop(options: list[str], flags: set[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for option in options:
        if skip:
            skip = False
        elif option in flags:
            skip = True
        else:
            out.append(option)
    return out


def build_args(inp: Inputs, environ: Mapping[str, str], workspace: str, home: str) -> list[str]:
    """The `docker build` arguments of the agent image (the tag goes in before the context)."""
    given = inp.text("context", ".")
    context = path_of(given, workspace, home)
    if not os.path.isdir(context):
        raise InputError("context", f"{context} is not a folder (did the job check out the repository?)")
    dockerfile = path_of(inp.text("dockerfile") or f"{given}/Dockerfile", workspace, home)
    if not os.path.isfile(dockerfile):
        raise UsageError(f"no Dockerfile at {dockerfile}: give the dockerfile input, or a prebuilt image with the "
                         "image input")
    network = inp.text("build-network") or "default"
    if network not in ("default", "none"):
        raise InputError("build-network", f"expected default or none, got {network!r}")
    out = ["--network", "none"] if network == "none" else []
    for line in inp.lines("build-args"):
        name = line.partition("=")[0]
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise InputError("build-args", f"a line is not NAME=VALUE (line starting {name[:20]!r})")
        out += ["--build-arg", line]
    if environ.get("GITHUB_SHA"):
        out += ["--label", f"org.opencontainers.image.revision={environ['GITHUB_SHA']}"]
    warn_git_token(context)
    say(f"the agent image is built from {dockerfile} (context {context}, network {network})")
    return [*out, "-f", dockerfile, context]


def warn_git_token(context: str) -> None:
    """A checkout that kept its token (persist-credentials) has it in .git/config, which the
    agent's Dockerfile can read, unless .dockerignore leaves .git out. Never prints the token."""
    try:
        config = open(os.path.join(context, ".git", "config"), encoding="utf-8", errors="replace").read()
    except OSError:
        return
    if not re.search(r"^\s*extraheader\s*=.*authorization|://[^/@\s]+:[^/@\s]+@", config, re.I | re.M):
        return
    try:
        ignore = open(os.path.join(context, ".dockerignore"), encoding="utf-8", errors="replace").read()
    except OSError:
        ignore = ""
    if any(re.fullmatch(r"\s*/?\.git(/|/\*\*?)?\s*", line) for line in ignore.splitlines()):
        return
    annotate("warning", "the build context's .git/config holds a token (actions/checkout keeps it unless "
             "persist-credentials: false): the agent's Dockerfile can read it; set persist-credentials: false, "
             "or put .git in .dockerignore")


def report_network(environ: Mapping[str, str]) -> str:
    """The report's runner container: the host's network only for a GitHub API on loopback (a
    stand-in, or a proxy of the runner's); else the default bridge, which reaches what the job does."""
    host = (environ.get("GITHUB_API_URL") or "https://api.github.com").partition("://")[2].partition("/")[0]
    host = host.rpartition("@")[2]
    host = host[1:].partition("]")[0] if host.startswith("[") else host.partition(":")[0]
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False  # a name: not loopback, even one that starts like 127.0.0.1
    return "host" if loopback else "bridge"


def main(environ: Mapping[str, str]) -> int:
    done = prepare(environ)
    work = done.outputs["work"]
    if done.build is not None:
        write_args(f"{work}/build.args", done.build)
    write_args(f"{work}/run.args", done.run_options)
    write_args(f"{work}/volume.args", done.volume)
    write_args(f"{work}/run.cli", done.run_cli)
    keep_inputs(Inputs(environ), work)
    set_outputs(done.outputs, environ)
    say(f"work folder {work}; result.json goes to {done.outputs['result-path']}")
    return 0
