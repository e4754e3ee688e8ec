"""The OpenAI Responses API: `POST …/responses`, plain JSON or SSE events.

Rules of this module:
- Requests: `instructions` (a system message), `input` as a string or a list of items: messages
  (roles user/system/developer/assistant; parts input_text/output_text/input_image), function_call,
  function_call_output, custom_tool_call(_output); reasoning and other items are skipped.
  `tools` of type function and custom, and namespace groups (a tool `ns.name`).
- `previous_response_id`: the conversation that an earlier answer of this server ended is put in
  front, as the real API does; an unknown id is a 400 `previous_response_not_found`. Only the
  last `STORE_LIMIT` answers are kept.
- Answers: one output item, a `message` or a `function_call`, with full usage. Streams send the
  typed events (`event:` lines and a `type` with a `sequence_number`) from `response.created`
  to `response.completed`.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
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

STORE_LIMIT = 1000
ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}


def _parts(content: Any) -> tuple[tuple[str, ...], tuple[ImagePart, ...]]:
    if isinstance(content, str):
        return (content,), ()
    texts: list[str] = []
    images: list[ImagePart] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "input_image":
            if part.get("image_url"):
                images.append(image_from_url(part["image_url"]))
            else:
                images.append(ImagePart("image/*", None, "file-id"))
    return tuple(texts), tuple(images)


def _output_text(output: Any) -> tuple[str, tuple[ImagePart, ...]]:
    if isinstance(output, list):
        texts, images = _parts(output)
        return "\n".join(texts), images
    return text_of(output), ()


def _qualified(item: dict[str, Any]) -> str:
    name = str(item.get("name") or "")
    return f"{item['namespace']}.{name}" if item.get("namespace") else name


def _items(items: list[Any]) -> list[Message]:
    messages: list[Message] = []
    for item in items:
        if not isinstance(item, dict):
            raise BadRequest(f"input: not an item: {str(item)[:200]}")
        kind = item.get("type", "message")
        if kind == "message":
            role = ROLES.get(item.get("role", ""))
            if role is None:
                raise BadRequest(f"input: unknown role {item.get('role')!r}")
            texts, images = _parts(item.get("content"))
            messages.append(Message(role, texts, images))  # type: ignore[arg-type]
        elif kind == "function_call":
            call = ToolCall(str(item.get("call_id") or ""), _qualified(item),
                            parse_arguments(item.get("arguments")), str(item.get("arguments") or ""))
            messages.append(Message("assistant", tool_calls=(call,)))
        elif kind == "custom_tool_call":
            call = ToolCall(str(item.get("call_id") or ""), _qualified(item), {"input": item.get("input")})
            messages.append(Message("assistant", tool_calls=(call,)))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            text, images = _output_text(item.get("output"))
            messages.append(Message("tool", tool_results=(ToolResult(str(item.get("call_id") or ""), text,
                                                                     images=images),)))
    return messages


def _tools(raw: Any) -> tuple[ToolSpec, ...]:
    specs: list[ToolSpec] = []
    for tool in raw if isinstance(raw, list) else []:
        if not isinstance(tool, dict) or not tool.get("name"):
            continue
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                if isinstance(inner, dict) and inner.get("name"):
                    specs.append(ToolSpec(f"{tool['name']}.{inner['name']}", inner.get("parameters") or {},
                                          str(inner.get("description") or "")))
        elif tool.get("type") in ("function", "custom"):
            specs.append(ToolSpec(str(tool["name"]), tool.get("parameters") or {}, str(tool.get("description") or "")))
    return tuple(specs)


class Responses(Dialect):
    name = "openai-responses"
    suffix = "/responses"

    def __init__(self) -> None:
        self._store: OrderedDict[str, tuple[Message, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def parse(self, body: dict[str, Any]) -> Conversation:
        messages: list[Message] = []
        previous = body.get("previous_response_id")
        if previous:
            with self._lock:
                earlier = self._store.get(str(previous))
            if earlier is None:
                raise BadRequest(f"previous_response_not_found: no response {previous!r} on this server")
            messages.extend(earlier)
        if isinstance(body.get("instructions"), str) and body["instructions"]:
            messages.insert(0, Message("system", (body["instructions"],)))
        raw = body.get("input")
        if isinstance(raw, str):
            messages.append(Message("user", (raw,)))
        elif isinstance(raw, list):
            messages.extend(_items(raw))
        else:
            raise BadRequest("input: a string or a list of items is required")
        # tool_choice "none": the model may call no tool, so it is offered none.
        tools = () if body.get("tool_choice") == "none" else _tools(body.get("tools"))
        return Conversation(tuple(messages), tools, str(body.get("model") or ""))

    def _keep(self, body: dict[str, Any], response_id: str, conversation: Conversation,
              item: dict[str, Any]) -> None:
        if item["type"] == "function_call":
            said = Message("assistant", tool_calls=(ToolCall(item["call_id"], _qualified(item),
                                                             parse_arguments(item["arguments"])),))
        else:
            said = Message("assistant", (item["content"][0]["text"],))
        # `instructions` are not carried over by previous_response_id: drop our leading copy.
        skip = 1 if isinstance(body.get("instructions"), str) and body["instructions"] else 0
        kept = conversation.messages[skip:]
        with self._lock:
            self._store[response_id] = (*kept, said)
            while len(self._store) > STORE_LIMIT:
                self._store.popitem(last=False)

    def _item(self, decision: Decision, status: str, text: str | None = None) -> dict[str, Any]:
        if decision.call is not None:
            name = decision.call.name
            item: dict[str, Any] = {"type": "function_call", "id": new_id("fc_"), "call_id": new_id("call_"),
                                    "name": name, "arguments": decision.call.arguments_json(), "status": status}
            if "." in name:
                item["namespace"], item["name"] = name.split(".", 1)
            return item
        content = [{"type": "output_text", "text": decision.text if text is None else text,
                    "annotations": [], "logprobs": []}]
        return {"type": "message", "id": new_id("msg_"), "status": status, "role": "assistant", "content": content}

    def _response(self, body: dict[str, Any], response_id: str, status: str, output: list[dict[str, Any]],
                  usage: dict[str, Any] | None, created: int) -> dict[str, Any]:
        return {
            "id": response_id, "object": "response", "created_at": created, "status": status,
            "completed_at": int(time.time()) if status == "completed" else None,
            "error": None, "incomplete_details": None, "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"), "model": str(body.get("model") or "stub"),
            "output": output, "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": body.get("previous_response_id"),
            "reasoning": {"effort": None, "summary": None}, "store": body.get("store", True),
            "temperature": 1.0, "text": {"format": {"type": "text"}},
            "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools") or [], "top_p": 1.0,
            "truncation": "disabled", "usage": usage, "user": None, "metadata": body.get("metadata") or {},
        }

    @staticmethod
    def _usage(body: dict[str, Any], decision: Decision) -> dict[str, Any]:
        prompt = estimate_tokens([body.get("instructions"), body.get("input")])
        completion = estimate_tokens(decision.call.arguments_json() if decision.call else decision.text)
        return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion}

    def render(self, body: dict[str, Any], conversation: Conversation, decision: Decision) -> dict[str, Any]:
        response_id = new_id("resp_")
        item = self._item(decision, "completed")
        self._keep(body, response_id, conversation, item)
        return self._response(body, response_id, "completed", [item], self._usage(body, decision), int(time.time()))

    def stream(self, body: dict[str, Any], conversation: Conversation, decision: Decision) -> Iterator[bytes]:
        response_id, created = new_id("resp_"), int(time.time())
        done = self._item(decision, "completed")
        self._keep(body, response_id, conversation, done)
        sequence = iter(range(1_000_000))

        def event(kind: str, **fields: Any) -> bytes:
            return sse({"type": kind, "sequence_number": next(sequence), **fields}, event=kind)

        pending = self._response(body, response_id, "in_progress", [], None, created)
        yield event("response.created", response=pending)
        yield event("response.in_progress", response=pending)
        where = {"item_id": done["id"], "output_index": 0}
        if decision.call is not None:
            yield event("response.output_item.added", output_index=0,
                        item={**done, "arguments": "", "status": "in_progress"})
            for piece in pieces(done["arguments"], 24):
                yield event("response.function_call_arguments.delta", **where, delta=piece)
            yield event("response.function_call_arguments.done", **where, arguments=done["arguments"],
                        name=done["name"])
        else:
            yield event("response.output_item.added", output_index=0,
                        item={**done, "status": "in_progress", "content": []})
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            yield event("response.content_part.added", **where, content_index=0, part=empty)
            for piece in pieces(decision.text):
                yield event("response.output_text.delta", **where, content_index=0, delta=piece, logprobs=[])
            yield event("response.output_text.done", **where, content_index=0, text=decision.text, logprobs=[])
            yield event("response.content_part.done", **where, content_index=0, part=done["content"][0])
        yield event("response.output_item.done", output_index=0, item=done)
        final = self._response(body, response_id, "completed", [done], self._usage(body, decision), created)
        yield event("response.completed", response=final)

    def error(self, status: int, message: str) -> dict[str, Any]:
        code = message.split(":", 1)[0] if message.startswith("previous_response_not_found") else None
        kind = "invalid_request_error" if status < 500 else "server_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}
