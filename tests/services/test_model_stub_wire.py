"""The stub's wire shapes, through the official `openai` and `anthropic` clients as callers.

Each answer is also validated against the clients' own pydantic models (which the clients
themselves only construct, without validation), so a missing required field fails here.
Tool-call round trips send the tool results back the way each dialect wants them and check
that the stub carries on with the plan.
"""

from __future__ import annotations

import base64
import io
import json
import socket
import time
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import Message as AnthropicMessage
from anthropic.types import RawMessageStreamEvent
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from PIL import Image
from pydantic import TypeAdapter

from acp_journeys.rules import prompts
from acp_journeys.services.model_stub import ModelStub

PLAN_INPUT = "/w/plan-input.txt"
PLAN_PROMPT = prompts.plan_turn(PLAN_INPUT, prompts.PLAN_TITLE_SAVED_PLAN)
SCHEMAS = {
    "bash": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    "read_file": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    "mcp__rondar__create_plan": {"type": "object", "properties": {"title": {"type": "string"},
                                 "description": {"type": "string"}}, "required": ["title", "description"]},
    "mcp__rondar__get_plan": {"type": "object", "properties": {"plan_id": {"type": "string"}},
                              "required": ["plan_id"]},
}


def red_png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), (255, 0, 0)).save(buffer, format="PNG")
    return buffer.getvalue()


class FakeTools:
    """What an agent's tools would answer; records the calls that the model made."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def run(self, name: str, arguments: dict[str, Any]) -> str:
        self.calls.append((name, arguments))
        if name == "bash":
            return "INPUT-AAAA1111\n" if arguments["command"] == f"cat {PLAN_INPUT}" else ""
        if name == "read_file":
            return "FILE-BBBB2222\n"
        if name.endswith("create_plan"):
            return json.dumps({"id": "PLAN-CCCC3333"})
        if name.endswith("get_plan"):
            return json.dumps({"id": arguments["plan_id"], "title": "t", "description": "d"})
        raise AssertionError(name)

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


PLAN_CALLS = ["bash", "mcp__rondar__create_plan", "mcp__rondar__get_plan"]


# ---- OpenAI Chat Completions ---------------------------------------------------------------------

def chat_tools() -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": n, "description": n, "parameters": s}} for n, s in SCHEMAS.items()]


def openai_client(stub: ModelStub, prefix: str = "/v1") -> openai.OpenAI:
    return openai.OpenAI(base_url=stub.url + prefix, api_key="stub", max_retries=0, timeout=10)


def test_chat_plain_reply_and_usage(stub: ModelStub) -> None:
    client = openai_client(stub)
    raw = client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": prompts.reply_exactly("REPLY-ABCD1234")}])
    completion = ChatCompletion.model_validate(raw.http_response.json())
    assert completion.choices[0].message.content == "REPLY-ABCD1234"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.total_tokens > 0


def test_chat_stream_with_usage(stub: ModelStub) -> None:
    client = openai_client(stub)
    chunks = list(client.chat.completions.create(
        model="m", stream=True, stream_options={"include_usage": True},
        messages=[{"role": "user", "content": prompts.reply_exactly("REPLY-ABCD1234")}]))
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk.to_dict())
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "REPLY-ABCD1234"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])


def chat_loop(client: openai.OpenAI, messages: list[dict[str, Any]], stream: bool) -> tuple[str, FakeTools]:
    tools = FakeTools()
    for _ in range(6):
        if stream:
            calls: dict[int, dict[str, Any]] = {}
            text = ""
            for chunk in client.chat.completions.create(model="m", messages=messages, tools=chat_tools(), stream=True):
                ChatCompletionChunk.model_validate(chunk.to_dict())
                delta = chunk.choices[0].delta
                text += delta.content or ""
                for part in delta.tool_calls or []:
                    entry = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                    entry["id"] = part.id or entry["id"]
                    if part.function:
                        entry["name"] += part.function.name or ""
                        entry["arguments"] += part.function.arguments or ""
            tool_calls = list(calls.values())
        else:
            raw = client.chat.completions.with_raw_response.create(model="m", messages=messages, tools=chat_tools())
            message = ChatCompletion.model_validate(raw.http_response.json()).choices[0].message
            text = message.content or ""
            tool_calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                          for c in message.tool_calls or []]
        if not tool_calls:
            return text, tools
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in tool_calls]})
        for c in tool_calls:
            result = tools.run(c["name"], json.loads(c["arguments"]))
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
    raise AssertionError("the stub never stopped calling tools")


@pytest.mark.parametrize("stream", [False, True])
def test_chat_plan_round_trip(stub: ModelStub, stream: bool) -> None:
    text, tools = chat_loop(openai_client(stub), [{"role": "user", "content": PLAN_PROMPT}], stream)
    assert text == "PLAN-CCCC3333"
    assert tools.names() == PLAN_CALLS
    assert tools.calls[1][1] == {"title": prompts.PLAN_TITLE_SAVED_PLAN, "description": "INPUT-AAAA1111"}


@pytest.mark.parametrize("stream", [False, True])
def test_chat_image_and_file_round_trip(stub: ModelStub, stream: bool) -> None:
    url = "data:image/png;base64," + base64.b64encode(red_png()).decode()
    messages = [{"role": "user", "content": [{"type": "text", "text": prompts.image_and_file()},
                                             {"type": "image_url", "image_url": {"url": url}}]}]
    text, tools = chat_loop(openai_client(stub, "/openai/v1"), messages, stream)
    assert text == "FILE-BBBB2222 red" and tools.names() == ["read_file"]
    records = [r for r in stub.records.snapshot() if r.dialect == "openai-chat"]
    assert all(r.image_present and r.image_decoded for r in records)


def test_models_list_for_both_clients(stub: ModelStub) -> None:
    assert [m.id for m in openai_client(stub).models.list()] == ["acp-journeys-stub"]
    anthropic_models = anthropic_client(stub).models.list()
    assert [m.id for m in anthropic_models.data] == ["acp-journeys-stub"]


def test_bad_request_is_an_error_of_the_dialect(stub: ModelStub) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        openai_client(stub).chat.completions.create(model="m", messages=[])
    assert "messages" in str(caught.value)
    with pytest.raises(anthropic.BadRequestError):
        anthropic_client(stub).messages.create(model="m", max_tokens=10, messages=[])
    assert [r.status for r in stub.records.snapshot()] == [400, 400]


# ---- OpenAI Responses ----------------------------------------------------------------------------

def responses_tools() -> list[dict[str, Any]]:
    return [{"type": "function", "name": n, "description": n, "parameters": s, "strict": False}
            for n, s in SCHEMAS.items()]


STREAM_EVENT = TypeAdapter(ResponseStreamEvent)


def responses_once(client: openai.OpenAI, stream: bool, **kwargs: Any) -> Response:
    if not stream:
        raw = client.responses.with_raw_response.create(model="m", tools=responses_tools(), **kwargs)
        return Response.model_validate(raw.http_response.json())
    final = None
    deltas = ""
    for event in client.responses.create(model="m", tools=responses_tools(), stream=True, **kwargs):
        STREAM_EVENT.validate_python(event.to_dict())
        if event.type == "response.output_text.delta":
            deltas += event.delta
        if event.type == "response.completed":
            final = Response.model_validate(event.response.to_dict())
    assert final is not None
    assert deltas == final.output_text
    return final


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("chained", [False, True])
def test_responses_plan_round_trip(stub: ModelStub, stream: bool, chained: bool) -> None:
    client = openai_client(stub)
    tools = FakeTools()
    items: list[Any] = [{"role": "user", "content": PLAN_PROMPT}]
    previous: str | None = None
    for _ in range(6):
        extra = {"previous_response_id": previous} if chained and previous else {}
        response = responses_once(client, stream, input=items, **extra)
        assert response.usage is not None and response.usage.total_tokens > 0
        calls = [o for o in response.output if o.type == "function_call"]
        if not calls:
            break
        # Chained: only the new items go up, the server holds the rest. Else: the whole list.
        items = [] if chained else items + [c.to_dict() for c in calls]
        previous = response.id
        for call in calls:
            items.append({"type": "function_call_output", "call_id": call.call_id,
                          "output": tools.run(call.name, json.loads(call.arguments))})
    assert response.output_text == "PLAN-CCCC3333"
    assert tools.names() == PLAN_CALLS


def test_responses_image_and_instructions(stub: ModelStub) -> None:
    client = openai_client(stub)
    url = "data:image/png;base64," + base64.b64encode(red_png()).decode()
    items: list[Any] = [{"role": "user", "content": [{"type": "input_text", "text": prompts.image_and_file()},
                                                     {"type": "input_image", "image_url": url, "detail": "auto"}]}]
    first = responses_once(client, True, input=items, instructions="You are a coding agent.")
    call = first.output[0]
    assert call.type == "function_call" and call.name == "read_file"
    items += [call.to_dict(), {"type": "function_call_output", "call_id": call.call_id, "output": "FILE-BBBB2222"}]
    second = responses_once(client, False, input=items, instructions="You are a coding agent.")
    assert second.output_text == "FILE-BBBB2222 red"


def test_responses_unknown_previous_id(stub: ModelStub) -> None:
    with pytest.raises(openai.BadRequestError):
        openai_client(stub).responses.create(model="m", input="hi", previous_response_id="resp_nope")


# ---- Anthropic Messages --------------------------------------------------------------------------

def anthropic_client(stub: ModelStub) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=stub.url, api_key="stub", max_retries=0, timeout=10)


def anthropic_tools() -> list[dict[str, Any]]:
    return [{"name": n, "description": n, "input_schema": s} for n, s in SCHEMAS.items()]


STREAM_EVENTS = TypeAdapter(RawMessageStreamEvent)


def test_anthropic_plain_and_stream(stub: ModelStub) -> None:
    client = anthropic_client(stub)
    prompt = [{"role": "user", "content": prompts.reply_exactly("REPLY-ABCD1234")}]
    raw = client.messages.with_raw_response.create(model="m", max_tokens=100, system="Be brief.", messages=prompt)
    message = AnthropicMessage.model_validate(raw.http_response.json())
    assert message.content[0].type == "text" and message.content[0].text == "REPLY-ABCD1234"
    assert message.stop_reason == "end_turn" and message.usage.output_tokens > 0
    with client.messages.stream(model="m", max_tokens=100, messages=prompt) as stream:
        assert "".join(stream.text_stream) == "REPLY-ABCD1234"
        final = stream.get_final_message()
    assert final.usage.output_tokens > 0 and final.stop_reason == "end_turn"
    events = list(client.messages.create(model="m", max_tokens=100, messages=prompt, stream=True))
    for event in events:
        STREAM_EVENTS.validate_python(event.to_dict())
    assert [e.type for e in events][:2] == ["message_start", "content_block_start"]
    assert events[-1].type == "message_stop"
    assert client.messages.count_tokens(model="m", messages=prompt).input_tokens > 0


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_plan_round_trip(stub: ModelStub, stream: bool) -> None:
    client = anthropic_client(stub)
    tools = FakeTools()
    messages: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>Plan mode is on.</system-reminder>"},
        {"type": "text", "text": PLAN_PROMPT}]}]
    for _ in range(6):
        kwargs = {"model": "m", "max_tokens": 1000, "messages": messages, "tools": anthropic_tools()}
        if stream:
            with client.messages.stream(**kwargs) as live:
                message = live.get_final_message()
        else:
            raw = client.messages.with_raw_response.create(**kwargs)
            message = AnthropicMessage.model_validate(raw.http_response.json())
        uses = [b for b in message.content if b.type == "tool_use"]
        if not uses:
            break
        assert message.stop_reason == "tool_use"
        messages.append({"role": "assistant", "content": [b.to_dict() for b in message.content]})
        # Claude Code style: the results, and a reminder text in the same user message.
        results: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": u.id,
                                          "content": [{"type": "text", "text": tools.run(u.name, dict(u.input))}]}
                                         for u in uses]
        messages.append({"role": "user", "content": results + [{"type": "text", "text": "<system-reminder>x</system-reminder>"}]})
    assert message.content[0].type == "text" and message.content[0].text == "PLAN-CCCC3333"
    assert tools.names() == PLAN_CALLS


def test_anthropic_image_and_builtin_bash_tool(stub: ModelStub) -> None:
    client = anthropic_client(stub)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": base64.b64encode(red_png()).decode()}}
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": prompts.image_and_file()}, image]}]
    tools = [{"type": "bash_20250124", "name": "bash"}]
    first = client.messages.create(model="m", max_tokens=100, messages=messages, tools=tools)
    use = first.content[0]
    assert use.type == "tool_use" and use.input == {"command": f"cat {prompts.NOTE_PATH}"}
    messages += [{"role": "assistant", "content": [use.to_dict()]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "FILE-BBBB2222"}]}]
    second = client.messages.create(model="m", max_tokens=100, messages=messages, tools=tools)
    assert second.content[0].type == "text" and second.content[0].text == "FILE-BBBB2222 red"


# ---- the server itself ---------------------------------------------------------------------------

def test_start_serves_at_once_and_stop_closes_open_connections() -> None:
    """No clock in the test (its speed is bench/'s): start returns a server that already answers,
    and stop ends every open connection itself instead of waiting out their idle bound (120 s)."""
    server = ModelStub().start()
    client = openai.OpenAI(base_url=server.url_for("turn-to-end") + "/v1", api_key="stub", max_retries=0)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    client.close()  # its keep-alive connection: the server sees it end
    idle = socket.create_connection(server.address)  # a keep-alive connection with no request
    half = socket.create_connection(server.address)
    half.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    deadline = time.monotonic() + 30
    while len(server._connections) != 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # both accepted and handled (the client's gone), so that stop has two to end
    assert len(server._connections) == 2
    server.stop()
    assert not server._connections
    for sock in (idle, half):
        sock.settimeout(30)  # a bound, not a measure: the server has closed it already
        try:
            assert sock.recv(1) == b""
        except ConnectionResetError:
            pass
        sock.close()
    with pytest.raises(OSError):
        socket.create_connection(server.address, timeout=1)


def test_route_tags_and_any_prefix(stub: ModelStub) -> None:
    for tag, prefix in (("turn-to-end", "/v1"), ("image-and-file", "/api/openai/v1")):
        client = openai.OpenAI(base_url=stub.url_for(tag) + prefix, api_key="stub", max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert [r.tag for r in stub.records.snapshot()] == ["turn-to-end", "image-and-file"]
    assert stub.records.as_dicts(tag="turn-to-end")[0]["intent"] == "other"
    with pytest.raises(ValueError):
        stub.url_for("a/b")


def test_unix_listener(tmp_path) -> None:
    import http.client

    path = str(tmp_path / "model.sock")
    with ModelStub() as server:
        server.add_unix_listener(path)

        class UnixConnection(http.client.HTTPConnection):
            def connect(self) -> None:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)

        conn = UnixConnection("localhost", timeout=5)
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": prompts.remember_word("WORD-X1")}]})
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        answer = json.loads(conn.getresponse().read())
        conn.close()
    assert answer["choices"][0]["message"]["content"] == "ACK"


def test_tool_choice_none_means_no_tool_call(stub: ModelStub) -> None:
    completion = openai_client(stub).chat.completions.create(
        model="m", messages=[{"role": "user", "content": prompts.run_sleep()}], tools=chat_tools(), tool_choice="none")
    assert completion.choices[0].message.tool_calls is None
    assert "no shell tool" in (completion.choices[0].message.content or "")
    message = anthropic_client(stub).messages.create(
        model="m", max_tokens=100, messages=[{"role": "user", "content": prompts.run_sleep()}],
        tools=anthropic_tools(), tool_choice={"type": "none"})
    assert message.content[0].type == "text" and message.stop_reason == "end_turn"
