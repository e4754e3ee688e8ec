"""The HTML report without a browser: its CSP, its escaping, its links, its timeline, its options.

(tests/output/test_report_html_browser.py opens the pages of real fixture runs in headless Chromium.)
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fake_github import FakeGitHub, serve
from sample_results import DOCS, INJECTION, failure, journey, mixed, run

from acp_journeys.output.github import report_github
from acp_journeys.output.html.htmlsafe import clean, safe_href, text
from acp_journeys.output.html.report import render_html
from acp_journeys.output.html.timeline import cancel_latencies, clusters, journey_timeline
from acp_journeys.rules.catalog import JOURNEYS, anchor_for, doc_link
from acp_journeys.rules.evidence import (Frame, JourneyEvidence, Leftover, PermissionEvidence, ProcessEvidence,
                                   ToolCallEvidence, TurnEvidence)

HOSTILE = ('<script>alert(1)</script></textarea></pre><a href="javascript:alert(1)">x</a>'
           '<img src=x onerror=alert(2)>\u202e\x1b[31m\x00\ud800')


class Page(HTMLParser):
    """The elements of a page as a parser sees them (what a browser would build)."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.data: dict[str, list[str]] = {}
        self._open: list[str] = []
        self.feed(source)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self._open:
            del self._open[len(self._open) - 1 - self._open[::-1].index(tag):]

    def handle_data(self, data: str) -> None:
        if self._open:
            self.data.setdefault(self._open[-1], []).append(data)

    def all(self, tag: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag]


def stop_turn(answered: float | None = 12.3456, **extra: object) -> TurnEvidence:
    return TurnEvidence(name="sleep", process=0, prompt_text="Run the shell command `sleep 120` and wait for it.",
                        sent_at=1.0, answered_at=answered, stop_reason="cancelled" if answered else None,
                        timed_out=answered is None, reply_text=HOSTILE, update_counts={"tool_call": 1},
                        tool_calls=[ToolCallEvidence(tool_call_id="c1", at=1.1, title="sleep 120", kind="execute",
                                                     status="failed")],
                        permissions=[PermissionEvidence(at=1.2, request_id=1, tool_call={"title": HOSTILE},
                                                        options=[], decision="allow", reason="every request",
                                                        answer={"outcome": {"outcome": "selected"}})],
                        cancel_sent_at=2.0, cancel_trigger="process", command_seen_at=1.9,
                        sleep_left=[Leftover(pid=9, command="sleep 120")], **extra)  # type: ignore[arg-type]


def stop_result(answered: float | None = 12.3456):
    j = journey("stop-running-turn", "fail", [failure("cancel-too-slow", "stop-running-turn", detail=HOSTILE)],
                stderr=HOSTILE, seconds=14.0)
    j.evidence = JourneyEvidence(
        journey="stop-running-turn",
        processes=[ProcessEvidence(index=0, argv=["agent", HOSTILE], pid=42, started_at=0.5, initialize_sent_at=0.6,
                                   initialize_answered_at=0.7, stdin_closed_at=13.0, exited_at=13.2, exit_code=0,
                                   leftovers=[Leftover(pid=7, command=HOSTILE)], stderr_tail=HOSTILE)],
        turns=[stop_turn(answered)])
    j.transcript = [Frame(at=1.05, process=0, direction="from-agent",
                          text=json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {
                              "sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "c1",
                                                           "status": "pending", "title": HOSTILE}}})),
                    Frame(at=1.5, process=0, direction="stderr", text=HOSTILE)]
    return run([j] + [journey(x.id) for x in JOURNEYS if x.id != "stop-running-turn"])


def test_the_page_allows_only_its_own_style_and_script_by_hash() -> None:
    page = render_html(mixed())
    parsed = Page(page)
    [csp] = [a["content"] for a in parsed.all("meta") if a.get("http-equiv") == "Content-Security-Policy"]
    assert csp is not None and csp.startswith("default-src 'none'; ")
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp and "http" not in csp
    [script] = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    [style] = re.findall(r"<style>(.*?)</style>", page, flags=re.S)
    digest = lambda s: base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()  # noqa: E731
    assert f"script-src 'sha256-{digest(script)}'" in csp and f"style-src 'sha256-{digest(style)}'" in csp
    # The CSP comes before anything it governs; nothing is loaded from anywhere.
    assert page.index("Content-Security-Policy") < page.index("<style>")
    assert len(parsed.all("script")) == 1 and not parsed.all("img") and not parsed.all("iframe")
    assert all(a.get("rel") == "icon" for a in parsed.all("link"))
    assert not [a for _, a in parsed.tags if "style" in a or any(k.startswith("on") for k in a)]


def test_agent_text_is_shown_as_text_everywhere() -> None:
    page = render_html(stop_result())
    parsed = Page(page)
    assert len(parsed.all("script")) == 1 and not parsed.all("img") and not parsed.all("textarea")
    hrefs = [a.get("href") or "" for a in parsed.all("a")]
    assert hrefs and all(h.startswith(("https://", "#")) for h in hrefs), hrefs
    assert not any("javascript" in h for h in hrefs)
    # The hostile text is there, as characters, in the reply, stderr, details, tooltips and frames.
    shown = clean(HOSTILE)
    assert page.count(text(HOSTILE)) >= 5
    assert shown.startswith("<script>alert(1)</script>") and "\u202e" not in shown and "\x1b" not in shown
    assert any(shown in d for d in parsed.data.get("pre", []))
    assert "\ud800" not in page
    page.encode("utf-8")  # no lone surrogate survives
    # A sample with Markdown injection too.
    mixed_page = render_html(mixed())
    assert "&lt;img src=x onerror=alert(1)&gt;" in mixed_page and "<img src=x" not in mixed_page
    assert INJECTION.split("\n")[0][:20] not in mixed_page  # the raw <script> never appears


def test_a_megabyte_reply_is_kept_whole_as_text() -> None:
    result = stop_result()
    big = "<b>x</b>" * (1 << 17)
    result.journeys[0].evidence.turns[0].reply_text = big
    page = render_html(result)
    assert text(big) in page and "<b>x</b>" not in page


def test_failure_links_are_the_check_runs_links() -> None:
    page = render_html(mixed())
    hrefs = {a.get("href") for a in Page(page).all("a")}
    assert doc_link(anchor_for("reply-not-in-chunks", "turn-to-end"), DOCS) in hrefs
    assert f"{DOCS}#step-3" in hrefs and f"{DOCS}#step-7" in hrefs
    # Each failure links its own #failure-ID paragraph, in the table and in its journey's section.
    assert f"{DOCS}#failure-reply-not-in-chunks" in hrefs and f"{DOCS}#failure-runner-error" in hrefs
    fix_links = [a for a in Page(page).all("a") if a.get("href") == f"{DOCS}#failure-reply-not-in-chunks"]
    assert len(fix_links) >= 2
    # An unknown failure id of a newer version links its journey's step, like the check run.
    data = mixed().model_dump(mode="json", by_alias=True)
    data["journeys"][0]["failures"].append({"id": "brand-new-id", "message": "m", "doc": "", "detail": ""})
    assert f'href="{DOCS}#step-3"' in render_html(data)
    # A docs URL that is not http(s) gives no link at all.
    hostile_docs = render_html(mixed(), docs_url="javascript:alert(1)//")
    assert "javascript:" not in "".join(a.get("href") or "" for a in Page(hostile_docs).all("a"))
    assert safe_href("javascript:alert(1)") is None and safe_href("https://x.test/a b") == "https://x.test/a%20b"


def test_every_journey_is_there_and_failed_ones_are_open() -> None:
    page = Page(render_html(mixed()))
    journeys = {a["data-journey"]: a for a in page.all("details") if "data-journey" in a}
    assert list(journeys) == [j.id for j in JOURNEYS]
    assert "open" in journeys["turn-to-end"] and "open" in journeys["stop-running-turn"]
    assert "open" not in journeys["image-and-file"]


def test_the_timeline_writes_the_cancel_latency_of_the_evidence() -> None:
    result = stop_result(answered=12.3456)
    data = result.model_dump(mode="json", by_alias=True)
    timeline = journey_timeline(data["journeys"][0])
    assert cancel_latencies(timeline) == [round(12.3456 - 2.0, 4)]
    page = render_html(result)
    assert 'data-latency-s="10.3456"' in page and "answered cancelled in 10.346 s" in page
    # The quiet 10 s between the cancel and its answer gets zoomed panels of the busy stretches.
    assert page.count('<svg class="timeline"') >= 2
    kinds = {p.kind for p in timeline.all_points()}
    assert {"start", "initialize", "stdin", "exit", "leftover", "turn", "tool-call", "tool-status", "permission",
            "seen", "cancel", "cancel-answer", "sleep-left", "update"} <= kinds
    no_answer = render_html(stop_result(answered=None))
    assert "no answer to the cancel" in no_answer and "data-latency-s" not in no_answer


def test_the_timeline_marks_the_end_of_the_last_process_and_the_cancels_trigger() -> None:
    """Issue 23: a helper that outlived the agent within Rondar's window gets a mark of its end;
    leftovers stand where the window closed; the cancel says what it went out on."""
    data = stop_result().model_dump(mode="json", by_alias=True)
    process = data["journeys"][0]["evidence"]["processes"][0]
    process.update(leftovers=[], last_process_ended_at=16.2, leftover_window_closes_at=23.0)
    timeline = journey_timeline(data["journeys"][0])
    [last] = [p for p in timeline.all_points() if p.kind == "last-ended"]
    assert last.at == 16.2 and last.label == "last process ended (+3.00 s)" and "23.000 s" in last.detail
    [cancel] = [p for p in timeline.all_points() if p.kind == "cancel"]
    assert cancel.label == "session/cancel on the process"
    page = render_html(data)
    assert 'class="m-last-ended ok"' in page and "last process ended (+3.00 s)" in page
    # Nothing outlived the agent: no mark; a leftover sits where the window closed.
    process.update(last_process_ended_at=13.2, leftovers=[{"pid": 7, "command": "sleep 300", "argv": []}])
    points = journey_timeline(data["journeys"][0]).all_points()
    assert not [p for p in points if p.kind == "last-ended"]
    [left] = [p for p in points if p.kind == "leftover"]
    assert left.at == 23.0 and "window closed at 23.000 s" in left.detail
    # A cancel on the report: the wait that applied, and whether tracking could see the command.
    turn = data["journeys"][0]["evidence"]["turns"][0]
    turn.update(cancel_trigger="tool_call", process_wait_s=30.0, sees_every_process=True)
    points = journey_timeline(data["journeys"][0]).all_points()
    [seen] = [p for p in points if p.kind == "seen"]
    assert seen.label == "no sleep process in 30 s" and "though tracking sees every process" in seen.detail
    assert [p.label for p in points if p.kind == "cancel"] == ["session/cancel on the tool call"]


def test_either_version_of_the_evidence_renders() -> None:
    """Issue 9 changes the cancel journey's evidence: a field gone or a new one still renders."""
    data = stop_result().model_dump(mode="json", by_alias=True)
    older = copy.deepcopy(data)
    turn = older["journeys"][0]["evidence"]["turns"][0]
    for key in ("command_seen_at", "cancel_trigger", "sleep_left", "tool_calls"):
        del turn[key]
    del older["journeys"][0]["evidence"]["processes"][0]["exited_at"]
    newer = copy.deepcopy(data)
    newer_turn = newer["journeys"][0]["evidence"]["turns"][0]
    newer_turn.update(cancel_trigger="a-new-trigger", sleep_seen_at=1.95, cancel_answer={"latency_s": 10.3})
    newer["journeys"][0]["evidence"]["processes"][0]["leftovers"] = "not a list"
    for variant in (older, newer):
        page = render_html(variant)
        assert 'data-latency-s="10.3456"' in page and page.count('data-journey="') == 7


def test_clusters_split_only_at_long_quiet_gaps() -> None:
    assert clusters([0.6, 0.7, 1.0, 33.0, 33.1], 33.2) == [(0.6, 1.0), (33.0, 33.1)]
    assert clusters([0.6, 0.7, 1.0, 1.2], 1.2) == [(0.6, 1.2)]  # 0.3 s is no long gap
    assert clusters([0.6, 5.0, 9.0, 40.0, 41.0], 41.0) == [(0.6, 9.0), (40.0, 41.0)]
    assert clusters([], 1.0) == []


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acp_journeys", *args], capture_output=True, text=True, timeout=120)


def test_report_and_verify_write_the_page(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps(stop_result().model_dump(mode="json", by_alias=True)))  # \ud800 escaped
    out = cli("report", str(path), "--html", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    out = cli("verify", str(path), "--html", str(tmp_path / "v.html"))
    assert out.returncode == 1 and f"html: {tmp_path / 'v.html'}" in out.stdout
    # What the page shows is what the evidence says (verify judges again): cancel-too-slow is
    # not a finding for a 10 s stop, so the journey passes there.
    assert "cancel-too-slow" not in (tmp_path / "v.html").read_text().split("<h2>Journeys</h2>")[1].split("</table>")[0]
    assert cli("report", str(path)).returncode == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    out = cli("report", str(bad), "--html", str(tmp_path / "b.html"))
    assert out.returncode == 2 and "not a result" in out.stderr and not (tmp_path / "b.html").exists()
    out = cli("report", str(path), "--html", str(tmp_path / "no-dir" / "x" / "r.html"))
    assert out.returncode == 0  # the folder is made
    blocked = tmp_path / "file"
    blocked.write_text("")
    out = cli("report", str(path), "--html", str(blocked / "r.html"))
    assert out.returncode == 2 and "cannot write the HTML report" in out.stderr


def test_the_summaries_link_the_artifact_of_the_html_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    summary = tmp_path / "summary.md"
    url = "https://github.example.test/o/r/actions/runs/42/artifacts/7"
    with serve(FakeGitHub()) as api:
        env = {"GITHUB_API_URL": api.url, "GITHUB_REPOSITORY": "o/r", "GITHUB_SHA": "b" * 40,
               "GITHUB_STEP_SUMMARY": str(summary)}
        report_github(mixed(), env=env, token="t", docs_url=DOCS, artifact_url=url)
        [request] = api.requests
    check = json.loads(request["body"])["output"]["summary"]
    assert f"[the artifact of this run]({url})" in check and f"]({url})" in summary.read_text()
    summary.unlink()
    report_github(mixed(), env={"GITHUB_STEP_SUMMARY": str(summary)}, token=None, docs_url=DOCS,
                  artifact_url="javascript:alert(1)")
    assert "javascript" not in summary.read_text() and "artifact of this run" not in summary.read_text()
