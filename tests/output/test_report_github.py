"""`report --github` against a real HTTP server on loopback that stands in for the GitHub API."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_github import FakeGitHub, serve
from sample_results import DOCS, all_pass, failure, journey, mixed, run

from acp_journeys.output.github import READ_ONLY_WARNING, STEP_SUMMARY_LIMIT, report_github
from acp_journeys.rules.baseline import apply_baseline, parse_baseline
from acp_journeys.rules.catalog import JOURNEY_FAILURES, JOURNEYS

TOKEN = "ghs_secret-token-0123456789"
HEAD_SHA = "a" * 40
PUSH_SHA = "b" * 40


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    with serve(FakeGitHub()) as fake:
        yield fake


def gh_env(tmp_path: Path, api_url: str, event: str = "push", payload: dict | None = None) -> dict[str, str]:
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(payload if payload is not None else {"after": PUSH_SHA}))
    return {"GITHUB_API_URL": api_url, "GITHUB_REPOSITORY": "octo/agent", "GITHUB_SHA": PUSH_SHA,
            "GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "GITHUB_OUTPUT": str(tmp_path / "output"),
            "GITHUB_SERVER_URL": "https://github.example.test", "GITHUB_RUN_ID": "42"}


def outputs(path: Path) -> dict[str, str]:
    """The GITHUB_OUTPUT file read as the runner reads it (heredoc form)."""
    pattern = r"^([\w-]+)<<(ghadelimiter_[0-9a-f]+)\n(.*?)\n\2$"
    return {m[0]: m[2] for m in re.findall(pattern, path.read_text(), flags=re.M | re.S)}


def test_push_creates_a_check_run(tmp_path: Path, api: FakeGitHub) -> None:
    env = gh_env(tmp_path, api.url)
    report = report_github(mixed(), env=env, token=TOKEN, docs_url=DOCS, result_path="out/result.json")
    assert report.warnings == []
    assert report.check_url == "https://github.example.test/o/r/runs/7" and report.status == 201
    [req] = api.requests
    assert req["path"] == "/repos/octo/agent/check-runs"
    h = {k.lower(): v for k, v in req["headers"].items()}
    assert h["authorization"] == f"Bearer {TOKEN}"
    assert h["accept"] == "application/vnd.github+json"
    assert h["x-github-api-version"] == "2022-11-28"
    assert h["user-agent"].startswith("acp-journeys/")
    payload = json.loads(req["body"])
    assert payload["name"] == "ACP journeys" and payload["head_sha"] == PUSH_SHA
    assert payload["status"] == "completed" and payload["conclusion"] == "failure"
    assert payload["details_url"] == "https://github.example.test/octo/agent/actions/runs/42"
    assert payload["output"]["title"].startswith("ACP journeys: fail — 5 of 7 journeys passed")
    summary = payload["output"]["summary"]
    assert len(summary) <= 65535
    # The check run's failures link their own #failure-ID paragraphs, the step beside each.
    assert (f"[how to fix (\\#failure-reply-not-in-chunks)]({DOCS}#failure-reply-not-in-chunks) · "
            f"[step (\\#step-3)]({DOCS}#step-3)") in summary
    assert summary.index("(turn-to-end): fail") < summary.index("(follow-up-same-session): pass")
    # the job summary and the outputs
    assert (tmp_path / "summary.md").read_text() == summary + "\n"
    assert outputs(tmp_path / "output") == {"verdict": "fail", "passed": "5", "failed": "2",
                                            "result-path": "out/result.json",
                                            "check-url": "https://github.example.test/o/r/runs/7"}


def test_agent_injection_comes_out_escaped(tmp_path: Path, api: FakeGitHub) -> None:
    report_github(mixed(), env=gh_env(tmp_path, api.url), token=TOKEN, docs_url=DOCS)
    summary = json.loads(api.requests[0]["body"])["output"]["summary"]
    outside_fences = re.sub(r"^(`{3,})text\n.*?^\1$", "", summary, flags=re.M | re.S)
    assert "<script>" not in outside_fences and "<img" not in outside_fences
    assert "&lt;script&gt;alert(1)&lt;/script&gt; \\*\\*bold\\*\\* \\[link\\](https\\://evil.test) \\| cell" in summary
    # inside the stderr fence the text is verbatim, and the fence is longer than its longest backtick run
    assert "\n```````text\nTraceback: boom\n<script>alert(1)</script>" in summary


def test_pull_request_uses_the_head_sha(tmp_path: Path, api: FakeGitHub) -> None:
    for event in ("pull_request", "pull_request_target"):
        env = gh_env(tmp_path, api.url, event, {"pull_request": {"head": {"sha": HEAD_SHA}, "number": 3}})
        report = report_github(all_pass(), env=env, token=TOKEN, docs_url=DOCS)
        assert report.head_sha == HEAD_SHA and report.conclusion == "success"
        assert json.loads(api.requests[-1]["body"])["head_sha"] == HEAD_SHA


def test_pull_request_without_a_readable_event_falls_back_to_github_sha(tmp_path: Path, api: FakeGitHub) -> None:
    env = gh_env(tmp_path, api.url, "pull_request", {"pull_request": {}})
    report = report_github(all_pass(), env=env, token=TOKEN, docs_url=DOCS)
    assert report.head_sha == PUSH_SHA and any("using GITHUB_SHA" in w for w in report.warnings)


@pytest.mark.parametrize("status", [403, 404])
def test_read_only_token_falls_back_to_the_job_summary(tmp_path: Path, api: FakeGitHub, status: int) -> None:
    api.statuses = [status]
    env = gh_env(tmp_path, api.url, "pull_request", {"pull_request": {"head": {"sha": HEAD_SHA}}})
    report = report_github(mixed(), env=env, token=TOKEN, docs_url=DOCS, retry_waits=(0.01, 0.01))
    assert len(api.requests) == 1  # not retried
    assert report.warnings == [f"{READ_ONLY_WARNING} (HTTP {status})"]
    assert report.check_url is None and report.summary_written
    assert "ACP journeys: fail" in (tmp_path / "summary.md").read_text()
    assert outputs(tmp_path / "output")["check-url"] == ""


def test_5xx_is_retried(tmp_path: Path, api: FakeGitHub) -> None:
    api.statuses = [500, 502, 201]
    report = report_github(all_pass(), env=gh_env(tmp_path, api.url), token=TOKEN, docs_url=DOCS,
                           retry_waits=(0.01, 0.01, 0.01))
    assert report.warnings == [] and report.attempts == 3 and len(api.requests) == 3
    assert report.check_url


def test_5xx_forever_gives_a_bounded_warning(tmp_path: Path, api: FakeGitHub) -> None:
    api.statuses = [503]
    started = time.monotonic()
    report = report_github(all_pass(), env=gh_env(tmp_path, api.url), token=TOKEN, docs_url=DOCS,
                           retry_waits=(0.01, 0.02))
    assert time.monotonic() - started < 5
    assert len(api.requests) == 3
    assert report.warnings[0].startswith("the GitHub API answered HTTP 503: boom after 3 attempt(s)")
    assert report.summary_written


def test_connection_refused_is_retried_then_warned(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a loopback port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    report = report_github(all_pass(), env=gh_env(tmp_path, f"http://127.0.0.1:{port}"), token=TOKEN,
                           docs_url=DOCS, retry_waits=(0.01, 0.01), timeout=2)
    assert report.attempts == 3
    assert report.warnings[0].startswith("cannot reach the GitHub API") and report.summary_written


def test_no_token_or_no_repository(tmp_path: Path, api: FakeGitHub) -> None:
    env = gh_env(tmp_path, api.url)
    report = report_github(all_pass(), env=env, token=None, docs_url=DOCS)
    assert "no token" in report.warnings[0] and not api.requests and report.summary_written
    env = {**gh_env(tmp_path, api.url), "GITHUB_TOKEN": TOKEN}
    report = report_github(all_pass(), env=env, token=None, docs_url=DOCS)
    assert report.check_url and h_auth(api) == f"Bearer {TOKEN}"  # GITHUB_TOKEN from the environment
    env = {**gh_env(tmp_path, api.url), "GITHUB_REPOSITORY": ""}
    assert "owner/name" in report_github(all_pass(), env=env, token=TOKEN, docs_url=DOCS).warnings[0]


def h_auth(api: FakeGitHub) -> str:
    return {k.lower(): v for k, v in api.requests[-1]["headers"].items()}["authorization"]


def test_the_token_never_appears_in_a_warning(tmp_path: Path) -> None:
    env = {**gh_env(tmp_path, "ftp://127.0.0.1/" + TOKEN), "GITHUB_STEP_SUMMARY": str(tmp_path / TOKEN / "x")}
    report = report_github(all_pass(), env=env, token=TOKEN, docs_url=DOCS)
    assert report.warnings and all(TOKEN not in w for w in report.warnings)


def test_summary_and_payload_sizes_are_bounded(tmp_path: Path, api: FakeGitHub) -> None:
    big = run([journey(j.id, "fail", [failure(f, j.id, detail="é<" * 3000) for f in JOURNEY_FAILURES[j.id]],
                       stderr="ü" * 10000) for j in JOURNEYS])
    summary_file = tmp_path / "summary.md"
    summary_file.write_text("x" * (STEP_SUMMARY_LIMIT - 20000))  # an earlier step used most of it
    report = report_github(big, env=gh_env(tmp_path, api.url), token=TOKEN, docs_url=DOCS)
    assert report.summary_written
    assert summary_file.stat().st_size < STEP_SUMMARY_LIMIT
    assert "summary cut at" in summary_file.read_text()
    payload = json.loads(api.requests[0]["body"])
    assert len(payload["output"]["summary"]) <= 65535
    assert payload["output"]["summary"].endswith("… summary cut at 65535 characters; see result.json\n")


def test_under_a_baseline_the_conclusion_follows_it(tmp_path: Path, api: FakeGitHub) -> None:
    outcome = apply_baseline(mixed(), parse_baseline("- turn-to-end\n- stop-running-turn\n", "b.yml"))
    report = report_github(mixed(), env=gh_env(tmp_path, api.url), token=TOKEN, docs_url=DOCS, baseline=outcome)
    assert report.conclusion == "success" and report.verdict == "pass"
    payload = json.loads(api.requests[0]["body"])
    assert payload["conclusion"] == "success"
    assert "expected: baseline entry" in payload["output"]["summary"]
    assert outputs(tmp_path / "output")["verdict"] == "pass"


def test_output_values_cannot_forge_outputs(tmp_path: Path, api: FakeGitHub) -> None:
    report_github(all_pass(), env=gh_env(tmp_path, api.url), token=TOKEN, docs_url=DOCS,
                  result_path="r.json\nverdict=pass\nghadelimiter_x")
    got = outputs(tmp_path / "output")
    assert got["result-path"] == "r.json\nverdict=pass\nghadelimiter_x" and got["verdict"] == "pass"
    assert len(got) == 5


def test_a_matrix_job_posts_no_check_run_but_writes_the_summary_and_outputs(tmp_path: Path, api: FakeGitHub) -> None:
    report = report_github(mixed(), env=gh_env(tmp_path, api.url), token=TOKEN, docs_url=DOCS, post_check=False)
    assert api.requests == [] and report.warnings == [] and report.check_url is None
    assert "ACP journeys: fail" in (tmp_path / "summary.md").read_text()
    assert outputs(tmp_path / "output")["verdict"] == "fail" and outputs(tmp_path / "output")["check-url"] == ""
