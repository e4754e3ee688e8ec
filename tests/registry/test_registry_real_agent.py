"""One real npm agent of the registry through `acp-journeys registry`: Gemini CLI 0.61.0
(`@google/gemini-cli`, `--acp`), on the scripted model's Gemini dialect with its bundled recipe,
in local mode. Its install is cached under build/registry-cache (about 100 MB, some 15 s the
first time), so a rerun costs only its journeys (about 30 s here). It needs npm and the npm
registry; with neither, the test is skipped, saying why.

Its verdict, 4 or 5 of 7: turn-to-end, follow-up-same-session, image-and-file and
stop-running-turn pass; both Plan journeys fail with create-plan-not-called: in its Plan mode it
offers the model neither its shell tool nor the rondar MCP tools. follow-up-after-restart turns on
the wall clock's minute, Gemini CLI's own doing: it names a session's file
`session-<UTC minute>-<first 8 of the id>.jsonl`, and its session/load first starts a new
recording of that id, whose opening record resets the messages to a fresh context; in the minute
of the first process's session/new that is the same file, the saved turn is gone and session/load
answers -32603 "No previous sessions found for this project." (session-load-error); in a later
minute it is a new file and the load works (a pass). The test bounds each of those two moments on
the wall clock from the result's started_at and ended_at, and asserts the verdict that follows;
only a run whose bounds straddle a minute's turn may go either way.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from acp_journeys.cli import main

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "build" / "registry-cache"
ENTRY = {"id": "gemini", "name": "Gemini CLI", "version": "0.61.0", "description": "Google's official CLI for Gemini",
         "repository": "https://github.com/google-gemini/gemini-cli", "license": "Apache-2.0",
         "distribution": {"npx": {"package": "@google/gemini-cli@0.61.0", "args": ["--acp"]}}}
OFFLINE = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "SELF_SIGNED_CERT", "npm is not on PATH")


def restart_minutes(result: dict[str, Any], journey: dict[str, Any]) -> str | None:
    """"same" when Gemini's session/new and its later session/load surely fell in one UTC minute,
    "different" when surely not, None when the bounds straddle a minute's turn. The journey's
    clock starts at some wall time t0 after the run's started_at (truncated to the second) and
    before ended_at + 1 less the load's answer time."""
    requests = {r["method"]: r for r in journey["evidence"]["requests"]}
    new, load = requests["session/new"], requests["session/load"]
    start = dt.datetime.fromisoformat(result["started_at"]).timestamp()
    end = dt.datetime.fromisoformat(result["ended_at"]).timestamp() + 1
    t0_low, t0_high = start, end - load["answered_at"]
    new_low, new_high = t0_low + new["sent_at"], t0_high + new["answered_at"]
    load_low, load_high = t0_low + load["sent_at"], t0_high + load["answered_at"]
    if new_low // 60 == load_high // 60:
        return "same"
    if new_high // 60 < load_low // 60:
        return "different"
    return None


@pytest.mark.timeout(900)
def test_gemini_cli_through_the_registry(tmp_path: Path) -> None:
    if shutil.which("npm") is None:
        pytest.skip("no npm on PATH")
    source = tmp_path / "registry.json"
    source.write_text(json.dumps({"agents": [ENTRY]}))
    out = tmp_path / "out"
    assert main(["registry", str(source), "--out", str(out), "--cache", str(CACHE), "-q"]) == 0
    [row] = json.loads((out / "summary.json").read_text())["agents"]
    if row["status"] == "not-installed":
        log = (out / "agents" / "gemini" / "install.log").read_text()
        if any(mark in log or mark in row["reason"] for mark in OFFLINE):
            pytest.skip(f"the npm registry cannot be reached: {row['reason']}")
    assert row["status"] == "ran", row["reason"]
    verdicts = {j: v["failures"] for j, v in row["journeys"].items()}
    restart = verdicts.pop("follow-up-after-restart")
    assert verdicts == {
        "turn-to-end": [], "follow-up-same-session": [], "image-and-file": [], "stop-running-turn": [],
        "plan-turn-saved-plan": ["create-plan-not-called"], "plan-regular-plan": ["create-plan-not-called"],
    }, verdicts
    result = json.loads((out / "agents" / "gemini" / "result.json").read_text())
    # gemini-generate: its countTokens before the image turn, answered by that dialect.
    assert result["model_stub"]["dialects"] == ["gemini-generate", "gemini-stream"]
    by_id = {j["id"]: j for j in result["journeys"]}
    minutes = restart_minutes(result, by_id["follow-up-after-restart"])
    expected = {"same": [["session-load-error"]], "different": [[]], None: [[], ["session-load-error"]]}[minutes]
    assert restart in expected, (minutes, restart)
    [load] = [r for r in by_id["follow-up-after-restart"]["evidence"]["requests"] if r["method"] == "session/load"]
    if restart:
        assert "No previous sessions found" in json.dumps(load["error"])
    else:
        assert load["error"] is None
    plan_requests = [r for r in by_id["plan-turn-saved-plan"]["evidence"]["model_requests"] if r.get("intent") == "plan"]
    assert plan_requests and not any("create_plan" in " ".join(r["tools_offered"]) for r in plan_requests)
