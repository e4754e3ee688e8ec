"""The HTML report of real fixture runs, opened in a real browser (headless Chromium).

Each case runs the CLI against the reference agent with defects (`run --html`), then opens the
page from a file:// URL with a fresh profile and checks, through the DevTools protocol: no console
error and no load but the page itself, every journey present, the failed journeys open and the
others closed, the timeline's cancel latency equal to the one result.json gives, and the agent's
hostile reply shown as text (also in the DOM that `--dump-dom` prints).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import Chromium, dump_dom, find_chromium
from conftest import fixture_constant, reference_agent, run_journeys

from acp_journeys.output.html.htmlsafe import clean
from acp_journeys.rules.catalog import JOURNEY_IDS

pytestmark = pytest.mark.skipif(find_chromium() is None,
                                reason="no Chromium (scripts/setup/setup-chromium.sh installs Debian's chromium)")

HOSTILE_TEXT = fixture_constant("hostile-text", "HOSTILE_TEXT")

CASES = {
    # A hostile 4 MB reply (1 MB kept), and a stop that ends with end_turn: stop-running-turn fails.
    "hostile": (["hostile-text", "huge-chunk", "cancel-end-turn"], {"stop-running-turn"}),
    # The sleep outlives the stop, and the process leaves it behind.
    "leave-sleep": (["leave-sleep"], {"stop-running-turn"}),
    # Every journey fails: the agent exits in its first turn.
    "crash": (["crash-mid-turn"], set(JOURNEY_IDS)),
}


def cancel_latencies(result: dict) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for j in result["journeys"]:
        for t in j["evidence"]["turns"]:
            if t.get("cancel_sent_at") is not None and t.get("answered_at") is not None:
                out.setdefault(j["id"], []).append(round(t["answered_at"] - t["cancel_sent_at"], 4))
    return out


PAGE_FACTS = """(() => {
  const journeys = [...document.querySelectorAll('details.journey')].map(d => ({
    id: d.dataset.journey, open: d.open,
    latencies: [...d.querySelectorAll('svg .cancel-latency')].map(t => [t.dataset.latencyS, t.textContent]),
    summaryLatencies: [...d.querySelectorAll('.cancel-latency-text')].map(t => t.textContent),
  }));
  return {
    title: document.title, journeys,
    scripts: document.scripts.length,
    jsLinks: [...document.querySelectorAll('a')].filter(a => !/^(https:|#)/.test(a.getAttribute('href'))).length,
    images: document.images.length, iframes: document.querySelectorAll('iframe, object, embed, textarea').length,
    replies: [...document.querySelectorAll('pre.reply')].map(p => p.textContent),
    stderr: [...document.querySelectorAll('pre.stderr-tail')].map(p => p.textContent).join('\\n'),
    svgs: document.querySelectorAll('svg.timeline').length,
  };
})()"""


@pytest.fixture(scope="module")
def browser():
    with Chromium() as chromium:
        yield chromium


@pytest.mark.parametrize("case", list(CASES))
def test_fixture_run_report_in_chromium(case: str, tmp_path: Path, browser: Chromium) -> None:
    defects, failing = CASES[case]
    html = tmp_path / "report.html"
    outcome = run_journeys(reference_agent(*defects), tmp_path, "--transcripts", "--html", str(html))
    assert outcome.result is not None and set(outcome.failures()) == failing, outcome.stdout
    page = browser.page()
    try:
        page.open(html.as_uri())
        facts = page.evaluate(PAGE_FACTS)
        # A link to a closed journey opens it; a malformed fragment is no error.
        assert page.evaluate("""(async () => {
          location.hash = '#j-follow-up-same-session';
          await new Promise(r => setTimeout(r, 50));
          const opened = document.getElementById('j-follow-up-same-session').open;
          location.hash = '#%E0%A4%A';
          await new Promise(r => setTimeout(r, 50));
          return opened;
        })()""") is True
        assert page.errors() == []
        assert page.requests() == [html.as_uri()]  # nothing loaded but the page itself
    finally:
        page.close()
    assert facts["title"].startswith("ACP journeys: FAIL")
    assert [j["id"] for j in facts["journeys"]] == list(JOURNEY_IDS)
    assert {j["id"] for j in facts["journeys"] if j["open"]} == failing
    assert facts["svgs"] >= 7
    # The cancel latency the timeline writes is result.json's answered_at - cancel_sent_at.
    expected = cancel_latencies(outcome.result)
    assert bool(expected) == (case != "crash"), expected  # the crash comes before any cancel
    for j in facts["journeys"]:
        want = expected.get(j["id"], [])
        got = [float(v) for v, _ in j["latencies"]]
        assert sorted(set(got)) == sorted(set(want)), (j["id"], got, want)
        assert all(label.endswith(f"{float(v):.3f} s") for v, label in j["latencies"])
        assert j["summaryLatencies"] == [f"{v:.3f} s" for v in want]
    # Nothing the agent wrote became markup: one script (ours), no link but https and in-page ones.
    assert facts["scripts"] == 1 and facts["jsLinks"] == 0 and facts["images"] == 0 and facts["iframes"] == 0
    if case == "hostile":
        shown = clean(HOSTILE_TEXT)
        [reply] = [r for r in facts["replies"] if shown in r]
        assert reply.startswith(shown) and len(reply) > 4 << 20  # the whole reply, as the evidence keeps it
        assert shown in facts["stderr"]
        assert "pwned" not in facts["title"]


def test_dump_dom_shows_the_hostile_reply_as_text(tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    outcome = run_journeys(reference_agent("hostile-text"), tmp_path, "--journey", "turn-to-end", "--transcripts",
                           "--html", str(html))
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    dom = dump_dom(html)
    assert "</html>" in dom
    assert dom.count("<script") == 1  # ours; the agent's appear escaped
    assert "&lt;script&gt;document.title=\"pwned\"&lt;/script&gt;&lt;/textarea&gt;" in dom
    assert '<a href="javascript:' not in dom and "<img" not in dom  # in text, quotes are not escaped
    result = json.loads(outcome.path.read_text())
    assert HOSTILE_TEXT in result["journeys"][0]["evidence"]["turns"][0]["reply_text"]
