"""Per-method validation against the vendored ACP v1 schema (protocol/schema.py).

The last part drives the 7 real journey scripts against a scripted connection (no process) and
checks every request they send against its `client-message` route: the runner speaks valid ACP.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from acp_journeys.editor.connection import Answer
from acp_journeys.editor.journeys import SCRIPTS
from acp_journeys.editor.journeys.image_and_file import red_png
from acp_journeys.editor.session import AgentSession, Bounds, JourneyContext
from acp_journeys.launch import relay_command
from acp_journeys.protocol import jsonrpc
from acp_journeys.protocol.schema import _fast_check, _routes, _validator, definition_for, violations
from acp_journeys.rules import prompts
from acp_journeys.services.mcp_hub import mcp_server_entry

# --- what the agent sends ---------------------------------------------------------------------


def chunk(content: Any) -> dict[str, Any]:
    return {"sessionId": "s-1", "update": {"sessionUpdate": "agent_message_chunk", "content": content}}


def test_a_valid_initialize_response_passes() -> None:
    answer = {"protocolVersion": 1, "agentCapabilities": {"loadSession": True, "promptCapabilities": {"image": True}},
              "authMethods": [], "agentInfo": {"name": "agent", "version": "1.0"}}
    assert violations("agent-response", "initialize", answer) == []


def test_a_string_protocol_version_is_a_violation_at_its_path() -> None:
    found = violations("agent-response", "initialize", {"protocolVersion": "1"})
    assert len(found) == 1
    assert found[0].startswith("initialize InitializeResponse at protocolVersion:")
    assert "not of type 'integer'" in found[0]


def test_an_initialize_response_without_a_protocol_version_is_a_violation() -> None:
    found = violations("agent-response", "initialize", {"agentCapabilities": {}})
    assert len(found) == 1 and "at (top)" in found[0] and "protocolVersion" in found[0]


def test_an_agent_message_chunk_passes() -> None:
    assert violations("agent-notification", "session/update", chunk({"type": "text", "text": "REPLY-1"})) == []


@pytest.mark.parametrize("content", [{"type": "text", "text": 5}, {"text": "no type"}, None],
                         ids=["text-not-a-string", "no-type", "no-content"])
def test_a_malformed_agent_message_chunk_is_a_violation_naming_the_path(content: Any) -> None:
    found = violations("agent-notification", "session/update", chunk(content))
    assert found and found[0].startswith("session/update SessionNotification at update:")


def test_a_session_update_without_a_session_id_is_a_violation() -> None:
    payload = chunk({"type": "text", "text": "x"})
    del payload["sessionId"]
    found = violations("agent-notification", "session/update", payload)
    assert found and "at (top)" in found[0] and "sessionId" in found[0]


PERMISSION = {
    "sessionId": "s-1",
    "toolCall": {"toolCallId": "t-1", "title": "sleep 120", "kind": "execute", "rawInput": {"command": "sleep 120"}},
    "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                {"optionId": "no", "name": "Reject", "kind": "reject_once"}],
}


def test_a_permission_request_from_the_agent_is_validated_and_passes() -> None:
    assert definition_for("agent-request", "session/request_permission") == "RequestPermissionRequest"
    assert violations("agent-request", "session/request_permission", PERMISSION) == []


def test_a_permission_request_with_an_unknown_option_kind_is_a_violation_at_the_option() -> None:
    bad = {**PERMISSION, "options": [{"optionId": "x", "name": "Maybe", "kind": "maybe"}]}
    found = violations("agent-request", "session/request_permission", bad)
    assert found and found[0].startswith("session/request_permission RequestPermissionRequest at options/0/kind:")


def test_a_permission_request_without_options_is_a_violation() -> None:
    bad = {k: v for k, v in PERMISSION.items() if k != "options"}
    assert violations("agent-request", "session/request_permission", bad)


@pytest.mark.parametrize("role,method", [
    ("agent-response", "vendor/unknown"),
    ("agent-notification", "_vendor/progress"),
    ("agent-request", "x/y"),
    ("client-message", "session/request_permission"),  # a real method, but not one the client sends
])
def test_unknown_methods_give_no_violations(role: str, method: str) -> None:
    assert definition_for(role, method) is None
    assert violations(role, method, {"anything": ["at", "all"]}) == []
    assert violations(role, method, "not even an object") == []


def test_violations_stop_at_the_limit() -> None:
    bad = {"sessionId": 1, "toolCall": 2, "options": 3}
    assert len(violations("agent-request", "session/request_permission", bad, limit=2)) == 2


# --- what we send: the shapes of every request of the journeys ----------------------------------

MCP_SERVERS = [mcp_server_entry(relay_command("/tmp/rondar-mcp/turn-to-end.sock"))]
IMAGE_BLOCK = {"type": "image", "mimeType": "image/png", "data": base64.b64encode(red_png()).decode()}

OUR_REQUESTS = [
    ("initialize", {"protocolVersion": 1, "clientCapabilities": {}}),
    ("session/new", {"cwd": "/workspace", "mcpServers": MCP_SERVERS}),
    ("session/load", {"sessionId": "s-1", "cwd": "/workspace", "mcpServers": MCP_SERVERS}),
    ("session/prompt", {"sessionId": "s-1", "prompt": [{"type": "text", "text": prompts.image_and_file()},
                                                       IMAGE_BLOCK]}),
    ("session/set_mode", {"sessionId": "s-1", "modeId": "plan"}),
    ("session/set_config_option", {"sessionId": "s-1", "configId": "mode", "value": "plan"}),
    ("session/cancel", {"sessionId": "s-1"}),
]


def test_the_mcp_server_entry_is_a_stdio_server_with_an_empty_env_list() -> None:
    entry = MCP_SERVERS[0]
    assert set(entry) == {"name", "command", "args", "env"} and entry["env"] == []
    assert entry["name"] == "rondar" and entry["command"].startswith("/")


@pytest.mark.parametrize("method,params", OUR_REQUESTS, ids=[m for m, _ in OUR_REQUESTS])
def test_each_request_shape_we_send_is_valid_for_its_client_message_route(method: str, params: dict) -> None:
    assert definition_for("client-message", method) is not None
    assert violations("client-message", method, params) == []


def test_the_client_message_route_does_catch_a_bad_request() -> None:
    # the check above can fail: an MCP server entry without env is not an McpServerStdio
    broken = {"cwd": "/workspace", "mcpServers": [{"name": "rondar", "command": "/bin/relay", "args": []}]}
    assert violations("client-message", "session/new", broken)
    assert violations("client-message", "session/prompt", {"sessionId": "s", "prompt": [{"type": "image"}]})


# --- what we send, for real: the 7 journey scripts over a scripted connection ----------------------

SESSION_NEW_ANSWER = {
    "sessionId": "s-1",
    "modes": {"currentModeId": "default", "availableModes": [{"id": "default", "name": "Default"},
                                                               {"id": "plan", "name": "Plan"}]},
}
SESSION_NEW_CONFIG_ANSWER = {
    "sessionId": "s-1",
    "configOptions": [{"id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": "ask",
                       "options": [{"value": "ask", "name": "Ask"}, {"value": "plan", "name": "Plan"}]}],
}


class ScriptedConnection:
    """Stands in for AgentConnection: records what the driver sends and answers like a good agent."""

    def __init__(self, session: AgentSession, sent: list[tuple[str, Any]], new_answer: dict[str, Any]) -> None:
        self.session = session
        self.sent = sent
        self.new_answer = new_answer
        self.stdout_closed = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def request(self, method: str, params: Any, timeout: float) -> Answer:
        self.sent.append((method, params))
        result: Any = {}
        if method == "initialize":
            result = {"protocolVersion": 1,
                      "agentCapabilities": {"loadSession": True, "promptCapabilities": {"image": True}}}
        elif method == "session/new":
            result = self.new_answer
        elif method == "session/prompt":
            result = {"stopReason": "end_turn"}
            if "sleep 120" in params["prompt"][0]["text"]:
                update = {"sessionUpdate": "tool_call", "toolCallId": "t-1", "title": "sleep 120", "kind": "execute",
                          "status": "in_progress"}
                self.session._notification(jsonrpc.Notification(
                    "session/update", {"sessionId": "s-1", "update": update}, ""))
                await self.cancelled.wait()
                result = {"stopReason": "cancelled"}
        return Answer(result=result, raw="{}", answered_at=0.0)

    async def notify(self, method: str, params: Any) -> bool:
        self.sent.append((method, params))
        if method == "session/cancel":
            self.cancelled.set()
        return True


class FakeSandbox:
    workspace = "/workspace"
    sees_every_process = False  # it sees no process at all: the stop journey waits the short fallback

    def mcp_command(self) -> list[str]:
        return relay_command("/tmp/rondar-mcp/journey.sock")

    async def write_file(self, path: str, data: bytes) -> None:
        pass

    async def snapshot(self, folder: str) -> dict[str, str]:
        return {}

    async def file_exists(self, path: str) -> bool:
        return True

    async def agent_processes(self) -> list:
        return []


def sent_by_journey(journey_id: str, monkeypatch: pytest.MonkeyPatch,
                    new_answer: dict[str, Any] = SESSION_NEW_ANSWER) -> list[tuple[str, Any]]:
    sent: list[tuple[str, Any]] = []

    async def start(self: AgentSession) -> None:
        self.conn = ScriptedConnection(self, sent, new_answer)  # type: ignore[assignment]

    monkeypatch.setattr(AgentSession, "start", start)
    ctx = JourneyContext(journey_id, FakeSandbox(), ["agent", "--acp"], Bounds())  # type: ignore[arg-type]
    asyncio.run(asyncio.wait_for(SCRIPTS[journey_id](ctx), 30))  # a bound against a hang; the stop journey alone waits 3 s + a 2 s grace
    assert ctx.evidence.stopped_early is None, ctx.evidence.stopped_early
    return sent


@pytest.mark.parametrize("journey_id", sorted(SCRIPTS))
def test_every_request_a_journey_script_sends_is_valid_acp(journey_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sent = sent_by_journey(journey_id, monkeypatch)
    assert sent[0][0] == "initialize"
    for method, params in sent:
        assert definition_for("client-message", method) is not None, method
        assert violations("client-message", method, params) == [], (method, params)


def test_the_journey_scripts_together_send_every_method_of_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    methods = {m for j in SCRIPTS for m, _ in sent_by_journey(j, monkeypatch)}
    methods |= {m for j in ("plan-turn-saved-plan", "plan-regular-plan")
                for m, _ in sent_by_journey(j, monkeypatch, SESSION_NEW_CONFIG_ANSWER)}
    assert methods == {m for m, _ in OUR_REQUESTS}


@pytest.mark.parametrize("journey_id", ["plan-turn-saved-plan", "plan-regular-plan"])
def test_plan_journeys_over_a_config_option_send_valid_set_config_option(
        journey_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sent = sent_by_journey(journey_id, monkeypatch, SESSION_NEW_CONFIG_ANSWER)
    switches = [p for m, p in sent if m == "session/set_config_option"]
    assert switches and switches[0] == {"sessionId": "s-1", "configId": "mode", "value": "plan"}
    for params in switches:
        assert violations("client-message", "session/set_config_option", params) == []


def test_the_image_journey_sends_a_text_and_an_image_block(monkeypatch: pytest.MonkeyPatch) -> None:
    prompt = next(p for m, p in sent_by_journey("image-and-file", monkeypatch) if m == "session/prompt")
    assert [b["type"] for b in prompt["prompt"]] == ["text", "image"]
    assert prompt["prompt"][1]["mimeType"] == "image/png"
    assert base64.b64decode(prompt["prompt"][1]["data"]).startswith(b"\x89PNG")


def test_plan_regular_plan_switches_to_plan_then_the_initial_mode_then_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    sent = sent_by_journey("plan-regular-plan", monkeypatch)
    assert [p["modeId"] for m, p in sent if m == "session/set_mode"] == ["plan", "default", "plan"]


# --- the fast check says "valid" exactly when jsonschema finds no error ------------------------

AGENT_SIDE = [
    ("agent-response", "initialize", {"protocolVersion": 1, "agentCapabilities": {
        "loadSession": True, "promptCapabilities": {"image": True, "embeddedContext": False}},
        "authMethods": [], "agentInfo": {"name": "agent", "version": "1.0"}}),
    ("agent-response", "session/new", SESSION_NEW_ANSWER),
    ("agent-response", "session/new", SESSION_NEW_CONFIG_ANSWER),
    ("agent-response", "session/prompt", {"stopReason": "end_turn", "_meta": {"x": 1}}),
    ("agent-response", "session/set_mode", {}),
    ("agent-notification", "session/update", chunk({"type": "text", "text": "REPLY-1"})),
    ("agent-notification", "session/update", {"sessionId": "s-1", "update": {
        "sessionUpdate": "tool_call", "toolCallId": "t-1", "title": "sleep 120", "kind": "execute",
        "status": "in_progress", "rawInput": {"command": "sleep 120"},
        "locations": [{"path": "/workspace/a.txt", "line": 3}]}}),
    ("agent-notification", "session/update", {"sessionId": "s-1", "update": {
        "sessionUpdate": "tool_call_update", "toolCallId": "t-1", "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "done"}},
                    {"type": "diff", "path": "/workspace/a.txt", "oldText": None, "newText": "x"}]}}),
    ("agent-notification", "session/update", {"sessionId": "s-1", "update": {
        "sessionUpdate": "plan", "entries": [{"content": "step", "priority": "high", "status": "pending"}]}}),
    ("agent-notification", "session/update", {"sessionId": "s-1", "update": {
        "sessionUpdate": "available_commands_update",
        "availableCommands": [{"name": "plan", "description": "Plan first", "input": {"hint": "what"}}]}}),
    ("agent-notification", "session/update", {"sessionId": "s-1", "update": {
        "sessionUpdate": "current_mode_update", "currentModeId": "plan"}}),
    ("agent-request", "session/request_permission", PERMISSION),
    ("agent-request", "fs/read_text_file", {"sessionId": "s-1", "path": "/workspace/a.txt", "line": 1, "limit": 10}),
    *[("client-message", method, params) for method, params in OUR_REQUESTS],
]
ODD_VALUES = [None, True, False, 0, -1, 1.0, 1.5, 2**70, "", "x", "text", "plan", [], {}, [1], {"type": "text"}]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, sub in items:
        found += _paths(sub, prefix + (key,))
    return found


def _mutations(payload: Any) -> list[Any]:
    """The payload, and copies with one place changed: each odd value, removed, one key more."""
    out = [payload]
    for path in _paths(payload):
        def at(change):
            copy = json.loads(json.dumps(payload))
            if not path:
                return change(None, None, copy)
            parent = copy
            for key in path[:-1]:
                parent = parent[key]
            change(parent, path[-1], parent[path[-1]])
            return copy
        for odd in ODD_VALUES:
            out.append(odd if not path else at(lambda p, k, v: p.__setitem__(k, odd)))
        if path:
            out.append(at(lambda p, k, v: p.__delitem__(k)))
            out.append(at(lambda p, k, v: v.__setitem__("zzExtra", 1) if isinstance(v, dict) else v.append(None)
                          if isinstance(v, list) else None))
    return out


def test_every_routed_type_has_a_fast_check() -> None:
    # a type the compiler cannot model would silently lose the speed-up, never a violation
    assert all(_fast_check(name) is not None for name in set(_routes().values()))


@pytest.mark.parametrize("role,method,payload", AGENT_SIDE, ids=[f"{r}:{m}" for r, m, _ in AGENT_SIDE])
def test_the_fast_check_agrees_with_jsonschema_on_a_frame_and_its_mutations(role: str, method: str,
                                                                           payload: Any) -> None:
    name = definition_for(role, method)
    assert name is not None and not violations(role, method, payload)
    fast, full = _fast_check(name), _validator(name)
    verdicts = [(fast(m), full.is_valid(m), m) for m in _mutations(payload)]
    assert [v for v in verdicts if v[0] != v[1]] == []
    assert any(not ok for _, ok, _ in verdicts)  # the mutations do reach invalid frames


def test_the_fast_check_follows_jsonschema_where_the_acp_schema_does_not_reach() -> None:
    # the vendored schema's oneOf branches exclude each other; a schema of the future may not
    import jsonschema

    from acp_journeys.protocol.schema import _Compiler

    cases = [({"oneOf": [{"type": "integer"}, {"type": "number"}]}, [1, 1.5, "x"]),
             ({"enum": [1, "a", [True]]}, [1, 1.0, True, "a", [True], [1]]),
             ({"const": False}, [False, 0, None]),
             ({"type": ["string", "null"], "minLength": 2}, ["", "ab", None, 3]),
             ({"additionalProperties": {"type": "integer"}, "properties": {"a": {}}}, [{"a": "x", "b": 1}, {"b": "x"}]),
             ({"not": {"items": {"type": "string"}}}, [["a"], [1], "no array"])]
    # a union tagged by a required const (checked by its tag alone), with a tag twice and
    # variants that take what is no object
    tagged = [{"type": "object", "properties": {"k": {"const": "a"}}, "required": ["k"]},
              {"properties": {"k": {"const": "a"}, "n": {"type": "integer"}}, "required": ["k"]},
              {"properties": {"k": {"type": "string", "const": "b"}}, "required": ["k", "n"]}]
    values = [{"k": "a"}, {"k": "a", "n": 1}, {"k": "a", "n": "x"}, {"k": "b"}, {"k": "b", "n": 1}, {"k": "c"},
              {}, {"k": 1}, {"k": ["a"]}, {"n": 1}, "no object", 3, None]
    cases += [({"oneOf": tagged}, values), ({"anyOf": tagged}, values), ({"oneOf": tagged[1:]}, values)]
    for schema, values in cases:
        fast = _Compiler({}).node(schema)
        assert [fast(v) for v in values] == [jsonschema.Draft202012Validator(schema).is_valid(v) for v in values]
