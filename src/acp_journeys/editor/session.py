"""The editor's side of one journey: start agent processes, speak ACP, record evidence.

Rules of this module: it drives and records; it never decides pass or fail (the judge does). It
never raises for what the agent does: a crash, a hang or garbage ends up in the evidence, and the
journey script checks `usable` to stop early. Every wait has a bound from `Bounds`.

Where a `session/update` goes is decided by `UpdateRouter` and its table `ROUTES` alone: the
router holds the only state that routing reads (the running turn, the answered one, the request
under way), and nothing else here reads or sets that state but through the router.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import string
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable

from acp_journeys.editor import permissions
from acp_journeys.editor.connection import AgentConnection, Answer, Clock
from acp_journeys.launch import AgentProcess, LaunchError, Sandbox
from acp_journeys.protocol import framing, jsonrpc
from acp_journeys.protocol.json_depth import json_depth_over
from acp_journeys.rules import catalog
from acp_journeys.rules.evidence import (
    AgentRequestEvidence,
    BoundHit,
    Frame,
    JourneyEvidence,
    Leftover,
    McpCallEvidence,
    PermissionEvidence,
    PlanSwitchEvidence,
    ProcessEvidence,
    RequestEvidence,
    ToolCallEvidence,
    TurnEvidence,
)

REPLY_TEXT_LIMIT = framing.DEFAULT_MAX_LINE
"""A reply up to the frame bound is kept whole: the judge reads all of it, and so does verify."""
MAX_AGENT_JSON_DEPTH = 32
"""Agent JSON kept in the evidence nests at most this deep (result.json's own bound is larger)."""
THOUGHT_TEXT_LIMIT = 64 << 10

# What an agent can make us keep: every count it controls has a bound, and each is linear to
# follow (no scan of what is kept per update). Over a bound the first ones are kept, the rest are
# counted (a `BoundHit` in the evidence says so), and what the judge needs of the rest is kept
# apart: the known update kinds always have their own count, a successful create_plan or get_plan
# is kept after the bound too (the MCP hub bounds those by its plans). Sized so that seven
# journeys' evidence stays well under result.json's bound, whatever the agent sends.
TOOL_CALLS_KEPT = 200
"""Tool calls of a turn kept (by toolCallId; the judge needs only the first one of a turn)."""
PERMISSIONS_KEPT = 200
"""Permission requests of a turn kept (each is still answered by the policy)."""
AGENT_REQUESTS_KEPT = 50
"""Refused agent requests of a turn kept (each is still answered with an error)."""
MCP_CALLS_KEPT = 100
"""MCP tool calls of a journey kept; later ones only when they saved or read a plan."""
UPDATE_KINDS_KEPT = 16
"""Update kinds that ACP does not name, counted each under its own name, per count."""
OTHER_KINDS = "(other kinds)"
"""The count of every update kind beyond `UPDATE_KINDS_KEPT` unknown ones."""
KNOWN_UPDATE_KINDS = frozenset({
    "user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
    "plan", "available_commands_update", "current_mode_update", "config_option_update",
    "session_info_update", "usage_update", "notice", "compaction_update", "compaction_summary_chunk",
})
"""ACP v1's `sessionUpdate` values: always counted under their name, whatever else came first."""
NAME_LIMIT = 128
"""An update kind, an agent request's method, a tool call's kind or status."""
TOOL_CALL_ID_LIMIT = 256
TITLE_LIMIT = 1024
RAW_INPUT_LIMIT = 4096
MCP_VALUE_LIMIT = 64 << 10
"""The arguments (and the result) of an MCP call, kept each value on its own (a create_plan's
title stays whole beside a huge description), the values of one call sharing this many characters."""
MCP_CHARS_KEPT = 1 << 20
"""Once a journey's kept MCP calls hold this many characters, each later one keeps MCP_VALUE_LIMIT_LATER."""
MCP_VALUE_LIMIT_LATER = 2048
MODES_KEPT = 100
"""Modes (and mode config values) of session/new that the evidence lists."""


@dataclass(frozen=True)
class Bounds:
    """Every wait of a journey. Rondar's own bounds (exit, cancel) are not scaled: they are the rule."""

    scale: float = 1.0
    initialize_s: float = 60.0
    request_s: float = 60.0
    turn_s: float = 180.0
    exit_s: float = catalog.RULES.exit_s
    cancel_s: float = catalog.RULES.cancel_s
    grace_s: float = 2.0

    def initialize(self) -> float:
        return self.initialize_s * self.scale

    def request(self) -> float:
        return self.request_s * self.scale

    def turn(self) -> float:
        return self.turn_s * self.scale


# --- where a session/update goes ---------------------------------------------------------------


class RouteState(str, Enum):
    """What an agent process of a journey is doing, as far as its updates are concerned."""

    NO_TURN = "no-turn"
    """Nothing runs and no turn was answered (or the last one got no answer): dropped."""
    IN_REQUEST = "in-request"
    """session/new, session/load or a change of mode awaits its answer and no turn runs."""
    IN_TURN = "in-turn"
    """A session/prompt is out and not answered."""
    CANCELLING = "cancelling"
    """The same after session/cancel: an update still belongs to the turn until its answer."""
    ANSWERED = "answered"
    """The last turn got its answer and no request is under way: what comes now is late."""


class Do(str, Enum):
    """One thing the router does with an update."""

    COUNT = "count"                      # turn.update_counts[kind] += 1
    KEEP_REPLY = "keep-reply"            # a text content: reply_length, and the text up to the bound
    KEEP_THOUGHT = "keep-thought"        # a text content: thought_text, up to its bound
    RECORD_TOOL_CALL = "record-tool-call"  # a new or known ToolCallEvidence, by toolCallId
    TELL_SCRIPT = "tell-script"          # the journey script's on_update hook (the stop journey's trigger)
    COUNT_REPLAYED = "count-replayed"    # request.replayed_updates[kind] += 1 (session/load's history)
    COUNT_LATE = "count-late"            # last_turn.late_updates[kind] += 1, never part of its reply
    DROP = "drop"


ANY_OTHER_KIND = "*"
"""The `sessionUpdate` values that have no row of their own (plan, available_commands_update...)."""

_IN_A_TURN: dict[str, tuple[Do, ...]] = {
    "agent_message_chunk": (Do.COUNT, Do.KEEP_REPLY, Do.TELL_SCRIPT),
    "agent_thought_chunk": (Do.COUNT, Do.KEEP_THOUGHT, Do.TELL_SCRIPT),
    "tool_call": (Do.COUNT, Do.RECORD_TOOL_CALL, Do.TELL_SCRIPT),
    "tool_call_update": (Do.COUNT, Do.RECORD_TOOL_CALL, Do.TELL_SCRIPT),
    ANY_OTHER_KIND: (Do.COUNT, Do.TELL_SCRIPT),
}
ROUTES: dict[RouteState, dict[str, tuple[Do, ...]]] = {
    RouteState.NO_TURN: {ANY_OTHER_KIND: (Do.DROP,)},
    RouteState.IN_REQUEST: {ANY_OTHER_KIND: (Do.COUNT_REPLAYED,)},
    RouteState.IN_TURN: _IN_A_TURN,
    # A cancel changes nothing for updates: the judge counts what came before the answer.
    RouteState.CANCELLING: _IN_A_TURN,
    RouteState.ANSWERED: {ANY_OTHER_KIND: (Do.COUNT_LATE,)},
}
"""(state, update kind) -> what is done, in order. The one place that decides where an update goes."""


def route_for(state: RouteState, kind: str) -> tuple[Do, ...]:
    row = ROUTES[state]
    return row.get(kind, row[ANY_OTHER_KIND])


class UpdateRouter:
    """The routing state of one agent process and its transitions; no I/O, no processes.

    Transitions (each is one method, and only these change the state):
    - `begin_turn`: any state -> in-turn (the reply collected so far is dropped).
    - `cancel_sent`: in-turn -> cancelling (a cancel outside a turn changes nothing).
    - `answered` (the answer to session/prompt, at once as it is read): in-turn/cancelling ->
      answered.
    - `end_turn` (the journey script is done with the turn): -> answered if the turn got an
      answer, else -> no-turn (updates after a turn that got none belong to no turn).
    - `request_sent` / `request_done`: a request of ours other than session/prompt; it routes
      updates only while no turn runs.
    Agent requests (permissions, others) go to the running turn, else to the answered one.
    """

    def __init__(self, clock: Clock, bounds_hit: list[BoundHit] | None = None) -> None:
        self.clock = clock
        self.bounds_hit: list[BoundHit] = bounds_hit if bounds_hit is not None else []
        """Where a count over its bound is noted (the journey's evidence)."""
        self._hits: dict[tuple[str, str | None], BoundHit] = {}
        self._tool_calls: dict[str, ToolCallEvidence] = {}  # the running turn's, by toolCallId
        self.turn: TurnEvidence | None = None
        """The turn whose session/prompt is out and not answered."""
        self.last_turn: TurnEvidence | None = None
        """The turn answered last; None once a turn ends with no answer."""
        self.request: RequestEvidence | None = None
        self._reply_parts: list[str] = []  # joined into the turn's reply_text when it is answered
        self._reply_size = 0

    @property
    def state(self) -> RouteState:
        if self.turn is not None:
            return RouteState.CANCELLING if self.turn.cancel_sent_at is not None else RouteState.IN_TURN
        if self.request is not None:
            return RouteState.IN_REQUEST
        if self.last_turn is not None:
            return RouteState.ANSWERED
        return RouteState.NO_TURN

    @property
    def turn_of_agent_requests(self) -> TurnEvidence | None:
        return self.turn or self.last_turn

    # --- transitions ---

    def begin_turn(self, turn: TurnEvidence) -> None:
        self.turn = turn
        self._reply_parts, self._reply_size = [], 0
        self._tool_calls = {c.tool_call_id: c for c in turn.tool_calls}

    def cancel_sent(self, at: float) -> None:
        if self.turn is not None:
            self.turn.cancel_sent_at = at

    def answered(self, answered_at: float | None) -> None:
        if self.turn is not None:
            self._keep_reply(self.turn)
            self.turn.answered_at = answered_at
            self.last_turn, self.turn = self.turn, None

    def end_turn(self, turn: TurnEvidence, got_answer: bool) -> None:
        self._keep_reply(turn)
        self.last_turn = turn if got_answer else None
        self.turn = None

    def request_sent(self, record: RequestEvidence) -> None:
        self.request = record

    def request_done(self) -> None:
        self.request = None

    # --- routing ---

    def route(self, update: dict[str, Any],
              tell: Callable[[str, dict[str, Any]], None] | None = None) -> tuple[Do, ...]:
        """Do what `ROUTES` says for this update in the current state; returns what was done."""
        kind = str(update.get("sessionUpdate"))
        actions = route_for(self.state, kind)
        turn = self.turn
        for action in actions:
            if action is Do.COUNT_REPLAYED:
                self._count(self.request.replayed_updates, kind, None)  # type: ignore[union-attr]
            elif action is Do.COUNT_LATE:
                self._count(self.last_turn.late_updates, kind, self.last_turn.name)  # type: ignore[union-attr]
            elif action is Do.DROP:
                pass
            elif turn is None:
                raise AssertionError(f"{action} outside a turn")  # ROUTES is wrong, not the agent
            elif action is Do.COUNT:
                self._count(turn.update_counts, kind, turn.name)
            elif action is Do.KEEP_REPLY:
                self._reply_chunk(turn, _text_of(update))
            elif action is Do.KEEP_THOUGHT:
                text = _text_of(update)
                if text is not None and len(turn.thought_text) < THOUGHT_TEXT_LIMIT:
                    turn.thought_text = (turn.thought_text + text)[:THOUGHT_TEXT_LIMIT]
            elif action is Do.RECORD_TOOL_CALL:
                self._tool_call(turn, update)
            elif action is Do.TELL_SCRIPT:
                if tell is not None:
                    tell(kind, update)
        return actions

    def _reply_chunk(self, turn: TurnEvidence, text: str | None) -> None:
        if text is None:
            return
        turn.reply_length += len(text)
        if self._reply_size < REPLY_TEXT_LIMIT:  # parts, not a growing string: no quadratic copy
            self._reply_parts.append(text)
            self._reply_size += len(text)

    def _keep_reply(self, turn: TurnEvidence) -> None:
        if self._reply_parts:
            turn.reply_text = "".join(self._reply_parts)[:REPLY_TEXT_LIMIT]

    def _tool_call(self, turn: TurnEvidence, update: dict[str, Any]) -> None:
        call_id = _clip_text(str(update.get("toolCallId")), TOOL_CALL_ID_LIMIT)
        known = self._tool_calls.get(call_id)
        if known is None:
            if len(self._tool_calls) >= TOOL_CALLS_KEPT:
                # Counted, not kept: the judge needs only a turn's first tool call. A later update
                # of a call not kept is not counted again (we cannot remember every id).
                if update.get("sessionUpdate") == "tool_call":
                    self.note_over("tool calls", turn.name, TOOL_CALLS_KEPT)
                return
            known = ToolCallEvidence(tool_call_id=call_id, at=self.clock.now())
            self._tool_calls[call_id] = known
            turn.tool_calls.append(known)
        for field, key, limit in (("title", "title", TITLE_LIMIT), ("kind", "kind", NAME_LIMIT),
                                  ("status", "status", NAME_LIMIT), ("raw_input", "rawInput", RAW_INPUT_LIMIT)):
            if update.get(key) is not None:
                value = update[key]
                setattr(known, field, _clip_json(value, limit) if field == "raw_input" else _clip_text(str(value), limit))

    def _count(self, counts: dict[str, int], kind: str, turn: str | None) -> None:
        """counts[kind] += 1, with at most UPDATE_KINDS_KEPT names that ACP does not know (a
        dict of them is small, so counting them is cheap); the rest go to OTHER_KINDS."""
        if kind in KNOWN_UPDATE_KINDS:
            counts[kind] = counts.get(kind, 0) + 1
            return
        kind = _clip_text(kind, NAME_LIMIT)
        hit = self._hits.get(("kinds", id(counts)))
        if hit is not None:
            hit.seen += 1
        if kind not in counts:
            unknown = [k for k in counts if k not in KNOWN_UPDATE_KINDS and k != OTHER_KINDS]
            if len(unknown) >= UPDATE_KINDS_KEPT:
                if hit is None:
                    hit = self._hits[("kinds", id(counts))] = BoundHit(
                        what="updates of kinds that ACP does not name", seen=sum(counts[k] for k in unknown) + 1,
                        kept=UPDATE_KINDS_KEPT, kept_what=f"kinds counted by name, the others as {OTHER_KINDS!r}",
                        turn=turn)
                    self.bounds_hit.append(hit)
                kind = OTHER_KINDS
        counts[kind] = counts.get(kind, 0) + 1

    def note_over(self, what: str, turn: str | None, kept: int) -> None:
        """One more of `what` beyond the `kept` first ones."""
        note_over(self._hits, self.bounds_hit, what, turn, kept)


def note_over(hits: dict[tuple[Any, Any], BoundHit], out: list[BoundHit], what: str, turn: str | None,
              kept: int, kept_what: str = "kept") -> None:
    """One more of `what` (in `turn`) beyond the `kept` first ones: its BoundHit, made at the first."""
    hit = hits.get((what, turn))
    if hit is None:
        hit = hits[(what, turn)] = BoundHit(what=what, seen=kept, kept=kept, kept_what=kept_what, turn=turn)
        out.append(hit)
    hit.seen += 1


def _text_of(update: dict[str, Any]) -> str | None:
    """The text of a chunk whose content is a text block; None for an image, a resource..."""
    content = update.get("content")
    text = content.get("text") if isinstance(content, dict) and content.get("type") == "text" else None
    return text if isinstance(text, str) else None


def marker(prefix: str) -> str:
    alphabet = string.ascii_uppercase + string.digits
    return prefix + "-" + "".join(secrets.choice(alphabet) for _ in range(8))


class JourneyContext:
    """What a journey script works with: its sandbox, its evidence and its agent processes."""

    def __init__(self, journey_id: str, sandbox: Sandbox, argv: list[str], bounds: Bounds) -> None:
        self.journey = catalog.JOURNEYS_BY_ID.get(journey_id)
        """None for the protocol tier's probe, which is no journey of Rondar's."""
        self.sandbox = sandbox
        self.argv = argv
        self.bounds = bounds
        self.clock = Clock()
        self.evidence = JourneyEvidence(journey=journey_id)
        self.transcript: list[Frame] = []
        self.sessions: list[AgentSession] = []
        self._hits: dict[tuple[Any, Any], BoundHit] = {}  # the journey's own counts over a bound
        self._mcp_kept = 0
        self._mcp_chars = 0
        self._plans_read: set[tuple[str, str]] = set()  # (turn, plan id) of each get_plan kept after the bound

    @property
    def current_turn(self) -> TurnEvidence | None:
        """The turn running now (its session/prompt not answered), of the latest process with one."""
        return next((s.router.turn for s in reversed(self.sessions) if s.router.turn is not None), None)

    def mcp_servers(self) -> list[dict[str, Any]]:
        command = self.sandbox.mcp_command()
        return [{"name": "rondar", "command": command[0], "args": command[1:], "env": []}]

    def on_mcp_call(self, record: Any) -> None:
        turn = self.current_turn
        running = turn is not None and turn.answered_at is None
        limit = MCP_VALUE_LIMIT
        if self._mcp_kept >= MCP_CALLS_KEPT:
            # Over the bound, only what the judge reads of a plan turn: a plan saved, or a saved
            # plan read back (once per turn and plan). The hub saves at most MAX_PLANS plans.
            plan_id = record.result.get("id") if isinstance(record.result, dict) else None
            wanted = not record.is_error and isinstance(plan_id, str) and running and (
                record.tool == "create_plan"
                or (record.tool == "get_plan" and (turn.name, plan_id) not in self._plans_read))  # type: ignore[union-attr]
            if not wanted:
                note_over(self._hits, self.evidence.bounds_hit, "MCP calls", None, MCP_CALLS_KEPT,
                          "kept, and after them each plan saved or read back in a turn")
                return
            if record.tool == "get_plan":
                self._plans_read.add((turn.name, plan_id))  # type: ignore[union-attr]
            limit = MCP_VALUE_LIMIT_LATER
        else:
            self._mcp_kept += 1
        if self._mcp_chars >= MCP_CHARS_KEPT:
            limit = MCP_VALUE_LIMIT_LATER
        call = McpCallEvidence(at=self.clock.since(record.at), tool=_clip_text(str(record.tool), NAME_LIMIT),
                               arguments=_clip_values(record.arguments, limit),
                               result=_clip_values(record.result, limit) if isinstance(record.result, dict)
                               else _clip_json(record.result, limit),
                               is_error=record.is_error, connection=record.connection)
        self._mcp_chars += _size(call.arguments) + _size(call.result)
        if running:
            turn.mcp_calls.append(call)
        else:
            self.evidence.mcp_calls_outside_turns.append(call)

    async def start(self) -> "AgentSession":
        session = AgentSession(self, len(self.evidence.processes))
        self.sessions.append(session)
        await session.start()
        return session

    def stop_early(self, why: str) -> None:
        if self.evidence.stopped_early is None:
            self.evidence.stopped_early = why

    async def close_all(self) -> None:
        for session in self.sessions:
            await session.close()


class AgentSession:
    """One agent process, its connection and its ACP session."""

    def __init__(self, ctx: JourneyContext, index: int) -> None:
        self.ctx = ctx
        self.index = index
        self.evidence = ProcessEvidence(index=index, argv=list(ctx.argv), started_at=ctx.clock.now())
        ctx.evidence.processes.append(self.evidence)
        self.process: AgentProcess | None = None
        self.conn: AgentConnection | None = None
        self.session_id: str | None = None
        self.session_answer: dict[str, Any] | None = None
        self.policy: permissions.PolicyName = "allow-all"
        self.router = UpdateRouter(ctx.clock, ctx.evidence.bounds_hit)
        self.on_update: Callable[[str, dict[str, Any]], None] | None = None
        self.on_permission: Callable[[PermissionEvidence], None] | None = None
        self.exited: asyncio.Event = asyncio.Event()
        self._watch: asyncio.Task | None = None
        self._closed = False

    @property
    def usable(self) -> bool:
        return self.conn is not None and not self.conn.stdout_closed.is_set() and not self.exited.is_set()

    # --- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        try:
            self.process = await self.ctx.sandbox.start_agent(self.ctx.argv)
        except LaunchError as exc:
            self.evidence.start_error = str(exc)
            self.ctx.stop_early(f"process {self.index + 1} could not start")
            return
        self.evidence.pid = self.process.pid
        self.conn = AgentConnection(self.process, self.index, self.ctx.clock, self.ctx.transcript,
                                    self.ctx.evidence.protocol_warnings, self._notification, self._agent_request,
                                    on_response=self._response)
        self.conn.start()
        self._watch = asyncio.create_task(self._watch_exit())

    async def _watch_exit(self) -> None:
        assert self.process is not None
        while True:
            code = await self.process.wait(3600)
            if code is not None:
                break
        self.evidence.exit_code = code
        self.evidence.exited_at = self.ctx.clock.now()
        if self.evidence.stdin_closed_at is None:
            self.evidence.exited_before_stdin_close = True
            self.ctx.stop_early(f"process {self.index + 1} exited with code {code}")
        self.exited.set()

    async def close(self) -> None:
        """Close stdin; wait Rondar's 10 s for the exit; kill if needed; then find leftovers."""
        if self._closed or self.process is None:
            return
        self._closed = True
        assert self.conn is not None
        if self.conn.stdout_closed.is_set() and not self.exited.is_set():
            # Its stdout ended first: the exit is on its way; let it be recorded as an exit of
            # its own and not as one after we closed its input.
            try:
                await asyncio.wait_for(self.exited.wait(), self.ctx.bounds.grace_s)
            except asyncio.TimeoutError:
                pass
        if not self.exited.is_set():
            turn = self.router.turn
            self.evidence.turn_running_at_close = turn is not None and turn.answered_at is None
            self.evidence.stdin_closed_at = self.ctx.clock.now()
            await self.process.close_stdin()
            try:
                await asyncio.wait_for(self.exited.wait(), self.ctx.bounds.exit_s)
            except asyncio.TimeoutError:
                self.evidence.killed_after = self.ctx.bounds.exit_s
                await self.process.kill()
                try:
                    await asyncio.wait_for(self.exited.wait(), 10)
                except asyncio.TimeoutError:
                    pass
        # The pipes may outlive the process (a helper holding its stderr): read them to their
        # end meanwhile, but time the leftover scan from the process's end, not theirs.
        stopping = asyncio.create_task(self.conn.stop())
        if self._watch is not None and not self._watch.done():
            self._watch.cancel()
        # Rondar gives the agent 10 s to end by itself once its input closed: a process of its
        # own that ends within that window is part of its ending (a stdio server that sees end
        # of file, an adapter's child); what is alive when it closes (or 2 s after the agent's
        # own end, whichever is later) is left. The look ends as soon as nothing is left, so a
        # correct agent waits for nothing.
        clock, e = self.ctx.clock, self.evidence
        ended = e.exited_at if e.exited_at is not None else clock.now()
        closes_at = ended + self.ctx.bounds.grace_s
        if e.stdin_closed_at is not None:
            closes_at = max(closes_at, e.stdin_closed_at + self.ctx.bounds.exit_s)
        e.leftover_window_closes_at = round(closes_at, 3)
        remaining, first = True, True
        while remaining:
            remaining = bool(await self.ctx.sandbox.agent_processes())
            if not remaining:
                e.last_process_ended_at = ended if first else clock.now()
                break
            if clock.now() >= closes_at:
                break
            first = False
            await asyncio.sleep(min(0.1, max(closes_at - clock.now(), 0.0)))
        if not remaining:
            await stopping  # nothing is left to hold the pipes: the last bytes come at once
        leftovers = await self.ctx.sandbox.collect_leftovers()
        e.leftovers = _kept_leftovers(leftovers, self.ctx, f"processes left by process {self.index + 1}")
        if not leftovers and e.last_process_ended_at is None:
            e.last_process_ended_at = clock.now()  # it ended between the window's close and the listing
        await stopping
        self.evidence.stderr_tail = self.conn.stderr_text()
        self.evidence.stderr_bytes = self.conn.stderr_bytes
        self.evidence.answered_twice = list(self.conn.answered_twice)
        self.evidence.null_id_responses = list(self.conn.null_id_responses)

    # --- requests ----------------------------------------------------------------------------

    async def _call(self, method: str, params: dict[str, Any], timeout: float) -> tuple[RequestEvidence, Answer]:
        assert self.conn is not None
        record = RequestEvidence(method=method, process=self.index, params=_summary(params),
                                 sent_at=self.ctx.clock.now(), bound_s=round(timeout, 3))
        self.ctx.evidence.requests.append(record)
        self.router.request_sent(record)
        answer = await self.conn.request(method, params, timeout)
        self.router.request_done()
        record.answered_at = answer.answered_at
        record.result = _clip_json(answer.result)
        self._note_answer(record, answer, method)
        return record, answer

    def _note_answer(self, record: RequestEvidence | TurnEvidence, answer: Answer, what: str) -> None:
        """How a request ended, on its evidence; a missing answer stops the journey."""
        record.error = _clip_dict(answer.error) if answer.error is not None else None
        record.timed_out = answer.timed_out
        record.agent_exited = answer.agent_gone
        if answer.timed_out:
            self.ctx.stop_early(f"{what} got no answer within the bound")
        elif answer.agent_gone:
            self.ctx.stop_early(f"the agent ended during {what}")

    async def initialize(self) -> bool:
        """True when the agent answered initialize with a result (its version is the judge's)."""
        if self.conn is None:
            return False
        self.evidence.initialize_sent_at = self.ctx.clock.now()
        self.evidence.initialize_bound_s = round(self.ctx.bounds.initialize(), 3)
        answer = await self.conn.request(
            "initialize", {"protocolVersion": 1, "clientCapabilities": {}}, self.ctx.bounds.initialize())
        self.evidence.initialize_raw = answer.raw
        self.evidence.initialize_answered_at = answer.answered_at
        self.evidence.initialize_timed_out = answer.timed_out
        if not answer.ok or not isinstance(answer.result, dict):
            self.ctx.stop_early("initialize got no usable answer")
            return False
        caps = answer.result.get("agentCapabilities")
        self.evidence.agent_capabilities = _clip_dict(caps) if isinstance(caps, dict) else {}
        return True

    async def new_session(self) -> bool:
        params = {"cwd": self.ctx.sandbox.workspace, "mcpServers": self.ctx.mcp_servers()}
        _, answer = await self._call("session/new", params, self.ctx.bounds.request())
        if not answer.ok or not isinstance(answer.result, dict) or not isinstance(answer.result.get("sessionId"), str):
            self.ctx.stop_early("session/new gave no session")
            return False
        self.session_id = answer.result["sessionId"]
        self.session_answer = answer.result
        return True

    async def load_session(self, session_id: str) -> bool:
        params = {"sessionId": session_id, "cwd": self.ctx.sandbox.workspace, "mcpServers": self.ctx.mcp_servers()}
        _, answer = await self._call("session/load", params, self.ctx.bounds.request())
        if not answer.ok:
            self.ctx.stop_early("session/load failed")
            return False
        self.session_id = session_id
        self.session_answer = answer.result if isinstance(answer.result, dict) else {}
        return True

    async def set_mode(self, switch: PlanSwitchEvidence, value: str) -> bool:
        assert self.session_id is not None
        if switch.how == "mode":
            params = {"sessionId": self.session_id, "modeId": value}
            method = "session/set_mode"
        else:
            params = {"sessionId": self.session_id, "configId": switch.config_id, "value": value}
            method = "session/set_config_option"
        _, answer = await self._call(method, params, self.ctx.bounds.request())
        return answer.ok

    async def prompt(self, name: str, blocks: list[dict[str, Any]], *, mode: str = "default",
                     timeout: float | None = None) -> TurnEvidence:
        """Send one session/prompt and wait for its answer (or the bound)."""
        turn = self.begin_turn(name, blocks, mode)
        answer = await self.send_prompt(blocks, timeout if timeout is not None else self.ctx.bounds.turn())
        self.end_turn(turn, answer)
        return turn

    def begin_turn(self, name: str, blocks: list[dict[str, Any]], mode: str) -> TurnEvidence:
        text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        turn = TurnEvidence(name=name, process=self.index, session_id=self.session_id, mode=mode,
                            prompt_text=text, has_image=any(b.get("type") == "image" for b in blocks),
                            sent_at=self.ctx.clock.now())
        self.ctx.evidence.turns.append(turn)
        self.router.begin_turn(turn)
        return turn

    async def send_prompt(self, blocks: list[dict[str, Any]], timeout: float) -> Answer:
        assert self.conn is not None and self.session_id is not None
        turn = self.router.turn
        if turn is not None and turn.bound_s is None:
            turn.bound_s = round(timeout, 3)  # the judge names the bound that ran out
        return await self.conn.request("session/prompt", {"sessionId": self.session_id, "prompt": blocks}, timeout)

    def end_turn(self, turn: TurnEvidence, answer: Answer) -> None:
        self.router.end_turn(turn, got_answer=answer.raw is not None)
        turn.answered_at = answer.answered_at if answer.raw is not None else None
        if answer.raw is not None and answer.error is None:
            result = answer.result if isinstance(answer.result, dict) else {}
            turn.stop_reason = _clip_json(result.get("stopReason"), 256)
        self._note_answer(turn, answer, f"turn {turn.name}")

    async def cancel(self) -> None:
        assert self.conn is not None
        self.router.cancel_sent(self.ctx.clock.now())
        self.policy = "cancelled"
        await self.conn.notify("session/cancel", {"sessionId": self.session_id})

    # --- what the agent sends ------------------------------------------------------------------

    def _response(self, method: str, answer: Answer) -> None:
        if method == "session/prompt":
            self.router.answered(answer.answered_at)

    def _notification(self, message: jsonrpc.Notification) -> None:
        if message.method != "session/update" or not isinstance(message.params, dict):
            return
        _note_session_id(self.evidence.update_session_ids, message.params.get("sessionId"))
        update = message.params.get("update")
        if isinstance(update, dict):
            self.router.route(update, self.on_update)

    async def _agent_request(self, request: jsonrpc.Request) -> tuple[Any, dict[str, Any] | None]:
        turn = self.router.turn_of_agent_requests
        if request.method == "session/request_permission":
            answer = permissions.decide(self.policy, request.params)
            params = request.params if isinstance(request.params, dict) else {}
            record = PermissionEvidence(
                at=self.ctx.clock.now(), request_id=_clip_json(request.id, 256),
                tool_call=_clip_dict(params.get("toolCall") or {}),
                options=[_clip_dict(o) for o in params.get("options") or [] if isinstance(o, dict)],
                decision=answer.decision, reason=answer.reason, answer={"outcome": answer.outcome})
            if turn is not None and len(turn.permissions) < PERMISSIONS_KEPT:
                turn.permissions.append(record)
            elif turn is not None:
                self.router.note_over("permission requests", turn.name, PERMISSIONS_KEPT)
            if self.on_permission is not None:
                self.on_permission(record)
            return {"outcome": answer.outcome}, None
        if turn is not None and len(turn.agent_requests) < AGENT_REQUESTS_KEPT:
            turn.agent_requests.append(AgentRequestEvidence(at=self.ctx.clock.now(),
                                                            method=_clip_text(request.method, NAME_LIMIT),
                                                            error_code=jsonrpc.METHOD_NOT_FOUND))
        elif turn is not None:
            self.router.note_over("agent requests", turn.name, AGENT_REQUESTS_KEPT)
        return None, {"code": jsonrpc.METHOD_NOT_FOUND,
                      "message": f"{request.method} is not offered: the client advertised no capabilities"}


UPDATE_SESSION_IDS_KEPT = 8
"""Distinct sessionIds of updates kept per process (the protocol tier needs only the wrong ones)."""


def _note_session_id(counts: dict[str, int], session_id: Any) -> None:
    """Count the sessionId an update names, for the protocol tier (a non-string one is a wrong one)."""
    key = session_id[:128] if isinstance(session_id, str) else f"(not a string: {type(session_id).__name__})"
    if key in counts or len(counts) < UPDATE_SESSION_IDS_KEPT:
        counts[key] = counts.get(key, 0) + 1


def find_plan_switch(answer: dict[str, Any] | None) -> PlanSwitchEvidence:
    """Rondar's rule: a mode whose id or name is "plan" or "planning"; else a "plan" value of a
    configOptions entry of the category "mode"."""
    answer = answer or {}
    switch = PlanSwitchEvidence()
    modes = answer.get("modes") if isinstance(answer.get("modes"), dict) else {}
    for mode in modes.get("availableModes") or []:
        if not isinstance(mode, dict):
            continue
        mode_id, name = str(mode.get("id", "")), str(mode.get("name", ""))
        if len(switch.offered_modes) < MODES_KEPT:  # what a failure shows; every mode is still looked at
            switch.offered_modes.append(_clip_text(mode_id, NAME_LIMIT))
        if switch.how is None and (mode_id.lower() in ("plan", "planning") or name.lower() in ("plan", "planning")):
            switch.how, switch.plan_value = "mode", mode_id
            switch.initial_value = modes.get("currentModeId")
    if switch.how:
        return switch
    for option in answer.get("configOptions") or []:
        if not isinstance(option, dict) or option.get("category") != "mode":
            continue
        values = _option_values(option.get("options"))
        room = MODES_KEPT - len(switch.offered_config_values)
        switch.offered_config_values += [_clip_text(v, NAME_LIMIT) for v in values[:max(room, 0)]]
        plan = next((v for v in values if v.lower() == "plan"), None)
        if plan is not None:
            switch.how, switch.plan_value = "config-option", plan
            switch.config_id = str(option.get("id"))
            switch.initial_value = option.get("currentValue")
            break
    return switch


def _option_values(options: Any) -> list[str]:
    values: list[str] = []
    for item in options or []:
        if not isinstance(item, dict):
            continue
        if "options" in item:  # a group of options
            values += _option_values(item["options"])
        elif "value" in item:
            values.append(str(item["value"]))
    return values


def _summary(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k != "prompt"}


def _clip_json(value: Any, limit: int = 8192) -> Any:
    """Large or deep values (a 4 MB result, a huge rawInput, JSON nested 300 deep) are kept as a
    clipped string: result.json must stay writable and within verify's depth bound."""
    if json_depth_over(value, MAX_AGENT_JSON_DEPTH):
        return f"[JSON nested deeper than {MAX_AGENT_JSON_DEPTH} levels, not kept]"
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return f"[a value that is not JSON: {type(value).__name__}]"
    return value if len(text) <= limit else text[:limit] + "…"


LEFTOVERS_KEPT = 100
"""Processes left by one agent process that are listed (each still killed); the rest counted."""
ARGV_CHARS = 8192
"""The characters of one left process's argv kept, all its arguments together."""


def _kept_leftovers(found: list[Any], ctx: JourneyContext, what: str) -> list[Leftover]:
    kept = []
    for p in found[:LEFTOVERS_KEPT]:
        argv, room = [], ARGV_CHARS
        for arg in p.cmdline:
            if room <= 0:
                argv.append(f"[{len(p.cmdline) - len(argv)} more arguments]")
                break
            argv.append(_clip_text(arg, room))
            room -= len(arg)
        kept.append(Leftover(pid=p.pid, command=_clip_text(p.command, ARGV_CHARS), argv=argv))
    for _ in found[LEFTOVERS_KEPT:]:
        note_over(ctx._hits, ctx.evidence.bounds_hit, what, None, LEFTOVERS_KEPT)
    return kept


def _clip_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"…[{len(text)} characters]"


MCP_KEYS_KEPT = 32


def _clip_values(value: Any, limit: int) -> dict[str, Any]:
    """An MCP call's arguments (or result) with each value clipped on its own, so that its keys
    stay readable (a create_plan's title beside a huge description); at most MCP_KEYS_KEPT keys."""
    if not isinstance(value, dict):
        return _clip_dict(value, limit)
    out: dict[str, Any] = {}
    left = limit
    for n, (key, item) in enumerate(value.items()):
        if n >= MCP_KEYS_KEPT:
            out["…"] = f"[{len(value) - MCP_KEYS_KEPT} more arguments not kept]"
            break
        key = _clip_text(str(key), NAME_LIMIT)
        room = max(left, 256)
        out[key] = _clip_text(item, room) if isinstance(item, str) else _clip_json(item, room)
        left -= _size(out[key])
    return out


def _size(value: Any) -> int:
    """About how many characters `value` takes in result.json (it is JSON already)."""
    return len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))


def _clip_dict(value: Any, limit: int = 8192) -> dict[str, Any]:
    """`_clip_json` for a field that must stay an object: a clipped value is kept under "clipped"."""
    clipped = _clip_json(value, limit)
    return clipped if isinstance(clipped, dict) else {"clipped": clipped}
