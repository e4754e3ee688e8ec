"""`acp-journeys init`: a fresh repo, an existing workflow with comments, and broken files."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from acp_journeys.cli.init.workflow import WORKFLOW_PATH, InitError, init_workflow


def read(repo: Path) -> dict:
    return YAML(typ="safe").load((repo / WORKFLOW_PATH).read_text())


def our_step(doc: dict) -> dict:
    return next(s for job in doc["jobs"].values() for s in job.get("steps", [])
                if str(s.get("uses", "")).startswith("rondar/acp-journeys@"))


def test_fresh_repo(tmp_path: Path) -> None:
    outcome = init_workflow(str(tmp_path), "/agent/bin/my-agent --acp", "Dockerfile")
    assert outcome.action == "created" and outcome.path == tmp_path / WORKFLOW_PATH
    doc = read(tmp_path)
    assert set(doc["on"]) == {"pull_request", "push"}
    assert doc["permissions"] == {"checks": "write", "contents": "read"}
    [job] = doc["jobs"].values()
    assert job["steps"][0]["uses"].startswith("actions/checkout@")
    assert job["steps"][1] == {"uses": "rondar/acp-journeys@v1",
                               "with": {"agent-command": "/agent/bin/my-agent --acp", "dockerfile": "Dockerfile"}}
    assert init_workflow(str(tmp_path), "/agent/bin/my-agent --acp", "Dockerfile").action == "unchanged"


def test_fresh_repo_without_dockerfile_and_with_awkward_command(tmp_path: Path) -> None:
    command = "node dist/agent.js --acp --name 'a: b' # not a comment"
    init_workflow(str(tmp_path), command, None)
    step = our_step(read(tmp_path))
    assert step["with"] == {"agent-command": command}


EXISTING = """\
# Our CI: keep these comments.
name: CI   # the name

on:
  push:
    branches: [main, 'release/**']
  pull_request: {}

env:
  FOO: bar

jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
    - uses: actions/checkout@v4
    - run: make lint  # lint first
  journeys:
    # the journeys job
    needs: lint
    runs-on: ubuntu-22.04
    steps:
    - uses: actions/checkout@v4
      with:
        fetch-depth: 0
    - name: ACP journeys
      uses: rondar/acp-journeys@v1.2.3   # pinned on purpose
      with:
        agent-command: ./old-agent --acp   # the old one
        journeys: turn-to-end
        dockerfile: docker/Dockerfile
    - run: echo "after"  # keep me
"""


def test_existing_workflow_is_updated_in_place(tmp_path: Path) -> None:
    path = tmp_path / WORKFLOW_PATH
    path.parent.mkdir(parents=True)
    path.write_text(EXISTING)
    outcome = init_workflow(str(tmp_path), "./new-agent --acp", None)
    assert outcome.action == "updated", outcome
    text = path.read_text()
    assert text == EXISTING.replace("./old-agent --acp   # the old one", "./new-agent --acp   # the old one")
    outcome = init_workflow(str(tmp_path), "./new-agent --acp", "Dockerfile.acp")
    assert path.read_text() == text.replace("dockerfile: docker/Dockerfile", "dockerfile: Dockerfile.acp")
    assert outcome.notes == []


def test_a_job_without_checks_write_gets_a_note(tmp_path: Path) -> None:
    path = tmp_path / WORKFLOW_PATH
    path.parent.mkdir(parents=True)
    path.write_text("on: [pull_request]\npermissions: read-all\njobs:\n  j:\n    steps:\n"
                    "      - uses: rondar/acp-journeys@v1\n")
    outcome = init_workflow(str(tmp_path), "agent", None)
    assert outcome.action == "updated"
    assert [n for n in outcome.notes if "checks: write" in n]


INDENTED = """\
name: build  # ours
on: [push]
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4  # checkout
      - run: make
"""


def test_existing_workflow_without_our_step_gets_our_job(tmp_path: Path) -> None:
    path = tmp_path / WORKFLOW_PATH
    path.parent.mkdir(parents=True)
    path.write_text(INDENTED)
    outcome = init_workflow(str(tmp_path), "agent --acp", None)
    assert outcome.action == "added-job" and "acp-journeys" in outcome.message
    text = path.read_text()
    assert text.startswith(INDENTED)  # every line, comment and key as it was
    doc = read(tmp_path)
    assert list(doc["jobs"]) == ["build", "acp-journeys"]
    job = doc["jobs"]["acp-journeys"]
    assert job["permissions"] == {"checks": "write", "contents": "read"}
    assert our_step(doc)["with"] == {"agent-command": "agent --acp"}
    assert any("does not run on pull_request" in n for n in outcome.notes)


def test_a_job_named_like_ours_is_kept(tmp_path: Path) -> None:
    path = tmp_path / WORKFLOW_PATH
    path.parent.mkdir(parents=True)
    path.write_text("on: push\njobs:\n  acp-journeys:\n    runs-on: x\n    steps:\n      - run: true\n")
    init_workflow(str(tmp_path), "agent", None)
    doc = read(tmp_path)
    assert list(doc["jobs"]) == ["acp-journeys", "acp-journeys-2"]
    assert doc["jobs"]["acp-journeys"]["steps"] == [{"run": True}]


@pytest.mark.parametrize(("text", "words"), [
    ("jobs:\n  a: [unclosed\n", "is not valid YAML at line 3"),
    ("on: push\n\tjobs: {}\n", "is not valid YAML at line 2"),
    ("- a\n- b\n", "is not a workflow"),
    ("on: push\njobs: [a]\n", "`jobs` is not a mapping"),
])
def test_a_broken_file_is_left_untouched(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / WORKFLOW_PATH
    path.parent.mkdir(parents=True)
    path.write_text(text)
    before = path.stat().st_mtime_ns
    with pytest.raises(InitError) as info:
        init_workflow(str(tmp_path), "agent", None)
    assert words in str(info.value), str(info.value)
    assert "left as it is" in str(info.value)
    assert path.read_text() == text and path.stat().st_mtime_ns == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["acp-journeys.yml"]


def test_other_workflows_are_never_touched_but_noted(tmp_path: Path) -> None:
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    other = workflows / "ci.yml"
    other.write_text("jobs:\n  x:\n    steps:\n      - uses: rondar/acp-journeys@v1\n")
    outcome = init_workflow(str(tmp_path), "agent", None)
    assert outcome.action == "created"
    assert other.read_text() == "jobs:\n  x:\n    steps:\n      - uses: rondar/acp-journeys@v1\n"
    assert outcome.notes and "ci.yml" in outcome.notes[0]


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(InitError, match="not a folder"):
        init_workflow(str(tmp_path / "nope"), "agent", None)
    with pytest.raises(InitError, match="empty"):
        init_workflow(str(tmp_path), "  ", None)


def test_pull_request_target_gets_a_warning_and_the_file_is_kept(tmp_path: Path) -> None:
    path = tmp_path / WORKFLOW_PATH
    path.parent.mkdir(parents=True)
    text = ("on: pull_request_target\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n"
            "      - uses: actions/checkout@v4\n        with:\n          ref: ${{ github.event.pull_request.head.sha }}\n"
            "      - uses: rondar/acp-journeys@v1\n        with:\n          agent-command: a\n")
    path.write_text(text)
    outcome = init_workflow(tmp_path, "a")
    assert outcome.action == "unchanged" and path.read_text() == text
    [warning] = outcome.warnings
    assert "pull_request_target" in warning and "secrets" in warning
    assert init_workflow(tmp_path, "b").warnings == outcome.warnings  # updated: still warned
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    created = init_workflow(fresh, "a")
    assert created.warnings == []
    made = (fresh / WORKFLOW_PATH).read_text()
    assert "persist-credentials: false" in made and "pull_request_target" not in made
