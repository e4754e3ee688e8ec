"""The judge: evidence in, verdict and failures out.

Rules of this module: a pure function of `JourneyEvidence` (plus the --strict flag and the docs
URL). It never touches a process, a file or a clock. `run` calls it at the end of each journey and
`verify` calls it on the evidence stored in result.json, so a hand-edited verdict changes nothing.
Each check reports only what its evidence shows: a journey that stopped early is failed by the
cause that stopped it, not by a pile of checks that never ran.

It must not know processes, sockets, the model stub's server or any file: only `rules/`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from acp_journeys.rules import catalog, prompts
from acp_journeys.rules.evidence import (
    Failure,
    JourneyEvidence,
    McpCallEvidence,
    ProcessEvidence,
    RequestEvidence,
    RunResult,
    TurnEvidence,
)
from acp_journeys.rules.model_requests import NO_REQUEST, explains, hints, stub_failures

EXIT_BOUND_S = catalog.RULES.exit_s
"""Rondar: the agent ends by itself in 10 seconds after its input closes (the catalog's RULES)."""
CANCEL_BOUND_S = catalog.RULES.cancel_s
"""Rondar: the stop reason `cancelled` in 30 seconds or less after session/cancel (the catalog's RULES)."""
COMMAND_LIMIT = 120
"""How much of a leftover's command line a failure shows."""

Verdict = Literal["pass", "fail", "error"]


@dataclass
class Judgement:
    verdict: Verdict
    failures: list[Failure] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def failure_ids(self) -> list[str]:
        return [f.id for f in self.failures]


class _Findings:
    """Collects failures for one journey, each id once (details joined)."""

    def __init__(self, journey_id: str, docs_url: str, strict: bool = False, timeout_scale: float = 1.0) -> None:
        self.journey_id = journey_id
        self.docs_url = docs_url
        self.strict = strict
        self.timeout_scale = timeout_scale
        self.items: dict[str, Failure] = {}
        self.warnings: list[str] = []

    def add_strict(self, failure_id: str, detail: str) -> None:
        """A check where Rondar's page names no rule: a failure only with --strict, else a warning."""
        if self.strict:
            self.add(failure_id, detail)
        else:
            self.warnings.append(f"{failure_id} (fails only with --strict): {detail}")

    def no_answer(self, what: str, bound_s: float | None) -> str:
        """`what got no answer within B`: the bound and how --timeout-scale made it, so that a
        slow model's author knows which knob to turn."""
        return f"{what} got no answer within {bound_text(bound_s, self.timeout_scale)}"

    def add(self, failure_id: str, detail: str, cause: str | None = None) -> None:
        if failure_id in self.items:
            old = self.items[failure_id]
            if detail and detail not in old.detail:
                old.detail = f"{old.detail}; {detail}" if old.detail else detail
            return
        kind = catalog.FAILURES[failure_id]
        anchor = catalog.anchor_for(failure_id, self.journey_id)
        self.items[failure_id] = Failure(
            id=failure_id, message=kind.message_for(cause), doc=catalog.doc_link(anchor, self.docs_url),
            detail=detail,
        )


def bound_text(bound_s: float | None, scale: float) -> str:
    """`36 s (180 s × --timeout-scale 0.2); raise --timeout-scale if your model is slow`, or
    `the bound` for evidence that does not record it (an older result.json)."""
    if bound_s is None or bound_s <= 0:
        return "the bound"
    hint = "; raise --timeout-scale if your model is slow"
    if scale <= 0:
        return f"{bound_s:g} s{hint}"
    return f"{bound_s:g} s ({round(bound_s / scale, 3):g} s × --timeout-scale {scale:g}){hint}"


class _Float(str):
    """A JSON number token with a fraction or exponent, kept apart from integers."""


def read_protocol_version(raw: str) -> tuple[bool, str]:
    """Whether the raw initialize answer has protocolVersion 1 as a JSON integer, and what it had."""
    try:
        message = json.loads(raw, parse_float=_Float)
    except ValueError as exc:
        return False, f"the answer is not JSON ({exc})"
    if not isinstance(message, dict):
        return False, "the answer is not a JSON object"
    if "error" in message:
        return False, f"initialize answered with an error: {_short(message['error'])}"
    result = message.get("result")
    if not isinstance(result, dict) or "protocolVersion" not in result:
        return False, "the answer has no result.protocolVersion"
    version = result["protocolVersion"]
    if isinstance(version, _Float):
        return False, f"protocolVersion is {version}, a number with a fraction; send the integer 1"
    if isinstance(version, str):
        return False, f"protocolVersion is the string {json.dumps(version)}; send the number 1"
    if type(version) is not int:
        return False, f"protocolVersion is {_short(version)}; send the number 1"
    if version != 1:
        return False, f"protocolVersion is {version}; this check speaks ACP v1"
    return True, "1"


def judge_journey(evidence: JourneyEvidence, *, strict: bool = False,
                  docs_url: str = catalog.DEFAULT_DOCS_URL, timeout_scale: float = 1.0) -> Judgement:
    """`timeout_scale`: the run's --timeout-scale, named with a bound that ran out (text only:
    the verdict never depends on it)."""
    findings = _Findings(evidence.journey, docs_url, strict, timeout_scale)
    warnings = findings.warnings
    if evidence.runner_error:
        findings.add("runner-error", evidence.runner_error)
        return Judgement("error", list(findings.items.values()), warnings)
    if evidence.interrupted:
        findings.add("interrupted", evidence.stopped_early or "")
        return Judgement("error", list(findings.items.values()), warnings)

    for process in evidence.processes:
        _check_process(process, findings)
    for request in evidence.requests:
        _check_request(request, findings)
    _JOURNEY_CHECKS[evidence.journey](evidence, findings)

    for warning in evidence.protocol_warnings:
        text = f"process {warning.process + 1} at {warning.at:.1f}s: {warning.kind}: {warning.message}"
        warnings.append(text)
        if strict and warning.kind == "schema":
            findings.add("schema-violation", warning.message)
        elif strict and warning.kind in ("not-json", "too-long", "not-jsonrpc"):
            findings.add("stdout-not-protocol", warning.message)
    for hit in evidence.bounds_hit:
        # The journey is judged on what was kept and counted (see editor/session.py); say so.
        warnings.append(f"over a bound of acp-journeys: {hit.sentence()}")
    for turn in evidence.turns:
        if turn.late_updates:
            warnings.append(f"turn {turn.name}: updates after the answer to session/prompt: "
                            + ", ".join(f"{k} x{v}" for k, v in sorted(turn.late_updates.items())))
        for req in turn.agent_requests:
            warnings.append(f"turn {turn.name}: refused the agent's request {req.method} "
                            f"(error {req.error_code}; no client capability was advertised)")

    # A journey that stopped early always fails, even if no check above names the cause.
    if evidence.stopped_early and not findings.items:
        findings.add("timeout", evidence.stopped_early)
    # Nothing failed and nothing stopped it: then its evidence must hold all that a pass needs.
    missing = missing_evidence(evidence)
    if missing and (not findings.items or any(m.startswith("marker") for m in missing)):
        findings.add("evidence-incomplete", "; ".join(missing))
    if evidence.model_stub_used:
        ours = stub_failures(evidence.model_requests)
        if ours and findings.items:
            # The scripted model refused or broke on a request of the agent: the journey failed
            # because of acp-journeys, so it is our error and the agent's failures are not its.
            first = ours[0]
            detail = (f"the model stub (acp-journeys' scripted model) answered {len(ours)} request(s) of the agent "
                      f"with an error, first {first.status} {first.error or ''}; the journey would "
                      f"otherwise fail with {', '.join(findings.items)}").strip()
            return Judgement("error", [_runner_error(evidence.journey, docs_url, detail)], warnings)
        for request in ours:
            warnings.append(f"model endpoint: the stub answered a request with {request.status} "
                            f"(acp-journeys' failure): {request.error or ''}")
        # What reached the scripted model says why the agent's plumbing failed.
        for hint in hints(evidence.model_requests):
            # Each hint only with the failures it explains (never a leftover process, say), and
            # no request to the model is no news in a journey that never sent a prompt.
            if hint == NO_REQUEST and not evidence.turns:
                continue
            warnings.append(f"model endpoint: {hint}")
            for failure in findings.items.values():
                if failure.id not in explains(hint):
                    continue
                failure.detail = f"{failure.detail}; model endpoint: {hint}" if failure.detail else \
                    f"model endpoint: {hint}"
    verdict: Verdict = "fail" if findings.items else "pass"
    return Judgement(verdict, list(findings.items.values()), warnings)


def _runner_error(journey_id: str, docs_url: str, detail: str) -> Failure:
    findings = _Findings(journey_id, docs_url)
    findings.add("runner-error", detail)
    return findings.items["runner-error"]


# --- what a pass needs in the evidence -----------------------------------------------------------

def missing_evidence(evidence: JourneyEvidence) -> list[str]:
    """What a journey's evidence lacks for a pass: the turns its script sends, each answered; its
    agent processes, each answered initialize and ended; the markers its checks look for."""
    journey = catalog.JOURNEYS_BY_ID[evidence.journey]
    missing = [f"marker {name!r}" for name in journey.markers if not evidence.markers.get(name)]
    needed = journey.processes
    if len(evidence.processes) < needed:
        missing.append(f"{needed} agent process(es), {len(evidence.processes)} recorded")
    for p in evidence.processes:
        if p.initialize_raw is None or (p.exited_at is None and p.killed_after is None):
            missing.append(f"process {p.index + 1}: its answer to initialize and its end")
    for name in journey.turns:
        turn = _turn(evidence, name)
        if turn is None:
            missing.append(f"turn {name}")
        elif turn.answered_at is None:
            missing.append(f"turn {name}: its answer")
        elif not 0 <= turn.process < len(evidence.processes):
            missing.append(f"turn {name}: its process")
    if evidence.journey.startswith("plan-") and evidence.plan_switch is None:
        missing.append("the session's modes (plan_switch)")
    return missing


def judge_result(result: RunResult) -> RunResult:
    """The same run with every journey's verdict and failures computed again from its evidence."""
    journeys = []
    for journey in result.journeys:
        judgement = judge_journey(journey.evidence, strict=result.strict, docs_url=result.docs_url,
                                  timeout_scale=result.timeout_scale)
        journeys.append(journey.model_copy(update={
            "verdict": judgement.verdict, "failures": judgement.failures, "warnings": judgement.warnings,
        }))
    passed = sum(1 for j in journeys if j.verdict == "pass")
    verdict = "pass" if journeys and passed == len(journeys) and not result.partial else "fail"
    return result.model_copy(update={
        "journeys": journeys, "passed": passed, "failed": len(journeys) - passed, "verdict": verdict,
    })


# --- the checks on every agent process (#step-2) -------------------------------------------

def _check_process(process: ProcessEvidence, findings: _Findings) -> None:
    label = f"process {process.index + 1}"
    if process.start_error:
        findings.add("agent-exited", f"{label} could not start: {process.start_error}")
        return
    if process.initialize_raw is not None:
        ok, what = read_protocol_version(process.initialize_raw)
        if not ok:
            findings.add("initialize-protocol-version", f"{label}: {what}")
    elif process.initialize_sent_at is not None:
        # The cause first: a crash at start is no protocol version to fix.
        if process.initialize_timed_out:
            findings.add("initialize-protocol-version",
                  f"{label}: no answer to initialize within "
                  f"{bound_text(process.initialize_bound_s, findings.timeout_scale)}",
                  cause="no-answer")
        else:
            findings.add("initialize-protocol-version",
                  f"{label} exited with code {process.exit_code} before it answered initialize", cause="exited")
    if process.exited_before_stdin_close and process.exited_at is not None:
        findings.add("agent-exited", f"{label} exited with code {process.exit_code} at {process.exited_at:.1f}s, "
                              "before its input was closed")
    elif process.stdin_closed_at is not None:
        during = " (a turn was running)" if process.turn_running_at_close else ""
        if process.killed_after is not None:
            findings.add("no-exit-after-stdin-close",
                  f"{label} was still running {process.killed_after:.0f}s after its input closed{during}; killed")
        elif process.exited_at is not None and process.exited_at - process.stdin_closed_at > EXIT_BOUND_S:
            findings.add("no-exit-after-stdin-close",
                  f"{label} ended {process.exited_at - process.stdin_closed_at:.1f}s after its input closed{during}")
    if process.leftovers:
        listed = ", ".join(f"pid {x.pid} `{one_line(x.command, COMMAND_LIMIT)}`" for x in process.leftovers[:5])
        more = f" and {len(process.leftovers) - 5} more" if len(process.leftovers) > 5 else ""
        closed = process.leftover_window_closes_at
        when = f" (alive at {closed:.1f}s, when the look for leftovers ended)" if closed is not None else ""
        findings.add("process-left", f"{label} left {listed}{more}{when}")


def _check_request(request: RequestEvidence, findings: _Findings) -> None:
    if request.method == "session/new":
        if request.error is not None:
            findings.add("session-new-error", f"error {_short(request.error)}")
        elif request.timed_out:
            findings.add("timeout", findings.no_answer("session/new", request.bound_s))
    elif request.method == "session/load":
        if request.error is not None:
            findings.add("session-load-error", f"error {_short(request.error)}")
        elif request.timed_out:
            findings.add("timeout", findings.no_answer("session/load", request.bound_s))
    elif request.method in ("session/set_mode", "session/set_config_option"):
        if request.error is not None:
            findings.add("set-mode-error",
                         f"{request.method} {_short(request.params)} answered error {_short(request.error)}")
        elif request.timed_out:
            findings.add("timeout", findings.no_answer(request.method, request.bound_s))


# --- the turns --------------------------------------------------------------------------------

def _turn(evidence: JourneyEvidence, name: str) -> TurnEvidence | None:
    return next((t for t in evidence.turns if t.name == name), None)


def _turn_ended(turn: TurnEvidence, findings: _Findings, expected: str = "end_turn", *, named: bool = True) -> bool:
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
        findings.add("prompt-error", f"turn {turn.name}: {_short(turn.error)}")
        return False
    if turn.stop_reason != expected:
        detail = f"turn {turn.name}: stopReason {_short(turn.stop_reason)}, expected {expected}"
        if named:
            findings.add("stop-reason", detail)
        else:
            findings.add_strict("stop-reason", detail)
    return True


def _reply_holds(turn: TurnEvidence, needle: str | None, failure_id: str, findings: _Findings, *,
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
                 f"turn {turn.name}: the reply {_quote(turn.reply_text)} does not hold {what or _shown(needle)}")


def _check_turn_to_end(evidence: JourneyEvidence, findings: _Findings) -> None:
    t = _turn(evidence, "reply")
    if t and _turn_ended(t, findings):
        _reply_holds(t, evidence.markers.get("reply") or None, "reply-missing-marker", findings)


def _check_same_session(evidence: JourneyEvidence, findings: _Findings) -> None:
    first, ask = _turn(evidence, "remember"), _turn(evidence, "ask")
    if first:
        _turn_ended(first, findings)
    if ask and _turn_ended(ask, findings):
        _reply_holds(ask, evidence.markers.get("word") or None, "reply-missing-word", findings)


def _check_after_restart(evidence: JourneyEvidence, findings: _Findings) -> None:
    first = _turn(evidence, "remember")
    if first:
        _turn_ended(first, findings, named=False)
    if len(evidence.processes) >= 2:
        caps = evidence.processes[1].agent_capabilities
        if caps is not None and caps.get("loadSession") is not True:
            findings.add("no-load-session", f"process 2: agentCapabilities.loadSession is "
                                     f"{_short(caps.get('loadSession'))}")
    ask = _turn(evidence, "ask")
    if ask and _turn_ended(ask, findings, named=False):
        _reply_holds(ask, evidence.markers.get("word") or None, "reply-missing-word", findings)


def _check_image_and_file(evidence: JourneyEvidence, findings: _Findings) -> None:
    if evidence.processes:
        caps = evidence.processes[0].agent_capabilities
        if caps is not None:
            prompt_caps = caps.get("promptCapabilities")
            image = prompt_caps.get("image") if isinstance(prompt_caps, dict) else None
            if image is not True:
                findings.add("no-image-capability", f"promptCapabilities.image is {_short(image)}")
    t = _turn(evidence, "image")
    word = evidence.markers.get("file") or None
    if t and _turn_ended(t, findings, named=False):
        _reply_holds(t, word, "reply-missing-word", findings, what=f"the word of the file {_shown(word)}")
        # "red" as a word of its own, not inside the file word or "hundred"
        rest = t.reply_text.replace(word, " ") if word is not None else t.reply_text
        if "reply-not-in-chunks" not in findings.items and not re.search(r"\bred\b", rest, re.IGNORECASE):
            _reply_holds(t, None, "reply-missing-red", findings, what='the colour "red"')


def _check_stop(evidence: JourneyEvidence, findings: _Findings) -> None:
    t = _turn(evidence, "sleep")
    if t is None:
        return
    if t.agent_exited:
        findings.add("agent-exited", "the agent ended during turn sleep")
        return
    if t.cancel_sent_at is None:
        if t.timed_out:
            findings.add("timeout", findings.no_answer("turn sleep: session/prompt", t.bound_s))
        elif t.error is not None:
            findings.add("prompt-error", f"turn sleep: {_short(t.error)}")
        else:
            findings.add("sleep-never-started", f"the turn ended with {_short(t.stop_reason)} before the "
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
        findings.add("prompt-error", f"turn sleep: {_short(t.error)}")
    elif t.stop_reason != "cancelled":
        findings.add("stop-reason", f"after session/cancel the stopReason was {_short(t.stop_reason)}, "
                             "expected cancelled")
    if t.sleep_left:
        findings.add("sleep-left", ", ".join(f"pid {x.pid} `{one_line(x.command, 60)}`" for x in t.sleep_left))


def _plan_id(call: McpCallEvidence) -> str | None:
    result = call.result
    if isinstance(result, dict) and isinstance(result.get("id"), str):
        return result["id"]
    return None


def _check_plan_turn(turn: TurnEvidence, title: str, input_word: str | None, findings: _Findings, *,
                     full: bool) -> None:
    """full: Rondar's #step-8 (get_plan and the id in the reply); else #step-9 (the plan is saved)."""
    if not _turn_ended(turn, findings, named=False):
        return
    creates = [c for c in turn.mcp_calls if c.tool == "create_plan"]
    good = [c for c in creates if not c.is_error and c.arguments.get("title") == title
            and (not full or (input_word is not None and input_word in str(c.arguments.get("description", ""))))]
    if not good:
        seen = "; ".join(f"{c.tool}({_short(c.arguments)})" for c in turn.mcp_calls) or "no call of the rondar server"
        findings.add("create-plan-not-called", f"turn {turn.name}: expected title {json.dumps(title)}"
                                        f"{' and the cat output ' + _shown(input_word) if full else ''}; seen: {seen}")
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


def _check_plan_mode_found(evidence: JourneyEvidence, findings: _Findings) -> bool:
    switch = evidence.plan_switch
    if switch is None:
        return False  # session/new never answered; reported elsewhere
    if switch.how is None:
        offered = ", ".join(switch.offered_modes + switch.offered_config_values) or "nothing"
        findings.add("no-plan-mode", f"session/new offered: {offered}")
        return False
    return True


def _check_plan_saved(evidence: JourneyEvidence, findings: _Findings) -> None:
    if not _check_plan_mode_found(evidence, findings):
        return
    t = _turn(evidence, "plan")
    if t is None:
        return
    _check_plan_turn(t, prompts.PLAN_TITLE_SAVED_PLAN, evidence.markers.get("input") or None, findings, full=True)
    if t.workspace_before is not None and t.workspace_after is not None:
        changes = _workspace_changes(t.workspace_before, t.workspace_after)
        if changes:
            findings.add("plan-changed-workspace", ", ".join(changes[:10]))


def _check_plan_regular_plan(evidence: JourneyEvidence, findings: _Findings) -> None:
    if not _check_plan_mode_found(evidence, findings):
        return
    for name in ("plan", "plan-again"):
        t = _turn(evidence, name)
        if t is not None:
            _check_plan_turn(t, prompts.PLAN_TITLE_PLAN_REGULAR_PLAN, evidence.markers.get("input") or None, findings,
                             full=False)
    regular = _turn(evidence, "regular")
    if regular is not None and _turn_ended(regular, findings, named=False) and regular.target_file_exists is not True:
        findings.add("regular-file-missing", f"{regular.target_file} does not exist after the regular turn")


def _workspace_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    changes = [f"new {p}" for p in sorted(after.keys() - before.keys())]
    changes += [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    changes += [f"changed {p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return changes


_JOURNEY_CHECKS = {
    "turn-to-end": _check_turn_to_end,
    "follow-up-same-session": _check_same_session,
    "follow-up-after-restart": _check_after_restart,
    "image-and-file": _check_image_and_file,
    "stop-running-turn": _check_stop,
    "plan-turn-saved-plan": _check_plan_saved,
    "plan-regular-plan": _check_plan_regular_plan,
}
assert set(_JOURNEY_CHECKS) == set(catalog.JOURNEY_IDS)


def _short(value: Any, limit: int = 200) -> str:
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return _clip(text, limit)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(command: str, limit: int) -> str:
    """A command line as failures show it: every run of whitespace (a title padded with spaces,
    the lines of a `python -c` source) one space, then clipped. result.json keeps the full argv."""
    return _clip(" ".join(command.split()), limit)


def _shown(marker: str | None) -> str:
    """A marker as a failure names it; a marker the evidence lacks is named as such."""
    return marker if marker is not None else "(no marker recorded)"


def _quote(text: str) -> str:
    return json.dumps(_clip(text, 120))

