"""The report options through the CLI: --junit, --baseline, --expect-sha, report --github, init."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from conftest import reference_agent, run_journeys
from fake_github import FakeGitHub, serve


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acp_journeys", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})}, cwd=cwd)


TWO = ("--journey", "turn-to-end", "--journey", "image-and-file")  # the journeys of failing_result


@pytest.fixture(scope="module")
def failing_result(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("failing")
    outcome = run_journeys(reference_agent("wrong-reply"), tmp, "--journey", "turn-to-end",
                           "--journey", "image-and-file", "--subject-sha", "c0ffee" + "0" * 34)
    assert outcome.code == 1
    return outcome.path


def test_junit_from_run_and_verify(failing_result, tmp_path):
    out = cli("verify", str(failing_result), "--junit", str(tmp_path / "j.xml"))
    assert out.returncode == 1
    suite = ElementTree.parse(tmp_path / "j.xml").getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"turn-to-end", "image-and-file"}
    failure = cases["turn-to-end"].find("failure")
    assert failure is not None and failure.get("type") == "reply-missing-marker"
    assert "#step-3" in (failure.text or "") + (failure.get("message") or "")
    assert cases["image-and-file"].find("failure") is None


def test_baseline_passes_known_failures_and_fails_stale_ones(failing_result, tmp_path):
    good = tmp_path / "baseline.yml"
    good.write_text("- id: turn-to-end:reply-missing-marker\n  reason: the marker is tracked in #12\n")
    assert cli("verify", str(failing_result), "--baseline", str(good), *TWO).returncode == 0
    stale = tmp_path / "stale.yml"
    stale.write_text("- turn-to-end:reply-missing-marker\n- image-and-file\n")
    out = cli("verify", str(failing_result), "--baseline", str(stale), *TWO)
    assert out.returncode == 1 and "image-and-file" in out.stdout
    bad = tmp_path / "bad.yml"
    bad.write_text("- turn-to-end\n- no-such-journey:x\n")
    out = cli("verify", str(failing_result), "--baseline", str(bad))
    assert out.returncode == 2 and "bad.yml:2" in out.stderr


def test_expect_sha_gates_on_the_tested_commit(failing_result, tmp_path):
    data = json.loads(failing_result.read_text())
    for journey in data["journeys"]:  # make the evidence pass, so only the sha can fail it
        for turn in journey["evidence"]["turns"]:
            turn["reply_text"] = " ".join(journey["evidence"]["markers"].values()) + " red"
    passing = tmp_path / "passing.json"
    passing.write_text(json.dumps(data))
    assert cli("verify", str(passing), *TWO).returncode == 0
    assert cli("verify", str(passing), "--expect-sha", "c0ffee0", *TWO).returncode == 0
    other = cli("verify", str(passing), "--expect-sha", "deadbeef", *TWO)
    assert other.returncode == 1 and "not of deadbeef" in other.stderr


def test_report_github_posts_a_check_run_and_writes_the_summary(failing_result, tmp_path):
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs"
    with serve(FakeGitHub(check_url="http://example.test/check/1")) as api:
        env = {"GITHUB_API_URL": api.url, "GITHUB_REPOSITORY": "o/r",
               "GITHUB_SHA": "1" * 40, "GITHUB_EVENT_NAME": "push", "GITHUB_TOKEN": "ghs_tok-123456",
               "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(outputs),
               "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        out = cli("report", str(failing_result), "--github", env=env)
    assert out.returncode == 0, out.stderr
    assert "ghs_tok-123456" not in out.stdout + out.stderr
    [post] = api.requests
    payload = json.loads(post["body"])
    assert post["path"] == "/repos/o/r/check-runs" and post["headers"]["Authorization"] == "Bearer ghs_tok-123456"
    assert payload["conclusion"] == "failure" and payload["head_sha"] == "1" * 40
    assert "reply-missing-marker" in payload["output"]["summary"]
    assert "reply-missing-marker" in summary.read_text()
    assert "verdict" in outputs.read_text()


def test_init_writes_the_workflow(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    out = cli("init", "--path", str(tmp_path), "--agent-command", "/agent/bin/my-agent --acp")
    assert out.returncode == 0, out.stderr
    text = (tmp_path / ".github" / "workflows" / "acp-journeys.yml").read_text()
    assert "rondar/acp-journeys@v1" in text and "/agent/bin/my-agent --acp" in text
    (tmp_path / ".github" / "workflows" / "acp-journeys.yml").write_text("key: [unclosed\n")
    bad = cli("init", "--path", str(tmp_path), "--agent-command", "x")
    assert bad.returncode == 2
    assert (tmp_path / ".github" / "workflows" / "acp-journeys.yml").read_text() == "key: [unclosed\n"
