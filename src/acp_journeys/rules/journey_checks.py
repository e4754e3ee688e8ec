"""The checks of each journey's own steps (journeys.md #step-3 to #step-9), one function a journey.

Rules of this module: pure, like the judge that calls them (judge.py): each reads a journey's
evidence and adds what it finds to `Findings`; it reports only what its evidence shows and never
decides the verdict. `JOURNEY_CHECKS` has one row per journey of the catalog.
"""

from __future__ import annotations

import json
import re

from acp_journeys.rules import catalog, prompts
from acp_journeys.rules.evidence import JourneyEvidence, McpCallEvidence, TurnEvidence
from acp_journeys.rules.findings import Findings, one_line, quote, short, shown

CANCEL_BOUND_S = catalog.RULES.cancel_s
"""Rondar: the stop reason `cancelled` in 30 seconds or less after session/cancel (the catalog's RULES)."""


# --- the turns --------------------------------------------------------------------------------

def find_turn(evidence: JourneyEvidence, name: str) -> TurnEvidence | None:
    return next((t for t in evidence.turns if t.name == name), None)


def _turn_ended(turn: TurnEvidence, findings: Findings, expected: str = "end_turn", *, named: bool = True) -> bool:
    """Checks how a turn ended; True when it ended in a way whose reply can be judged.

    named: the doc names the stop reason of this turn (#step-3, #step-4); elsewhere another stop
    reason is a warning that fails only with --strict."""
    if turn.agent_exited:
        findings.add("agent-exited", f"the agent ended during turn {turn.name}")
        return False
    if turn.timed_out:
        findings.add("timeout", findings.no_answer(f"turn {turn.name}: session/prompt", turn.bound_s))
        return False
    if turn.error is not None:
        findings.add("prompt-error", f"turn {turn.name}: {short(turn.error)}")
        return False
    if turn.stop_reason != expected:
        detail = f"turn {turn.name}: stopReason {short(turn.stop_reason)}, expected {expected}"
        if named:
            findings.add("stop-reason", detail)
        else:
            findings.add_strict("stop-reason", detail)
    return True


def _reply_holds(turn: TurnEvidence, needle: str | None, failure_id: str, findings: Findings, *,
                 ignore_case: bool = False, what: str = "") -> None:
    """Fails `failure_id` unless the reply holds `needle`. None is a needle no reply holds: a marker
    that the evidence does not record, or a text that a check already found missing."""
    haystack = turn.reply_text.lower() if ignore_case else turn.reply_text
    if needle is not None and (needle.lower() if ignore_case else needle) in haystack:
        return
    if turn.update_counts.get("agent_message_chunk", 0) == 0:
        where = " (it came in agent_thought_chunk)" if needle is not None and needle in turn.thought_text else ""
        findings.add("reply-not-in-chunks", f"turn {turn.name}: no agent_message_chunk text{where}")
        return
    findings.add(failure_id,
                 f"turn {turn.name}: the reply {quote(turn.reply_text)} does not hold {what or shown(needle)}")


def _check_turn_to_end(evidence: JourneyEvidence, findings: Findings) -> None:
    t = find_turn(evidence, "reply")
    if t and _turn_ended(t, findings):
        _reply_holds(t, evidence.markers.get("reply") or None, "reply-missing-marker", findings)


def _check_same_session(evidence: JourneyEvidence, findings: Findings) -> None:
    first, ask = find_turn(evidence, "remember"), find_turn(evidence, "ask")
    if first:
        _turn_ended(first, findings)
    if ask and _turn_ended(ask, findings):
        _reply_holds(ask, evidence.markers.get("word") or None, "reply-missing-word", findings)


def _check_after_restart(evidence: JourneyEvidence, findings: Findings) -> None:
    first = find_turn(evidence, "remember")
    if first:
        _turn_ended(first, findings, named=False)
    if len(evidence.processes) >= 2:
        caps = evidence.processes[1].agent_capabilities
        if caps is not None and caps.get("loadSession") is not True:
            findings.add("no-load-session", f"process 2: agentCapabilities.loadSession is "
                                     f"{short(caps.get('loadSession'))}")
    ask = find_turn(evidence, "ask")
    if ask and _turn_ended(ask, findings, named=False):
        _reply_holds(ask, evidence.markers.get("word") or None, "reply-missing-word", findings)


def _check_image_and_file(evidence: JourneyEvidence, findings: Findings) -> None:
    if evidence.processes:
        caps = evidence.processes[0].agent_capabilities
        if caps is not None:
            prompt_caps = caps.get("promptCapabilities")
            image = prompt_caps.get("image") if isinstance(prompt_caps, dict) else None
            if image is not True:
                findings.add("no-image-capability", f"promptCapabilities.image is {short(image)}")
    t = find_turn(evidence, "image")
    word = evidence.markers.get("file") or None
    if t and _turn_ended(t, findings, named=False):
        _reply_holds(t, word, "reply-missing-word", findings, what=f"the word of the file {shown(word)}")
        # "red" as a word of its own, not inside the file word or "hundred"
        rest = t.reply_text.replace(word, " ") if word is not None else t.reply_text
        if "reply-not-in-chunks" not in findings.items and not re.search(r"\bred\b", rest, re.IGNORECASE):
            _reply_holds(t, None, "reply-missing-red", findings, what='the colour "red"')


def _check_stop(evidence: JourneyEvidence, findings: Findings) -> None:
    t = find_turn(evidence, "sleep")
    if t is None:
        return
    if t.agent_exited:
        findings.add("agent-exited", "the agent ended during turn sleep")
        return
    if t.cancel_sent_at is None:
        if t.timed_out:
            findings.add("timeout", findings.no_answer("turn sleep: session/prompt", t.bound_s))
        elif t.error is not None:
            findings.add("prompt-error", f"turn sleep: {short(t.error)}")
        else:
            findings.add("sleep-never-started", f"the turn ended with {short(t.stop_reason)} before the "
                                         "command ran")
        return
    if t.cancel_trigger == "bound":
        waited = t.cancel_sent_at - t.sent_at
        findings.add("sleep-never-started", f"cancelled at the turn's bound, after {waited:.0f} s (--timeout-scale "
                                     f"{findings.timeout_scale:g}); raise --timeout-scale if your model is slow")
    elif t.cancel_trigger == "tool_call":
        waited = f" within {t.process_wait_s:.0f}s" if t.process_wait_s is not None else ""
        why = {True: " (tracking sees every process of the agent: it ran none such)",
               False: " (this tracking cannot see every process of the agent)", None: ""}[t.sees_every_process]
        findings.warnings.append(f"session/cancel went out at {t.cancel_sent_at:.1f}s on a tool call about the sleep "
                          f"reported in_progress: no `sleep 120` process was seen{waited} among the agent's "
                          f"processes{why}")
    stop_at = t.answered_at if t.answered_at is not None else float("inf")
    shown = [c for c in t.tool_calls if c.at <= stop_at] or [p for p in t.permissions if p.at <= stop_at]
    if not shown:
        findings.add("no-tool-call-before-cancel", "no tool_call update and no permission request in the turn")
    if t.answered_at is None or t.answered_at - t.cancel_sent_at > CANCEL_BOUND_S:
        took = "no answer" if t.answered_at is None else f"{t.answered_at - t.cancel_sent_at:.1f}s"
        findings.add("cancel-too-slow", f"session/cancel at {t.cancel_sent_at:.1f}s; the turn's answer: {took}")
    elif t.error is not None:
        findings.add("prompt-error", f"turn sleep: {short(t.error)}")
    elif t.stop_reason != "cancelled":
        findings.add("stop-reason", f"after session/cancel the stopReason was {short(t.stop_reason)}, "
                             "expected cancelled")
    if t.sleep_left:
        findings.add("sleep-left", ", ".join(f"pid {x.pid} `{one_line(x.command, 60)}`" for x in t.sleep_left))


def _plan_id(call: McpCallEvidence) -> str | None:
    result = call.result
    if isinstance(result, dict) and isinstance(result.get("id"), str):
        return result["id"]
    return None


def _check_plan_turn(turn: TurnEvidence, title: str, input_word: str | None, findings: Findings, *,
                     full: bool) -> None:
    """full: Rondar's #step-8 (get_plan and the id in the reply); else #step-9 (the plan is saved)."""
    if not _turn_ended(turn, findings, named=False):
        return
    creates = [c for c in turn.mcp_calls if c.tool == "create_plan"]
    good = [c for c in creates if not c.is_error and c.arguments.get("title") == title
            and (not full or (input_word is not None and input_word in str(c.arguments.get("description", ""))))]
    if not good:
        seen = "; ".join(f"{c.tool}({short(c.arguments)})" for c in turn.mcp_calls) or "no call of the rondar server"
        findings.add("create-plan-not-called", f"turn {turn.name}: expected title {json.dumps(title)}"
                                        f"{' and the cat output ' + shown(input_word) if full else ''}; seen: {seen}")
        return
    # A model that retries may save the same plan twice: any good create_plan is "that plan".
    plan_ids = [i for i in (_plan_id(c) for c in good) if i is not None]
    if not full or not plan_ids:
        return
    got = [v for c in turn.mcp_calls if c.tool == "get_plan" for v in c.arguments.values() if v in plan_ids]
    if not got:
        findings.add("get-plan-not-called", f"turn {turn.name}: no get_plan with {' or '.join(plan_ids)}")
    # The reply names the plan that get_plan read back, else any plan of a good create_plan.
    wanted = [i for i in plan_ids if i in got] or plan_ids
    held = next((i for i in wanted if i in turn.reply_text), None)
    _reply_holds(turn, held or wanted[-1], "reply-missing-plan-id", findings, what=f"the plan ID {' or '.join(wanted)}")


def _check_plan_mode_found(evidence: JourneyEvidence, findings: Findings) -> bool:
    switch = evidence.plan_switch
    if switch is None:
        return False  # session/new never answered; reported elsewhere
    if switch.how is None:
        offered = ", ".join(switch.offered_modes + switch.offered_config_values) or "nothing"
        findings.add("no-plan-mode", f"session/new offered: {offered}")
        return False
    return True


def _check_plan_saved(evidence: JourneyEvidence, findings: Findings) -> None:
    if not _check_plan_mode_found(evidence, findings):
        return
    t = find_turn(evidence, "plan")
    if t is None:
        return
    _check_plan_turn(t, prompts.PLAN_TITLE_SAVED_PLAN, evidence.markers.get("input") or None, findings, full=True)
    if t.workspace_before is not None and t.workspace_after is not None:
        changes = _workspace_changes(t.workspace_before, t.workspace_after)
        if changes:
            findings.add("plan-changed-workspace", ", ".join(changes[:10]))


def _check_plan_regular_plan(evidence: JourneyEvidence, findings: Findings) -> None:
    if not _check_plan_mode_found(evidence, findings):
        return
    for name in ("plan", "plan-again"):
        t = find_turn(evidence, name)
        if t is not None:
            _check_plan_turn(t, prompts.PLAN_TITLE_PLAN_REGULAR_PLAN, evidence.markers.get("input") or None, findings,
                             full=False)
    regular = find_turn(evidence, "regular")
    if regular is not None and _turn_ended(regular, findings, named=False) and regular.target_file_exists is not True:
        findings.add("regular-file-missing", f"{regular.target_file} does not exist after the regular turn")


def _workspace_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    changes = [f"new {p}" for p in sorted(after.keys() - before.keys())]
    changes += [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    changes += [f"changed {p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return changes


JOURNEY_CHECKS = {
    "turn-to-end": _check_turn_to_end,
    "follow-up-same-session": _check_same_session,
    "follow-up-after-restart": _check_after_restart,
    "image-and-file": _check_image_and_file,
    "stop-running-turn": _check_stop,
    "plan-turn-saved-plan": _check_plan_saved,
    "plan-regular-plan": _check_plan_regular_plan,
}
assert set(JOURNEY_CHECKS) == set(catalog.JOURNEY_IDS)
