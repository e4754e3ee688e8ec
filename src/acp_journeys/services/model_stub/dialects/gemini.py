"""Gemini's API: `POST …/models/<model>:generateContent` (JSON) and
`…:streamGenerateContent?alt=sse` (SSE), as Gemini CLI and its kin call it when
`GOOGLE_GEMINI_BASE_URL` points at the stub.

Rules of this module:
- Requests: `contents` of the roles user and model (a missing role is the user's), each with
  `parts`: text, `inlineData` (base64 image), `fileData` (an image by URI: present, not
  decodable), `functionCall`, `functionResponse` (its `response` read as text: `output`,
  `content`, `error`, else the JSON); `thought` parts are skipped. `systemInstruction` (parts or
  a string); `tools[].functionDeclarations` with `parameters` or `parametersJsonSchema`;
  `toolConfig.functionCallingConfig.mode` NONE offers no tool. A call and its response pair by
  their `id` when they have one, else by order (the k-th call with the k-th response).
- `…:countTokens` (Gemini CLI asks it before a turn with an image): `{"totalTokens": n}` from
  the same estimate, after the same validation of `contents`.
- Answers: one candidate with one part, `text` or `functionCall`, `finishReason` STOP, and
  `usageMetadata`. The stream is `data:` events, each a whole response object: text in pieces,
  the last one with the finish reason and the usage.
"""

from __future__ import annotations

import json
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
    pieces,
    sse,
)

ROLES = {"user": "user", "model": "assistant", "function": "user", "tool": "user", "system": "system"}


def _response_text(response: Any) -> str:
    if isinstance(response, dict):
        for key in ("output", "content", "result", "error"):
            value = response.get(key)
            if isinstance(value, str):
                return value
    return response if isinstance(response, str) else json.dumps(response)


class _Ids:
    """Ids for calls and responses that carry none: in order, so the k-th pairs with the k-th."""

    def __init__(self) -> None:
        self.calls = 0
        self.responses = 0

    def call(self, given: Any) -> str:
        self.calls += 1
        return str(given) if given else f"gemini-call-{self.calls}"

    def response(self, given: Any) -> str:
        self.responses += 1
        return str(given) if given else f"gemini-call-{self.responses}"


def _content(raw: Any, ids: _Ids) -> Message:
    if not isinstance(raw, dict) or not isinstance(raw.get("parts"), list):
        raise BadRequest(f"contents: each needs a list of parts: {str(raw)[:200]}")
    role = ROLES.get(str(raw.get("role") or "user"))
    if role is None:
        raise BadRequest(f"contents: unknown role {str(raw.get('role'))[:40]!r}")
    texts, images, calls, results = [], [], [], []
    for part in raw["parts"]:
        if not isinstance(part, dict) or part.get("thought") is True:
            continue
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part.get("inlineData"), dict):
            data = part["inlineData"]
            images.append(image_from_base64(data.get("mimeType"), data.get("data")))
        elif isinstance(part.get("fileData"), dict):
            images.append(ImagePart(str(part["fileData"].get("mimeType") or "image/*"), None, "url"))
        elif isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            args = call.get("args") if isinstance(call.get("args"), dict) else {}
            calls.append(ToolCall(ids.call(call.get("id")), str(call.get("name") or ""), args))
        elif isinstance(part.get("functionResponse"), dict):
            response = part["functionResponse"]
            payload = response.get("response")
            results.append(ToolResult(ids.response(response.get("id")), _response_text(payload),
                                      isinstance(payload, dict) and "error" in payload and "output" not in payload))
    return Message(role, tuple(texts), tuple(images), tuple(calls), tuple(results))


def _system(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        return (raw,) if raw else ()
    if isinstance(raw, dict) and isinstance(raw.get("parts"), list):
        return tuple(str(p.get("text")) for p in raw["parts"] if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ()


def _tools(raw: Any) -> tuple[ToolSpec, ...]:
    specs = []
    for tool in raw if isinstance(raw, list) else []:
        for decl in tool.get("functionDeclarations") or [] if isinstance(tool, dict) else []:
            if not isinstance(decl, dict) or not decl.get("name"):
                continue
            schema = decl.get("parametersJsonSchema") or decl.get("parameters") or {}
            specs.append(ToolSpec(str(decl["name"]), schema if isinstance(schema, dict) else {},
                                  str(decl.get("description") or "")))
    return tuple(specs)


class GeminiGenerate(Dialect):
    name = "gemini-generate"
    suffix = ":generateContent"

    def parse(self, body: dict[str, Any]) -> Conversation:
        raw = body.get("contents")
        if not isinstance(raw, list) or not raw:
            raise BadRequest("contents: a non-empty list is required")
        ids = _Ids()
        system = _system(body.get("systemInstruction") or body.get("system_instruction"))
        messages = ((Message("system", system),) if system else ()) + tuple(_content(c, ids) for c in raw)
        config = body.get("toolConfig") if isinstance(body.get("toolConfig"), dict) else {}
        calling = config.get("functionCallingConfig") if isinstance(config.get("functionCallingConfig"), dict) else {}
        tools = () if str(calling.get("mode") or "").upper() == "NONE" else _tools(body.get("tools"))
        return Conversation(messages, tools, "")

    def wants_stream(self, body: dict[str, Any]) -> bool:
        return False

    def count_tokens(self, body: dict[str, Any]) -> dict[str, Any]:
        self.parse(body)  # the same validation as a real request
        return {"totalTokens": estimate_tokens([body.get("systemInstruction"), body.get("contents")])}

    @staticmethod
    def _part(decision: Decision) -> dict[str, Any]:
        if decision.call is not None:
            return {"functionCall": {"name": decision.call.name, "args": decision.call.arguments}}
        return {"text": decision.text}

    @staticmethod
    def _usage(body: dict[str, Any], decision: Decision) -> dict[str, Any]:
        prompt = estimate_tokens([body.get("systemInstruction"), body.get("contents")])
        output = estimate_tokens(decision.call.arguments_json() if decision.call else decision.text)
        return {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}

    def render(self, body: dict[str, Any], conversation: Conversation, decision: Decision) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": [self._part(decision)]},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": self._usage(body, decision), "modelVersion": "acp-journeys-stub"}

    def stream(self, body: dict[str, Any], conversation: Conversation, decision: Decision) -> Iterator[bytes]:
        chunks = [self._part(decision)] if decision.call is not None else [{"text": p} for p in pieces(decision.text)]
        for i, part in enumerate(chunks):
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
            event: dict[str, Any] = {"candidates": [candidate], "modelVersion": "acp-journeys-stub"}
            if i == len(chunks) - 1:
                candidate["finishReason"] = "STOP"
                event["usageMetadata"] = self._usage(body, decision)
            yield sse(event)

    def error(self, status: int, message: str) -> dict[str, Any]:
        word = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND"}.get(status, "INTERNAL")
        return {"error": {"code": status, "message": message, "status": word}}


class GeminiStream(GeminiGenerate):
    """`:streamGenerateContent`: the same request, always answered as SSE (`alt=sse`, which
    every Gemini client asks for)."""

    name = "gemini-stream"
    suffix = ":streamGenerateContent"

    def wants_stream(self, body: dict[str, Any]) -> bool:
        return True
