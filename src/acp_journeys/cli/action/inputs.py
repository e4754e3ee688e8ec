"""The action's inputs as its steps hand them over (`ACPJ_*` environment variables), and the
lines that a step prints for GitHub's runner.

Rules of this module: inputs come only from the mapping handed in, and for the steps after
prepare from `WORK/inputs.json`, the inputs that prepare checked and kept (never a command line,
never eval'ed); multi-line inputs are read a line at a time, blank lines and `#` lines skipped; a bad
input is an `InputError` that names the input and never shows a value of the `env` input. What
a step prints goes through `command_data` (no text of ours or the user's can start a workflow
command); an annotation meant for after the runner's stop-commands pause is written to the file
that `ACPJ_MESSAGES` names, which the shell step prints once the pause is over.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping

from acp_journeys.cli.common import UsageError
from acp_journeys.output.logtext import command_data

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
JOURNEY_WORD = re.compile(r"[a-z0-9][a-z0-9-]*")
RESERVED = re.compile(r"PATH|HOME|HOSTNAME|PWD|LD_.*|PYTHON.*|ACP_JOURNEYS_.*|DOCKER_.*")
"""Names of the env input that would change the runner container itself, not only the agent."""


class InputError(UsageError):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"input {name}: {message}")


class Inputs:
    """The ACPJ_* variables of a step, read and checked one at a time."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ

    def text(self, name: str, default: str = "") -> str:
        """A one-line input (`dockerfile` is ACPJ_DOCKERFILE)."""
        value = self.environ.get(_variable(name), "") or default
        if "\n" in value or "\r" in value:
            raise InputError(name, "must be one line")
        return value

    def lines(self, name: str) -> list[str]:
        text = self.environ.get(_variable(name), "")
        return [s for s in (line.strip() for line in text.splitlines()) if s and not s.startswith("#")]

    def flag(self, name: str, default: bool) -> bool:
        value = self.environ.get(_variable(name), "")
        if value in ("true", "True", "TRUE", "yes", "1"):
            return True
        if value in ("false", "False", "FALSE", "no", "0"):
            return False
        if value == "":
            return default
        raise InputError(name, f"expected true or false, got {value!r}")

    def journeys(self) -> list[str]:
        """The ids of the journeys input (`all` or ids split by spaces, commas or lines): none for all."""
        words = self.environ.get("ACPJ_JOURNEYS", "").replace(",", " ").split()
        for word in words:
            if not JOURNEY_WORD.fullmatch(word):
                raise InputError("journeys", f"{word!r} is not a journey id (see acp-journeys list)")
        return [w for w in words if w != "all"]

    def command(self) -> list[str]:
        """The agent command split into words like a shell would (quotes; no variables or globs)."""
        text = self.environ.get("ACPJ_AGENT_COMMAND", "")
        if not text.strip():
            raise UsageError("input agent-command is empty: give the command line that starts the agent in ACP mode")
        try:
            return shlex.split(text, comments=False, posix=True)
        except ValueError as exc:
            quote = "single" if text.count("'") % 2 else "double" if text.count('"') % 2 else ""
            why = f"unmatched {quote} quote" if quote else str(exc)
            raise InputError("agent-command", f"cannot be split into words: {why}") from None

    def env_lines(self) -> list[tuple[str, str | None]]:
        """(NAME, VALUE) of each env line, VALUE None for NAME alone (the step's value)."""
        out: list[tuple[str, str | None]] = []
        for line in self.lines("env"):
            name, sep, value = line.partition("=")
            if not NAME.fullmatch(name):
                raise InputError("env", f"a line is not NAME or NAME=VALUE (line starting {name[:20]!r})")
            if RESERVED.fullmatch(name):
                raise InputError("env", f"{name} cannot be passed: it would change the runner, not only the agent")
            if not sep and name not in self.environ:
                raise InputError("env", f"{name} is not set in the step's environment (set it with env: on the step)")
            out.append((name, value if sep else None))
        return out


KEPT = ("journeys", "check-name", "post-check", "fail-on-failure", "docs-url", "pattern")
"""The inputs of the steps after prepare: prepare keeps them in WORK/inputs.json as it checked
them, and those steps read them there (no step after it is handed them again)."""


def keep_inputs(inp: Inputs, work: str) -> None:
    saved = {_variable(name): inp.environ.get(_variable(name), "") for name in KEPT}
    with open(os.path.join(work, "inputs.json"), "w", encoding="utf-8") as fh:
        json.dump(saved, fh)


def kept_inputs(environ: Mapping[str, str], work: str) -> Inputs:
    """The step's variables with the inputs that prepare kept over them (a job-level env: of the
    same name never changes what prepare checked). No file is an error, never the step's
    variables alone: prepare always writes it, so its absence means WORK is not prepare's."""
    try:
        with open(os.path.join(work, "inputs.json"), encoding="utf-8") as fh:
            saved = json.load(fh)
    except FileNotFoundError:
        raise UsageError(f"internal: {work}/inputs.json is missing (is {work} a work folder that prepare made?)") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"internal: {work}/inputs.json cannot be read: {exc}") from None
    if not isinstance(saved, dict) or not all(isinstance(v, str) for v in saved.values()):
        raise UsageError(f"internal: {work}/inputs.json is not what prepare writes")
    return Inputs({**environ, **saved})


def _variable(name: str) -> str:
    special = {"model-stub-config-templates": "CONFIG_TEMPLATES"}
    return "ACPJ_" + special.get(name, name.replace("-", "_").upper())


def path_of(given: str, workspace: str, home: str) -> str:
    """An input path made absolute: `~/` is the home, a relative path is in the workspace."""
    if given == "~" or given.startswith("~/"):
        given = home + given[1:]
    return os.path.realpath(os.path.join(workspace, given))


def workspace_file(name: str, given: str, workspace: str, home: str) -> str:
    path = path_of(given, workspace, home)
    root = os.path.realpath(workspace)
    if not (path + "/").startswith(root.rstrip("/") + "/"):
        raise InputError(name, f"{given} is not in the workspace")
    if not os.path.isfile(path):
        raise InputError(name, f"{path} is not a file (write or check it out in an earlier step)")
    return path


# --- what a step prints ---------------------------------------------------------------------------

def say(text: str) -> None:
    print(f"acp-journeys: {command_data(text)}", flush=True)


def annotate(level: str, text: str, environ: Mapping[str, str] = os.environ) -> None:
    """`::error::` or `::warning::`, now, or (under the shell's pause) into ACPJ_MESSAGES for later."""
    later = environ.get("ACPJ_MESSAGES")
    if later:
        with open(later, "a", encoding="utf-8") as fh:
            fh.write(f"{level} {command_data(text)}\n")
    else:
        print(f"::{level}::{command_data(text)}", flush=True)


def set_outputs(outputs: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> None:
    """The step's outputs, `name=value` lines in $GITHUB_OUTPUT (printed when there is none)."""
    for name, value in outputs.items():
        if "\n" in value or "\r" in value:
            raise UsageError(f"internal: output {name} holds a line break")
    lines = "".join(f"{name}={value}\n" for name, value in outputs.items())
    if environ.get("GITHUB_OUTPUT"):
        with open(environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as fh:
            fh.write(lines)
    else:
        print("".join(f"output {line}" for line in lines.splitlines(keepends=True)), end="")


def write_args(path: str, args: list[str]) -> None:
    """A list of arguments for the shell step, NUL-separated (`mapfile -d ''` reads it back)."""
    if any("\0" in a for a in args):
        raise UsageError("internal: an argument holds a NUL")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("".join(a + "\0" for a in args))


def read_args(path: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return [a for a in fh.read().split("\0")[:-1]]
