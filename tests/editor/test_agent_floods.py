"""Every count that an agent controls has a bound (issue 23): real fixture agents flood one count
each, and the run still writes a result.json of a sane size, in bounded time, with the verdict
that `verify` finds again and a note of each bound that was hit."""

from __future__ import annotations

import subprocess
import sys
import time

from acp_journeys.editor import clipping, routing, session
from conftest import reference_agent, run_journeys

SANE_RESULT_BYTES = 8 << 20


def _verify(path, *journeys: str) -> subprocess.CompletedProcess:
    accept = [a for j in journeys for a in ("--journey", j)]
    return subprocess.run([sys.executable, "-m", "acp_journeys", "verify", str(path), *accept],
                          capture_output=True, text=True, timeout=60)


def _journey(outcome, journey_id: str) -> dict:
    return next(j for j in outcome.result["journeys"] if j["id"] == journey_id)


def test_a_flood_of_20000_tool_calls_keeps_the_first_and_gets_its_verdict(tmp_path):
    started = time.monotonic()
    page = tmp_path / "report.html"
    outcome = run_journeys(reference_agent("tool-call-flood"), tmp_path, "--journey", "turn-to-end",
                           "--transcripts", "--html", str(page))
    took = time.monotonic() - started
    # Before: 119 s of runner time (a scan of every kept call per update) and no result.json.
    assert outcome.code == 0, outcome.stderr[-2000:]
    assert outcome.path.stat().st_size < SANE_RESULT_BYTES and page.stat().st_size < SANE_RESULT_BYTES
    assert took < 60, took
    assert "20,000 tool calls, the first 200 kept" in page.read_text()
    journey = _journey(outcome, "turn-to-end")
    turn = journey["evidence"]["turns"][0]
    assert len(turn["tool_calls"]) == routing.TOOL_CALLS_KEPT
    assert [c["tool_call_id"].split("-")[1] for c in turn["tool_calls"][:3]] == ["0", "1", "2"]
    assert all(len(c["title"]) <= routing.TITLE_LIMIT + 40 and len(c["tool_call_id"]) <= routing.TOOL_CALL_ID_LIMIT + 40
               for c in turn["tool_calls"])
    assert turn["update_counts"]["tool_call"] == 20_000  # every one counted
    assert journey["evidence"]["bounds_hit"] == [
        {"what": "tool calls", "seen": 20_000, "kept": routing.TOOL_CALLS_KEPT, "kept_what": "kept", "turn": "reply"}]
    assert "over a bound of acp-journeys: turn reply: 20,000 tool calls, the first 200 kept" in journey["warnings"]
    checked = _verify(outcome.path, "turn-to-end")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_plan_saved_after_a_flood_of_mcp_calls_still_counts(tmp_path):
    """300 get_plan calls with 32 KiB ids before each create_plan: the first MCP calls are kept,
    and the plan saved and read back after the bound is kept too, so the Plan journeys pass."""
    outcome = run_journeys(reference_agent("mcp-call-flood"), tmp_path, "--journey", "plan-turn-saved-plan",
                           "--journey", "plan-regular-plan")
    assert outcome.code == 0, outcome.stdout + outcome.stderr[-2000:]
    assert outcome.path.stat().st_size < SANE_RESULT_BYTES
    saved = _journey(outcome, "plan-turn-saved-plan")["evidence"]
    [plan] = saved["turns"]
    assert len(plan["mcp_calls"]) == session.MCP_CALLS_KEPT + 2
    assert [c["tool"] for c in plan["mcp_calls"][-2:]] == ["create_plan", "get_plan"]
    assert all(len(c["arguments"]["plan_id"]) <= session.MCP_VALUE_LIMIT + 40 for c in plan["mcp_calls"][:-2])
    assert saved["bounds_hit"] == [{"what": "MCP calls", "seen": 300, "kept": session.MCP_CALLS_KEPT,
                                    "kept_what": "kept, and after them each plan saved or read back in a turn",
                                    "turn": None}]
    # Plan, regular, Plan again: the second Plan turn's calls all come after the bound.
    again = _journey(outcome, "plan-regular-plan")["evidence"]
    assert [c["tool"] for c in again["turns"][2]["mcp_calls"]] == ["create_plan", "get_plan"]
    assert again["bounds_hit"][0]["seen"] == 600
    assert _verify(outcome.path, "plan-turn-saved-plan", "plan-regular-plan").returncode == 0


def test_many_update_kinds_are_counted_by_name_up_to_a_bound(tmp_path):
    outcome = run_journeys(reference_agent("update-kind-flood"), tmp_path, "--journey", "turn-to-end")
    assert outcome.code == 0, outcome.stdout + outcome.stderr[-2000:]
    journey = _journey(outcome, "turn-to-end")
    counts = journey["evidence"]["turns"][0]["update_counts"]
    # ACP's own kinds always keep their count: the reply's chunk after 5,000 others still counts.
    assert counts["agent_message_chunk"] == 1
    assert counts[routing.OTHER_KINDS] == 5_000 - routing.UPDATE_KINDS_KEPT
    assert len(counts) == routing.UPDATE_KINDS_KEPT + 2
    assert all(len(k) <= clipping.NAME_LIMIT + 40 for k in counts)
    [hit] = journey["evidence"]["bounds_hit"]
    assert (hit["seen"], hit["kept"], hit["turn"]) == (5_000, routing.UPDATE_KINDS_KEPT, "reply")
    # Each wrong frame was checked against the schema only until the warnings were full.
    assert len(journey["evidence"]["protocol_warnings"]) == 200


def test_many_agent_requests_with_long_method_names_are_kept_clipped_up_to_a_bound(tmp_path):
    outcome = run_journeys(reference_agent("agent-request-flood"), tmp_path, "--journey", "turn-to-end")
    assert outcome.code == 0, outcome.stdout + outcome.stderr[-2000:]
    journey = _journey(outcome, "turn-to-end")
    refused = journey["evidence"]["turns"][0]["agent_requests"]
    assert len(refused) == session.AGENT_REQUESTS_KEPT
    assert all(len(r["method"]) <= clipping.NAME_LIMIT + 40 and r["error_code"] == -32601 for r in refused)
    assert journey["evidence"]["bounds_hit"] == [
        {"what": "agent requests", "seen": 500, "kept": session.AGENT_REQUESTS_KEPT, "kept_what": "kept",
         "turn": "reply"}]
    assert outcome.path.stat().st_size < SANE_RESULT_BYTES


def test_many_permission_requests_are_each_answered_and_the_first_kept(tmp_path):
    outcome = run_journeys(reference_agent("permission-flood"), tmp_path, "--journey", "turn-to-end")
    assert outcome.code == 0, outcome.stdout + outcome.stderr[-2000:]
    journey = _journey(outcome, "turn-to-end")
    kept = journey["evidence"]["turns"][0]["permissions"]
    assert len(kept) == session.PERMISSIONS_KEPT and all(p["decision"] == "allow" for p in kept)
    assert journey["evidence"]["bounds_hit"] == [
        {"what": "permission requests", "seen": 300, "kept": session.PERMISSIONS_KEPT, "kept_what": "kept",
         "turn": "reply"}]
    assert outcome.path.stat().st_size < SANE_RESULT_BYTES


def test_left_processes_are_listed_up_to_a_bound_with_their_argv_clipped():
    """An agent can leave as many processes as it can fork, each with a huge argv: the evidence
    lists the first ones (the judge needs one), clipped, and counts the rest."""
    from types import SimpleNamespace

    from acp_journeys.editor.session import Bounds, JourneyContext

    ctx = JourneyContext("turn-to-end", sandbox=None, argv=["agent"], bounds=Bounds())  # type: ignore[arg-type]
    found = [SimpleNamespace(pid=1000 + n, command="x" * 50_000, cmdline=["sleep", "300", *["y" * 5000] * 20])
             for n in range(clipping.LEFTOVERS_KEPT + 30)]
    kept = clipping.kept_leftovers(found, ctx._hits, ctx.evidence.bounds_hit, "processes left by process 1")
    assert len(kept) == clipping.LEFTOVERS_KEPT and kept[0].pid == 1000
    assert kept[0].argv[:2] == ["sleep", "300"] and sum(map(len, kept[0].argv)) < clipping.ARGV_CHARS + 200
    assert len(kept[0].command) < clipping.ARGV_CHARS + 40
    [hit] = ctx.evidence.bounds_hit
    assert (hit.what, hit.seen, hit.kept) == ("processes left by process 1", clipping.LEFTOVERS_KEPT + 30,
                                              clipping.LEFTOVERS_KEPT)
