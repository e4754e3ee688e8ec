"""OpenAI Chat Completions: `POST …/chat/completions`, plain JSON or SSE chunks.

Rules of this module:
- Requests: `messages` with the roles system/developer (both become `system`), user, assistant
  (with `tool_calls`, or the legacy `function_call`), tool (and the legacy `function`); content
  as a string or a list of `text` and `image_url` parts; `tools` of type function, or the legacy
  `functions`.
- Answers: one choice; a tool call is a `tool_calls` entry with finish_reason `tool_calls`.
  Streams are `chat.completion.chunk` events ending in `data: [DONE]`; with
  `stream_options.include_usage` every chunk has `"usage": null` and one last chunk with no
  choices carries the usage, as OpenAI sends it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from acp_journeys.services.model_stub.conversation import (
    Conversation,
    Decision,
    ImagePart,
    Message,
    ToolCall,
    ToolResult,
    ToolSpec,
    parse_arguments,
)
from acp_journeys.services.model_stub.dialects.base import Dialect
from acp_journeys.services.model_stub.dialects.common import (
    BadRequest,
    estimate_tokens,
    image_from_url,
    new_id,
    pieces,
    sse,
    text_of,
)

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
         "tool": "tool", "function": "tool"}


def _content(content: Any) -> tuple[tuple[str, ...], tuple[ImagePart, ...]]:
    if isinstance(content, str):
        return (content,), ()
    texts: list[str] = []
    images: list[ImagePart] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("text", "input_text") and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "image_url":
            url = part.get("image_url")
            images.append(image_from_url(url.get("url") if isinstance(url, dict) else url))
    return tuple(texts), tuple(images)


def _message(raw: Any) -> Message:
    if not isinstance(raw, dict) or raw.get("role") not in ROLES:
        raise BadRequest(f"messages: not a message with a known role: {str(raw)[:200]}")
    role = ROLES[raw["role"]]
    texts, images = _content(raw.get("content"))
    if role == "tool":
        call_id = str(raw.get("tool_call_id") or raw.get("name") or "")
        return Message("tool", tool_results=(ToolResult(call_id, text_of(raw.get("content"))),))
    calls = []
    for entry in raw.get("tool_calls") or []:
        function = entry.get("function") if isinstance(entry, dict) else None
        if isinstance(function, dict):
            calls.append(ToolCall(str(entry.get("id") or ""), str(function.get("name") or ""),
                                  parse_arguments(function.get("arguments")), str(function.get("arguments") or "")))
    legacy = raw.get("function_call")
    if isinstance(legacy, dict):
        calls.append(ToolCall(str(legacy.get("name") or ""), str(legacy.get("name") or ""),
                              parse_arguments(legacy.get("arguments"))))
    return Message(role, texts, images, tuple(calls))  # type: ignore[arg-type]


def _tools(body: dict[str, Any]) -> tuple[ToolSpec, ...]:
    specs = []
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name"):
            specs.append(ToolSpec(str(function["name"]), function.get("parameters") or {},
                                  str(function.get("description") or "")))
    for function in body.get("functions") or []:
        if isinstance(function, dict) and function.get("name"):
            specs.append(ToolSpec(str(function["name"]), function.get("parameters") or {},
                                  str(function.get("description") or "")))
    return tuple(specs)


def _usage(conversation_body: dict[str, Any], decision: Decision) -> dict[str, Any]:
    prompt = estimate_tokens(conversation_body.get("messages"))
    completion = estimate_tokens(decision.call.arguments_json() if decision.call else decision.text)
    return {
        "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    }


class ChatCompletions(Dialect):
    name = "openai-chat"
    suffix = "/chat/completions"

    def parse(self, body: dict[str, Any]) -> Conversation:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages: a non-empty list is required")
        # tool_choice "none": the model may call no tool, so it is offered none.
        tools = () if body.get("tool_choice") == "none" else _tools(body)
        return Conversation(tuple(_message(m) for m in messages), tools, str(body.get("model") or ""))

    def _head(self, body: dict[str, Any], response_id: str, obj: str) -> dict[str, Any]:
        return {"id": response_id, "object": obj, "created": int(time.time()),
                "model": str(body.get("model") or "stub"), "system_fingerprint": None}

    def render(self, body: dict[str, Any], conversation: Conversation, decision: Decision) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        if decision.call is not None:
            message["tool_calls"] = [{"id": new_id("call_"), "type": "function",
                                      "function": {"name": decision.call.name,
                                                   "arguments": decision.call.arguments_json()}}]
            finish = "tool_calls"
        else:
            message["content"] = decision.text
            finish = "stop"
        return {**self._head(body, new_id("chatcmpl-"), "chat.completion"),
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
                "usage": _usage(body, decision)}

    def stream(self, body: dict[str, Any], conversation: Conversation, decision: Decision) -> Iterator[bytes]:
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        head = self._head(body, new_id("chatcmpl-"), "chat.completion.chunk")

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            data = {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
            if include_usage:
                data["usage"] = None
            return sse(data)

        if decision.call is not None:
            yield chunk({"role": "assistant", "content": None})
            yield chunk({"tool_calls": [{"index": 0, "id": new_id("call_"), "type": "function",
                                         "function": {"name": decision.call.name, "arguments": ""}}]})
            for piece in pieces(decision.call.arguments_json(), 24):
                yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            yield chunk({}, "tool_calls")
        else:
            yield chunk({"role": "assistant", "content": ""})
            for piece in pieces(decision.text):
                yield chunk({"content": piece})
            yield chunk({}, "stop")
        if include_usage:
            yield sse({**head, "choices": [], "usage": _usage(body, decision)})
        yield sse("[DONE]")

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = "invalid_request_error" if status < 500 else "server_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}
