#!/usr/bin/env python3
"""Benchmark of the HTML report: how fast a report of a run with 10,000 frames opens in Chromium.

Not a test: it prints numbers for the README. It runs the reference agent (with `cancel-end-turn`,
so that stop-running-turn fails and its journey opens) with --transcripts, pads the failed
journey's transcript with agent_message_chunk frames (the JSON of real updates, spread over its
turn) up to --frames frames in the run, renders the page and opens it --repeat times in headless
Chromium (a fresh tab each time), reading the browser's own navigation timings. With
--screenshot PNG it also writes the screenshot of a report that the README shows.

    .venv/bin/python bench/html_report.py [--frames 10000] [--repeat 5] [--screenshot docs/html-report.png]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser import Chromium  # noqa: E402

from acp_journeys.output.html.report import render_html  # noqa: E402
from acp_journeys.rules.evidence import RunResult  # noqa: E402

# The fixture agent whose stop ends with end_turn: one failed journey to show.
AGENT = [sys.executable, str(ROOT / "tests" / "fixtures" / "agents" / "cancel-end-turn.py")]

TIMINGS = """(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const paint = performance.getEntriesByType('paint').find(p => p.name === 'first-contentful-paint');
  return {dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd, fcp: paint ? paint.startTime : null,
          frames: document.querySelectorAll('table.frames-table tbody tr').length};
})()"""

SEARCH = """(async () => {
  const box = document.querySelector('details.journey[open] input.frame-search');
  const count = document.getElementById(box.dataset.count);
  const before = count.textContent;
  box.value = 'tool_call_update';
  const t0 = performance.now();
  box.dispatchEvent(new Event('input'));
  while (count.textContent === before) await new Promise(r => setTimeout(r, 1));
  return {ms: performance.now() - t0 - 120, shown: count.textContent};
})()"""


def run_cli(out: Path, *extra: str) -> RunResult:
    state = tempfile.mkdtemp(prefix="acpj-bench-state-")
    subprocess.run([sys.executable, "-m", "acp_journeys", "run", "-q", "--transcripts", "-o", str(out), "--", *AGENT,
                    *extra], env={**os.environ, "ACP_REFERENCE_AGENT_STATE": state}, capture_output=True,
                   timeout=600, check=False)
    return RunResult.model_validate_json(out.read_text())


def pad(result: RunResult, frames: int) -> RunResult:
    journey = next(j for j in result.journeys if j.verdict != "pass")
    transcript = journey.transcript or []
    turn = journey.evidence.turns[-1]
    have = sum(len(j.transcript or []) for j in result.journeys)
    missing = max(0, frames - have)
    start, end = turn.sent_at, turn.answered_at or turn.sent_at + 1.0
    Frame = type(transcript[0])
    extra = []
    for i in range(missing):
        text = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": turn.session_id or "s", "update": {
                "sessionUpdate": "tool_call_update" if i % 4 == 0 else "agent_message_chunk",
                **({"toolCallId": "call-1", "status": "in_progress"} if i % 4 == 0 else
                   {"content": {"type": "text", "text": f"chunk {i} of the padded reply, some words long"}})}}})
        extra.append(Frame(at=round(start + (end - start) * i / max(missing, 1), 4), process=turn.process,
                           direction="from-agent", text=text))
    journey.transcript = sorted(transcript + extra, key=lambda f: f.at)
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--screenshot", metavar="PNG", help="also write the README's screenshot of a report")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="acpj-bench-html-") as tmp:
        work = Path(tmp)
        result = pad(run_cli(work / "result.json"), args.frames)
        frames = sum(len(j.transcript or []) for j in result.journeys)
        t0 = time.perf_counter()
        page = render_html(result)
        render_s = time.perf_counter() - t0
        html = work / "report.html"
        html.write_text(page, encoding="utf-8")
        walls, loads, fcps, dcls, searches = [], [], [], [], []
        with Chromium() as browser:
            for _ in range(args.repeat):
                tab = browser.page()
                tab.call("Page.navigate", url="about:blank")
                tab.wait_event("Page.loadEventFired")
                walls.append(tab.open(html.as_uri()))
                timing = tab.evaluate(TIMINGS)
                assert timing["frames"] == frames, timing
                assert tab.errors() == [], tab.errors()
                loads.append(timing["load"] / 1000)
                dcls.append(timing["dcl"] / 1000)
                if timing["fcp"] is not None:
                    fcps.append(timing["fcp"] / 1000)
                searches.append(tab.evaluate(SEARCH)["ms"] / 1000)
                tab.close()
        print(f"frames in the run: {frames:,}; page: {len(page.encode()) / 1e6:.1f} MB, rendered in {render_s:.2f} s")
        print(f"Chromium, median of {args.repeat}: navigation to load event {statistics.median(walls):.2f} s "
              f"(browser's loadEventEnd {statistics.median(loads):.2f} s, DOMContentLoaded "
              f"{statistics.median(dcls):.2f} s, first contentful paint "
              f"{statistics.median(fcps) if fcps else float('nan'):.2f} s); "
              f"filtering the frames {statistics.median(searches) * 1000:.0f} ms")
        if args.screenshot:
            screenshot(Path(args.screenshot), work)
    return 0


def screenshot(path: Path, work: Path) -> None:
    """The report of a run whose stop ends with end_turn, as a reader first sees it (the top and
    the failed journey, open), cropped below its timeline. The agent command is shown
    as `python3 cancel-end-turn.py ...`: this machine's paths say nothing to a reader."""
    result = run_cli(work / "shot.json", "--latency", "0.2")
    result.agent_command = ["python3", "cancel-end-turn.py", "--latency", "0.2"]
    html = work / "shot.html"
    html.write_text(render_html(result), encoding="utf-8")
    with Chromium() as browser:
        tab = browser.page()
        tab.open(html.as_uri())
        tab.call("Emulation.setDeviceMetricsOverride", width=1200, height=900, deviceScaleFactor=1, mobile=False)
        bottom = tab.evaluate("""(() => {
          const end = document.querySelector('#j-stop-running-turn .stop-summary')
                   || document.querySelector('#j-stop-running-turn .legend');
          return Math.ceil(end.getBoundingClientRect().bottom + window.scrollY + 12);
        })()""")
        full = work / "full.png"
        tab.screenshot(full, width=1200, full_page=True)
        tab.close()
    from PIL import Image

    with Image.open(full) as image:
        image.crop((0, 0, image.width, min(bottom, image.height))).save(path, optimize=True)
    print(f"screenshot: {path}")


if __name__ == "__main__":
    raise SystemExit(main())
