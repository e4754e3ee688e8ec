"""Anthropic Messages: `POST …/messages` (plain JSON or SSE) and `POST …/messages/count_tokens`.

Rules of this module:
- Requests: `system` as a string or text blocks; `messages` of the roles user, assistant and
  system (Claude Code sends its environment block as a `system` message after the prompt) with
  content as a string or blocks: text, image (base64 or url source), tool_use, tool_result (its
  content a string or text and image blocks, and `is_error`); thinking blocks are skipped.
  `tools` with an `input_schema`, and the typed client tools `bash_*` and `text_editor_*`,
  whose schemas are fixed by Anthropic and so not sent: we put them in.
- Answers: one content block, `text` (stop_reason end_turn) or `tool_use` (stop_reason tool_use),
  with usage. Streams: message_start, content_block_start, ping, content_block_delta
  (text_delta / input_json_delta), content_block_stop, message_delta, message_stop.
"""

from __future__ import annotations

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
)
from acp_journeys.services.model_stub.dialects.base import Dialect
from acp_journeys.services.model_stub.dialects.common import (
    BadRequest,
    estimate_tokens,
    image_from_base64,
    image_from_url,
    new_id,
    pieces,
    sse,
)

BASH_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
EDITOR_SCHEMA = {
    "type": "object",
    "properties": {"command": {"type": "string", "enum": ["view", "create", "str_replace", "insert"]},
                   "path": {"type": "string"}},
    "required": ["command", "path"],
}


def _image(block: dict[str, Any]) -> ImagePart:
    source = block.get("source") if isinstance(block.get("source"), dict) else {}
    if source.get("type") == "base64":
        return image_from_base64(source.get("media_type"), source.get("data"))
    if source.get("type") == "url":
        return image_from_url(source.get("url"))
    return ImagePart("image/*", None, str(source.get("type") or "unknown"))


def _result(block: dict[str, Any]) -> ToolResult:
    content = block.get("content")
    texts: list[str] = []
    images: list[ImagePart] = []
    if isinstance(content, str):
        texts.append(content)
    for inner in content if isinstance(content, list) else []:
        if isinstance(inner, dict) and inner.get("type") == "text":
            texts.append(str(inner.get("text") or ""))
        elif isinstance(inner, dict) and inner.get("type") == "image":
            images.append(_image(inner))
    return ToolResult(str(block.get("tool_use_id") or ""), "\n".join(texts), block.get("is_error") is True,
                      tuple(images))


ROLES = ("user", "assistant", "system")


def _message(raw: Any) -> Message:
    if not isinstance(raw, dict) or raw.get("role") not in ROLES:
        raise BadRequest(f"messages: not a user, assistant or system message: {str(raw)[:200]}")
    content = raw.get("content")
    if isinstance(content, str):
        return Message(raw["role"], (content,))
    texts, images, calls, results = [], [], [], []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "image":
            images.append(_image(block))
        elif kind == "tool_use":
            arguments = block.get("input") if isinstance(block.get("input"), dict) else {}
            calls.append(ToolCall(str(block.get("id") or ""), str(block.get("name") or ""), arguments))
        elif kind == "tool_result":
            results.append(_result(block))
    return Message(raw["role"], tuple(texts), tuple(images), tuple(calls), tuple(results))


def _system(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        return (raw,) if raw else ()
    if isinstance(raw, list):
        return tuple(str(b.get("text") or "") for b in raw if isinstance(b, dict) and b.get("type") == "text")
    return ()


def _tools(raw: Any) -> tuple[ToolSpec, ...]:
    specs: list[ToolSpec] = []
    for tool in raw if isinstance(raw, list) else []:
        if not isinstance(tool, dict) or not tool.get("name"):
            continue
        kind = str(tool.get("type") or "custom")
        if isinstance(tool.get("input_schema"), dict):
            specs.append(ToolSpec(str(tool["name"]), tool["input_schema"], str(tool.get("description") or "")))
        elif kind.startswith("bash_"):
            specs.append(ToolSpec(str(tool["name"]), BASH_SCHEMA))
        elif kind.startswith("text_editor_"):
            specs.append(ToolSpec(str(tool["name"]), EDITOR_SCHEMA))
    return tuple(specs)


class AnthropicMessages(Dialect):
    name = "anthropic-messages"
    suffix = "/messages"

    def parse(self, body: dict[str, Any]) -> Conversation:
        raw = body.get("messages")
        if not isinstance(raw, list) or not raw:
            raise BadRequest("messages: a non-empty list is required")
        system = _system(body.get("system"))
        messages = ((Message("system", system),) if system else ()) + tuple(_message(m) for m in raw)
        choice = body.get("tool_choice")
        # tool_choice {"type": "none"}: the model may call no tool, so it is offered none.
        tools = () if isinstance(choice, dict) and choice.get("type") == "none" else _tools(body.get("tools"))
        return Conversation(messages, tools, str(body.get("model") or ""))

    def count_tokens(self, body: dict[str, Any]) -> dict[str, Any]:
        self.parse(body)  # the same validation as a real request
        return {"input_tokens": estimate_tokens([body.get("system"), body.get("messages"), body.get("tools")])}

    @staticmethod
    def _usage(body: dict[str, Any], output: int) -> dict[str, Any]:
        return {"input_tokens": estimate_tokens([body.get("system"), body.get("messages")]), "output_tokens": output,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "service_tier": "standard"}

    @staticmethod
    def _block(decision: Decision, tool_use_id: str) -> dict[str, Any]:
        if decision.call is not None:
            return {"type": "tool_use", "id": tool_use_id, "name": decision.call.name,
                    "input": decision.call.arguments}
        return {"type": "text", "text": decision.text}

    @staticmethod
    def _stop_reason(decision: Decision) -> str:
        return "tool_use" if decision.call is not None else "end_turn"

    @staticmethod
    def _output_tokens(decision: Decision) -> int:
        return estimate_tokens(decision.call.arguments_json() if decision.call else decision.text)

    def render(self, body: dict[str, Any], conversation: Conversation, decision: Decision) -> dict[str, Any]:
        return {"id": new_id("msg_"), "type": "message", "role": "assistant", "model": str(body.get("model") or "stub"),
                "content": [self._block(decision, new_id("toolu_"))], "stop_reason": self._stop_reason(decision),
                "stop_sequence": None, "usage": self._usage(body, self._output_tokens(decision))}

    def stream(self, body: dict[str, Any], conversation: Conversation, decision: Decision) -> Iterator[bytes]:
        message = {"id": new_id("msg_"), "type": "message", "role": "assistant",
                   "model": str(body.get("model") or "stub"), "content": [], "stop_reason": None,
                   "stop_sequence": None, "usage": self._usage(body, 1)}
        yield sse({"type": "message_start", "message": message}, event="message_start")
        block = self._block(decision, new_id("toolu_"))
        start = {**block, "input": {}} if decision.call is not None else {**block, "text": ""}
        yield sse({"type": "content_block_start", "index": 0, "content_block": start}, event="content_block_start")
        yield sse({"type": "ping"}, event="ping")
        if decision.call is not None:
            deltas = [{"type": "input_json_delta", "partial_json": p}
                      for p in [""] + pieces(decision.call.arguments_json(), 24)]
        else:
            deltas = [{"type": "text_delta", "text": p} for p in pieces(decision.text)]
        for delta in deltas:
            yield sse({"type": "content_block_delta", "index": 0, "delta": delta}, event="content_block_delta")
        yield sse({"type": "content_block_stop", "index": 0}, event="content_block_stop")
        delta = {"stop_reason": self._stop_reason(decision), "stop_sequence": None}
        yield sse({"type": "message_delta", "delta": delta, "usage": {"output_tokens": self._output_tokens(decision)}},
                  event="message_delta")
        yield sse({"type": "message_stop"}, event="message_stop")

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = {400: "invalid_request_error", 404: "not_found_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
