"""One installed agent through `acp-journeys run`: the arguments of that command, and running it.

Rules of this module: the journeys are run by `acp-journeys run` itself, in a process of its own
(`python -m acp_journeys run ...`), so the registry has no runner of its own and every rule of a
run (masking, judging as verify will, the HTML page, leftovers, signals) is the same. `run_args`
is pure: the entry, its install and its recipe in, the command's arguments out (cli/registry.py
checks them with `run`'s own `plan_run` before anything starts). `run_agent` starts the command
with a time bound (over it: SIGTERM, which `run` turns into a clean stop, then SIGKILL).
"""

from __future__ import annotations

import os
import posixpath
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from acp_journeys.editor.session import Bounds
from acp_journeys.registry.install import Installed
from acp_journeys.registry.recipes import Recipe
from acp_journeys.registry.source import Entry
from acp_journeys.runner import journey_bound, probe_bound

AGENT_MOUNT = "/agent"
"""Where docker mode mounts the install folder (run's --agent-dir), read-only."""


@dataclass
class RunOptions:
    result: str
    html: str
    image: str | None = None
    timeout_scale: float = 1.0
    parallel: int | None = None
    journeys: list[str] | None = None
    protocol_tier: bool = True
    """--tier protocol: the dashboard's protocol column (MUSTs passed of those that apply)."""


def run_args(entry: Entry, installed: Installed, recipe: Recipe, options: RunOptions,
             templates: list[tuple[str, str]] = ()) -> list[str]:
    """The arguments of `acp-journeys run` for this agent (after `run`); `templates` are the
    recipe's files, written out: (a file here, dest under the agent's home)."""
    args = ["--model-stub", "-q", "--output", options.result, "--html", options.html,
            "--timeout-scale", repr(options.timeout_scale)]
    for journey in options.journeys or []:
        args += ["--journey", journey]
    if options.parallel:
        args += ["--parallel", str(options.parallel)]
    if options.protocol_tier:
        args += ["--tier", "protocol"]
    # The entry's env is its author's (a model name, a mode): no secret; the recipe's win.
    settings = {k: v for k, v in installed.env.items() if k not in recipe.env}
    settings.update(recipe.settings)
    root = None
    if options.image:
        root = AGENT_MOUNT
        args += ["--image", options.image, "--agent-dir", installed.folder]
        if installed.site_packages:
            # The venv's script starts under the image's python, so its imports are named here.
            settings.setdefault("PYTHONPATH", posixpath.join(AGENT_MOUNT, installed.site_packages))
    for source, dest in templates:
        args += ["--model-stub-config-template", f"{source}:{dest}"]
    for name, value in sorted(recipe.env.items()):
        args += ["--env", f"{name}={value}"]
    for name, value in sorted(settings.items()):
        args += ["--setting", f"{name}={value}"]
    head = installed.argv(root)[: len(installed.argv(root)) - len(installed.args)]
    agent_args = list(recipe.args) if recipe.args is not None else list(installed.args)
    return args + ["--", *head, *agent_args, *recipe.extra_args]


def run_bound(options: RunOptions) -> float:
    """The whole run's bound: each journey has its own; with --parallel N they run in waves."""
    count = len(options.journeys or []) or 7
    waves = -(-count // options.parallel) if options.parallel else 1
    bounds = Bounds(scale=options.timeout_scale)
    probe = probe_bound(bounds) if options.protocol_tier else 0
    return journey_bound(bounds) * waves + probe + 120


@dataclass
class RunOutcome:
    code: int | None
    seconds: float
    timed_out: bool = False


def run_agent(args: list[str], log_path: str, bound_s: float) -> RunOutcome:
    """`acp-journeys run ARGS`, its output appended to `log_path`."""
    started = time.monotonic()
    with open(log_path, "a", encoding="utf-8") as log:
        log.flush()
        proc = subprocess.Popen([sys.executable, "-m", "acp_journeys", "run", *args], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, env=_run_env())
        try:
            code = proc.wait(timeout=bound_s)
            return RunOutcome(code, round(time.monotonic() - started, 3))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)  # run stops its journeys cleanly and writes a partial result
            try:
                code = proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            return RunOutcome(code, round(time.monotonic() - started, 3), timed_out=True)
        except BaseException:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            raise


def _run_env() -> dict[str, str]:
    env = dict(os.environ)
    # The child must import this very acp_journeys (a source checkout's, too).
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([here, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    return env
