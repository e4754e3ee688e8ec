"""The judge: evidence in, verdict and failures out.

Rules of this module: a pure function of `JourneyEvidence` (plus the --strict flag and the docs
URL). It never touches a process, a file or a clock. `run` calls it at the end of each journey and
`verify` calls it on the evidence stored in result.json, so a hand-edited verdict changes nothing.
Each check reports only what its evidence shows: a journey that stopped early is failed by the
cause that stopped it, not by a pile of checks that never ran. The checks on every agent process
and request are here; each journey's own are in journey_checks.py, what they find is collected by
findings.Findings.

It must not know processes, sockets, the model stub's server or any file: only `rules/`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from acp_journeys.rules import catalog
from acp_journeys.rules.evidence import Failure, JourneyEvidence, ProcessEvidence, RequestEvidence, RunResult
from acp_journeys.rules.findings import Findings, bound_text, one_line, short
from acp_journeys.rules.journey_checks import JOURNEY_CHECKS, find_turn
from acp_journeys.rules.model_requests import NO_REQUEST, explains, hints, stub_failures

EXIT_BOUND_S = catalog.RULES.exit_s
"""Rondar: the agent ends by itself in 10 seconds after its input closes (the catalog's RULES)."""
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
        return False, f"initialize answered with an error: {short(message['error'])}"
    result = message.get("result")
    if not isinstance(result, dict) or "protocolVersion" not in result:
        return False, "the answer has no result.protocolVersion"
    version = result["protocolVersion"]
    if isinstance(version, _Float):
        return False, f"protocolVersion is {version}, a number with a fraction; send the integer 1"
    if isinstance(version, str):
        return False, f"protocolVersion is the string {json.dumps(version)}; send the number 1"
    if type(version) is not int:
        return False, f"protocolVersion is {short(version)}; send the number 1"
    if version != 1:
        return False, f"protocolVersion is {version}; this check speaks ACP v1"
    return True, "1"


def judge_journey(evidence: JourneyEvidence, *, strict: bool = False,
                  docs_url: str = catalog.DEFAULT_DOCS_URL, timeout_scale: float = 1.0) -> Judgement:
    """`timeout_scale`: the run's --timeout-scale, named with a bound that ran out (text only:
    the verdict never depends on it)."""
    findings = Findings(evidence.journey, docs_url, strict, timeout_scale)
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
    JOURNEY_CHECKS[evidence.journey](evidence, findings)

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
    findings = Findings(journey_id, docs_url)
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
        turn = find_turn(evidence, name)
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

def _check_process(process: ProcessEvidence, findings: Findings) -> None:
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


def _check_request(request: RequestEvidence, findings: Findings) -> None:
    if request.method == "session/new":
        if request.error is not None:
            findings.add("session-new-error", f"error {short(request.error)}")
        elif request.timed_out:
            findings.add("timeout", findings.no_answer("session/new", request.bound_s))
    elif request.method == "session/load":
        if request.error is not None:
            findings.add("session-load-error", f"error {short(request.error)}")
        elif request.timed_out:
            findings.add("timeout", findings.no_answer("session/load", request.bound_s))
    elif request.method in ("session/set_mode", "session/set_config_option"):
        if request.error is not None:
            findings.add("set-mode-error",
                         f"{request.method} {short(request.params)} answered error {short(request.error)}")
        elif request.timed_out:
            findings.add("timeout", findings.no_answer(request.method, request.bound_s))
