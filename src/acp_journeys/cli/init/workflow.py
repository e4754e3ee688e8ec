"""`acp-journeys init`: the PR-check workflow of an agent repository.

Rules of this module:
- The workflow is `.github/workflows/acp-journeys.yml` in `repo`; no other file is ever written.
- A fresh file runs on pull_request and on push to the default branch (`default_branch`: git's
  origin/HEAD, else the current branch, else main), with the permissions the action needs
  (`checks: write` to post the check run, `contents: read` to check out), and one job:
  actions/checkout (pinned by commit, with `persist-credentials: false`), then
  `uses: rondar/acp-journeys@v1` with the `agent-command` input and, when
  given, the `dockerfile` input.
- When the file exists it is edited as a ruamel.yaml round trip, so every comment, the key order,
  the quoting and every unrelated job and step stay as they were: our step (the first whose
  `uses` starts with `rondar/acp-journeys@`) gets the new `agent-command` (and `dockerfile`, when
  one is given; its version pin is kept); with no such step, our job is added under `jobs`.
  A file that would not change is not rewritten. Notes (never edits) say when the workflow does
  not run on pull_request or the job lacks `checks: write`; a warning says when it runs on
  pull_request_target (a fork's code would run with the repository's secrets).
- A file that is not valid YAML, or not a workflow (a mapping), gives `InitError` with the file,
  the line and the reason, and the file stays untouched. Writing is all or nothing (a temporary
  file, then a rename).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

WORKFLOW_PATH = Path(".github") / "workflows" / "acp-journeys.yml"
ACTION = "rondar/acp-journeys"
ACTION_REF = f"{ACTION}@v1"
JOB_ID = "acp-journeys"

_TEMPLATE = """\
# ACP journeys: drives this repository's ACP agent through Rondar's user journeys on every pull
# request and push, and posts the verdict as a check run (see the job summary too).
name: ACP journeys

on:
  pull_request:
  push:
    branches: [main]  # your default branch

permissions:
  checks: write  # to post the check run
  contents: read  # to check out the agent

jobs:
  acp-journeys:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1  # v7.0.1
        with:
          persist-credentials: false  # no token in .git/config, which the agent's build could read
      - uses: rondar/acp-journeys@v1
        with:
          agent-command: AGENT
          # More inputs, as on the command line (see the action's README):
          # settings: |                      # environment variables that are no secrets
          #   AGENT_MODEL=stub-model
          # model-stub: true                 # a scripted model: no login, no network
          # model-stub-config-templates: |   # with model-stub: SRC (in this repo):DEST (in the agent's home)
          #   .github/acp/config.toml:.config/my-agent/config.toml
          # baseline: .github/acp-baseline.yml   # expected failures (the check run still lists them)
          # timeout-scale: 3                 # more time for initialize and turns (a slow model)
          # strict: true                     # schema violations fail the journey
          # parallel: 2                      # journeys at once (default all)
"""


BRANCH_LINE = "    branches: [main]  # your default branch"
"""The line of the templates that `with_branch` fills with the repository's default branch."""


def with_branch(template: str, branch: str, how: str) -> str:
    """The template with `branch` (quoted as YAML reads it, whatever it holds) on push."""
    assert BRANCH_LINE in template
    return template.replace(BRANCH_LINE, f"    branches: [{json.dumps(branch)}]  # the default branch ({how})")


def default_branch(repo: str | os.PathLike[str]) -> tuple[str, str]:
    """The repository's default branch and how it was found: git's origin/HEAD (the remote's
    default), else the branch checked out, else `main`. Every git call has a bound."""
    def git(*args: str) -> str:
        try:
            proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            return ""
        return proc.stdout.strip() if proc.returncode == 0 else ""

    remote = git("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if remote.startswith("origin/") and remote != "origin/":
        return remote.removeprefix("origin/"), "origin/HEAD"
    current = git("symbolic-ref", "--quiet", "--short", "HEAD")
    if current:
        return current, "the branch checked out"
    return "main", "no git branch found: check it"


def missing_dockerfile(repo: str | os.PathLike[str], dockerfile: str | None) -> str | None:
    """Why the agent image cannot be built from `dockerfile` (the action's default: `Dockerfile`
    at the root), or None when the file is there."""
    name = dockerfile or "Dockerfile"
    if (Path(repo) / name).is_file():
        return None
    return (f"no {name} in {repo}: the workflow builds the agent's image from it; write one (see the README: "
            "what your agent's image must contain) or give its path with --dockerfile")


class InitError(Exception):
    """The workflow cannot be written or updated; the message says which file and why."""


@dataclass
class InitOutcome:
    path: Path
    action: Literal["created", "updated", "added-job", "unchanged"]
    message: str
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _yaml(indent: int | None = None, offset: int | None = None):  # type: ignore[no-untyped-def]
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    if indent is not None:
        seq_offset = offset if offset is not None else 0
        mapping = indent - seq_offset if indent - seq_offset > 0 else 2
        yaml.indent(mapping=mapping, sequence=indent, offset=seq_offset)
    else:
        yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _dump(yaml, data: Any) -> str:  # type: ignore[no-untyped-def]
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()


def _is_ours(step: Any) -> bool:
    return isinstance(step, dict) and isinstance(step.get("uses"), str) and step["uses"].startswith(f"{ACTION}@")


def _find_step(doc: Any) -> tuple[str, Any] | None:
    jobs = doc.get("jobs")
    if not isinstance(jobs, dict):
        return None
    for job_id, job in jobs.items():
        steps = job.get("steps") if isinstance(job, dict) else None
        if isinstance(steps, list):
            for step in steps:
                if _is_ours(step):
                    return str(job_id), step
    return None


def _set_inputs(step: Any, agent_command: str, dockerfile: str | None) -> bool:
    """Set our inputs on our step; True when something changed."""
    from ruamel.yaml.comments import CommentedMap

    changed = False
    inputs = step.get("with")
    if not isinstance(inputs, dict):
        inputs = CommentedMap()
        step["with"] = inputs
        changed = True
    if inputs.get("agent-command") != agent_command:
        inputs["agent-command"] = agent_command
        changed = True
    if dockerfile is not None and inputs.get("dockerfile") != dockerfile:
        inputs["dockerfile"] = dockerfile
        changed = True
    return changed


_JOB_TEMPLATE = """\
runs-on: ubuntu-latest
permissions:
  checks: write
  contents: read
steps:
  - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1  # v7.0.1
    with:
      persist-credentials: false
  - uses: rondar/acp-journeys@v1
    with:
      agent-command: AGENT
"""


def _new_job(agent_command: str, dockerfile: str | None) -> Any:
    """Our job for a workflow that has none: the permissions are the job's own."""
    job = _yaml().load(_JOB_TEMPLATE)
    _set_inputs(job["steps"][1], agent_command, dockerfile)
    return job


def _triggers(doc: Any) -> set[str]:
    on = doc.get("on", doc.get(True))  # YAML 1.1 readers turn `on` into true
    if isinstance(on, str):
        return {on}
    if isinstance(on, (list, dict)):
        return {str(x) for x in on}
    return set()


def _can_post_checks(doc: Any, job: Any) -> bool:
    """False when a permissions block applies to the job and does not grant checks: write."""
    perms = job.get("permissions") if isinstance(job, dict) and "permissions" in job else doc.get("permissions")
    if perms is None:
        return True  # the repository's default token permissions
    if isinstance(perms, str):
        return perms == "write-all"
    return isinstance(perms, dict) and perms.get("checks") == "write"


def _notes(doc: Any, job_id: str) -> list[str]:
    notes = []
    if "pull_request" not in _triggers(doc) and "pull_request_target" not in _triggers(doc):
        notes.append(f"{WORKFLOW_PATH} does not run on pull_request: add it under `on` for a PR check")
    if not _can_post_checks(doc, doc["jobs"][job_id]):
        notes.append(f"job {job_id} has no `checks: write` permission: the verdict will only be in the job "
                     "summary (add `checks: write` to its permissions for a check run)")
    return notes


def _warnings(doc: Any) -> list[str]:
    """What makes the workflow unsafe for pull requests from forks (never edited for the user)."""
    if "pull_request_target" not in _triggers(doc):
        return []
    return [f"{WORKFLOW_PATH} runs on pull_request_target: that event runs with this repository's secrets "
            "and a write token, so a checkout of the pull request's head hands them to a fork's code (its "
            "agent and Dockerfile run here); use pull_request (see the README's Security section)"]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".acp-journeys-", suffix=".yml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _other_workflows(workflows: Path, ours: Path) -> list[str]:
    found = []
    for other in sorted(workflows.glob("*.y*ml")) if workflows.is_dir() else []:
        if other.name != ours.name:
            try:
                if f"{ACTION}@" in other.read_text(encoding="utf-8", errors="replace"):
                    found.append(other.name)
            except OSError:
                pass
    return found


def init_workflow(repo: str, agent_command: str, dockerfile: str | None = None, *,
                  branch: tuple[str, str] | None = None) -> InitOutcome:
    """Create or update `.github/workflows/acp-journeys.yml` in `repo` (see the module's rules);
    `branch`: the default branch and how it was found, for the push trigger of a fresh file."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.util import load_yaml_guess_indent

    if not agent_command.strip():
        raise InitError("--agent-command is empty: give the command line that starts the agent in ACP mode")
    root = Path(repo)
    if not root.is_dir():
        raise InitError(f"{repo}: not a folder (give the agent repository with --path)")
    path = root / WORKFLOW_PATH
    notes = [f"{name} already uses {ACTION}: check that the journeys do not run twice"
             for name in _other_workflows(path.parent, path)]

    if not path.exists():
        yaml = _yaml()
        doc = yaml.load(with_branch(_TEMPLATE, *branch) if branch else _TEMPLATE)
        _set_inputs(doc["jobs"][JOB_ID]["steps"][1], agent_command, dockerfile)
        _write(path, _dump(yaml, doc))
        return InitOutcome(path, "created", f"wrote {WORKFLOW_PATH}", notes)

    try:
        original = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InitError(f"{WORKFLOW_PATH}: cannot read it ({exc}); it was left as it is") from None
    try:
        doc, indent, offset = load_yaml_guess_indent(original, yaml=_yaml())
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise InitError(f"{WORKFLOW_PATH} is not valid YAML{where}: {exc.problem or exc.context}; "
                        "fix it or remove it, it was left as it is") from None
    except YAMLError as exc:
        raise InitError(f"{WORKFLOW_PATH} is not valid YAML ({exc}); it was left as it is") from None
    if not isinstance(doc, dict):
        raise InitError(f"{WORKFLOW_PATH} is not a workflow (its top level is not a mapping); it was left as it is")
    jobs = doc.get("jobs")
    if jobs is not None and not isinstance(jobs, dict):
        raise InitError(f"{WORKFLOW_PATH}: `jobs` is not a mapping; it was left as it is")

    yaml = _yaml(indent, offset)
    found = _find_step(doc)
    if found is not None:
        job_id, step = found
        if not _set_inputs(step, agent_command, dockerfile):
            return InitOutcome(path, "unchanged", f"{WORKFLOW_PATH} already runs the journeys with this command",
                               notes + _notes(doc, job_id), _warnings(doc))
        action: Literal["updated", "added-job"] = "updated"
        message = f"updated the {ACTION} step of job {job_id} in {WORKFLOW_PATH}"
    else:
        from ruamel.yaml.comments import CommentedMap

        if jobs is None:
            jobs = CommentedMap()
            doc["jobs"] = jobs
        job_id = JOB_ID
        n = 2
        while job_id in jobs:
            job_id, n = f"{JOB_ID}-{n}", n + 1
        jobs[job_id] = _new_job(agent_command, dockerfile)
        action = "added-job"
        message = f"added job {job_id} to {WORKFLOW_PATH}"
    _write(path, _dump(yaml, doc))
    return InitOutcome(path, action, message, notes + _notes(doc, job_id), _warnings(doc))
