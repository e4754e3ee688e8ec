"""`acp-journeys init --matrix`: the PR-check workflow that spreads the journeys over a matrix.

Rules of this module:
- It writes `.github/workflows/acp-journeys.yml` (the path of `init`) only when no such file is
  there: editing a workflow into a matrix and a verdict job is left to its owner (`InitError`
  says so, and the file stays untouched).
- The workflow is examples/workflows/matrix-journeys.yml's: a matrix over groups of the
  journeys (every journey in one group), each job running `rondar/acp-journeys@v1` with
  `post-check: false`, `fail-on-failure: false` and an artifact `acp-journeys-result.<n>`; then a
  verdict job (`needs` them, runs unless cancelled, `checks: write`) with
  `rondar/acp-journeys/merge@v1`, which posts the one check and gates.
"""

from __future__ import annotations

from acp_journeys.cli.init.workflow import (WORKFLOW_PATH, InitError, InitOutcome, _dump, _set_inputs, _write, _yaml,
                                            with_branch)

# Groups of about equal time, the two Plan journeys together (they share their opening).
GROUPS: tuple[tuple[str, ...], ...] = (
    ("turn-to-end", "follow-up-same-session", "follow-up-after-restart"),
    ("image-and-file", "stop-running-turn"),
    ("plan-turn-saved-plan", "plan-regular-plan"),
)
MERGE_ACTION_REF = "rondar/acp-journeys/merge@v1"

_TEMPLATE = """\
# ACP journeys, spread over a matrix: each job runs some of the journeys and uploads its
# result.json; the verdict job merges them, posts one check run and fails when a journey failed
# (or when a job wrote no result).
name: ACP journeys

on:
  pull_request:
  push:
    branches: [main]  # your default branch

permissions:
  contents: read  # to check out the agent

jobs:
  journeys:
    runs-on: ubuntu-latest
    strategy:
      fail-fast: false  # every job's result counts
      matrix:
        journeys: []
    steps:
      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1  # v7.0.1
        with:
          persist-credentials: false  # the agent's code needs no token
      - uses: rondar/acp-journeys@v1
        with:
          agent-command: AGENT
          journeys: ${{ matrix.journeys }}
          post-check: false  # the verdict job posts the one check
          fail-on-failure: false  # the verdict job gates
          artifact-name: acp-journeys-result.${{ strategy.job-index }}

  verdict:
    needs: journeys
    if: ${{ !cancelled() }}  # also when a journeys job failed: its missing result fails the merge
    runs-on: ubuntu-latest
    permissions:
      checks: write  # to post the check run
      contents: read
    steps:
      - uses: rondar/acp-journeys/merge@v1
        with:
          pattern: acp-journeys-result.*
          journeys: all  # every journey must be in the merged result
"""


def init_matrix_workflow(repo: str, agent_command: str, dockerfile: str | None = None, *,
                         branch: tuple[str, str] | None = None) -> InitOutcome:
    from pathlib import Path

    if not agent_command.strip():
        raise InitError("--agent-command is empty: give the command line that starts the agent in ACP mode")
    root = Path(repo)
    if not root.is_dir():
        raise InitError(f"{repo}: not a folder (give the agent repository with --path)")
    path = root / WORKFLOW_PATH
    if path.exists():
        raise InitError(f"{WORKFLOW_PATH} exists: --matrix writes a new workflow only; move it away, or turn "
                        "it into a matrix by hand (see examples/workflows/matrix-journeys.yml)")
    yaml = _yaml()
    doc = yaml.load(with_branch(_TEMPLATE, *branch) if branch else _TEMPLATE)
    job = doc["jobs"]["journeys"]
    job["strategy"]["matrix"]["journeys"] = [" ".join(group) for group in GROUPS]
    step = job["steps"][1]
    _set_inputs(step, agent_command, dockerfile)
    if dockerfile is not None:  # after agent-command, where a reader looks for it
        step["with"].move_to_end("dockerfile")
        for key in ("journeys", "post-check", "fail-on-failure", "artifact-name"):
            step["with"].move_to_end(key)
    _write(path, _dump(yaml, doc))
    return InitOutcome(path, "created", f"wrote {WORKFLOW_PATH} (a matrix of {len(GROUPS)} jobs and a verdict job)")


