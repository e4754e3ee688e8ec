"""The shape of a dialect: parse a request body, render a decision as JSON or as SSE events.

Rules of this module: an interface and nothing else. A dialect never decides anything: the
script does. `render` and `stream` get the parsed conversation too, because some dialects echo
request fields (the model name, the Responses API's tools) or keep what they answered.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from typing import Any

from acp_journeys.services.model_stub.conversation import Conversation, Decision


class Dialect(abc.ABC):
    name: str
    suffix: str  # the path ending that selects it, after any prefix: "/chat/completions"

    @abc.abstractmethod
    def parse(self, body: dict[str, Any]) -> Conversation:
        """The neutral conversation of a request; raises `BadRequest` for an invalid one."""

    def wants_stream(self, body: dict[str, Any]) -> bool:
        return body.get("stream") is True

    @abc.abstractmethod
    def render(self, body: dict[str, Any], conversation: Conversation, decision: Decision) -> dict[str, Any]:
        """The plain JSON answer."""

    @abc.abstractmethod
    def stream(self, body: dict[str, Any], conversation: Conversation, decision: Decision) -> Iterator[bytes]:
        """The streamed answer: SSE events, already framed."""

    @abc.abstractmethod
    def error(self, status: int, message: str) -> dict[str, Any]:
        """An error body in this dialect's own shape."""
