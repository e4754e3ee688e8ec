"""The protocol tier's judge: the evidence of a run in, the tier's checks and verdict out.

One function per row of `protocol_catalog.CHECKS` (`CHECK_FUNCTIONS`), each reading the evidence
that the 7 journeys recorded and the tier's own probe (`ProtocolTier.probe`). `run` calls
`judge_tiers` after Rondar's judge; `verify` calls the very same function on the stored evidence,
so a hand-edited tier verdict changes nothing.

Rules of this module: pure (no I/O, no clock). It never reads or changes Rondar's verdicts: the
tier's verdict is its own (`tiers.protocol.verdict`), and only `verify --tier protocol` lets it
count for the exit code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from acp_journeys.rules import protocol_catalog as pc
from acp_journeys.rules.evidence import (
    JourneyEvidence,
    ProcessEvidence,
    ProtocolTier,
    RequestEvidence,
    RunResult,
    TierCheck,
    Tiers,
    TurnEvidence,
)

Outcome = tuple[str, str]
"""(verdict, detail) of one check, before its level and anchor are added."""


def judge_tiers(result: RunResult) -> RunResult:
    """The result with its tiers judged again from their evidence; unchanged without tiers."""
    if result.tiers is None or result.tiers.protocol is None:
        return result
    tier = judge_protocol(result, result.tiers.protocol)
    return result.model_copy(update={"tiers": Tiers(protocol=tier)})


def judge_protocol(result: RunResult, tier: ProtocolTier) -> ProtocolTier:
    evidence = _Evidence(result.journeys and [j.evidence for j in result.journeys] or [], tier)
    checks = []
    for row in pc.CHECKS:
        verdict, detail = CHECK_FUNCTIONS[row.id](evidence)
        if verdict == "fail" and row.level == "SHOULD":
            verdict = "warn"  # a SHOULD is advice: it never fails the tier
        checks.append(TierCheck(id=row.id, level=row.level, verdict=verdict, detail=detail, anchor=row.anchor))
    musts = [c for c in checks if c.level == "MUST" and c.verdict != "skip"]
    return tier.model_copy(update={
        "checks": checks,
        "musts_applicable": len(musts),
        "musts_passed": sum(c.verdict in ("pass", "warn") for c in musts),
        # Evidence that shows no MUST met (the agent never answered initialize) cannot pass.
        "verdict": "fail" if not musts or any(c.verdict == "fail" for c in musts) else "pass",
    })


def must_failures(result: RunResult) -> list[TierCheck]:
    """The MUST checks of the protocol tier that failed (what `verify --tier protocol` counts)."""
    tier = result.tiers.protocol if result.tiers else None
    return [c for c in tier.checks if c.level == "MUST" and c.verdict == "fail"] if tier else []


class _Evidence:
    """The journeys' evidence and the probe's, with the look-ups that several checks share."""

    def __init__(self, journeys: list[JourneyEvidence], tier: ProtocolTier) -> None:
        self.journeys = journeys
        self.tier = tier
        self.probe = tier.probe
        self.all = journeys + ([tier.probe] if tier.probe is not None else [])

    def probe_turn(self, name: str) -> TurnEvidence | None:
        return next((t for t in self.probe.turns if t.name == name), None) if self.probe else None

    def probe_request(self, method: str, **params: Any) -> RequestEvidence | None:
        if self.probe is None:
            return None
        return next((r for r in self.probe.requests if r.method == method
                     and all(r.params.get(k) == v for k, v in params.items())), None)

    def probe_session(self) -> str | None:
        """The session the probe works in: the one its prompts name (not the unknown one)."""
        turn = self.probe_turn("after-idle-cancel")
        return turn.session_id if turn else None

    def probe_capabilities(self) -> dict[str, Any] | None:
        if self.probe is None or not self.probe.processes:
            return None
        caps = self.probe.processes[0].agent_capabilities
        return caps if isinstance(caps, dict) else None

    def stopped(self) -> str:
        why = self.probe.stopped_early if self.probe else None
        return f"the probe stopped before this step ({why})" if why else "the probe did not get to this step"

    def turns(self) -> Iterator[tuple[str, TurnEvidence]]:
        for journey in self.all:
            for turn in journey.turns:
                yield journey.journey, turn

    def processes(self) -> Iterator[tuple[JourneyEvidence, ProcessEvidence]]:
        for journey in self.all:
            for process in journey.processes:
                yield journey, process


def _answer_text(turn: TurnEvidence) -> str:
    if turn.answered_at is None:
        return "got no answer" + (" (the agent ended)" if turn.agent_exited else " within the bound")
    if turn.error is not None:
        return f"answered with error {_code(turn.error)}"
    return f"answered with stopReason {json.dumps(turn.stop_reason)}"


def _code(error: dict[str, Any] | None) -> str:
    code = (error or {}).get("code")
    return str(code) if isinstance(code, int) and not isinstance(code, bool) else json.dumps(code)


def _ended_normally(turn: TurnEvidence) -> bool:
    return turn.answered_at is not None and turn.error is None and turn.stop_reason == "end_turn"


# --- the checks, one per catalog row --------------------------------------------------------


def _session_survives_cancel(ev: _Evidence) -> Outcome:
    if ev.probe is None:
        return "skip", "the probe did not run"
    cancelled = ev.probe_turn("to-cancel")
    if cancelled is None:
        return "skip", ev.stopped()
    if cancelled.cancel_sent_at is None:
        return "skip", f"the turn to cancel ended before session/cancel could be sent ({_answer_text(cancelled)})"
    if cancelled.answered_at is None:
        return "fail", f"the cancelled turn {_answer_text(cancelled)}"
    after = ev.probe_turn("after-cancel")
    if after is None:
        return "fail", "no prompt could follow the cancelled turn: " + ev.stopped()
    if not _ended_normally(after):
        return "fail", f"the prompt after the cancelled turn {_answer_text(after)}: the session did not survive the cancel"
    return "pass", "the prompt after the cancelled turn ended with end_turn"


def _cancel_idle_harmless(ev: _Evidence) -> Outcome:
    sent = ev.tier.probe_sent.get("idle-cancel")
    turn = ev.probe_turn("after-idle-cancel")
    if ev.probe is None or sent is None or turn is None:
        return "skip", ev.stopped() if ev.probe else "the probe did not run"
    answered = _answers_to_notifications(ev.probe, sent, turn.answered_at)
    if answered:
        return "fail", f"the cancel of an idle session got a response: {answered}"
    if not _ended_normally(turn):
        return "fail", f"the prompt after a cancel on the idle session {_answer_text(turn)}"
    return "pass", "no response to the cancel; the next prompt ended with end_turn"


def _answers_to_notifications(probe: JourneyEvidence, start: float, end: float | None) -> str:
    """A response with no id (the answer to a notification) between `start` and `end`."""
    for process in probe.processes:
        for at in process.null_id_responses:
            if at >= start and (end is None or at <= end):
                return f"a response with no id came {at - start:.2f} s after it"
    return ""


def _update_names_session(ev: _Evidence) -> Outcome:
    seen = 0
    wrong: list[str] = []
    for journey, process in ev.processes():
        in_use = _sessions_in_use(journey, process.index)
        for session_id, count in process.update_session_ids.items():
            seen += count
            if session_id not in in_use:
                shown = ", ".join(sorted(in_use)) or "none yet"
                wrong.append(f"{journey.journey} (process {process.index + 1}): {count} update(s) named "
                             f"{session_id!r}, not the session in use ({shown})")
    if wrong:
        return "fail", "; ".join(wrong[:4]) + ("; …" if len(wrong) > 4 else "")
    if not seen:
        return "skip", "no session/update came"
    return "pass", f"{seen} update(s), each naming the session in use"


def _sessions_in_use(journey: JourneyEvidence, process: int) -> set[str]:
    """The sessions that a process of ours opened, loaded or resumed, and that our prompts named."""
    out: set[str] = set()
    for request in journey.requests:
        if request.process != process or request.error is not None:
            continue
        if request.method == "session/new" and isinstance(request.result, dict):
            if isinstance(request.result.get("sessionId"), str):
                out.add(request.result["sessionId"])
        elif request.method in ("session/load", "session/resume") and request.answered_at is not None:
            if isinstance(request.params.get("sessionId"), str) and request.params["sessionId"] != pc.UNKNOWN_SESSION_ID:
                out.add(request.params["sessionId"])
    out |= {t.session_id for t in journey.turns
            if t.process == process and t.session_id and t.session_id != pc.UNKNOWN_SESSION_ID}
    return out


def _unknown_session_error(ev: _Evidence) -> Outcome:
    turn = ev.probe_turn("unknown-session")
    if turn is None:
        return "skip", ev.stopped() if ev.probe else "the probe did not run"
    bad = []
    if turn.answered_at is None or turn.error is None:
        bad.append(f"session/prompt for {pc.UNKNOWN_SESSION_ID!r} {_answer_text(turn)}")
    load = ev.probe_request("session/load", sessionId=pc.UNKNOWN_SESSION_ID)
    if load is not None and load.answered_at is None:
        bad.append(f"session/load of {pc.UNKNOWN_SESSION_ID!r} got no answer")
    elif load is not None and load.error is None:
        bad.append(f"session/load of {pc.UNKNOWN_SESSION_ID!r} answered with a result")
    if bad:
        return "fail", "; ".join(bad)
    codes = f"session/prompt: {_code(turn.error)}" + (f", session/load: {_code(load.error)}" if load else "")
    return "pass", f"each request for an unknown session got an error ({codes})"


def _client_capabilities_respected(ev: _Evidence) -> Outcome:
    turns = 0
    asked: dict[str, int] = {}
    for _, turn in ev.turns():
        turns += 1
        for request in turn.agent_requests:
            if request.method.startswith(("fs/", "terminal/")):
                asked[request.method] = asked.get(request.method, 0) + 1
    if not turns:
        return "skip", "no turn ran"
    if asked:
        listed = ", ".join(f"{m} ({n}x)" for m, n in sorted(asked.items()))
        return "fail", f"the agent called {listed}, though the client advertised no fs or terminal capability"
    return "pass", f"no fs/* or terminal/* request in {turns} turn(s)"


def _unknown_method_not_found(ev: _Evidence) -> Outcome:
    request = ev.probe_request(pc.UNKNOWN_METHOD)
    if request is None:
        return "skip", ev.stopped() if ev.probe else "the probe did not run"
    if request.answered_at is None:
        return "fail", f"{pc.UNKNOWN_METHOD} got no answer" + (" (the agent ended)" if request.agent_exited else "")
    if request.error is None:
        return "fail", f"{pc.UNKNOWN_METHOD} got a result, not an error"
    if request.error.get("code") != -32601:
        return "warn", f"{pc.UNKNOWN_METHOD} got error {_code(request.error)}, not -32601 (Method not found)"
    return "pass", f"{pc.UNKNOWN_METHOD} got error -32601"


def _unknown_notification_ignored(ev: _Evidence) -> Outcome:
    sent = ev.tier.probe_sent.get("unknown-notification")
    after = ev.probe_request(pc.UNKNOWN_METHOD)
    if ev.probe is None or sent is None or after is None:
        return "skip", ev.stopped() if ev.probe else "the probe did not run"
    answered = _answers_to_notifications(ev.probe, sent, after.answered_at)
    if answered:
        return "fail", f"{pc.UNKNOWN_NOTIFICATION} got a response: {answered}"
    if after.answered_at is None:
        return "fail", f"after {pc.UNKNOWN_NOTIFICATION}, the next request got no answer"
    return "pass", "no response, and the next request was answered"


def _one_answer_per_prompt(ev: _Evidence) -> Outcome:
    twice = []
    prompts = 0
    for journey, process in ev.processes():
        prompts += sum(1 for t in journey.turns if t.process == process.index)
        n = process.answered_twice.count("session/prompt")
        if n:
            twice.append(f"{journey.journey} (process {process.index + 1}): {n} extra answer(s) to session/prompt")
    if twice:
        return "fail", "; ".join(twice)
    if not prompts:
        return "skip", "no prompt was sent"
    return "pass", f"{prompts} prompt(s), one answer each"


def _no_update_after_answer(ev: _Evidence) -> Outcome:
    late = []
    answered = 0
    for journey_id, turn in ev.turns():
        if turn.answered_at is None:
            continue
        answered += 1
        kinds = {k: n for k, n in turn.late_updates.items() if k in pc.TURN_UPDATE_KINDS}
        if kinds:
            listed = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            late.append(f"{journey_id}, turn {turn.name}: {listed} after its answer")
    if late:
        return "fail", "; ".join(late[:4]) + ("; …" if len(late) > 4 else "")
    if not answered:
        return "skip", "no turn was answered"
    return "pass", f"no update of a turn after its answer ({answered} turn(s))"


def _advertised(ev: _Evidence, name: str) -> bool | None:
    """True/False: whether the probe's agent advertised sessionCapabilities.<name>; None: unknown."""
    caps = ev.probe_capabilities()
    if caps is None:
        return None
    session = caps.get("sessionCapabilities")
    return isinstance(session, dict) and isinstance(session.get(name), dict)


def _not_probed(ev: _Evidence, name: str) -> Outcome | None:
    advertised = _advertised(ev, name)
    if advertised is None:
        return "skip", ev.stopped() if ev.probe else "the probe did not run"
    if not advertised:
        return "skip", f"sessionCapabilities.{name} is not advertised: not probed"
    return None


def _request_failed(request: RequestEvidence | None, method: str, ev: _Evidence) -> Outcome | None:
    if request is None:
        return "fail", f"{method} could not be sent: " + ev.stopped()
    if request.answered_at is None:
        return "fail", f"{method} got no answer" + (" (the agent ended)" if request.agent_exited else "")
    if request.error is not None:
        return "fail", f"{method} answered with error {_code(request.error)}"
    return None


def _session_list(ev: _Evidence) -> Outcome:
    skipped = _not_probed(ev, "list")
    if skipped:
        return skipped
    request = ev.probe_request("session/list")
    failed = _request_failed(request, "session/list", ev)
    if failed:
        return failed
    sessions = request.result.get("sessions") if isinstance(request.result, dict) else None
    if not isinstance(sessions, list):
        return "fail", "session/list answered with no sessions array (or one too long to keep)"
    ids = [s.get("sessionId") for s in sessions if isinstance(s, dict)]
    in_use = ev.probe_session()
    if in_use not in ids:
        return "fail", f"session/list does not list the session in use ({in_use!r}) among {len(ids)} session(s)"
    return "pass", f"session/list lists the session in use among {len(ids)} session(s)"


def _session_resume(ev: _Evidence) -> Outcome:
    skipped = _not_probed(ev, "resume")
    if skipped:
        return skipped
    request = ev.probe_request("session/resume")
    failed = _request_failed(request, "session/resume", ev)
    if failed:
        return failed
    replayed = {k: n for k, n in request.replayed_updates.items() if k in pc.TURN_UPDATE_KINDS}
    if replayed:
        listed = ", ".join(f"{n} {k}" for k, n in sorted(replayed.items()))
        return "fail", f"session/resume replayed history before its answer ({listed})"
    return "pass", "session/resume answered with no error and replayed nothing"


def _session_close(ev: _Evidence) -> Outcome:
    skipped = _not_probed(ev, "close")
    if skipped:
        return skipped
    request = ev.probe_request("session/close")
    failed = _request_failed(request, "session/close", ev)
    if failed:
        return failed
    after = ev.probe_turn("after-close")
    if after is None:
        return "fail", "no prompt could follow session/close: " + ev.stopped()
    if after.answered_at is None or after.error is None:
        return "fail", f"a prompt to the closed session {_answer_text(after)}: the session did not end"
    return "pass", f"session/close answered; a prompt to the closed session got error {_code(after.error)}"


def _relative_cwd_error(ev: _Evidence) -> Outcome:
    request = ev.probe_request("session/new", cwd=pc.RELATIVE_CWD)
    if request is None:
        return "skip", ev.stopped() if ev.probe else "the probe did not run"
    if request.answered_at is None:
        return "fail", f"session/new with the relative cwd {pc.RELATIVE_CWD!r} got no answer"
    if request.error is None:
        return "fail", f"session/new with the relative cwd {pc.RELATIVE_CWD!r} made a session"
    return "pass", f"session/new with a relative cwd got error {_code(request.error)}"


def _agent_info(ev: _Evidence) -> Outcome:
    answers, name = 0, ""
    for journey, process in ev.processes():
        if process.initialize_raw is None:
            continue
        answers += 1
        try:
            result = json.loads(process.initialize_raw).get("result")
        except (ValueError, AttributeError):
            return "fail", "initialize's answer is not a JSON object with a result"
        info = result.get("agentInfo") if isinstance(result, dict) else None
        if not isinstance(info, dict) or not info.get("name") or not isinstance(info.get("name"), str):
            return "fail", "initialize's answer has no agentInfo with a name"
        if not isinstance(info.get("version"), str):
            return "fail", f"agentInfo names {info['name'][:80]!r} but gives no version string"
        name = f"{info['name'][:80]!r} {info['version'][:40]!r}"
    if not answers:
        return "skip", "no initialize was answered"
    return "pass", f"agentInfo names {name}"


CHECK_FUNCTIONS: dict[str, Callable[[_Evidence], Outcome]] = {
    "session-survives-cancel": _session_survives_cancel,
    "cancel-idle-harmless": _cancel_idle_harmless,
    "update-names-session": _update_names_session,
    "unknown-session-error": _unknown_session_error,
    "client-capabilities-respected": _client_capabilities_respected,
    "unknown-method-not-found": _unknown_method_not_found,
    "unknown-notification-ignored": _unknown_notification_ignored,
    "one-answer-per-prompt": _one_answer_per_prompt,
    "no-update-after-answer": _no_update_after_answer,
    "session-list": _session_list,
    "session-resume": _session_resume,
    "session-close": _session_close,
    "relative-cwd-error": _relative_cwd_error,
    "agent-info": _agent_info,
}
"""One function per catalog row, by its id."""
