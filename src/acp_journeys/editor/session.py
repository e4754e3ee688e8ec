"""The editor's side of one journey: start agent processes, speak ACP, record evidence.

Rules of this module: it drives and records; it never decides pass or fail (the judge does). It
never raises for what the agent does: a crash, a hang or garbage ends up in the evidence, and the
journey script checks `usable` to stop early. Every wait has a bound from `Bounds`.

Where a `session/update` goes is decided by `routing.UpdateRouter` alone (one per agent process):
nothing here reads or sets its state but through its transitions. What the agent sends is kept
clipped by `clipping`; where Plan mode is offered is read by `plan_switch`.
"""

from __future__ import annotations

import asyncio
import secrets
import string
from dataclasses import dataclass
from typing import Any, Callable

from acp_journeys.editor import permissions
from acp_journeys.editor.clipping import (
    NAME_LIMIT, clip_dict, clip_json, clip_text, clip_values, json_size, kept_leftovers, note_over)
from acp_journeys.editor.connection import AgentConnection, Answer, Clock
from acp_journeys.editor.routing import UpdateRouter
from acp_journeys.launch import AgentProcess, LaunchError, Sandbox
from acp_journeys.protocol import jsonrpc
from acp_journeys.rules import catalog
from acp_journeys.rules.evidence import (
    AgentRequestEvidence,
    BoundHit,
    Frame,
    JourneyEvidence,
    McpCallEvidence,
    PermissionEvidence,
    PlanSwitchEvidence,
    ProcessEvidence,
    RequestEvidence,
    TurnEvidence,
)

# What an agent can make us keep: every count it controls has a bound, and each is linear to
# follow (no scan of what is kept per update). Over a bound the first ones are kept, the rest are
# counted (a `BoundHit` in the evidence says so), and what the judge needs of the rest is kept
# apart: the known update kinds always have their own count, a successful create_plan or get_plan
# is kept after the bound too (the MCP hub bounds those by its plans). Sized so that seven
# journeys' evidence stays well under result.json's bound, whatever the agent sends.
# The router's counts are bounded in routing.py, each value's size in clipping.py.
PERMISSIONS_KEPT = 200
"""Permission requests of a turn kept (each is still answered by the policy)."""
AGENT_REQUESTS_KEPT = 50
"""Refused agent requests of a turn kept (each is still answered with an error)."""
MCP_CALLS_KEPT = 100
"""MCP tool calls of a journey kept; later ones only when they saved or read a plan."""
MCP_VALUE_LIMIT = 64 << 10
"""The arguments (and the result) of an MCP call, kept each value on its own (a create_plan's
title stays whole beside a huge description), the values of one call sharing this many characters."""
MCP_CHARS_KEPT = 1 << 20
"""Once a journey's kept MCP calls hold this many characters, each later one keeps MCP_VALUE_LIMIT_LATER."""
MCP_VALUE_LIMIT_LATER = 2048


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
        call = McpCallEvidence(at=self.clock.since(record.at), tool=clip_text(str(record.tool), NAME_LIMIT),
                               arguments=clip_values(record.arguments, limit),
                               result=clip_values(record.result, limit) if isinstance(record.result, dict)
                               else clip_json(record.result, limit),
                               is_error=record.is_error, connection=record.connection)
        self._mcp_chars += json_size(call.arguments) + json_size(call.result)
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
        e.leftovers = kept_leftovers(leftovers, self.ctx._hits, self.ctx.evidence.bounds_hit,
                                      f"processes left by process {self.index + 1}")
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
        record.result = clip_json(answer.result)
        self._note_answer(record, answer, method)
        return record, answer

    def _note_answer(self, record: RequestEvidence | TurnEvidence, answer: Answer, what: str) -> None:
        """How a request ended, on its evidence; a missing answer stops the journey."""
        record.error = clip_dict(answer.error) if answer.error is not None else None
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
        self.evidence.agent_capabilities = clip_dict(caps) if isinstance(caps, dict) else {}
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
            turn.stop_reason = clip_json(result.get("stopReason"), 256)
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
                at=self.ctx.clock.now(), request_id=clip_json(request.id, 256),
                tool_call=clip_dict(params.get("toolCall") or {}),
                options=[clip_dict(o) for o in params.get("options") or [] if isinstance(o, dict)],
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
                                                            method=clip_text(request.method, NAME_LIMIT),
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


def _summary(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k != "prompt"}
