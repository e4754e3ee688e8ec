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

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
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
                _count(self.request.replayed_updates, kind)  # type: ignore[union-attr]
            elif action is Do.COUNT_LATE:
                _count(self.last_turn.late_updates, kind)  # type: ignore[union-attr]
            elif action is Do.DROP:
                pass
            elif turn is None:
                raise AssertionError(f"{action} outside a turn")  # ROUTES is wrong, not the agent
            elif action is Do.COUNT:
                _count(turn.update_counts, kind)
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
        call_id = str(update.get("toolCallId"))
        known = next((c for c in turn.tool_calls if c.tool_call_id == call_id), None)
        if known is None:
            known = ToolCallEvidence(tool_call_id=call_id, at=self.clock.now())
            turn.tool_calls.append(known)
        for field, key in (("title", "title"), ("kind", "kind"), ("status", "status"), ("raw_input", "rawInput")):
            if update.get(key) is not None:
                value = update[key]
                setattr(known, field, _clip_json(value) if field == "raw_input" else str(value))


def _count(counts: dict[str, int], kind: str) -> None:
    counts[kind] = counts.get(kind, 0) + 1


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
        self.journey = catalog.JOURNEYS_BY_ID[journey_id]
        self.sandbox = sandbox
        self.argv = argv
        self.bounds = bounds
        self.clock = Clock()
        self.evidence = JourneyEvidence(journey=journey_id)
        self.transcript: list[Frame] = []
        self.sessions: list[AgentSession] = []

    @property
    def current_turn(self) -> TurnEvidence | None:
        """The turn running now (its session/prompt not answered), of the latest process with one."""
        return next((s.router.turn for s in reversed(self.sessions) if s.router.turn is not None), None)

    def mcp_servers(self) -> list[dict[str, Any]]:
        command = self.sandbox.mcp_command()
        return [{"name": "rondar", "command": command[0], "args": command[1:], "env": []}]

    def on_mcp_call(self, record: Any) -> None:
        call = McpCallEvidence(at=self.clock.since(record.at), tool=record.tool,
                               arguments=_clip_dict(dict(record.arguments), 1 << 20), result=record.result,
                               is_error=record.is_error, connection=record.connection)
        turn = self.current_turn
        if turn is not None and turn.answered_at is None:
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
        self.router = UpdateRouter(ctx.clock)
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
        e.leftovers = [Leftover(pid=p.pid, command=p.command, argv=list(p.cmdline)) for p in leftovers]
        if not leftovers and e.last_process_ended_at is None:
            e.last_process_ended_at = clock.now()  # it ended between the window's close and the listing
        await stopping
        self.evidence.stderr_tail = self.conn.stderr_text()
        self.evidence.stderr_bytes = self.conn.stderr_bytes

    # --- requests ----------------------------------------------------------------------------

    async def _call(self, method: str, params: dict[str, Any], timeout: float) -> tuple[RequestEvidence, Answer]:
        assert self.conn is not None
        record = RequestEvidence(method=method, process=self.index, params=_summary(params),
                                 sent_at=self.ctx.clock.now())
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
            if turn is not None:
                turn.permissions.append(record)
            if self.on_permission is not None:
                self.on_permission(record)
            return {"outcome": answer.outcome}, None
        if turn is not None:
            turn.agent_requests.append(AgentRequestEvidence(at=self.ctx.clock.now(), method=request.method,
                                                            error_code=jsonrpc.METHOD_NOT_FOUND))
        return None, {"code": jsonrpc.METHOD_NOT_FOUND,
                      "message": f"{request.method} is not offered: the client advertised no capabilities"}


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
        switch.offered_modes.append(mode_id)
        if switch.how is None and (mode_id.lower() in ("plan", "planning") or name.lower() in ("plan", "planning")):
            switch.how, switch.plan_value = "mode", mode_id
            switch.initial_value = modes.get("currentModeId")
    if switch.how:
        return switch
    for option in answer.get("configOptions") or []:
        if not isinstance(option, dict) or option.get("category") != "mode":
            continue
        values = _option_values(option.get("options"))
        switch.offered_config_values += values
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


def _clip_dict(value: Any, limit: int = 8192) -> dict[str, Any]:
    """`_clip_json` for a field that must stay an object: a clipped value is kept under "clipped"."""
    clipped = _clip_json(value, limit)
    return clipped if isinstance(clipped, dict) else {"clipped": clipped}
