"""The wire dialects of the model stub, each in its own module; `for_path` picks one by path."""

from __future__ import annotations

from acp_journeys.services.model_stub.dialects.anthropic import AnthropicMessages
from acp_journeys.services.model_stub.dialects.base import Dialect
from acp_journeys.services.model_stub.dialects.chat import ChatCompletions
from acp_journeys.services.model_stub.dialects.common import BadRequest
from acp_journeys.services.model_stub.dialects.gemini import GeminiGenerate, GeminiStream
from acp_journeys.services.model_stub.dialects.responses import Responses

__all__ = ["AnthropicMessages", "BadRequest", "ChatCompletions", "Dialect", "GeminiGenerate", "GeminiStream", "Responses",
           "all_dialects"]


def all_dialects() -> list[Dialect]:
    """Fresh dialect objects for one server (the Responses API keeps its answers per server)."""
    return [ChatCompletions(), Responses(), AnthropicMessages(), GeminiStream(), GeminiGenerate()]
