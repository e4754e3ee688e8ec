"""The judge (judge.py): evidence built by hand in, exact verdicts and failure ids out.

Each journey has a builder of its passing evidence; each failure case changes one fact of it, the
way the journey script would record that failure, and names the exact failure ids it must give.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from acp_journeys.rules import catalog, prompts
from acp_journeys.rules.evidence import (
    AgentRequestEvidence,
    JourneyEvidence,
    JourneyResult,
    Leftover,
    McpCallEvidence,
    PermissionEvidence,
    PlanSwitchEvidence,
    ProcessEvidence,
    ProtocolWarning,
    RequestEvidence,
    RunResult,
    ToolCallEvidence,
    TurnEvidence,
)
from acp_journeys.rules.journey_checks import CANCEL_BOUND_S
from acp_journeys.rules.judge import (
    EXIT_BOUND_S,
    Judgement,
    judge_journey,
    judge_result,
    read_protocol_version,
)
from acp_journeys.rules.model_requests import RequestRecord

DOCS = "https://docs.example.test/journeys.md"
REPLY = "REPLY-ABCD1234"
WORD = "WORD-QWER5678"
FILE_WORD = "FILE-ZXCV9012"
INPUT = "INPUT-TYUI3456"
PLAN_ID = "PLAN-GHJK7890"
SAVED_TITLE = prompts.PLAN_TITLE_SAVED_PLAN
PRP_TITLE = prompts.PLAN_TITLE_PLAN_REGULAR_PLAN

# Ids a journey may give besides its own table: --strict protocol findings and our own errors.
ANY_JOURNEY = {"schema-violation", "stdout-not-protocol", "runner-error", "interrupted"}


# --- builders ---------------------------------------------------------------------------------


def init_raw(version: str = "1", caps: dict[str, Any] | None = None) -> str:
    """The raw line of an initialize answer with `version` as its protocolVersion token."""
    caps_text = json.dumps(caps if caps is not None else {})
    return f'{{"jsonrpc":"2.0","id":1,"result":{{"protocolVersion":{version},"agentCapabilities":{caps_text}}}}}'


def proc(index: int = 0, *, caps: dict[str, Any] | None = None, start: float = 0.0, **changes: Any) -> ProcessEvidence:
    """A process that answered initialize with 1, had its input closed at start+50 s and ended 0.5 s later."""
    caps = caps if caps is not None else {}
    fields: dict[str, Any] = dict(
        index=index, argv=["agent", "--acp"], pid=1000 + index, started_at=start,
        initialize_sent_at=start + 0.1, initialize_answered_at=start + 0.2, initialize_raw=init_raw("1", caps),
        agent_capabilities=caps, stdin_closed_at=start + 50.0, exited_at=start + 50.5, exit_code=0,
    )
    fields.update(changes)
    return ProcessEvidence(**fields)


def request(method: str, process: int = 0, **changes: Any) -> RequestEvidence:
    fields: dict[str, Any] = dict(method=method, process=process, sent_at=1.0, answered_at=1.1, result={})
    fields.update(changes)
    return RequestEvidence(**fields)


def turn(name: str, reply: str = "", *, process: int = 0, stop: Any = "end_turn", **changes: Any) -> TurnEvidence:
    """A turn answered with `stop` whose reply came in agent_message_chunk updates (none when reply is '')."""
    fields: dict[str, Any] = dict(
        name=name, process=process, session_id="s-1", prompt_text="(prompt)", sent_at=2.0, answered_at=5.0,
        stop_reason=stop, reply_text=reply, reply_length=len(reply),
        update_counts={"agent_message_chunk": 1} if reply else {},
    )
    fields.update(changes)
    return TurnEvidence(**fields)


def mcp(tool: str, at: float = 3.0, result: Any = None, is_error: bool = False, **arguments: Any) -> McpCallEvidence:
    return McpCallEvidence(at=at, tool=tool, arguments=arguments, result=result, is_error=is_error)


def create_plan(title: str, description: str = f"The file says {INPUT}.", plan_id: str = PLAN_ID,
                **changes: Any) -> McpCallEvidence:
    return mcp("create_plan", result={"id": plan_id}, title=title, description=description, **changes)


def get_plan(plan_id: str = PLAN_ID) -> McpCallEvidence:
    return mcp("get_plan", at=3.5, result={"id": plan_id, "title": SAVED_TITLE, "description": INPUT},
               plan_id=plan_id)


def leftover(pid: int = 4242, command: str = "node /opt/mcp/server.js") -> Leftover:
    return Leftover(pid=pid, command=command)


def warning(kind: str, message: str = "a frame of the agent") -> ProtocolWarning:
    return ProtocolWarning(at=3.0, process=0, kind=kind, message=message)  # type: ignore[arg-type]


def journey(journey_id: str, *, markers: dict[str, str], processes: list[ProcessEvidence] | None = None,
            requests: list[RequestEvidence] | None = None, turns: list[TurnEvidence] | None = None,
            **changes: Any) -> JourneyEvidence:
    return JourneyEvidence(
        journey=journey_id, markers=markers, processes=processes if processes is not None else [proc()],
        requests=requests if requests is not None else [request("session/new", result={"sessionId": "s-1"})],
        turns=turns or [], **changes)


# One passing journey each; keyword arguments change one of its facts.

def turn_to_end(reply: str = REPLY, **turn_changes: Any) -> JourneyEvidence:
    return journey("turn-to-end", markers={"reply": REPLY}, turns=[turn("reply", reply, **turn_changes)])


def same_session(remember: dict[str, Any] | None = None, ask: dict[str, Any] | None = None) -> JourneyEvidence:
    return journey("follow-up-same-session", markers={"word": WORD},
                   turns=[turn("remember", "ACK", **(remember or {})), turn("ask", WORD, **(ask or {}))])


def after_restart(*, caps2: dict[str, Any] | None = None, load: dict[str, Any] | None = None,
                  ask: dict[str, Any] | None = None, with_ask: bool = True) -> JourneyEvidence:
    caps2 = caps2 if caps2 is not None else {"loadSession": True}
    requests = [request("session/new", result={"sessionId": "s-1"})]
    if caps2.get("loadSession") is True:
        requests.append(request("session/load", process=1, sent_at=61.0, answered_at=61.2, **(load or {})))
    turns = [turn("remember", "ACK")]
    if with_ask:
        turns.append(turn("ask", WORD, process=1, sent_at=62.0, answered_at=64.0, **(ask or {})))
    return journey("follow-up-after-restart", markers={"word": WORD}, requests=requests, turns=turns,
                   processes=[proc(0), proc(1, caps=caps2, start=60.0)])


IMAGE_CAPS = {"promptCapabilities": {"image": True}}


def image_and_file(reply: str = f"{FILE_WORD} red", **turn_changes: Any) -> JourneyEvidence:
    return journey("image-and-file", markers={"file": FILE_WORD}, processes=[proc(caps=IMAGE_CAPS)],
                   turns=[turn("image", reply, has_image=True, **turn_changes)])


def stop_turn(**changes: Any) -> JourneyEvidence:
    """The sleep shows as a tool_call at 9.5 s and as a process at 10 s, session/cancel at 10 s, the
    answer `cancelled` at 12 s."""
    fields: dict[str, Any] = dict(
        stop="cancelled", sent_at=2.0, answered_at=12.0, cancel_sent_at=10.0, cancel_trigger="process",
        command_seen_at=9.5,
        tool_calls=[ToolCallEvidence(tool_call_id="t-1", at=9.5, title="sleep 120", kind="execute")],
    )
    fields.update(changes)
    return journey("stop-running-turn", markers={}, turns=[turn("sleep", "", **fields)])


MODE_SWITCH = PlanSwitchEvidence(how="mode", plan_value="plan", initial_value="default",
                                 offered_modes=["default", "plan"])
WORKSPACE = {"plan-input.txt": "sha256:1111", "README.md": "sha256:2222"}


def set_mode(mode_id: str = "plan", **changes: Any) -> RequestEvidence:
    return request("session/set_mode", params={"sessionId": "s-1", "modeId": mode_id}, **changes)


def plan_saved(*, calls: list[McpCallEvidence] | None = None, reply: str = PLAN_ID,
               after: dict[str, str] | None = None, switch: PlanSwitchEvidence = MODE_SWITCH,
               with_turn: bool = True, mode_request: RequestEvidence | None = None, **changes: Any) -> JourneyEvidence:
    calls = calls if calls is not None else [create_plan(SAVED_TITLE), get_plan()]
    turns = [turn("plan", reply, mode="plan", mcp_calls=calls, workspace_before=dict(WORKSPACE),
                  workspace_after=after if after is not None else dict(WORKSPACE))] if with_turn else []
    return journey("plan-turn-saved-plan", markers={"input": INPUT}, plan_switch=switch, turns=turns,
                   requests=[request("session/new", result={"sessionId": "s-1"}), mode_request or set_mode()],
                   **changes)


def plan_regular_plan(*, plan: list[McpCallEvidence] | None = None, again: list[McpCallEvidence] | None = None,
                      regular: dict[str, Any] | None = None, switch: PlanSwitchEvidence = MODE_SWITCH,
                      turns: list[str] = ("plan", "regular", "plan-again"),
                      modes: list[RequestEvidence] | None = None, **changes: Any) -> JourneyEvidence:
    """Step 9 needs only create_plan with the title in each Plan turn: no INPUT word, no get_plan, no id."""
    target = "/workspace/regular-TOUCH-1.txt"
    made = {
        "plan": turn("plan", "Saved.", mode="plan", mcp_calls=plan if plan is not None else
                     [create_plan(PRP_TITLE, description="a plan")]),
        "regular": turn("regular", "Done.", mode="regular", target_file=target,
                        **({"target_file_exists": True} | (regular or {}))),
        "plan-again": turn("plan-again", "Saved again.", mode="plan", mcp_calls=again if again is not None else
                           [create_plan(PRP_TITLE, description="another plan", plan_id="PLAN-SECOND01")]),
    }
    if modes is None:
        modes = [set_mode("plan"), set_mode("default"), set_mode("plan")]
    return journey("plan-regular-plan", markers={"input": INPUT, "regular": "TOUCH-1"}, plan_switch=switch,
                   turns=[made[name] for name in turns],
                   requests=[request("session/new", result={"sessionId": "s-1"}), *modes], **changes)


def with_process(e: JourneyEvidence, index: int = 0, **changes: Any) -> JourneyEvidence:
    e.processes[index] = e.processes[index].model_copy(update=changes)
    return e


def judged(e: JourneyEvidence, *, strict: bool = False) -> Judgement:
    """Judge, and check what holds for every judgement: known ids, each linked to its anchor."""
    judgement = judge_journey(e, strict=strict, docs_url=DOCS)
    allowed = set(catalog.JOURNEY_FAILURES[e.journey]) | ANY_JOURNEY
    for failure in judgement.failures:
        assert failure.id in allowed, f"{failure.id} is not in catalog.JOURNEY_FAILURES[{e.journey!r}]"
        assert failure.doc == catalog.doc_link(catalog.anchor_for(failure.id, e.journey), DOCS)
        kind = catalog.FAILURES[failure.id]
        assert failure.message in [kind.message] + [m for _, m in kind.causes]
    assert len(set(judgement.failure_ids)) == len(judgement.failure_ids)
    assert (judgement.verdict == "pass") == (not judgement.failures)
    return judgement


def fails_with(e: JourneyEvidence, *ids: str, strict: bool = False) -> Judgement:
    judgement = judged(e, strict=strict)
    assert judgement.verdict == "fail"
    assert sorted(judgement.failure_ids) == sorted(ids)
    return judgement


def detail(judgement: Judgement, failure_id: str) -> str:
    return next(f.detail for f in judgement.failures if f.id == failure_id)


# --- every journey's pass case --------------------------------------------------------------------

PASSING = {
    "turn-to-end": turn_to_end,
    "follow-up-same-session": same_session,
    "follow-up-after-restart": after_restart,
    "image-and-file": image_and_file,
    "stop-running-turn": stop_turn,
    "plan-turn-saved-plan": plan_saved,
    "plan-regular-plan": plan_regular_plan,
}


def test_there_is_a_pass_case_for_every_journey() -> None:
    assert set(PASSING) == set(catalog.JOURNEY_IDS)


@pytest.mark.parametrize("journey_id", list(PASSING))
def test_the_pass_case_of_each_journey_passes(journey_id: str) -> None:
    judgement = judged(PASSING[journey_id]())
    assert judgement.verdict == "pass" and judgement.failures == [] and judgement.warnings == []


# --- the checks on every process (#step-2): protocolVersion -------------------------------------


@pytest.mark.parametrize("token,what", [
    ('"1"', 'the string "1"'),
    ("1.0", "1.0, a number with a fraction"),
    ("1e0", "1e0, a number with a fraction"),
    ("1E0", "1E0, a number with a fraction"),
    ("2", "protocolVersion is 2; this check speaks ACP v1"),
    ("0", "protocolVersion is 0"),
    ("true", "protocolVersion is true"),
    ("null", "protocolVersion is null"),
    ("[1]", "protocolVersion is [1]"),
])
def test_a_protocol_version_other_than_the_integer_1_fails(token: str, what: str) -> None:
    judgement = fails_with(with_process(turn_to_end(), initialize_raw=init_raw(token)), "initialize-protocol-version")
    assert what in detail(judgement, "initialize-protocol-version")


def test_protocol_version_1_as_an_integer_passes_with_any_spacing() -> None:
    raw = '{ "jsonrpc" : "2.0" , "id" : 1 , "result" : { "protocolVersion" :  1 } }'
    assert judged(with_process(turn_to_end(), initialize_raw=raw)).verdict == "pass"


def initialize_failed(**process: Any) -> JourneyEvidence:
    """The journey stops after initialize: no session, no turn."""
    e = journey("turn-to-end", markers={"reply": REPLY}, requests=[], turns=[],
                stopped_early="initialize got no usable answer")
    return with_process(e, **process)


def test_an_initialize_answer_without_protocol_version_fails() -> None:
    raw = '{"jsonrpc":"2.0","id":1,"result":{"agentCapabilities":{}}}'
    judgement = fails_with(with_process(turn_to_end(), initialize_raw=raw), "initialize-protocol-version")
    assert "no result.protocolVersion" in detail(judgement, "initialize-protocol-version")


def test_an_error_answer_to_initialize_fails() -> None:
    raw = '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}'
    judgement = fails_with(initialize_failed(initialize_raw=raw, agent_capabilities=None),
                           "initialize-protocol-version")
    assert "initialize answered with an error" in detail(judgement, "initialize-protocol-version")


def test_no_answer_to_initialize_in_time_fails_the_protocol_version_check() -> None:
    judgement = fails_with(initialize_failed(initialize_raw=None, initialize_answered_at=None,
                                             initialize_timed_out=True, agent_capabilities=None),
                           "initialize-protocol-version")
    assert "no answer to initialize within the bound" in detail(judgement, "initialize-protocol-version")
    # The message fits the cause: no protocolVersion advice first for an agent that said nothing.
    message = next(f.message for f in judgement.failures if f.id == "initialize-protocol-version")
    assert message.startswith("initialize got no answer within the bound: answer initialize first")


def test_a_hit_bound_is_named_with_the_timeout_scale_that_made_it() -> None:
    e = initialize_failed(initialize_raw=None, initialize_answered_at=None, initialize_timed_out=True,
                          agent_capabilities=None, initialize_bound_s=12.0)
    judgement = judge_journey(e, docs_url=DOCS, timeout_scale=0.2)
    assert detail(judgement, "initialize-protocol-version") == (
        "process 1: no answer to initialize within 12 s (60 s × --timeout-scale 0.2); raise --timeout-scale "
        "if your model is slow")
    turn = TurnEvidence(name="reply", process=0, prompt_text="p", sent_at=1.0, timed_out=True, bound_s=36.0)
    timed_out = judge_journey(journey("turn-to-end", markers={"reply": REPLY}, turns=[turn],
                                      stopped_early="turn reply got no answer within the bound"),
                              docs_url=DOCS, timeout_scale=0.2)
    assert "turn reply: session/prompt got no answer within 36 s (180 s × --timeout-scale 0.2); raise " \
           "--timeout-scale if your model is slow" in detail(timed_out, "timeout")
    # The scale is text only: the verdict and the ids are the same at any scale.
    assert judge_journey(e, docs_url=DOCS, timeout_scale=3.0).failure_ids == judgement.failure_ids


def test_a_process_that_ends_before_answering_initialize_fails_twice() -> None:
    e = initialize_failed(initialize_raw=None, initialize_answered_at=None, agent_capabilities=None,
                          stdin_closed_at=None, exited_before_stdin_close=True, exited_at=0.3, exit_code=127)
    judgement = fails_with(e, "initialize-protocol-version", "agent-exited")
    assert "exited with code 127 before it answered initialize" in detail(judgement, "initialize-protocol-version")
    # A crash says so first; the protocolVersion advice is for an answer with the wrong version.
    message = next(f.message for f in judgement.failures if f.id == "initialize-protocol-version")
    assert message.startswith("the agent exited before it answered initialize") and "protocolVersion" not in message
    wrong = fails_with(with_process(turn_to_end(), initialize_raw='{"jsonrpc":"2.0","id":1,"result":'
                                                                  '{"protocolVersion":"1"}}'),
                       "initialize-protocol-version")
    assert wrong.failures[0].message == catalog.FAILURES["initialize-protocol-version"].message


def test_a_process_that_could_not_start_is_agent_exited_only() -> None:
    e = journey("turn-to-end", markers={"reply": REPLY}, requests=[], stopped_early="process 1 could not start",
                processes=[ProcessEvidence(index=0, argv=["nope"], started_at=0.0, start_error="no such file")])
    assert "no such file" in detail(fails_with(e, "agent-exited"), "agent-exited")


@pytest.mark.parametrize("token", ["1", '"1"'])
def test_read_protocol_version_reads_the_raw_token(token: str) -> None:
    assert read_protocol_version(init_raw(token))[0] is (token == "1")


def test_read_protocol_version_of_text_that_is_not_json() -> None:
    assert read_protocol_version("garbage") == (False, "the answer is not JSON (Expecting value: line 1 column 1 "
                                                       "(char 0))")


# --- the checks on every process (#step-2): the exit after stdin closes, leftovers -----------------


@pytest.mark.parametrize("after,verdict", [(0.0, "pass"), (9.9, "pass"), (EXIT_BOUND_S, "pass"), (10.1, "fail")])
def test_the_agent_must_end_within_10_seconds_of_stdin_closing(after: float, verdict: str) -> None:
    judgement = judged(with_process(turn_to_end(), stdin_closed_at=20.0, exited_at=20.0 + after))
    assert judgement.verdict == verdict
    assert judgement.failure_ids == ([] if verdict == "pass" else ["no-exit-after-stdin-close"])


def test_a_slow_exit_says_how_long_it_took_and_that_a_turn_was_running() -> None:
    e = with_process(turn_to_end(), stdin_closed_at=20.0, exited_at=30.1, turn_running_at_close=True)
    text = detail(fails_with(e, "no-exit-after-stdin-close"), "no-exit-after-stdin-close")
    assert "ended 10.1s after its input closed" in text and "a turn was running" in text


def test_an_agent_killed_after_stdin_closed_fails() -> None:
    e = with_process(turn_to_end(), stdin_closed_at=20.0, killed_after=10.0, exited_at=30.05, exit_code=-9)
    assert "killed" in detail(fails_with(e, "no-exit-after-stdin-close"), "no-exit-after-stdin-close")


def test_a_left_process_fails_and_is_named() -> None:
    e = with_process(turn_to_end(), leftovers=[leftover(4242, "node /opt/mcp/server.js")])
    text = detail(fails_with(e, "process-left"), "process-left")
    assert "pid 4242" in text and "node /opt/mcp/server.js" in text


def test_a_left_process_is_said_alive_when_the_window_closed() -> None:
    """Issue 23: what is alive when Rondar's window closes is left; the detail says when that was."""
    e = with_process(turn_to_end(), leftovers=[leftover()], leftover_window_closes_at=31.5, last_process_ended_at=None)
    assert "(alive at 31.5s, when the look for leftovers ended)" in detail(fails_with(e, "process-left"), "process-left")
    # A process that ended within the window is part of the agent's ending: nothing is left.
    ended = with_process(turn_to_end(), leftover_window_closes_at=31.5, last_process_ended_at=25.0)
    assert judged(ended).verdict == "pass"


def test_many_left_processes_name_five_and_count_the_rest() -> None:
    e = with_process(turn_to_end(), leftovers=[leftover(pid, f"sleep {pid}") for pid in range(1, 9)])
    text = detail(fails_with(e, "process-left"), "process-left")
    assert "pid 5 " in text and "pid 6 " not in text and "and 3 more" in text


def test_a_process_that_exited_before_stdin_closed_is_agent_exited() -> None:
    e = turn_to_end(agent_exited=True, answered_at=None, stop=None, reply="")
    e.stopped_early = "the agent ended during turn reply"
    with_process(e, stdin_closed_at=None, exited_before_stdin_close=True, exited_at=3.0, exit_code=1)
    text = detail(fails_with(e, "agent-exited"), "agent-exited")
    assert "exited with code 1 at 3.0s" in text


def test_process_failures_of_the_second_process_name_it() -> None:
    e = with_process(after_restart(), 1, leftovers=[leftover()])
    assert detail(fails_with(e, "process-left"), "process-left").startswith("process 2 ")


# --- session/new, and how turns end -----------------------------------------------------------------


def test_a_session_new_error_fails() -> None:
    e = journey("turn-to-end", markers={"reply": REPLY}, stopped_early="session/new gave no session",
                requests=[request("session/new", result=None, error={"code": -32602, "message": "bad cwd"})])
    fails_with(e, "session-new-error")


def test_session_new_with_no_answer_in_time_is_a_timeout() -> None:
    e = journey("turn-to-end", markers={"reply": REPLY}, stopped_early="session/new got no answer within 60s",
                requests=[request("session/new", answered_at=None, result=None, timed_out=True)])
    fails_with(e, "timeout")


def test_a_turn_with_no_answer_in_time_is_a_timeout() -> None:
    e = turn_to_end(timed_out=True, answered_at=None, stop=None)
    e.stopped_early = "turn reply got no answer within the bound"
    fails_with(e, "timeout")


def test_a_journey_stopped_early_with_no_other_finding_is_a_timeout() -> None:
    e = turn_to_end()
    e.stopped_early = "something ran out"
    assert detail(fails_with(e, "timeout"), "timeout") == "something ran out"


def test_reply_in_chunks_without_the_marker_is_reply_missing_marker() -> None:
    judgement = fails_with(turn_to_end(reply="Sure, here you go."), "reply-missing-marker")
    assert '"Sure, here you go."' in detail(judgement, "reply-missing-marker")


def test_reply_with_no_agent_message_chunk_is_reply_not_in_chunks() -> None:
    fails_with(turn_to_end(reply="", update_counts={"agent_thought_chunk": 2}), "reply-not-in-chunks")


def test_reply_only_in_thought_chunks_says_so() -> None:
    e = turn_to_end(reply="", thought_text=f"I will say {REPLY}", update_counts={"agent_thought_chunk": 1})
    assert "agent_thought_chunk" in detail(fails_with(e, "reply-not-in-chunks"), "reply-not-in-chunks")


def test_the_marker_inside_a_longer_reply_passes() -> None:
    assert judged(turn_to_end(reply=f"Here: {REPLY}.")).verdict == "pass"


@pytest.mark.parametrize("stop", ["max_tokens", "cancelled", "refusal", "END_TURN", None, 1])
def test_a_stop_reason_other_than_end_turn_fails(stop: Any) -> None:
    judgement = fails_with(turn_to_end(stop=stop), "stop-reason")
    assert f"stopReason {json.dumps(stop)}, expected end_turn" in detail(judgement, "stop-reason")


def test_a_wrong_stop_reason_and_a_missing_marker_are_both_reported() -> None:
    fails_with(turn_to_end(stop="max_tokens", reply="cut off"), "stop-reason", "reply-missing-marker")


def test_an_error_answer_to_session_prompt_is_prompt_error() -> None:
    fails_with(turn_to_end(stop=None, error={"code": -32603, "message": "model down"}, reply=""), "prompt-error")


# --- a follow-up in the same session (#step-4) ----------------------------------------------------


def test_same_session_ask_without_the_word_fails() -> None:
    fails_with(same_session(ask={"reply_text": "I don't remember."}), "reply-missing-word")


def test_same_session_first_turn_must_end_with_end_turn_too() -> None:
    fails_with(same_session(remember={"stop_reason": "max_tokens"}), "stop-reason")


# --- a follow-up after a restart (#step-5) --------------------------------------------------------


def test_after_restart_session_load_error_fails() -> None:
    e = after_restart(load={"result": None, "error": {"code": -32002, "message": "unknown session"}},
                      with_ask=False)
    e.stopped_early = "session/load failed"
    fails_with(e, "session-load-error")


@pytest.mark.parametrize("caps", [{"loadSession": False}, {}, {"loadSession": "true"}],
                         ids=["false", "missing", "string"])
def test_after_restart_without_load_session_is_no_load_session(caps: dict[str, Any]) -> None:
    e = after_restart(caps2=caps, with_ask=False)
    e.stopped_early = "the agent does not advertise loadSession"
    fails_with(e, "no-load-session")


def test_after_restart_reply_without_the_word_fails() -> None:
    fails_with(after_restart(ask={"reply_text": "Which word?"}), "reply-missing-word")


def test_after_restart_the_first_process_must_exit_in_time_too() -> None:
    fails_with(with_process(after_restart(), 0, exited_at=61.0), "no-exit-after-stdin-close")


# --- an image and a file (#step-6) ------------------------------------------------------------------


@pytest.mark.parametrize("caps", [{"promptCapabilities": {"image": False}}, {"promptCapabilities": {}}, {}],
                         ids=["false", "missing", "no-prompt-capabilities"])
def test_no_image_capability_fails(caps: dict[str, Any]) -> None:
    e = journey("image-and-file", markers={"file": FILE_WORD}, processes=[proc(caps=caps)],
                stopped_early="the agent does not accept images")
    fails_with(e, "no-image-capability")


@pytest.mark.parametrize("colour", ["red", "Red", "RED", "rEd"])
def test_red_in_any_case_passes(colour: str) -> None:
    assert judged(image_and_file(f"{FILE_WORD}, {colour}")).verdict == "pass"


def test_a_reply_without_red_fails() -> None:
    fails_with(image_and_file(f"{FILE_WORD} blue"), "reply-missing-red")


def test_a_reply_without_the_file_word_fails() -> None:
    judgement = fails_with(image_and_file("WORD red"), "reply-missing-word")
    assert FILE_WORD in detail(judgement, "reply-missing-word")


def test_a_reply_with_neither_gives_both_failures() -> None:
    fails_with(image_and_file("no idea"), "reply-missing-word", "reply-missing-red")


def test_an_image_reply_in_no_chunk_is_reply_not_in_chunks_only() -> None:
    fails_with(image_and_file(""), "reply-not-in-chunks")


def test_red_inside_the_file_word_does_not_count_as_the_colour() -> None:
    e = image_and_file("FILE-ABREDXYZ")  # the word only, no colour
    e.markers["file"] = "FILE-ABREDXYZ"
    fails_with(e, "reply-missing-red")


# --- stop a running turn (#step-7) ------------------------------------------------------------------


@pytest.mark.parametrize("took,verdict", [(0.1, "pass"), (29.9, "pass"), (CANCEL_BOUND_S, "pass"), (30.1, "fail")])
def test_the_stop_must_come_within_30_seconds_of_session_cancel(took: float, verdict: str) -> None:
    judgement = judged(stop_turn(answered_at=10.0 + took))
    assert judgement.verdict == verdict
    assert judgement.failure_ids == ([] if verdict == "pass" else ["cancel-too-slow"])


def test_no_answer_at_all_after_session_cancel_is_cancel_too_slow() -> None:
    e = stop_turn(answered_at=None, stop=None, timed_out=True)
    e.stopped_early = "turn sleep got no answer within the bound"
    assert "no answer" in detail(fails_with(e, "cancel-too-slow"), "cancel-too-slow")


def test_cancel_at_the_bound_is_sleep_never_started() -> None:
    # the agent did something else (a read), never the sleep: cancelled at the turn's bound
    e = stop_turn(cancel_trigger="bound", cancel_sent_at=180.0, answered_at=181.0, command_seen_at=None,
                  tool_calls=[ToolCallEvidence(tool_call_id="t-1", at=9.5, title="Read notes", kind="read")])
    fails_with(e, "sleep-never-started")


def test_a_turn_that_ended_before_the_command_ran_is_sleep_never_started() -> None:
    e = stop_turn(cancel_sent_at=None, cancel_trigger=None, command_seen_at=None, tool_calls=[],
                  stop="end_turn", answered_at=4.0)
    assert '"end_turn"' in detail(fails_with(e, "sleep-never-started"), "sleep-never-started")


def test_a_sleep_seen_only_as_a_process_is_no_tool_call_before_cancel() -> None:
    fails_with(stop_turn(cancel_trigger="process", tool_calls=[]), "no-tool-call-before-cancel")


def test_a_tool_call_only_after_the_answer_does_not_count() -> None:
    late = [ToolCallEvidence(tool_call_id="t-1", at=12.5, title="sleep 120", kind="execute")]
    fails_with(stop_turn(cancel_trigger="process", tool_calls=late), "no-tool-call-before-cancel")


def test_a_cancel_on_the_in_progress_fallback_passes_with_a_warning() -> None:
    judgement = judged(stop_turn(cancel_trigger="tool_call"))
    assert judgement.verdict == "pass"
    assert any("no `sleep 120` process was seen" in w for w in judgement.warnings)
    assert not any("process was seen" in w for w in judged(stop_turn()).warnings)


@pytest.mark.parametrize("exact, said", [(True, "within 30s among the agent's processes (tracking sees every "
                                                "process of the agent"),
                                         (False, "within 3s among the agent's processes (this tracking cannot see "
                                                 "every process")])
def test_the_warning_of_a_cancel_on_the_report_says_which_wait_applied(exact: bool, said: str) -> None:
    """Issue 23: where tracking sees every process, a report waits 30 s for its sleep; else 3 s."""
    judgement = judged(stop_turn(cancel_trigger="tool_call", sees_every_process=exact,
                                 process_wait_s=30.0 if exact else 3.0))
    assert judgement.verdict == "pass"
    [warning] = [w for w in judgement.warnings if "no `sleep 120` process was seen" in w]
    assert said in warning, warning


@pytest.mark.parametrize("stop", ["end_turn", "cancelled", "refusal", None])
def test_a_turn_that_ends_before_the_command_runs_is_sleep_never_started_whatever_its_stop(stop: Any) -> None:
    refused = [ToolCallEvidence(tool_call_id="t-1", at=3.0, title="sleep 120", kind="execute", status="failed")]
    e = stop_turn(cancel_sent_at=None, cancel_trigger=None, command_seen_at=None, tool_calls=refused,
                  stop=stop, answered_at=4.0)
    assert judged(e).failure_ids == ["sleep-never-started"]


def test_a_permission_request_instead_of_a_tool_call_passes() -> None:
    permission = PermissionEvidence(at=9.5, request_id=0, tool_call={"toolCallId": "t-1", "title": "sleep 120"},
                                    options=[], decision="allow", reason="allowed",
                                    answer={"outcome": {"outcome": "selected", "optionId": "allow"}})
    assert judged(stop_turn(cancel_trigger="permission", tool_calls=[], permissions=[permission])).verdict == "pass"


@pytest.mark.parametrize("stop", ["end_turn", "max_tokens", None])
def test_a_stop_reason_other_than_cancelled_after_cancel_fails(stop: Any) -> None:
    judgement = fails_with(stop_turn(stop=stop), "stop-reason")
    assert "expected cancelled" in detail(judgement, "stop-reason")


def test_an_error_answer_after_cancel_is_prompt_error() -> None:
    fails_with(stop_turn(stop=None, error={"code": -32603, "message": "aborted"}), "prompt-error")


def test_a_sleep_left_after_the_stop_fails() -> None:
    e = stop_turn(sleep_left=[leftover(777, "sleep 120")])
    assert "pid 777 `sleep 120`" in detail(fails_with(e, "sleep-left"), "sleep-left")


def test_an_agent_that_dies_during_the_sleep_turn_is_agent_exited_only() -> None:
    e = stop_turn(agent_exited=True, answered_at=None, stop=None)
    e.stopped_early = "the agent ended during turn sleep"
    with_process(e, stdin_closed_at=None, exited_before_stdin_close=True, exited_at=11.0, exit_code=137)
    fails_with(e, "agent-exited")


# --- a Plan turn to a saved plan (#step-8) ----------------------------------------------------------


def test_plan_mode_found_as_a_config_option_passes() -> None:
    switch = PlanSwitchEvidence(how="config-option", plan_value="plan", config_id="mode", initial_value="ask")
    mode_request = request("session/set_config_option", params={"sessionId": "s-1", "configId": "mode",
                                                                "value": "plan"})
    assert judged(plan_saved(switch=switch, mode_request=mode_request)).verdict == "pass"


def test_no_plan_mode_fails_and_lists_what_was_offered() -> None:
    switch = PlanSwitchEvidence(offered_modes=["default", "code"], offered_config_values=["fast"])
    e = plan_saved(switch=switch, with_turn=False, stopped_early="no Plan mode")
    e.requests = e.requests[:1]
    judgement = fails_with(e, "no-plan-mode")
    assert detail(judgement, "no-plan-mode") == "session/new offered: default, code, fast"


def test_a_set_mode_error_fails() -> None:
    e = plan_saved(with_turn=False, mode_request=set_mode(result=None, error={"code": -32602, "message": "no"}))
    judgement = fails_with(e, "set-mode-error")
    assert "session/set_mode" in detail(judgement, "set-mode-error")


def test_a_set_mode_with_no_answer_in_time_is_a_timeout() -> None:
    e = plan_saved(with_turn=False, mode_request=set_mode(answered_at=None, result=None, timed_out=True),
                   stopped_early="session/set_mode got no answer within 60s")
    fails_with(e, "timeout")


@pytest.mark.parametrize("call", [
    create_plan("My plan"),
    create_plan(SAVED_TITLE.lower()),
    create_plan(SAVED_TITLE, description="a plan without the cat output"),
    create_plan(SAVED_TITLE, is_error=True),
], ids=["other-title", "title-in-another-case", "no-input-word", "tool-error"])
def test_create_plan_without_the_title_and_the_cat_output_is_create_plan_not_called(call: McpCallEvidence) -> None:
    judgement = fails_with(plan_saved(calls=[call, get_plan()]), "create-plan-not-called")
    assert json.dumps(SAVED_TITLE) in detail(judgement, "create-plan-not-called")


def test_no_call_of_the_rondar_server_is_create_plan_not_called() -> None:
    judgement = fails_with(plan_saved(calls=[]), "create-plan-not-called")
    assert "no call of the rondar server" in detail(judgement, "create-plan-not-called")


def test_get_plan_with_another_id_fails() -> None:
    fails_with(plan_saved(calls=[create_plan(SAVED_TITLE), get_plan("PLAN-OTHER000")]), "get-plan-not-called")


def test_no_get_plan_fails() -> None:
    fails_with(plan_saved(calls=[create_plan(SAVED_TITLE)]), "get-plan-not-called")


def test_a_reply_without_the_plan_id_fails() -> None:
    judgement = fails_with(plan_saved(reply="I saved the plan."), "reply-missing-plan-id")
    assert PLAN_ID in detail(judgement, "reply-missing-plan-id")


@pytest.mark.parametrize("after,change", [
    ({**WORKSPACE, "notes.md": "sha256:3333"}, "new notes.md"),
    ({"plan-input.txt": WORKSPACE["plan-input.txt"]}, "removed README.md"),
    ({**WORKSPACE, "README.md": "sha256:9999"}, "changed README.md"),
], ids=["new", "removed", "changed"])
def test_a_plan_turn_that_changes_the_workspace_fails(after: dict[str, str], change: str) -> None:
    judgement = fails_with(plan_saved(after=after), "plan-changed-workspace")
    assert detail(judgement, "plan-changed-workspace") == change


def test_two_create_plan_calls_and_get_plan_of_the_first_pass() -> None:
    # a model that retries: the same plan saved twice, the first one read back and replied
    calls = [create_plan(SAVED_TITLE, plan_id="PLAN-FIRST001"), create_plan(SAVED_TITLE, plan_id="PLAN-SECOND02"),
             get_plan("PLAN-FIRST001")]
    assert judged(plan_saved(calls=calls, reply="PLAN-FIRST001")).verdict == "pass"
    # a reply with the second plan's id also names a plan of a good create_plan
    assert judged(plan_saved(calls=calls[:2] + [get_plan("PLAN-SECOND02")], reply="PLAN-SECOND02")).verdict == "pass"
    judgement = fails_with(plan_saved(calls=calls, reply="Done."), "reply-missing-plan-id")
    assert "PLAN-FIRST001" in detail(judgement, "reply-missing-plan-id")
    fails_with(plan_saved(calls=calls[:2] + [get_plan("PLAN-OTHER003")], reply="PLAN-FIRST001"),
               "get-plan-not-called")


def test_a_reply_larger_than_a_mebibyte_is_judged_whole() -> None:
    reply = "x" * (4 << 20) + " " + REPLY
    assert judged(turn_to_end(reply)).verdict == "pass"


def test_a_plan_turn_ending_with_another_stop_reason_is_a_strict_warning() -> None:
    # #step-8 names no stop reason: a warning, and a failure only with --strict
    e = plan_saved()
    e.turns[0].stop_reason = "max_tokens"
    judgement = judged(e)
    assert judgement.verdict == "pass"
    assert any(w.startswith("stop-reason (fails only with --strict)") and "max_tokens" in w
               for w in judgement.warnings)
    fails_with(e, "stop-reason", strict=True)


# --- Plan, then regular, then Plan again (#step-9) ----------------------------------------------


def test_step_9_needs_only_create_plan_with_the_title_in_both_plan_turns() -> None:
    e = plan_regular_plan()
    assert all(c.tool == "create_plan" and INPUT not in c.arguments["description"]
               for t in e.turns for c in t.mcp_calls)
    assert judged(e).verdict == "pass"


@pytest.mark.parametrize("which", ["plan", "again"])
def test_step_9_a_plan_turn_without_the_title_fails(which: str) -> None:
    wrong = [create_plan(SAVED_TITLE)]  # the title of the other Plan journey
    e = plan_regular_plan(**{which: wrong})
    judgement = fails_with(e, "create-plan-not-called")
    assert detail(judgement, "create-plan-not-called").startswith(
        "turn plan-again:" if which == "again" else "turn plan:")


def test_step_9_plan_turns_without_any_call_report_create_plan_not_called_once_for_both() -> None:
    judgement = fails_with(plan_regular_plan(plan=[], again=[]), "create-plan-not-called")
    text = detail(judgement, "create-plan-not-called")
    assert "turn plan:" in text and "turn plan-again:" in text


def test_step_9_regular_turn_that_makes_no_file_fails() -> None:
    judgement = fails_with(plan_regular_plan(regular={"target_file_exists": False}), "regular-file-missing")
    assert "/workspace/regular-TOUCH-1.txt" in detail(judgement, "regular-file-missing")


def test_step_9_regular_turn_with_another_stop_reason_is_a_strict_warning() -> None:
    e = plan_regular_plan(regular={"stop_reason": "refusal"})
    assert judged(e).verdict == "pass" and any("refusal" in w for w in judged(e).warnings)
    fails_with(e, "stop-reason", strict=True)


@pytest.mark.parametrize("make", [after_restart, image_and_file, plan_regular_plan])
def test_where_the_doc_names_no_stop_reason_another_one_only_warns(make) -> None:
    e = make()
    for t in e.turns:
        t.stop_reason = "max_tokens"
    judgement = judged(e)
    assert judgement.verdict == "pass", judgement.failures
    assert any("stop-reason" in w for w in judgement.warnings)
    fails_with(e, "stop-reason", strict=True)


@pytest.mark.parametrize("make", [turn_to_end, same_session])
def test_where_the_doc_names_end_turn_another_stop_reason_fails(make) -> None:
    e = make()
    for t in e.turns:
        t.stop_reason = "max_tokens"
    fails_with(e, "stop-reason")


def test_step_9_set_mode_error_on_the_way_back_to_regular_fails() -> None:
    modes = [set_mode("plan"), set_mode("default", result=None, error={"code": -32602, "message": "no"})]
    fails_with(plan_regular_plan(turns=["plan"], modes=modes), "set-mode-error")


def test_step_9_no_plan_mode_fails() -> None:
    e = plan_regular_plan(switch=PlanSwitchEvidence(offered_modes=["default"]), turns=[], modes=[],
                          stopped_early="no Plan mode")
    fails_with(e, "no-plan-mode")


# --- --strict: protocol warnings ------------------------------------------------------------------


@pytest.mark.parametrize("kind,failure_id", [
    ("schema", "schema-violation"),
    ("not-json", "stdout-not-protocol"),
    ("not-jsonrpc", "stdout-not-protocol"),
    ("too-long", "stdout-not-protocol"),
])
def test_strict_turns_protocol_warnings_into_failures(kind: str, failure_id: str) -> None:
    e = turn_to_end()
    e.protocol_warnings = [warning(kind, "initialize InitializeResponse at protocolVersion: bad")]
    relaxed = judged(e)
    assert relaxed.verdict == "pass" and len(relaxed.warnings) == 1 and kind in relaxed.warnings[0]
    judgement = fails_with(e, failure_id, strict=True)
    assert detail(judgement, failure_id) == "initialize InitializeResponse at protocolVersion: bad"


@pytest.mark.parametrize("kind", ["stderr", "unknown-response"])
def test_strict_leaves_other_warnings_as_warnings(kind: str) -> None:
    e = turn_to_end()
    e.protocol_warnings = [warning(kind)]
    judgement = judged(e, strict=True)
    assert judgement.verdict == "pass" and len(judgement.warnings) == 1


def test_late_updates_and_refused_agent_requests_are_warnings_only() -> None:
    e = turn_to_end(late_updates={"agent_message_chunk": 2},
                    agent_requests=[AgentRequestEvidence(at=3.0, method="fs/read_text_file", error_code=-32601)])
    judgement = judged(e, strict=True)
    assert judgement.verdict == "pass"
    assert any("agent_message_chunk x2" in w for w in judgement.warnings)
    assert any("fs/read_text_file" in w for w in judgement.warnings)


# --- our own errors --------------------------------------------------------------------------------


def test_a_runner_error_gives_verdict_error_even_when_the_evidence_fails() -> None:
    e = turn_to_end(reply="wrong")
    e.runner_error = "KeyError: 'x'"
    judgement = judged(e)
    assert judgement.verdict == "error" and judgement.failure_ids == ["runner-error"]
    assert judgement.failures[0].detail == "KeyError: 'x'"


def test_an_interrupted_journey_gives_verdict_error() -> None:
    e = turn_to_end(timed_out=True, answered_at=None, stop=None)
    e.interrupted = True
    e.stopped_early = "the run was stopped"
    judgement = judged(e)
    assert judgement.verdict == "error" and judgement.failure_ids == ["interrupted"]


# --- doc links --------------------------------------------------------------------------------------


@pytest.mark.parametrize("e,failure_id,anchor", [
    (turn_to_end(stop="max_tokens"), "stop-reason", "step-3"),
    (stop_turn(stop="end_turn"), "stop-reason", "step-7"),
    (with_process(turn_to_end(), initialize_raw=init_raw('"1"')), "initialize-protocol-version", "step-2"),
    (with_process(stop_turn(), leftovers=[leftover()]), "process-left", "step-2"),
    (plan_regular_plan(regular={"target_file_exists": False}), "regular-file-missing", "step-9"),
    (plan_regular_plan(plan=[]), "create-plan-not-called", "step-9"),
    (plan_saved(calls=[]), "create-plan-not-called", "step-8"),
    (image_and_file("x"), "reply-missing-word", "step-6"),
    (same_session(ask={"reply_text": "x"}), "reply-missing-word", "step-4"),
], ids=lambda v: v.journey if isinstance(v, JourneyEvidence) else v)
def test_failure_docs_link_to_the_anchor_of_the_failure_in_its_journey(e: JourneyEvidence, failure_id: str,
                                                                       anchor: str) -> None:
    failure = next(f for f in judged(e).failures if f.id == failure_id)
    assert failure.doc == f"{DOCS}#{anchor}"
    assert catalog.anchor_for(failure_id, e.journey) == anchor


def test_the_default_docs_url_is_used_when_none_is_given() -> None:
    failure = judge_journey(turn_to_end(stop="max_tokens")).failures[0]
    assert failure.doc == f"{catalog.DEFAULT_DOCS_URL}#step-3"


# --- judge_result: the stored verdict is never trusted ------------------------------------------------


def stored(e: JourneyEvidence, verdict: str = "pass") -> JourneyResult:
    j = catalog.JOURNEYS_BY_ID[e.journey]
    return JourneyResult(id=j.id, title=j.title, doc=catalog.doc_link(j.anchor, DOCS),
                         verdict=verdict, evidence=e)  # type: ignore[arg-type]


def run_of(*journeys: JourneyResult, **changes: Any) -> RunResult:
    fields: dict[str, Any] = dict(tool_version="0.1.0", agent_command=["agent", "--acp"],
                                  started_at="2026-11-05T10:00:00+00:00", docs_url=DOCS, journeys=list(journeys),
                                  verdict="pass", passed=len(journeys), failed=0)
    return RunResult(**(fields | changes))


def test_judge_result_recomputes_a_hand_edited_pass_into_fail() -> None:
    result = judge_result(run_of(stored(turn_to_end()), stored(turn_to_end(reply="nope"), verdict="pass")))
    assert [j.verdict for j in result.journeys] == ["pass", "fail"]
    assert [f.id for f in result.journeys[1].failures] == ["reply-missing-marker"]
    assert (result.verdict, result.passed, result.failed) == ("fail", 1, 1)


def test_judge_result_recomputes_a_hand_edited_fail_into_pass() -> None:
    result = judge_result(run_of(*(stored(build(), verdict="fail") for build in PASSING.values())))
    assert result.verdict == "pass" and result.passed == 7 and result.failed == 0


def test_judge_result_of_a_partial_run_never_passes() -> None:
    result = judge_result(run_of(*(stored(build()) for build in PASSING.values()), partial=True))
    assert result.passed == 7 and result.verdict == "fail"


def test_judge_result_of_no_journeys_is_fail() -> None:
    assert judge_result(run_of()).verdict == "fail"


def test_judge_result_uses_the_strict_flag_and_docs_url_of_the_run() -> None:
    e = turn_to_end()
    e.protocol_warnings = [warning("schema")]
    result = judge_result(run_of(stored(e), strict=True, docs_url="https://elsewhere.test/p"))
    failure = result.journeys[0].failures[0]
    assert failure.id == "schema-violation" and failure.doc == "https://elsewhere.test/p#step-2"
    assert result.journeys[0].warnings


def test_judge_result_counts_an_error_journey_as_not_passed() -> None:
    e = turn_to_end()
    e.runner_error = "boom"
    result = judge_result(run_of(stored(e), stored(turn_to_end())))
    assert [j.verdict for j in result.journeys] == ["error", "pass"] and result.verdict == "fail"
    assert (result.passed, result.failed) == (1, 1)


# --- leftovers on one line, and the model endpoint's hints only with the failure they explain ------

def test_a_left_process_is_shown_on_one_line_clipped() -> None:
    title = "agent-daemon" + " " * 300 + "--serve"  # a process that set its own title
    source = "python3 -c 'import time\nwhile True:\n    time.sleep(1)\n'"
    e = with_process(turn_to_end(), leftovers=[leftover(1, title), leftover(2, source),
                                               leftover(3, "node " + "x" * 400)])
    text = detail(fails_with(e, "process-left"), "process-left")
    assert "\n" not in text and "  " not in text
    assert "pid 1 `agent-daemon --serve`" in text
    assert "pid 2 `python3 -c 'import time while True: time.sleep(1) '`" in text
    shown = text.split("pid 3 `", 1)[1].split("`", 1)[0]
    assert len(shown) == 120 and shown.endswith("…")


def stub_record(seq: int = 1, intent: str = "reply", **changes: Any) -> RequestRecord:
    fields: dict[str, Any] = dict(seq=seq, at=1.0, tag="j", method="POST", path="/v1/chat/completions",
                                  dialect="openai-chat", status=200, intent=intent)
    fields.update(changes)
    return RequestRecord.from_dict(RequestRecord(**fields).to_dict())


def test_a_hint_goes_only_with_the_failure_it_explains() -> None:
    # The turn never ran its sleep because no shell tool reached the model, and a daemon was left.
    e = stop_turn(cancel_sent_at=None, answered_at=3.0, stop="end_turn", cancel_trigger=None, tool_calls=[])
    e = with_process(e, leftovers=[leftover(7, "agent-daemon")])
    e.model_stub_used = True
    e.model_requests = [stub_record(intent="shell", why="no shell tool offered: tools were [read_file]",
                                    decision={"text": "I cannot run commands."})]
    judgement = fails_with(e, "process-left", "sleep-never-started")
    assert "model endpoint" not in detail(judgement, "process-left")
    assert "model endpoint: the agent offered no shell tool to the model" in detail(judgement, "sleep-never-started")
    assert "model endpoint: the agent offered no shell tool to the model" in judgement.warnings


def test_no_request_to_the_model_is_no_hint_before_any_prompt() -> None:
    # A Plan journey that stopped at session/new (no Plan mode): the model was never asked anything.
    e = plan_saved(switch=PlanSwitchEvidence(how=None, offered_modes=["default"]), with_turn=False)
    e.model_stub_used = True
    judgement = fails_with(e, "no-plan-mode")
    assert "model endpoint" not in detail(judgement, "no-plan-mode")
    assert not any("model endpoint" in w for w in judgement.warnings)
    # Once a prompt went out, the same silence explains a turn that failed.
    e = turn_to_end(reply="", update_counts={})
    e.model_stub_used = True
    judgement = fails_with(e, "reply-not-in-chunks")
    assert "model endpoint: the agent sent no request to the model endpoint" in detail(judgement, "reply-not-in-chunks")


def test_every_hint_explains_known_failure_ids() -> None:
    from acp_journeys.rules.model_requests import HINT_EXPLAINS, TURN_OUTCOMES, explains, hints

    records = [
        stub_record(1, "read_and_look"),
        stub_record(2, "shell", why="no shell tool offered"),
        stub_record(3, "recall", decision={"text": "I don't know."}),
        stub_record(4, "plan", why="no create_plan tool offered")]
    found = hints(records)
    assert len(found) == 4
    for hint in found + hints([]):
        assert explains(hint) and explains(hint) <= set(catalog.FAILURES), hint
        assert "process-left" not in explains(hint) and "no-plan-mode" not in explains(hint)
    # Each entry of the table names a hint that hints() gives.
    assert {start for start, _ in HINT_EXPLAINS} - {"the image reached the model in a form"} == {
        next(start for start, _ in HINT_EXPLAINS if h.startswith(start)) for h in found}
    assert TURN_OUTCOMES <= set(catalog.FAILURES)
