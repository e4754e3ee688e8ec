"""The gate's word (rules/gate.py) and what `verify` and `report --github` say with it: an empty
--expect-sha is a usage error, a refused result says REFUSED, a partial one PARTIAL, and neither
ever prints `verdict: PASS` (console, job summary, check run, step outputs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sample_results
from conftest import reference_agent, run_journeys
from fake_github import FakeGitHub, serve

from acp_journeys.output import console, markdown
from acp_journeys.rules.gate import Gate, check_expected_sha, gate

SHA = "c0ffee" + "0" * 34
TWO = ("--journey", "turn-to-end", "--journey", "image-and-file")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acp_journeys", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def passing(tmp_path_factory) -> Path:
    """A real run of two journeys of the reference agent, of commit SHA: it passes."""
    tmp = tmp_path_factory.mktemp("passing")
    outcome = run_journeys(reference_agent(), tmp, *TWO, "--subject-sha", SHA)
    assert outcome.code == 0
    return outcome.path


# --- the pure rule ------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["", " ", "\t\n"])
def test_an_empty_expected_sha_is_an_error_not_a_check_turned_off(value: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        check_expected_sha(value)
    assert check_expected_sha(None) is None and check_expected_sha("c0ffee0") == "c0ffee0"
    with pytest.raises(ValueError):
        check_expected_sha("c0ffee0 deadbee")


def test_the_word_refused_before_partial_before_the_verdict() -> None:
    result = sample_results.run([sample_results.journey("turn-to-end")], subject={"sha": SHA})
    assert gate(result, "pass") == Gate("PASS")
    assert gate(result, "fail") == Gate("FAIL")
    assert gate(result, "pass", expect_sha="c0ffee0").word == "PASS"
    assert gate(result, "pass", expect_sha="c0ffe").word == "REFUSED"  # a short prefix names no commit
    assert gate(result, "pass", expect_sha=SHA).word == "PASS"
    refused = gate(result, "pass", missing=["image-and-file"], expect_sha="deadbeef")
    assert refused.word == "REFUSED" and "not of deadbeef" in refused.why and SHA in refused.why
    partial = gate(result, "fail", missing=["image-and-file"])
    assert partial == Gate("PARTIAL", "the result lacks the journeys image-and-file") and not partial.passed
    stopped = sample_results.run([sample_results.journey("turn-to-end")], partial=True)
    assert gate(stopped, "pass").word == "PARTIAL"
    nothing = sample_results.run([sample_results.journey("turn-to-end")])
    assert "no recorded commit or image" in gate(nothing, "pass", expect_sha="c0ffee0").why


def test_the_table_and_the_summary_say_the_gates_word() -> None:
    result = sample_results.run([sample_results.journey("turn-to-end")])
    refused = Gate("REFUSED", "this result is not of deadbeef: it tested c0ffee")
    table, title = console.table(result, refused), markdown.summary_title(result, gate=refused)
    assert "verdict: PASS" not in table and "verdict: REFUSED: 1 of 1 journeys passed (this result is not" in table
    assert title.startswith("ACP journeys: refused — 1 of 1 journeys passed") and "not of deadbeef" in title
    stopped = sample_results.run([sample_results.journey("turn-to-end")], partial=True)
    assert "verdict: PARTIAL:" in console.table(stopped)
    assert markdown.summary_title(stopped).startswith("ACP journeys: partial")
    assert "verdict: PASS:" in console.table(result)


# --- verify ------------------------------------------------------------------------------------

def test_verify_refuses_an_empty_expect_sha_with_exit_2(passing: Path) -> None:
    for args in (["--expect-sha", ""], ["--expect-sha="], ["--expect-sha", "  "]):
        out = cli("verify", str(passing), *TWO, *args)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert "--expect-sha is empty" in out.stderr and "Traceback" not in out.stderr
        assert "verdict:" not in out.stdout  # refused before any work


def test_verify_of_another_commit_says_refused_never_pass(passing: Path) -> None:
    assert "verdict: PASS:" in cli("verify", str(passing), *TWO, "--expect-sha", SHA[:7]).stdout
    out = cli("verify", str(passing), *TWO, "--expect-sha", "deadbeef")
    assert out.returncode == 1
    assert "verdict: PASS" not in out.stdout and "verdict: REFUSED: 2 of 2 journeys passed (this result is not of " \
        "deadbeef: it tested " + SHA in out.stdout, out.stdout
    assert "not of deadbeef" in out.stderr


def test_verify_of_a_file_without_all_journeys_says_partial(passing: Path, tmp_path: Path) -> None:
    out = cli("verify", str(passing))
    assert out.returncode == 1 and "verdict: PASS" not in out.stdout
    assert "verdict: PARTIAL: 2 of 2 journeys passed (the result lacks the journeys follow-up-same-session" in out.stdout
    baseline = tmp_path / "b.yml"
    baseline.write_text("- stop-running-turn\n")
    out = cli("verify", str(passing), "--baseline", str(baseline))
    assert out.returncode == 1 and "verdict under the baseline: PARTIAL" in out.stdout
    assert "verdict: PASS" not in out.stdout and "verdict under the baseline: PASS" not in out.stdout


def test_verify_of_a_stopped_run_says_partial(passing: Path, tmp_path: Path) -> None:
    data = json.loads(passing.read_text())
    data["partial"] = True
    stopped = tmp_path / "stopped.json"
    stopped.write_text(json.dumps(data))
    out = cli("verify", str(stopped), *TWO)
    assert out.returncode == 1 and "verdict: PARTIAL: 2 of 2 journeys passed" in out.stdout


# --- report --github ------------------------------------------------------------------------------

def _report(result: Path, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict, str, str]:
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs"
    summary.write_text("")
    outputs.write_text("")
    with serve(FakeGitHub(check_url="http://example.test/check/1")) as api:
        env = {"GITHUB_API_URL": api.url, "GITHUB_REPOSITORY": "o/r", "GITHUB_SHA": "1" * 40,
               "GITHUB_EVENT_NAME": "push", "GITHUB_TOKEN": "ghs_tok-123456",
               "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(outputs),
               "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        out = cli("report", str(result), "--github", *args, env=env)
    assert out.returncode == 0, out.stderr
    [post] = api.requests
    return out, json.loads(post["body"]), summary.read_text(), outputs.read_text()


def _output(outputs: str, name: str) -> str:
    lines = outputs.splitlines()
    return lines[lines.index(next(x for x in lines if x.startswith(f"{name}<<"))) + 1]


def test_report_github_says_the_gates_word(passing: Path, tmp_path: Path) -> None:
    out, payload, summary, outputs = _report(passing, tmp_path, *TWO)
    assert out.stdout.strip().endswith("verdict: PASS") and _output(outputs, "verdict") == "pass"
    assert payload["conclusion"] == "success"

    out, payload, summary, outputs = _report(passing, tmp_path)  # all 7 expected: 5 missing
    assert "verdict: PARTIAL: the result lacks the journeys" in out.stdout
    assert payload["conclusion"] == "failure" and payload["output"]["title"].startswith("ACP journeys: partial")
    assert "ACP journeys: partial" in summary and _output(outputs, "verdict") == "partial"

    out, payload, summary, outputs = _report(passing, tmp_path, *TWO, "--expect-sha", "deadbeef")
    assert "verdict: REFUSED: this result is not of deadbeef" in out.stdout
    assert payload["conclusion"] == "failure" and "refused" in payload["output"]["title"]
    assert "ACP journeys: refused" in summary and "not of deadbeef" in summary
    assert _output(outputs, "verdict") == "refused"

    bad = cli("report", str(passing), "--github", "--expect-sha", "")
    assert bad.returncode == 2 and "--expect-sha is empty" in bad.stderr


def test_the_html_page_of_a_refused_or_partial_result_says_so(passing: Path, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    out = cli("verify", str(passing), *TWO, "--expect-sha", "deadbeef", "--html", str(page))
    assert out.returncode == 1
    html = page.read_text()
    assert "<title>ACP journeys: REFUSED — 2 of 2 journeys passed" in html and "not of deadbeef" in html
    assert cli("report", str(passing), "--journey", "turn-to-end", "--html", str(page)).returncode == 0
    assert "<title>ACP journeys: PASS" in page.read_text()  # the journeys it must hold are there
    assert cli("report", str(passing), "--journey", "stop-running-turn", "--html", str(page)).returncode == 0
    assert "<title>ACP journeys: PARTIAL" in page.read_text()
    assert cli("report", str(passing), "--html", str(page)).returncode == 0  # a page, no gate asked for
    assert "<title>ACP journeys: PASS" in page.read_text()
