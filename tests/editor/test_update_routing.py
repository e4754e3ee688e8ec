"""Where a `session/update` goes: the driver's state table, fed frames without any process.

The frames are real JSON-RPC text parsed by `protocol.jsonrpc`, given to a real `AgentSession`
the way its connection would give them; the checks read the evidence that the judge reads.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from acp_journeys.editor.connection import Answer
from acp_journeys.rules.evidence import RequestEvidence
from acp_journeys.editor import routing
from acp_journeys.editor.routing import ANY_OTHER_KIND, ROUTES, Do, RouteState, route_for
from acp_journeys.editor.session import AgentSession, Bounds, JourneyContext
from acp_journeys.protocol import jsonrpc


def session() -> AgentSession:
    # No sandbox: nothing here starts a process or reads a file.
    ctx = JourneyContext("stop-running-turn", sandbox=None, argv=["agent"], bounds=Bounds())  # type: ignore[arg-type]
    agent = AgentSession(ctx, 0)
    ctx.sessions.append(agent)
    agent.session_id = "s-1"
    return agent


def feed(agent: AgentSession, session_update: str, /, **fields: Any) -> None:
    frame = {"jsonrpc": "2.0", "method": "session/update",
             "params": {"sessionId": "s-1", "update": {"sessionUpdate": session_update, **fields}}}
    message = jsonrpc.parse(json.dumps(frame))
    assert isinstance(message, jsonrpc.Notification)
    agent._notification(message)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def answer(result: Any = None) -> Answer:
    result = {"stopReason": "end_turn"} if result is None else result
    return Answer(result, None, json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}), 5.0)


def test_every_state_has_a_row_for_any_kind_and_turn_work_happens_only_in_a_turn() -> None:
    assert set(ROUTES) == set(RouteState)
    turn_work = {Do.COUNT, Do.KEEP_REPLY, Do.KEEP_THOUGHT, Do.RECORD_TOOL_CALL, Do.TELL_SCRIPT}
    for state, row in ROUTES.items():
        assert ANY_OTHER_KIND in row, state
        in_turn = state in (RouteState.IN_TURN, RouteState.CANCELLING)
        for kind, actions in row.items():
            assert actions, (state, kind)
            assert in_turn == bool(turn_work & set(actions)), (state, kind, actions)
    assert route_for(RouteState.IN_TURN, "plan") == ROUTES[RouteState.IN_TURN][ANY_OTHER_KIND]


def test_a_turn_counts_keeps_its_reply_thoughts_and_tool_calls_and_tells_the_script() -> None:
    agent = session()
    told: list[str] = []
    agent.on_update = lambda kind, update: told.append(kind)
    assert agent.router.state is RouteState.NO_TURN
    turn = agent.begin_turn("sleep", [text("run sleep 120")], "default")
    assert agent.router.state is RouteState.IN_TURN and agent.ctx.current_turn is turn
    feed(agent, "agent_thought_chunk", content=text("thinking"))
    feed(agent, "agent_message_chunk", content=text("Hello "))
    feed(agent, "agent_message_chunk", content={"type": "image", "data": "AA==", "mimeType": "image/png"})
    feed(agent, "tool_call", toolCallId="t1", title="sleep 120", kind="execute", status="pending",
         rawInput={"command": "sleep 120"})
    feed(agent, "tool_call_update", toolCallId="t1", status="in_progress")
    feed(agent, "plan", entries=[])
    feed(agent, "agent_message_chunk", content=text("world"))

    assert turn.update_counts == {"agent_thought_chunk": 1, "agent_message_chunk": 3, "tool_call": 1,
                                  "tool_call_update": 1, "plan": 1}
    assert turn.reply_length == len("Hello world") and turn.thought_text == "thinking"
    assert turn.reply_text == ""  # joined once the turn is answered, not per chunk
    [call] = turn.tool_calls
    assert (call.tool_call_id, call.title, call.kind, call.status) == ("t1", "sleep 120", "execute", "in_progress")
    assert call.raw_input == {"command": "sleep 120"}
    assert told == ["agent_thought_chunk", "agent_message_chunk", "agent_message_chunk", "tool_call",
                    "tool_call_update", "plan", "agent_message_chunk"]

    agent._response("session/prompt", answer())  # as the connection calls it, on reading the answer
    assert turn.reply_text == "Hello world" and turn.answered_at == 5.0
    assert agent.router.state is RouteState.ANSWERED and agent.ctx.current_turn is None
    feed(agent, "agent_message_chunk", content=text(" late"))
    feed(agent, "tool_call", toolCallId="t2")
    agent.end_turn(turn, answer())
    feed(agent, "agent_message_chunk", content=text(" later"))
    assert turn.late_updates == {"agent_message_chunk": 2, "tool_call": 1}
    assert turn.reply_text == "Hello world" and turn.reply_length == len("Hello world")
    assert len(turn.tool_calls) == 1 and turn.stop_reason == "end_turn"
    assert len(told) == 7  # late updates are never the script's trigger


def test_a_cancel_keeps_updates_on_the_turn_until_its_answer() -> None:
    agent = session()
    turn = agent.begin_turn("sleep", [text("x")], "default")
    agent.router.cancel_sent(2.0)  # what AgentSession.cancel does before it writes session/cancel
    assert agent.router.state is RouteState.CANCELLING and turn.cancel_sent_at == 2.0
    feed(agent, "tool_call_update", toolCallId="t1", status="failed")
    feed(agent, "agent_message_chunk", content=text("stopped"))
    agent.end_turn(turn, answer({"stopReason": "cancelled"}))
    assert turn.update_counts == {"tool_call_update": 1, "agent_message_chunk": 1}
    assert turn.reply_text == "stopped" and turn.stop_reason == "cancelled" and turn.late_updates == {}


def test_updates_during_a_request_are_replayed_history_and_outside_everything_are_dropped() -> None:
    agent = session()
    feed(agent, "agent_message_chunk", content=text("before anything"))
    load = RequestEvidence(method="session/load", process=0, sent_at=0.0)
    agent.router.request_sent(load)
    assert agent.router.state is RouteState.IN_REQUEST
    feed(agent, "user_message_chunk", content=text("remember"))
    feed(agent, "agent_message_chunk", content=text("ACK"))
    feed(agent, "agent_message_chunk", content=text("ACK"))
    agent.router.request_done()
    feed(agent, "agent_message_chunk", content=text("after"))
    assert load.replayed_updates == {"user_message_chunk": 1, "agent_message_chunk": 2}
    assert agent.ctx.evidence.turns == []


def test_a_turn_with_no_answer_takes_no_late_updates_and_no_permission() -> None:
    agent = session()
    turn = agent.begin_turn("reply", [text("x")], "default")
    feed(agent, "agent_message_chunk", content=text("part"))
    agent.end_turn(turn, Answer(timed_out=True))
    assert agent.router.state is RouteState.NO_TURN
    assert turn.reply_text == "part" and turn.answered_at is None and turn.timed_out
    feed(agent, "agent_message_chunk", content=text("after the bound"))
    permission = jsonrpc.parse(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
                                           "params": {"sessionId": "s-1", "toolCall": {"toolCallId": "t1"},
                                                      "options": [{"optionId": "ok", "name": "Allow",
                                                                   "kind": "allow_once"}]}}))
    assert isinstance(permission, jsonrpc.Request)
    asyncio.run(agent._agent_request(permission))
    assert turn.late_updates == {} and turn.update_counts == {"agent_message_chunk": 1}
    assert turn.permissions == []


def test_agent_requests_go_to_the_running_turn_then_to_the_answered_one() -> None:
    agent = session()
    turn = agent.begin_turn("reply", [text("x")], "default")

    def request(method: str, request_id: int) -> jsonrpc.Request:
        parsed = jsonrpc.parse(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                           "params": {"sessionId": "s-1", "path": "/etc/hostname"}}))
        assert isinstance(parsed, jsonrpc.Request)
        return parsed

    asyncio.run(agent._agent_request(request("fs/read_text_file", 1)))
    agent._response("session/prompt", answer())
    asyncio.run(agent._agent_request(request("terminal/create", 2)))
    assert [r.method for r in turn.agent_requests] == ["fs/read_text_file", "terminal/create"]


def test_mcp_calls_belong_to_the_running_turn_only() -> None:
    agent = session()

    class Record:  # the fields of mcp_server.McpCallRecord that the context reads
        def __init__(self, tool: str) -> None:
            self.at, self.tool, self.arguments, self.result = 0.0, tool, {}, {}
            self.is_error, self.connection = False, 1

    turn = agent.begin_turn("plan", [text("x")], "plan")
    agent.ctx.on_mcp_call(Record("create_plan"))
    agent._response("session/prompt", answer())
    agent.ctx.on_mcp_call(Record("get_plan"))
    assert [c.tool for c in turn.mcp_calls] == ["create_plan"]
    assert [c.tool for c in agent.ctx.evidence.mcp_calls_outside_turns] == ["get_plan"]


def test_the_reply_is_kept_up_to_its_bound_and_measured_beyond_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(routing, "REPLY_TEXT_LIMIT", 10)
    agent = session()
    turn = agent.begin_turn("reply", [text("x")], "default")
    for _ in range(5):
        feed(agent, "agent_message_chunk", content=text("abcdef"))
    agent.end_turn(turn, answer())
    assert turn.reply_text == "abcdefabcd" and turn.reply_length == 30
    again = agent.begin_turn("again", [text("x")], "default")  # a new turn starts a new reply
    feed(agent, "agent_message_chunk", content=text("new"))
    agent.end_turn(again, answer())
    assert again.reply_text == "new" and turn.reply_text == "abcdefabcd"
