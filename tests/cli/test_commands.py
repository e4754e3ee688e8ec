"""Commands people expect: `list --json` (the catalog as data), `init`'s checks (the Dockerfile,
the default branch, what to do next), help texts that match behaviour, and agent processes
numbered from 1 in every output."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import sample_results
from acp_journeys.cli import parser
from acp_journeys.cli.init.workflow import WORKFLOW_PATH, default_branch
from acp_journeys.cli.listing import list_text
from acp_journeys.output.html.report import render_html
from acp_journeys.output.junit import junit_xml
from acp_journeys.output.markdown import summary_markdown
from acp_journeys.rules import catalog
from acp_journeys.rules.evidence import ProcessEvidence

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acp_journeys", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=30,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "t",
                        "GIT_AUTHOR_EMAIL": "t@example.test", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@example.test"})


# --- list --json -------------------------------------------------------------------------------

def test_list_json_is_the_catalog_as_data() -> None:
    out = cli("list", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["schema"] == "acp-journeys/catalog/1" and data["docs_url"] == catalog.DEFAULT_DOCS_URL
    assert [j["id"] for j in data["journeys"]] == list(catalog.JOURNEY_IDS)
    assert [c["id"] for c in data["process_checks"]] == [i for i, _ in catalog.PROCESS_CHECKS]
    anchors = set(re.findall(r'id="([a-z0-9-]+)"', (ROOT / "docs" / "journeys.md").read_text()))
    anchors |= {f"step-{n}" for n in range(1, 11)}
    text = list_text()
    for journey in data["journeys"]:
        spec = catalog.JOURNEYS_BY_ID[journey["id"]]
        assert journey["title"] == spec.title and journey["doc"].endswith("#" + spec.anchor)
        assert [f["id"] for f in journey["failures"]] == list(spec.failure_ids)
        for failure in journey["failures"]:
            assert failure["message"] == catalog.FAILURES[failure["id"]].message
            assert failure["anchor"] == catalog.anchor_for(failure["id"], journey["id"])
            assert failure["fix"].split("#")[1] in anchors, failure  # every fix link lands on its paragraph
            assert failure["id"] in text  # the same catalog as the text
    assert {f["id"] for f in data["strict"]} == {k.id for k in catalog.FAILURES.values() if k.tier == "strict"}
    assert [f["id"] for f in data["verify"]] == ["evidence-incomplete"]


# --- init -----------------------------------------------------------------------------------------

def test_init_refuses_a_repository_without_the_dockerfile_and_writes_nothing(tmp_path: Path) -> None:
    out = cli("init", "--path", str(tmp_path), "--agent-command", "agent --acp")
    assert out.returncode == 2 and "no Dockerfile in" in out.stderr and "--dockerfile" in out.stderr
    out = cli("init", "--path", str(tmp_path), "--agent-command", "agent --acp", "--dockerfile", "docker/acp.Dockerfile")
    assert out.returncode == 2 and "no docker/acp.Dockerfile in" in out.stderr
    out = cli("init", "--matrix", "--path", str(tmp_path), "--agent-command", "agent --acp")
    assert out.returncode == 2 and "no Dockerfile in" in out.stderr
    assert not (tmp_path / ".github").exists()
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "acp.Dockerfile").write_text("FROM scratch\n")
    out = cli("init", "--path", str(tmp_path), "--agent-command", "agent --acp", "--dockerfile", "docker/acp.Dockerfile")
    assert out.returncode == 0, out.stderr


def test_init_pushes_on_the_default_branch_of_origin(tmp_path: Path) -> None:
    origin, clone = tmp_path / "origin", tmp_path / "clone"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "trunk")
    (origin / "Dockerfile").write_text("FROM scratch\n")
    git(origin, "add", "Dockerfile")
    git(origin, "commit", "-q", "-m", "agent")
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "switch", "-q", "-c", "feature")  # the branch checked out is not the default
    assert default_branch(clone) == ("trunk", "origin/HEAD")
    out = cli("init", "--path", str(clone), "--agent-command", "/agent/bin/a --acp")
    assert out.returncode == 0, out.stderr
    from ruamel.yaml import YAML

    doc = YAML(typ="safe").load((clone / WORKFLOW_PATH).read_text())
    assert doc["on"]["push"]["branches"] == ["trunk"]
    assert "pushes to trunk (origin/HEAD)" in out.stdout
    # What to do next: try it here, then commit and push.
    steps = [line for line in out.stdout.splitlines() if line.startswith("next: ")]
    assert len(steps) == 3
    assert f"docker build -t my-agent:dev -f {clone / 'Dockerfile'} {clone} && " in steps[0]
    assert "acp-journeys run --image my-agent:dev -- /agent/bin/a --acp" in steps[0]
    assert f"commit {WORKFLOW_PATH}" in steps[1]


def test_init_takes_the_branch_checked_out_else_main(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "develop")
    assert default_branch(repo) == ("develop", "the branch checked out")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert default_branch(plain)[0] == "main"
    (plain / "Dockerfile").write_text("FROM scratch\n")
    out = cli("init", "--matrix", "--path", str(plain), "--agent-command", "a")
    assert out.returncode == 0, out.stderr
    assert 'branches: ["main"]' in (plain / WORKFLOW_PATH).read_text()


# --- help texts ---------------------------------------------------------------------------------

def _subparsers() -> dict[str, argparse.ArgumentParser]:
    [sub] = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_every_option_of_every_command_has_a_help_text() -> None:
    for name, command in _subparsers().items():
        for action in command._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                assert action.help, (name, action.option_strings)


def test_help_texts_say_what_the_code_does() -> None:
    from acp_journeys.launch.local import MINIMAL_ENV

    run = {a.dest: a.help for a in _subparsers()["run"]._actions}
    assert "bridge network of its own" in run["network"] and "no traffic between" in run["network"]
    assert all(name in run["inherit_env"] for name in MINIMAL_ENV) and "LC_*" in run["inherit_env"]
    verify = {a.dest: a.help for a in _subparsers()["verify"]._actions}
    assert "REFUSED" in verify["expect_sha"] and "empty value is an error" in verify["expect_sha"]


# --- agent processes numbered from 1 everywhere ---------------------------------------------------

def test_agent_processes_are_numbered_from_1_in_every_output() -> None:
    """result.json's `index` counts from 0; the judge's messages said `process 1` for it while the
    JUnit, Markdown and HTML outputs said `agent process 0`: now every output counts from 1."""
    failed = sample_results.journey("turn-to-end", "fail", [sample_results.failure("reply-missing-marker",
                                                                                    "turn-to-end")])
    failed.evidence.processes = [ProcessEvidence(index=0, argv=["agent"], started_at=0.0, stderr_tail="boom",
                                                 stderr_bytes=4),
                                 ProcessEvidence(index=1, argv=["agent"], started_at=1.0, stderr_tail="bang",
                                                 stderr_bytes=4)]
    result = sample_results.run([failed])
    outputs = {"junit": junit_xml(result, docs_url=sample_results.DOCS).decode(),
               "markdown": summary_markdown(result, docs_url=sample_results.DOCS),
               "html": render_html(result, docs_url=sample_results.DOCS)}
    for name, text in outputs.items():
        assert "agent process 1" in text and "agent process 2" in text, name
        assert "agent process 0" not in text, name
