"""What the model stub saw, as evidence: one record for every HTTP request, and what the judge
reads from them (hints, the stub's own failures).

Rules of this module: pure (no clock, no lock, no I/O); the stub's `RecordLog`
(services/model_stub/records.py) makes and keeps the records, the judge reads them here.

- A record holds facts only: the dialect and path, the tools the agent offered, whether an image
  was in the request (and could be decoded), what the stub decided and why. `hints` turns a
  journey's records into sentences that a failure can quote ("the agent never offered a shell
  tool to the model"); it never judges a journey. `explains` says which failure ids a hint
  explains, so that a failure quotes only the hints about it.
- Records are plain JSON-able dicts through `to_dict`; long strings are cut at `TEXT_LIMIT` so
  that a 4 MB tool result cannot bloat result.json.
- What reached the model is kept per message (`sent`: its role and a clipped text, head and
  tail, so that a prompt after long reminder blocks still shows), masked by the run's redactor
  BEFORE it is clipped: a secret cut in two would no longer match its mask.
- Hints come from the journey's turns only: a side request (a title, a summary, a vision side
  call: `side_request` says why) never blames the agent. A request that the stub failed to
  serve (a 400 or 500 of ours) is not a hint either: `stub_failures` lets the judge say that
  the failure is acp-journeys', not the agent's.
"""

from __future__ import annotations

import re

from dataclasses import asdict, dataclass, field, fields
from typing import Any

TEXT_LIMIT = 2000
MESSAGE_TEXT_LIMIT = 400  # per message of `sent`: head and tail


def clip(text: str, limit: int = MESSAGE_TEXT_LIMIT) -> str:
    """`text` with its middle cut out when it is longer than `limit` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} …({len(text) - 2 * half} characters)… {text[-half:]}"


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > TEXT_LIMIT:
        return value[:TEXT_LIMIT] + f"… ({len(value)} characters)"
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v) for v in value]
    return value


@dataclass(frozen=True)
class RequestRecord:
    """One HTTP request that reached the model stub, and what the stub decided: an entry of a
    journey's `model_requests` in result.json (`to_dict`'s form, its strings cut)."""

    __pydantic_config__ = {"extra": "ignore"}
    """Read back from result.json, a key that this record does not have is left out, as `from_dict` does."""

    seq: int  # 1, 2, ... in order of arrival at this server
    at: float  # time.monotonic() when the request arrived
    tag: str | None  # the route tag of `ModelStub.url_for(tag)`, None for a bare URL
    method: str
    path: str
    dialect: str | None  # "openai-chat" | "openai-responses" | "anthropic-messages" | "models" | None
    status: int
    stream: bool = False
    model: str = ""
    tools_offered: list[str] = field(default_factory=list)
    messages: int = 0
    image_present: bool = False
    image_decoded: bool = False
    intent: str | None = None
    decision: dict[str, Any] | None = None  # {"text": ...} or {"tool_call": name, "arguments": {...}}
    why: str = ""
    side_request: str | None = None  # why this request is not a journey turn; None for a turn
    sent: list[dict[str, Any]] = field(default_factory=list)  # per message: role, clipped masked text
    error: str | None = None
    retried: dict[str, Any] | None = None
    """The decision retries a refused call with the argument that its refusal named (its tool,
    the argument, the value, the refusal's first line): the model followed the agent."""
    seconds: float = 0.0  # from arrival to the answer being ready (the record is made before it goes out)

    def to_dict(self) -> dict[str, Any]:
        return _cut(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestRecord:
        """A record again from its stored form (result.json), for the judge's hints."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def stub_failures(records: list[RequestRecord]) -> list[RequestRecord]:
    """Model requests that the stub could not serve (it answered 4xx or 5xx): our failures."""
    return [r for r in records if r.dialect not in (None, "models") and r.status >= 400]


def hints(records: list[RequestRecord]) -> list[str]:
    """Sentences about what reached the model in the journey's turns, for a failure message."""
    model_requests = [r for r in records if r.dialect not in (None, "models")]
    if not model_requests:
        unserved = asked_routes(records)
        if unserved:
            return [f"{NO_SERVED_REQUEST}: it asked for {', '.join(unserved)}, which the stub does not serve (404)"]
        return [NO_REQUEST]
    found: list[str] = []
    served = [r for r in model_requests if r.status < 400]
    turns = [r for r in served if r.side_request is None]
    model_requests = turns
    intents = {r.intent for r in model_requests}
    # An image that reached the model in a side call (a vision request) did reach it.
    if "read_and_look" in intents and not any(r.image_present for r in served):
        found.append("the image never reached the model")
    elif "read_and_look" in intents and not any(r.image_decoded for r in served):
        found.append("the image reached the model in a form it could not decode")
    if any(r.why.startswith("no shell tool offered") for r in model_requests):
        found.append("the agent offered no shell tool to the model")
    if "recall" in intents and all(r.decision == {"text": "I don't know."} for r in model_requests
                                   if r.intent == "recall"):
        found.append("the conversation that reached the model did not hold the word to remember")
    if "plan" in intents and any("no create_plan tool" in r.why for r in model_requests):
        found.append("the agent offered the model no create_plan tool (were the MCP servers started?)")
    return found


TURN_OUTCOMES = frozenset({
    "timeout", "prompt-error", "agent-exited", "stop-reason", "reply-not-in-chunks", "reply-missing-marker",
    "reply-missing-word", "reply-missing-red", "reply-missing-plan-id", "create-plan-not-called",
    "get-plan-not-called", "regular-file-missing", "sleep-never-started", "no-tool-call-before-cancel",
})
"""The failures that say how a turn went: what reached the model can explain them. It says
nothing about a process left behind, an exit after stdin closed, a capability or a mode."""

NO_REQUEST = "the agent sent no request to the model endpoint"
"""The hint of a journey whose agent never called the model: no news before any prompt."""
NO_SERVED_REQUEST = "the agent sent no request that the model endpoint serves"
"""The hint of a journey whose agent called routes of a dialect the stub does not speak."""
ROUTES_SHOWN = 3


def asked_routes(records: list[RequestRecord]) -> list[str]:
    """The routes the agent asked for that no dialect serves (`POST /v1beta/...`), each once,
    without the stub's route tag, clipped."""
    seen: list[str] = []
    for r in records:
        if r.dialect is not None or r.status != 404:
            continue
        path = re.sub(r"^/t/[^/?]+", "", r.path) or "/"
        route = f"{r.method} {path if len(path) <= 120 else path[:120] + '…'}"
        if route not in seen:
            seen.append(route)
    return seen[:ROUTES_SHOWN] + ([f"{len(seen) - ROUTES_SHOWN} more"] if len(seen) > ROUTES_SHOWN else [])

HINT_EXPLAINS: tuple[tuple[str, frozenset[str]], ...] = (
    ("the image never reached the model", frozenset({"reply-missing-red"})),
    ("the image reached the model in a form", frozenset({"reply-missing-red"})),
    ("the agent offered no shell tool", frozenset({
        "sleep-never-started", "no-tool-call-before-cancel", "regular-file-missing", "create-plan-not-called",
        "reply-missing-plan-id", "timeout", "prompt-error"})),
    ("the conversation that reached the model did not hold the word", frozenset({"reply-missing-word"})),
    ("the agent offered the model no create_plan tool", frozenset({
        "create-plan-not-called", "get-plan-not-called", "reply-missing-plan-id"})),
)
"""Which failures each hint of `hints` explains, by the start of its sentence; any other hint
(no request) explains how a turn went (`TURN_OUTCOMES`)."""


def explains(hint: str) -> frozenset[str]:
    """The failure ids that `hint` explains: a failure quotes only the hints that explain it."""
    return next((ids for start, ids in HINT_EXPLAINS if hint.startswith(start)), TURN_OUTCOMES)

