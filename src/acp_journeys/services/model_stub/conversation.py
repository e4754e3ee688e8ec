"""The neutral model of one model request and of the stub's answer to it.

Rules of this module: frozen dataclasses and tiny helpers only; no I/O, no dialect names. Each
dialect parses its wire JSON into a `Conversation` and renders a `Decision` back; the script sees
nothing else, so it plays every dialect the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ImagePart:
    """An image as the request carried it. `data` is None when it could not be decoded (a URL, a
    file id, bad base64): the image was there, but the stub cannot look at it."""

    media_type: str
    data: bytes | None
    source: str  # "base64", "data-url", "url", "file-id": how the dialect gave it


@dataclass(frozen=True)
class ToolCall:
    """A tool call that the model made earlier in the conversation (an assistant message)."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""


@dataclass(frozen=True)
class ToolResult:
    """What the agent's tool gave back for the call `call_id`, as text."""

    call_id: str
    text: str
    is_error: bool = False
    images: tuple[ImagePart, ...] = ()


@dataclass(frozen=True)
class Message:
    role: Role
    texts: tuple[str, ...] = ()
    images: tuple[ImagePart, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()

    @property
    def text(self) -> str:
        return "\n".join(self.texts)

    def all_images(self) -> tuple[ImagePart, ...]:
        return self.images + tuple(img for result in self.tool_results for img in result.images)


@dataclass(frozen=True)
class ToolSpec:
    """A tool that the agent offered to the model: its name and JSON schema of its arguments."""

    name: str
    parameters: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    def properties(self) -> dict[str, Any]:
        props = self.parameters.get("properties") if isinstance(self.parameters, dict) else None
        return props if isinstance(props, dict) else {}

    def required(self) -> list[str]:
        req = self.parameters.get("required") if isinstance(self.parameters, dict) else None
        return [r for r in req if isinstance(r, str)] if isinstance(req, list) else []


@dataclass(frozen=True)
class Conversation:
    """One request to the model: the whole conversation that the agent sent, and its tools."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    model: str = ""

    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    def has_image(self) -> bool:
        return any(m.all_images() for m in self.messages)


@dataclass(frozen=True)
class PlannedCall:
    """A tool call that the stub makes now; the dialect gives it an id."""

    name: str
    arguments: dict[str, Any]

    def arguments_json(self) -> str:
        return json.dumps(self.arguments)


Intent = Literal["reply", "remember", "recall", "read_and_look", "plan", "shell", "other"]


@dataclass(frozen=True)
class Decision:
    """What the model says: either a text reply or one tool call, and why (for the evidence).

    `side` says why the request is not a journey turn (a title, a summary, a vision side call,
    no journey sentence at all); None for a turn. Hints are computed from turns only."""

    intent: Intent
    why: str
    text: str = ""
    call: PlannedCall | None = None
    side: str | None = None
    retried: dict[str, Any] | None = None
    """When the call is a retry that a refusal asked for: {"tool", "argument", "value", "refusal"}."""

    def summary(self) -> dict[str, Any]:
        if self.call is not None:
            return {"tool_call": self.call.name, "arguments": self.call.arguments}
        return {"text": self.text}


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict, from a JSON string or an object; junk becomes {}."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.strip():
        try:
            value = json.loads(raw)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}
