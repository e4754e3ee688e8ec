"""What the journeys record: facts only, no verdicts.

Rules of this module: pydantic models and nothing else. Times are seconds since the journey
started. A journey fills these in; `judge.judge_journey` reads them; result.json stores them, so
`verify` can judge the same facts again. Anything the judge decides on must be here.

It must not know how evidence is gathered (editor) or shown (output): types only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from acp_journeys.rules.model_requests import RequestRecord

RESULT_SCHEMA = "acp-journeys/result/1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Leftover(_Model):
    pid: int
    command: str
    """The command line as one string (its arguments joined by spaces)."""
    argv: list[str] = Field(default_factory=list)
    """The full argv, each argument as it is (reports show `command` on one line, clipped)."""


class ProtocolWarning(_Model):
    at: float
    process: int
    kind: Literal["schema", "not-json", "too-long", "not-jsonrpc", "unknown-response", "stderr"]
    message: str


class ProcessEvidence(_Model):
    index: int
    argv: list[str]
    pid: int | None = None
    started_at: float
    start_error: str | None = None
    initialize_sent_at: float | None = None
    initialize_answered_at: float | None = None
    initialize_raw: str | None = None
    """The raw line of the answer to initialize: the judge reads protocolVersion's own token."""
    initialize_timed_out: bool = False
    initialize_bound_s: float | None = None
    """How long initialize was waited for (the bound, --timeout-scale applied)."""
    agent_capabilities: dict[str, Any] | None = None
    stdin_closed_at: float | None = None
    turn_running_at_close: bool = False
    exited_at: float | None = None
    exit_code: int | None = None
    exited_before_stdin_close: bool = False
    killed_after: float | None = None
    """Set when the agent had not ended this many seconds after stdin closed and was killed."""
    leftovers: list[Leftover] = Field(default_factory=list)
    """What of the agent's processes was alive when the leftover window closed (then killed)."""
    leftover_window_closes_at: float | None = None
    """Where the look for leftovers ends at the latest: Rondar's 10 s after its input closed, or
    2 s after the process itself ended, whichever is later. A process that ends before is part
    of the agent's ending, never a leftover."""
    last_process_ended_at: float | None = None
    """When the last of its processes (itself included) was seen ended: its own exit when none
    outlived it. None when some were still alive as the window closed (the leftovers)."""
    stderr_tail: str = ""
    stderr_bytes: int = 0
    # For the protocol tier (#26): facts the journeys see anyway, judged only by that tier.
    update_session_ids: dict[str, int] = Field(default_factory=dict)
    """The sessionId that each session/update named, with its count (a few distinct ids kept)."""
    answered_twice: list[str] = Field(default_factory=list)
    """The methods of our requests that got a second response (one entry per extra response)."""
    null_id_responses: list[float] = Field(default_factory=list)
    """When a response with no id (or id null) came: an answer to a notification, or to a bad line."""


class RequestEvidence(_Model):
    """A request of ours other than session/prompt: session/new, session/load, set_mode..."""

    method: str
    process: int
    params: dict[str, Any] = Field(default_factory=dict)
    sent_at: float
    answered_at: float | None = None
    result: Any = None
    error: dict[str, Any] | None = None
    timed_out: bool = False
    bound_s: float | None = None
    """How long the answer was waited for (the bound, --timeout-scale applied)."""
    agent_exited: bool = False
    replayed_updates: dict[str, int] = Field(default_factory=dict)
    """session/load: updates that came before its answer (the replayed history)."""


class ToolCallEvidence(_Model):
    tool_call_id: str
    at: float
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    raw_input: Any = None


class PermissionEvidence(_Model):
    at: float
    request_id: Any
    tool_call: dict[str, Any]
    options: list[dict[str, Any]]
    decision: Literal["allow", "refuse", "cancelled"]
    reason: str
    answer: dict[str, Any]


class McpCallEvidence(_Model):
    at: float
    tool: str
    arguments: dict[str, Any]
    result: Any = None
    is_error: bool = False
    connection: int = 1


class AgentRequestEvidence(_Model):
    """A request from the agent that we refused (fs/*, terminal/*, unknown methods)."""

    at: float
    method: str
    error_code: int


class BoundHit(_Model):
    """A count that the agent controls went over the bound of what we keep: the first ones are
    kept, the rest counted. What the judge needs of the rest is kept apart (see editor/session.py)."""

    what: str
    """What was counted: "tool calls", "permission requests", "MCP calls"..."""
    seen: int
    kept: int
    kept_what: str = "kept"
    """What `kept` counts, when not the first ones of `what` themselves."""
    turn: str | None = None
    """The turn it happened in (its name), None for the journey as a whole."""

    def sentence(self) -> str:
        where = f"turn {self.turn}: " if self.turn else ""
        return f"{where}{self.seen:,} {self.what}, the first {self.kept:,} {self.kept_what}"


class TurnEvidence(_Model):
    name: str
    process: int
    session_id: str | None = None
    mode: Literal["default", "plan", "regular"] = "default"
    prompt_text: str
    has_image: bool = False
    sent_at: float
    answered_at: float | None = None
    stop_reason: Any = None
    error: dict[str, Any] | None = None
    timed_out: bool = False
    bound_s: float | None = None
    """How long the answer to session/prompt was waited for (--timeout-scale applied)."""
    agent_exited: bool = False
    reply_text: str = ""
    """The text of this turn's agent_message_chunk updates, joined (capped, see reply_length)."""
    reply_length: int = 0
    thought_text: str = ""
    update_counts: dict[str, int] = Field(default_factory=dict)
    late_updates: dict[str, int] = Field(default_factory=dict)
    """Updates that came after the answer to session/prompt: recorded, never part of the reply."""
    tool_calls: list[ToolCallEvidence] = Field(default_factory=list)
    permissions: list[PermissionEvidence] = Field(default_factory=list)
    agent_requests: list[AgentRequestEvidence] = Field(default_factory=list)
    mcp_calls: list[McpCallEvidence] = Field(default_factory=list)
    cancel_sent_at: float | None = None
    cancel_trigger: Literal["tool_call", "permission", "process", "bound"] | None = None
    command_seen_at: float | None = None
    sees_every_process: bool | None = None
    """Stop a running turn: tracking saw every process of the agent (a cgroup, a container, a
    holder of its own), so its sleep shows up when it runs."""
    process_wait_s: float | None = None
    """Stop a running turn: how long a tool call about the sleep reported `in_progress` waited for
    the sleep's process before it was the trigger: 30 s where tracking sees every process of the
    agent (a cgroup, a container, a holder of its own), 3 s where it cannot."""
    sleep_left: list[Leftover] = Field(default_factory=list)
    workspace_before: dict[str, str] | None = None
    workspace_after: dict[str, str] | None = None
    target_file: str | None = None
    target_file_exists: bool | None = None


class PlanSwitchEvidence(_Model):
    """How Rondar's rule found Plan mode in the session/new answer (or did not)."""

    how: Literal["mode", "config-option"] | None = None
    plan_value: str | None = None
    config_id: str | None = None
    initial_value: str | None = None
    offered_modes: list[str] = Field(default_factory=list)
    offered_config_values: list[str] = Field(default_factory=list)


class JourneyEvidence(_Model):
    journey: str
    markers: dict[str, str] = Field(default_factory=dict)
    processes: list[ProcessEvidence] = Field(default_factory=list)
    requests: list[RequestEvidence] = Field(default_factory=list)
    turns: list[TurnEvidence] = Field(default_factory=list)
    plan_switch: PlanSwitchEvidence | None = None
    mcp_calls_outside_turns: list[McpCallEvidence] = Field(default_factory=list)
    protocol_warnings: list[ProtocolWarning] = Field(default_factory=list)
    model_stub_used: bool = False
    """The agent was pointed at the scripted model endpoint (`run --model-stub`)."""
    model_requests: list[RequestRecord] = Field(default_factory=list)
    """What the agent sent the scripted model endpoint in this journey, and what it decided."""
    bounds_hit: list[BoundHit] = Field(default_factory=list)
    """Each count of the agent's that went over what we keep ("20,000 tool calls, the first 200 kept")."""
    stopped_early: str | None = None
    """Why the journey's script stopped before its end (the agent exited, a bound ran out...)."""
    interrupted: bool = False
    """The run was stopped (Ctrl-C, SIGTERM) before this journey ended."""
    runner_error: str | None = None


class Frame(_Model):
    at: float
    process: int
    direction: Literal["to-agent", "from-agent", "stderr", "note"]
    text: str


class Failure(_Model):
    id: str
    message: str
    doc: str
    detail: str = ""


class JourneyResult(_Model):
    id: str
    title: str
    doc: str
    verdict: Literal["pass", "fail", "error"]
    failures: list[Failure] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    duration_s: float = 0.0
    evidence: JourneyEvidence
    transcript: list[Frame] | None = None


class RunResult(_Model):
    schema_: Literal["acp-journeys/result/1"] = Field(RESULT_SCHEMA, alias="schema")
    tool_version: str
    agent_command: list[str]
    launch: dict[str, Any] = Field(default_factory=dict)
    subject: dict[str, str] = Field(default_factory=dict)
    """What was tested, for release gates: {"sha": ..., "image": ...} where known."""
    started_at: str
    ended_at: str | None = None
    partial: bool = False
    strict: bool = False
    docs_url: str
    machine: dict[str, Any] = Field(default_factory=dict)
    timeout_scale: float = 1.0
    model_stub: dict[str, Any] | None = None
    """With `--model-stub`: that it served, how many requests, in which dialects."""
    journeys: list[JourneyResult] = Field(default_factory=list)
    verdict: Literal["pass", "fail"] = "fail"
    passed: int = 0
    failed: int = 0
    tiers: Tiers | None = None
    """Opt-in tiers beside Rondar's verdict (`run --tier protocol`); they never change it."""

    def __repr__(self) -> str:
        # Short: Python 3.11's asyncio.run reprs its main task, this result included, twice as it
        # gives SIGINT back (signal._int_to_enum), and the full repr of every journey's evidence
        # cost 1 to 2 ms of CPU a run. The whole result is model_dump's.
        return (f"RunResult(verdict={self.verdict!r}, passed={self.passed}, failed={self.failed}, "
                f"journeys={len(self.journeys)}, partial={self.partial})")


# --- the protocol tier (#26): its own evidence and verdicts, beside Rondar's -----------------


class TierCheck(_Model):
    id: str
    level: Literal["MUST", "SHOULD"]
    verdict: Literal["pass", "fail", "warn", "skip"]
    detail: str = ""
    anchor: str
    """The link to the ACP spec's section of the rule."""


class ProtocolTier(_Model):
    probe: JourneyEvidence | None = None
    """The tier's own agent process: what its probe sent and what came back."""
    probe_sent: dict[str, float] = Field(default_factory=dict)
    """When each notification of the probe went out (they get no answer to time them by)."""
    probe_transcript: list[Frame] | None = None
    duration_s: float = 0.0
    checks: list[TierCheck] = Field(default_factory=list)
    verdict: Literal["pass", "fail"] = "fail"
    """fail: a MUST check failed, or none could be judged. SHOULD checks warn, never fail."""
    musts_applicable: int = 0
    """MUST checks that applied (not skipped)."""
    musts_passed: int = 0


class Tiers(_Model):
    protocol: ProtocolTier | None = None


RunResult.model_rebuild()
