"""Runs the steps of the composite action.yml as GitHub's runner does, for the tests.

What it does, like the runner: each `run:` step is written to a file and run with
`bash --noprofile --norc -eo pipefail FILE` in GITHUB_WORKSPACE, with the job's environment, the
step's `env:` (its expressions evaluated), GITHUB_ACTION_PATH, and fresh GITHUB_OUTPUT and
GITHUB_STEP_SUMMARY files; the outputs of a step are read back from its GITHUB_OUTPUT file; a step
runs when its `if:` holds (no `if:` means no earlier step failed); the action's outputs are its
`outputs.*.value` evaluated at the end. A `uses:` step is not run: it is recorded with its `with:`
evaluated, for the test to check (the upload step's path, say).

The expressions understood are the few that action.yml and merge/action.yml use, all of them in
`env:`, `with:` and `if:` (a `run:` holds none; what a step decides is `acp-journeys action`,
tested without this stand-in): `inputs.X`, `steps.ID.outputs.X`, `steps.ID.outcome`, `github.X`,
string literals, `always()`, `==`, `!=` and `&&`. Anything else raises, so that a new expression
in a YAML file needs a look here too.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@dataclass
class StepRun:
    id: str
    name: str
    ran: bool
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    summary: str = ""
    uses: str | None = None
    with_: dict[str, str] = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        if not self.ran:
            return "skipped"
        return "success" if self.code in (0, None) else "failure"

    @property
    def log(self) -> str:
        return self.stdout + self.stderr


@dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict[str, str]

    @property
    def failed(self) -> bool:
        return any(s.outcome == "failure" for s in self.steps)

    @property
    def summary(self) -> str:
        return "".join(s.summary for s in self.steps)

    @property
    def log(self) -> str:
        return "".join(f"--- {s.id or s.name} ({s.outcome})\n{s.log}" for s in self.steps)

    def step(self, step_id: str) -> StepRun:
        return next(s for s in self.steps if s.id == step_id)


_LEGACY = re.compile(r"##\[([^\]\s]*)[^\]]*\]")
"""GitHub's legacy command form, `##[NAME PROPERTIES]DATA`, which the runner obeys anywhere in a line."""


def workflow_commands(log: str) -> list[str]:
    """The lines of a step's log that GitHub's runner acts on as workflow commands, in order.

    As the runner reads them: a line (leading blanks ignored) that starts with `::`, or one that
    holds `##[NAME...]` anywhere (the legacy form; any NAME counts, stricter than the runner);
    after `::stop-commands::TOKEN` (or `##[stop-commands]TOKEN`), none until the line `::TOKEN::`
    (or one holding `##[TOKEN]`). The pause and resume lines are listed too.
    """
    out: list[str] = []
    paused = ""
    for raw in re.split(r"\r\n|\n|\r", log):
        line = raw.strip()
        legacy = _LEGACY.search(line)
        if paused:
            if line == f"::{paused}::" or (legacy is not None and legacy.group(1).lower() == paused.lower()):
                out.append(line)
                paused = ""
            continue
        if line.startswith("::"):
            out.append(line)
            if line.startswith("::stop-commands::"):
                paused = line[len("::stop-commands::"):]
        elif legacy is not None:
            out.append(line)
            if legacy.group(1).lower() == "stop-commands":
                paused = line[legacy.end():]
    return out


def parse_github_output(text: str) -> dict[str, str]:
    """`name=value` lines and `name<<DELIMITER` blocks, as the runner reads them."""
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value: list[str] = []
            while i < len(lines) and lines[i] != delimiter:
                value.append(lines[i])
                i += 1
            if i >= len(lines):
                raise ValueError(f"GITHUB_OUTPUT: no closing {delimiter!r} for {name}")
            i += 1
            out[name] = "\n".join(value)
        else:
            name, sep, value_ = line.partition("=")
            if not sep:
                raise ValueError(f"GITHUB_OUTPUT: not name=value: {line!r}")
            out[name] = value_
    return out


class CompositeAction:
    def __init__(self, action_dir: Path, *, inputs: dict[str, str], env: dict[str, str],
                 github: dict[str, str], timeout: float = 900) -> None:
        self.action_dir = action_dir
        self.meta = YAML(typ="safe").load((action_dir / "action.yml").read_text())
        assert self.meta["runs"]["using"] == "composite"
        self.github = {"action_path": str(action_dir), **github}
        declared = self.meta.get("inputs") or {}
        unknown = set(inputs) - set(declared)
        assert not unknown, f"inputs that action.yml does not declare: {unknown}"
        self.inputs: dict[str, str] = {}
        for name, spec in declared.items():
            if name in inputs:
                self.inputs[name] = inputs[name]
            else:
                assert not spec.get("required") or name in inputs, f"required input {name} is missing"
                self.inputs[name] = self._eval_text(str(spec.get("default", "")), {})
        self.env = env
        self.timeout = timeout

    # --- expressions ---------------------------------------------------------------------------

    def _value(self, expr: str, steps: dict[str, StepRun]) -> Any:
        expr = expr.strip()
        if re.fullmatch(r"'(?:[^']|'')*'", expr):
            return expr[1:-1].replace("''", "'")
        parts = expr.split(".")
        if parts[0] == "inputs" and len(parts) == 2:
            return self.inputs[parts[1]]
        if parts[0] == "github" and len(parts) == 2:
            return self.github.get(parts[1], "")
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            step = steps.get(parts[1])
            return step.outputs.get(parts[3], "") if step else ""
        if parts[0] == "steps" and len(parts) == 3 and parts[2] == "outcome":
            step = steps.get(parts[1])
            return step.outcome if step else ""
        raise NotImplementedError(f"expression not understood by the harness: {expr!r}")

    def _condition(self, expr: str, steps: dict[str, StepRun], failed: bool) -> bool:
        m = _EXPR.fullmatch(expr.strip())
        if m:
            expr = m.group(1)
        result = True
        status_function = False
        for term in (t.strip() for t in expr.split("&&")):
            if term == "always()":
                status_function = True
            elif "!=" in term or "==" in term:
                op = "!=" if "!=" in term else "=="
                left, right = term.split(op, 1)
                equal = str(self._value(left, steps)) == str(self._value(right, steps))
                result = result and (equal if op == "==" else not equal)
            else:
                raise NotImplementedError(f"condition not understood by the harness: {term!r}")
        if not status_function:
            result = result and not failed  # an implied success()
        return result

    def _eval_text(self, text: str, steps: dict[str, StepRun]) -> str:
        return _EXPR.sub(lambda m: str(self._value(m.group(1), steps)), text)

    # --- running -------------------------------------------------------------------------------

    def run(self, *, only: list[str] | None = None, steps_before: dict[str, StepRun] | None = None) -> ActionRun:
        done: list[StepRun] = []
        by_id: dict[str, StepRun] = dict(steps_before or {})
        failed = any(s.outcome == "failure" for s in by_id.values())
        workspace = Path(self.env["GITHUB_WORKSPACE"])
        for index, spec in enumerate(self.meta["runs"]["steps"]):
            step_id = spec.get("id", f"__step{index}")
            if only is not None and step_id not in only:
                continue
            name = spec.get("name", step_id)
            condition = spec.get("if")
            ran = self._condition(str(condition), by_id, failed) if condition is not None else not failed
            step = StepRun(id=step_id, name=name, ran=ran, uses=spec.get("uses"))
            if ran and "uses" in spec:
                step.with_ = {k: self._eval_text(str(v), by_id) for k, v in (spec.get("with") or {}).items()}
            elif ran:
                assert spec.get("shell") == "bash", f"step {name}: the harness runs bash steps only"
                self._run_step(step, spec, by_id, workspace)
                if step.code != 0:
                    failed = True
            done.append(step)
            by_id[step_id] = step
        outputs = {name: self._eval_text(str(spec["value"]), by_id)
                   for name, spec in (self.meta.get("outputs") or {}).items()}
        return ActionRun(done, outputs)

    def _step_command(self, spec: dict[str, Any], steps: dict[str, StepRun],
                      tmp: str) -> tuple[list[str], dict[str, str]]:
        """The runner's command line for a bash step, and its environment."""
        script = Path(tmp, "step.sh")
        script.write_text(spec["run"])
        output = Path(tmp, "output")
        summary = Path(tmp, "summary")
        output.touch()
        summary.touch()
        env = {**self.env, "GITHUB_ACTION_PATH": str(self.action_dir), "GITHUB_OUTPUT": str(output),
               "GITHUB_STEP_SUMMARY": str(summary)}
        for key, value in (spec.get("env") or {}).items():
            env[key] = self._eval_text(str(value), steps)
        return ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env

    def start_step(self, step_id: str, steps: dict[str, StepRun], tmp: str, **popen: Any) -> subprocess.Popen:
        """Start one bash step in the background (to signal it as the runner does on a cancel)."""
        spec = next(s for s in self.meta["runs"]["steps"] if s.get("id") == step_id)
        argv, env = self._step_command(spec, steps, tmp)
        return subprocess.Popen(argv, cwd=self.env["GITHUB_WORKSPACE"], env=env, stdin=subprocess.DEVNULL,
                                preexec_fn=_default_signals, **popen)

    def _run_step(self, step: StepRun, spec: dict[str, Any], steps: dict[str, StepRun], workspace: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="step-", dir=self.env.get("RUNNER_TEMP")) as tmp:
            argv, env = self._step_command(spec, steps, tmp)
            output, summary = Path(env["GITHUB_OUTPUT"]), Path(env["GITHUB_STEP_SUMMARY"])
            proc = subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=self.timeout,
                                  stdin=subprocess.DEVNULL, preexec_fn=_default_signals)
            step.code = proc.returncode
            step.stdout, step.stderr = proc.stdout, proc.stderr
            step.outputs = parse_github_output(output.read_text())
            step.summary = summary.read_text()


def _default_signals() -> None:
    """A step starts with every signal at its default, as GitHub's runner starts it: a test run
    in the background of a shell (nohup, `&`) ignores SIGINT and SIGHUP, which bash then can
    neither trap nor pass on, and a cancel test of the run step would wait for nothing."""
    for signum in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


def job_env(workspace: Path, runner_temp: Path, **extra: str) -> dict[str, str]:
    """A GitHub-like job environment: the machine's PATH and HOME, and the GITHUB_*/RUNNER_* set."""
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "DOCKER_HOST", "TMPDIR") if key in os.environ}
    env.update({"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(workspace),
                "RUNNER_TEMP": str(runner_temp), "RUNNER_OS": "Linux"})
    env.update(extra)
    return env
