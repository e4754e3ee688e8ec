"""`acp-journeys registry` end to end over the fixture entries: real archives (file: URLs and a
path), real installs into a cache, real runs of `acp-journeys run` against the fixture agents
with the scripted model, in local mode and in docker mode (`--image`, the runner image, which
has python); then summary.json and index.html with each agent's exact row, and `dashboard`
again from the agents' folders alone with a previous summary (regressions and fixes).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import FAST_SCALE
from registry_fixtures import FAILING_FIXTURE, HOSTILE_NAME, MISSING_NPM_PACKAGE, expected_journeys, make_registry, sha256

from acp_journeys.cli import main
from acp_journeys.rules.catalog import JOURNEY_IDS
from acp_journeys.rules.protocol_catalog import CHECKS


def registry_run(tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any], Path]:
    source = make_registry(tmp_path / "src")
    out = tmp_path / "out"
    code = main(["registry", str(source), "--out", str(out), "--cache", str(tmp_path / "cache"),
                 "--timeout-scale", FAST_SCALE, "--jobs", "2", "--install-timeout", "120", "-q", *extra])
    summary = json.loads((out / "summary.json").read_text())
    return code, summary, out


def check_rows(summary: dict[str, Any], out: Path, source: Path) -> None:
    rows = {r["id"]: r for r in summary["agents"]}
    assert sorted(rows) == sorted(["bad-entry", "bad-sha", "escape", "failing", "missing-package", "needs-login",
                                   "reference"])
    got = {i: (r["status"], r["passed"], r["journeys"]) for i, r in rows.items()}
    login_journeys = {j: {"verdict": "fail", "failures": ["session-new-error"]} for j in JOURNEY_IDS}
    assert got == {
        "reference": ("ran", 7, expected_journeys(None)),
        "failing": ("ran", 6, expected_journeys(FAILING_FIXTURE)),
        "needs-login": ("needs-login", 0, login_journeys),
        "bad-sha": ("not-installed", 0, {}),
        "escape": ("not-installed", 0, {}),
        "missing-package": ("not-installed", 0, {}),
        "bad-entry": ("bad-entry", 0, {}),
    }
    assert expected_journeys(FAILING_FIXTURE)["follow-up-after-restart"] == {"verdict": "fail",
                                                                               "failures": ["no-load-session"]}
    assert rows["needs-login"]["reason"] == "session/new answered -32000 'Authentication required'"
    digest = sha256(source / "reference.tar.gz")
    assert rows["bad-sha"]["reason"] == f"the archive's sha256 is {digest}, not the {'0' * 64} the entry gives"
    assert rows["escape"]["reason"] == "'../escaped.txt' would be outside the install folder"
    assert rows["missing-package"]["reason"] in (
        f"npm install {MISSING_NPM_PACKAGE} failed with exit code 1: the package does not exist (see install.log)",
        "npm is not on PATH")
    assert rows["bad-entry"]["reason"] == "no distribution (npx, uvx or binary)"
    assert rows["reference"]["name"] == HOSTILE_NAME and rows["reference"]["kind"] == "binary"
    # The protocol column: each run also ran the tier; the conforming agent meets every MUST that
    # applies (all of them: it advertises list, resume and close), as the tier's judge counts them.
    musts = sum(1 for c in CHECKS if c.level == "MUST")
    assert rows["reference"]["protocol"] == {"passed": musts, "applicable": musts}
    assert rows["failing"]["protocol"]["applicable"] >= 1
    assert all(rows[i]["protocol"] is None for i in ("bad-sha", "escape", "missing-package", "bad-entry"))
    assert summary["journeys"] == {j: (2 if j != "follow-up-after-restart" else 1) for j in JOURNEY_IDS}
    assert summary["counts"] == {"ran": 2, "needs-login": 1, "not-installed": 3, "bad-entry": 1, "run-error": 0}
    for agent in ("reference", "failing", "needs-login"):
        folder = out / "agents" / agent
        assert {"result.json", "report.html", "install.log", "run.log", "status.json"} <= {p.name for p in folder.iterdir()}
    assert not (out / "agents" / "escape" / "result.json").exists()
    assert not (source.parent / "escaped.txt").exists()
    # The stub's key never reaches the files we write.
    for path in out.rglob("*"):
        if path.is_file() and path.name != "status.json":
            assert "acpj-stub-key-7f3a" not in path.read_text(errors="replace"), path
    page = (out / "index.html").read_text()
    assert "<script>document.title" not in page and "&lt;script&gt;document.title" in page


def test_registry_over_the_fixture_entries_in_local_mode(tmp_path: Path) -> None:
    code, summary, out = registry_run(tmp_path)
    assert code == 0
    check_rows(summary, out, tmp_path / "src")
    assert summary["changes"] is None
    ref = json.loads((out / "agents" / "reference" / "result.json").read_text())
    assert ref["model_stub"] is not None and ref["launch"]["kind"] == "local"
    assert all(j["evidence"]["model_stub_used"] for j in ref["journeys"])
    # A rerun reads the installs from the cache.
    code, again, out2 = registry_run(tmp_path, "--agent", "reference", "--previous", str(out / "summary.json"))
    assert code == 0 and json.loads((out2 / "agents" / "reference" / "status.json").read_text())["cached"] is True


def test_dashboard_from_the_agents_folders_alone_marks_regressions_and_fixes(tmp_path: Path) -> None:
    code, summary, out = registry_run(tmp_path)
    assert code == 0
    previous = tmp_path / "previous.json"
    # Last night: the failing agent passed follow-up-after-restart, the reference agent failed
    # turn-to-end, and the bad-sha agent ran.
    old = json.loads(json.dumps(summary))
    rows = {r["id"]: r for r in old["agents"]}
    rows["failing"]["journeys"]["follow-up-after-restart"] = {"verdict": "pass", "failures": []}
    rows["reference"]["journeys"]["turn-to-end"] = {"verdict": "fail", "failures": ["wrong-reply"]}
    rows["bad-sha"]["status"] = "ran"
    previous.write_text(json.dumps(old))
    only = tmp_path / "artifacts"
    (only / "agents").mkdir(parents=True)
    for agent in (out / "agents").iterdir():
        os.symlink(agent, only / "agents" / agent.name)
    page = tmp_path / "site" / "index.html"
    assert main(["dashboard", str(only), "--out", str(page), "--previous", str(previous)]) == 0
    rebuilt = json.loads((page.parent / "summary.json").read_text())
    assert rebuilt["changes"] == {
        "regressions": [{"agent": "bad-sha", "journey": "", "was": "ran", "now": "not-installed"},
                        {"agent": "failing", "journey": "follow-up-after-restart", "was": "pass", "now": "fail"}],
        "fixes": [{"agent": "reference", "journey": "turn-to-end", "was": "fail", "now": "pass"}]}
    assert [r["id"] for r in rebuilt["agents"]] == [r["id"] for r in summary["agents"]]
    assert main(["dashboard", str(tmp_path / "nothing"), "--out", str(page)]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["dashboard", str(only), "--out", str(page), "--previous", str(bad)]) == 2


@pytest.fixture(scope="module")
def runner_image() -> str:
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:
        pytest.skip(f"no Docker engine answers ({exc.__class__.__name__})")
    wanted = os.environ.get("ACP_JOURNEYS_TEST_IMAGE") or "acp-journeys/runner:dev"
    try:
        client.images.get(wanted)
    except docker.errors.ImageNotFound:
        pytest.skip(f"no image {wanted}: run scripts/setup/build-runner-image.sh")
    return wanted


def test_registry_over_the_fixture_entries_in_docker_mode(tmp_path: Path, runner_image: str) -> None:
    code, summary, out = registry_run(tmp_path, "--image", runner_image)
    assert code == 0
    check_rows(summary, out, tmp_path / "src")
    ref = json.loads((out / "agents" / "reference" / "result.json").read_text())
    assert ref["launch"]["kind"] == "docker" and ref["launch"]["agent_dir"] == "/agent"
    assert ref["agent_command"] == ["/agent/reference_agent.py"]


def test_the_protocol_column_is_judged_again_from_the_evidence(tmp_path: Path) -> None:
    """A result whose stored tier says every MUST passed, though its evidence shows a failed one:
    the dashboard's column counts what the tier's judge says, as verify does."""
    from conftest import reference_agent, run_journeys

    from acp_journeys.output.registry_summary import agent_row

    folder = tmp_path / "agents" / "fs-asker"
    folder.mkdir(parents=True)
    outcome = run_journeys(reference_agent("asks-client-fs"), tmp_path, "--tier", "protocol",
                           "--journey", "turn-to-end", "-o", str(folder / "result.json"),
                           output="agents/fs-asker/result.json")
    assert outcome.result is not None, outcome.stderr
    judged = agent_row(folder)["protocol"]
    assert judged["passed"] < judged["applicable"]
    data = outcome.result
    for check in data["tiers"]["protocol"]["checks"]:
        check["verdict"] = "pass" if check["verdict"] == "fail" else check["verdict"]
    data["tiers"]["protocol"]["musts_passed"] = data["tiers"]["protocol"]["musts_applicable"]
    (folder / "result.json").write_text(json.dumps(data))
    assert agent_row(folder)["protocol"] == judged
