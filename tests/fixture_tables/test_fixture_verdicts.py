"""Every fixture agent gets its exact verdict: the journeys that fail and their failure ids.

Each case runs the real runner (the CLI, as a process) against a real agent process, then checks
that `verify` finds the same verdict in the result.json it wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import fixture_verdicts, process_gone, reference_agent, run_journeys
from masking_property import check_masking_keeps_the_verdict

ALL = ("turn-to-end", "follow-up-same-session", "follow-up-after-restart", "image-and-file",
       "stop-running-turn", "plan-turn-saved-plan", "plan-regular-plan")


def every(*ids: str, journeys=ALL) -> dict[str, list[str]]:
    return {j: sorted(ids) for j in journeys}


# defect -> {journey: failure ids}; every other journey must pass. Each fixture agent declares its
# own (tests/fixtures/agents/<defect>.py, "a+b" for both); the containers-only ones declare None.
EXPECTED: dict[str, dict[str, list[str]]] = fixture_verdicts()
STRICT_EXPECTED: dict[str, dict[str, list[str]]] = fixture_verdicts("STRICT_VERDICT")
# defect -> {protocol check id: its verdict other than pass} under --tier protocol (#26).
PROTOCOL_EXPECTED: dict[str, dict[str, str]] = fixture_verdicts("PROTOCOL_VERDICT")


def verify(path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acp_journeys", "verify", str(path), *args],
                          capture_output=True, text=True, timeout=60)


def test_reference_agent_passes_all_seven(tmp_path):
    outcome = run_journeys(reference_agent(), tmp_path)
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    assert outcome.failures() == {}
    assert [j["id"] for j in outcome.result["journeys"]] == list(ALL)
    assert outcome.result["verdict"] == "pass" and outcome.result["passed"] == 7
    assert verify(outcome.path).returncode == 0
    check_masking_keeps_the_verdict(outcome.path, tmp_path)


@pytest.mark.parametrize("defect", sorted(EXPECTED))
def test_fixture_gets_its_exact_verdict(defect, tmp_path):
    outcome = run_journeys(reference_agent(*defect.split("+")), tmp_path)
    assert outcome.failures() == EXPECTED[defect], outcome.stdout
    expect_code = 1 if EXPECTED[defect] else 0
    assert outcome.code == expect_code, outcome.stderr[-2000:]
    checked = verify(outcome.path)
    assert checked.returncode == expect_code, checked.stdout + checked.stderr
    for journey, ids in EXPECTED[defect].items():
        line = next(l for l in checked.stdout.splitlines() if l.startswith(journey + " "))
        assert "FAIL" in line and all(i in line for i in ids)
    check_masking_keeps_the_verdict(outcome.path, tmp_path)


def tier_verdicts(result: dict) -> dict[str, str]:
    """The protocol tier's checks that did not pass: {id: verdict}."""
    return {c["id"]: c["verdict"] for c in result["tiers"]["protocol"]["checks"] if c["verdict"] != "pass"}


@pytest.mark.parametrize("defect", [None, *sorted(PROTOCOL_EXPECTED)])
def test_fixture_gets_its_exact_protocol_tier_verdict(defect, tmp_path):
    """Each protocol check has a fixture that fails (or warns, or skips) it, the reference passes
    every one; Rondar's verdict and exit code stay the fixture's own, and `verify` judges the tier
    again from the evidence: only `--tier protocol` lets a MUST failure count for its exit code."""
    agent = reference_agent(*defect.split("+")) if defect else reference_agent()
    outcome = run_journeys(agent, tmp_path, "--tier", "protocol", "--junit", str(tmp_path / "j.xml"))
    expected = PROTOCOL_EXPECTED.get(defect, {}) if defect else {}
    assert outcome.failures() == (EXPECTED[defect] if defect else {}), outcome.stdout
    assert tier_verdicts(outcome.result) == expected, outcome.stdout
    assert outcome.code == (1 if defect and EXPECTED[defect] else 0), outcome.stderr[-2000:]
    tier = outcome.result["tiers"]["protocol"]
    must_fail = any(c["level"] == "MUST" and c["verdict"] == "fail" for c in tier["checks"])
    assert tier["verdict"] == ("fail" if must_fail else "pass")
    assert "protocol tier: " + tier["verdict"].upper() in outcome.stdout
    assert 'name="acp-journeys.protocol"' in (tmp_path / "j.xml").read_text()
    assert verify(outcome.path).returncode == outcome.code
    gated = verify(outcome.path, "--tier", "protocol")
    assert gated.returncode == (1 if must_fail or outcome.code else 0), gated.stdout + gated.stderr
    assert tier_verdicts(json.loads(outcome.path.read_text())) == expected


def test_not_advertised_session_capabilities_are_never_probed(tmp_path):
    outcome = run_journeys(reference_agent("no-session-capabilities"), tmp_path, "--tier", "protocol",
                           "--journey", "turn-to-end")
    sent = {r["method"] for r in outcome.result["tiers"]["protocol"]["probe"]["requests"]}
    assert sent.isdisjoint({"session/list", "session/resume", "session/close"}) and "session/new" in sent
    (tmp_path / "ref").mkdir()
    probed = run_journeys(reference_agent(), tmp_path / "ref", "--tier", "protocol", "--journey", "turn-to-end")
    assert {"session/list", "session/resume", "session/close"} <= \
        {r["method"] for r in probed.result["tiers"]["protocol"]["probe"]["requests"]}


def test_without_the_tier_the_result_has_none_and_verify_tier_protocol_fails(tmp_path):
    outcome = run_journeys(reference_agent(), tmp_path, "--journey", "turn-to-end")
    assert outcome.code == 0 and outcome.result["tiers"] is None and "protocol tier" not in outcome.stdout
    gated = verify(outcome.path, "--journey", "turn-to-end", "--tier", "protocol")
    assert gated.returncode == 1 and "holds no protocol tier" in gated.stderr


@pytest.mark.parametrize("defect", sorted(STRICT_EXPECTED))
def test_strict_turns_warnings_into_failures(defect, tmp_path):
    outcome = run_journeys(reference_agent(defect), tmp_path, "--strict")
    assert outcome.failures() == STRICT_EXPECTED[defect], outcome.stdout
    assert outcome.code == 1


def test_warnings_are_kept_without_strict(tmp_path):
    outcome = run_journeys(reference_agent("garbage-stdout"), tmp_path, "--journey", "turn-to-end")
    journey = outcome.result["journeys"][0]
    assert journey["verdict"] == "pass"
    assert any("not-json" in w for w in journey["warnings"])


def test_stderr_flood_keeps_only_a_tail(tmp_path):
    outcome = run_journeys(reference_agent("stderr-flood"), tmp_path, "--journey", "turn-to-end")
    process = outcome.result["journeys"][0]["evidence"]["processes"][0]
    assert process["stderr_bytes"] >= 30_000_000
    assert len(process["stderr_tail"]) <= 20_000


def test_daemon_is_recorded_and_killed(tmp_path):
    outcome = run_journeys(reference_agent("leave-daemon"), tmp_path, "--journey", "turn-to-end")
    leftovers = outcome.result["journeys"][0]["evidence"]["processes"][0]["leftovers"]
    assert leftovers and all("sleep" in x["command"] for x in leftovers)
    for leftover in leftovers:
        assert process_gone(leftover["pid"])


def test_a_daemon_in_tmpdir_is_each_journeys_own_and_left_in_each(tmp_path):
    outcome = run_journeys(reference_agent("shared-daemon"), tmp_path)  # all 7 at once
    assert outcome.failures() == every("process-left"), outcome.stdout
    sockets = set()
    for journey in outcome.result["journeys"]:
        processes = journey["evidence"]["processes"]
        for process in processes:
            [daemon] = process["leftovers"]
            assert daemon["argv"][-2] == "--daemon-socket", daemon
            sockets.add(daemon["argv"][-1])
            assert process_gone(daemon["pid"])
        # The restart's second process found no daemon (the first one's was killed) and made one.
        assert len(processes) == (2 if journey["id"] == "follow-up-after-restart" else 1)
    folders = {os.path.dirname(s) for s in sockets}
    assert len(folders) == 7, folders  # one TMPDIR per journey
    assert not any(os.path.exists(f) for f in folders)  # removed with the journey
    # run and verify show each leftover the same way: one line, clipped (the argv above is whole).
    shown = [line for line in outcome.stdout.splitlines() if " left pid " in line]
    assert len(shown) == 7 and shown == [line for line in verify(outcome.path).stdout.splitlines() if " left pid " in line]


def test_late_updates_are_recorded_apart_from_the_reply(tmp_path):
    outcome = run_journeys(reference_agent("reply-after-answer"), tmp_path, "--journey", "turn-to-end")
    turn = outcome.result["journeys"][0]["evidence"]["turns"][0]
    marker = outcome.result["journeys"][0]["evidence"]["markers"]["reply"]
    assert turn["reply_text"] == "Working on it." and marker not in turn["reply_text"]
    assert turn["late_updates"] == {"agent_message_chunk": 1}
    assert any("after the answer" in w for w in outcome.result["journeys"][0]["warnings"])


def test_requests_for_capabilities_never_offered_are_refused_and_recorded(tmp_path):
    outcome = run_journeys(reference_agent("asks-client-fs"), tmp_path, "--journey", "turn-to-end")
    journey = outcome.result["journeys"][0]
    assert journey["verdict"] == "pass"
    refused = journey["evidence"]["turns"][0]["agent_requests"]
    assert [(r["method"], r["error_code"]) for r in refused] == [("fs/read_text_file", -32601),
                                                                  ("terminal/create", -32601)]
    assert sum("refused the agent's request" in w for w in journey["warnings"]) == 2


@pytest.mark.parametrize("tracking", ["subreaper", "cgroup"])
@pytest.mark.parametrize("defect", ["helper-holds-stderr", "leave-daemon", "leave-detached-helper"])
def test_leftovers_are_found_by_either_tracking_and_it_is_recorded(defect, tracking, tmp_path):
    """A helper with a whitelisted environment (no token) and a double-forked daemon are the
    agent's under the subreaper's descent tracking too; result.json says which tracking ran."""
    outcome = run_journeys(reference_agent(defect), tmp_path, "--journey", "turn-to-end", "--tracking", tracking)
    if tracking == "cgroup" and outcome.code == 2:
        pytest.skip("no cgroup can be made here: " + outcome.stderr[-300:])
    assert outcome.failures() == {"turn-to-end": ["process-left"]}, outcome.stdout
    method = outcome.result["launch"]["tracking"]
    assert method == "subreaper" if tracking == "subreaper" else method.startswith("cgroup-v")
    [process] = outcome.result["journeys"][0]["evidence"]["processes"]
    assert process["killed_after"] is None and process["exited_at"] - process["stdin_closed_at"] < 5


def test_a_detached_helper_is_left_in_every_journey_at_once_under_the_subreaper(tmp_path):
    """Issue 23: 7 agents at once, each leaving an orphan that is in no session of theirs and has
    no token: under the runner alone as subreaper it passed in 6 of 7; with a holder of its own
    per agent process every orphan is its agent's, named in its journey, and killed."""
    outcome = run_journeys(reference_agent("leave-detached-helper"), tmp_path, "--tracking", "subreaper")
    assert outcome.failures() == every("process-left"), outcome.stdout
    assert outcome.result["launch"]["tracking"] == "subreaper"
    pids = set()
    for journey in outcome.result["journeys"]:
        first = journey["evidence"]["processes"][0]  # session/new runs in the first process
        [left] = first["leftovers"]
        assert left["argv"] == ["sleep", "300"], left
        assert f"left pid {left['pid']} `sleep 300`" in journey["failures"][0]["detail"]
        pids.add(left["pid"])
        assert process_gone(left["pid"])
    assert len(pids) == 7


def test_the_reference_agent_passes_under_the_subreaper_tracking(tmp_path):
    outcome = run_journeys(reference_agent(), tmp_path, "--tracking", "subreaper")
    assert outcome.failures() == {} and outcome.code == 0, outcome.stdout
    assert outcome.result["launch"]["tracking"] == "subreaper"


def test_a_cancel_on_an_in_progress_report_is_recorded_as_a_warning(tmp_path):
    """Where tracking sees every process (a cgroup or a holder of its own), the report waits 30 s
    for a process that never comes (the agent "runs" the sleep in its own process)."""
    outcome = run_journeys(reference_agent("sleep-in-process"), tmp_path, "--journey", "stop-running-turn")
    [journey] = outcome.result["journeys"]
    [turn] = journey["evidence"]["turns"]
    assert journey["verdict"] == "pass" and turn["cancel_trigger"] == "tool_call"
    assert turn["sees_every_process"] is True and turn["process_wait_s"] == 30.0
    assert turn["cancel_sent_at"] - turn["tool_calls"][0]["at"] >= 30.0
    assert any("no `sleep 120` process was seen within 30s" in w for w in journey["warnings"])


@pytest.mark.parametrize("tracking", ["subreaper", "cgroup"])
def test_a_sleep_that_starts_late_is_cancelled_on_its_process(tracking, tmp_path):
    """Issue 23: the command runs 4.5 s after its in_progress report (a kernel still starting).
    The 3 s fallback cancelled before it ran, so the agent's kill was never tested; where
    tracking sees every process, the cancel waits for the sleep and goes out on it."""
    outcome = run_journeys(reference_agent("sleep-starts-late"), tmp_path, "--journey", "stop-running-turn",
                           "--tracking", tracking)
    if tracking == "cgroup" and outcome.code == 2:
        pytest.skip("no cgroup can be made here: " + outcome.stderr[-300:])
    [journey] = outcome.result["journeys"]
    [turn] = journey["evidence"]["turns"]
    assert journey["verdict"] == "pass" and journey["warnings"] == [], outcome.stdout
    assert turn["cancel_trigger"] == "process" and turn["sees_every_process"] is True
    assert turn["process_wait_s"] == 30.0
    assert turn["cancel_sent_at"] - turn["tool_calls"][0]["at"] >= 4.0
    assert turn["sleep_left"] == [] and turn["stop_reason"] == "cancelled"


def test_a_helper_that_ends_within_the_window_is_part_of_the_agents_ending(tmp_path):
    """Issue 23: Rondar gives the agent 10 s after its input closes; a helper that ends 3 s after
    the agent (Claude Code's adapter leaves its CLI so) is part of the ending, not a leftover,
    however loaded the machine; the evidence says when the last process ended."""
    outcome = run_journeys(reference_agent("helper-ends-in-window"), tmp_path, "--journey", "turn-to-end")
    assert outcome.failures() == {}, outcome.stdout
    [process] = outcome.result["journeys"][0]["evidence"]["processes"]
    assert process["leftovers"] == []
    assert process["leftover_window_closes_at"] == round(process["stdin_closed_at"] + 10.0, 3)
    assert process["exited_at"] + 2.5 <= process["last_process_ended_at"] < process["leftover_window_closes_at"]


def test_a_helper_alive_when_the_window_closes_is_left(tmp_path):
    outcome = run_journeys(reference_agent("helper-lingers"), tmp_path, "--journey", "turn-to-end")
    assert outcome.failures() == {"turn-to-end": ["process-left"]}, outcome.stdout
    [process] = outcome.result["journeys"][0]["evidence"]["processes"]
    assert process["last_process_ended_at"] is None and len(process["leftovers"]) == 1
    assert "when the look for leftovers ended" in outcome.result["journeys"][0]["failures"][0]["detail"]


def test_a_correct_agent_waits_for_no_window(tmp_path):
    """Nothing outlives the reference agent: the look ends at its exit, seconds before the window closes."""
    outcome = run_journeys(reference_agent(), tmp_path, "--journey", "turn-to-end")
    [journey] = outcome.result["journeys"]
    [process] = journey["evidence"]["processes"]
    assert journey["verdict"] == "pass"
    assert process["last_process_ended_at"] == process["exited_at"]
    assert journey["duration_s"] < process["leftover_window_closes_at"] - 5


def test_the_cancel_waits_for_the_sleep_process(tmp_path):
    outcome = run_journeys(reference_agent(), tmp_path, "--journey", "stop-running-turn")
    [turn] = outcome.result["journeys"][0]["evidence"]["turns"]
    assert turn["cancel_trigger"] == "process"
    assert turn["cancel_sent_at"] > max(p["at"] for p in turn["permissions"])


def test_a_late_write_in_plan_mode_is_named(tmp_path):
    outcome = run_journeys(reference_agent("plan-late-write"), tmp_path, "--journey", "plan-turn-saved-plan")
    [failure] = outcome.result["journeys"][0]["failures"]
    assert failure["id"] == "plan-changed-workspace" and "new notes.md" in failure["detail"]


def test_a_reply_of_4_mib_is_stored_whole_for_verify(tmp_path):
    outcome = run_journeys(reference_agent("marker-after-4mb"), tmp_path, "--journey", "turn-to-end")
    journey = outcome.result["journeys"][0]
    [turn] = journey["evidence"]["turns"]
    assert journey["verdict"] == "pass" and len(turn["reply_text"]) == turn["reply_length"] > 4 << 20
    assert turn["reply_text"].endswith(journey["evidence"]["markers"]["reply"])
    assert verify(outcome.path, "--journey", "turn-to-end").returncode == 0  # the one journey it ran
