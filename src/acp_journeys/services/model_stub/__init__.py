"""The scripted model endpoint: a real agent runs the journeys with no model login.

Modules, one job each:
- `conversation`: the neutral model of a request (messages, images, tool calls and results,
  tools offered) and of the answer (`Decision`).
- `dialects/`: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages: wire JSON to a
  `Conversation`, and a `Decision` to JSON or SSE.
- `instructions`, `tools`, `colour`: reading the conversation, finding the agent's tools, seeing
  an image. `script`: the honest model, a pure function `decide(Conversation) -> Decision`.
- `server`: the loopback HTTP server (`ModelStub`). `records`: the log of its requests, whose
  records (`RequestRecord`) and hints live in `rules.model_requests`, where the judge reads them.
"""

from __future__ import annotations

from acp_journeys.rules.model_requests import RequestRecord, hints
from acp_journeys.services.model_stub.records import RecordLog
from acp_journeys.services.model_stub.server import ModelStub

__all__ = ["ModelStub", "RecordLog", "RequestRecord", "hints"]
