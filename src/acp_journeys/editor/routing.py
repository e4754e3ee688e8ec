"""Where a `session/update` goes: `UpdateRouter` and its table `ROUTES`, for one agent process.

Rules of this module: the router holds the only state that routing reads (the running turn, the
answered one, the request under way), and nothing else reads or sets that state but through the
router's transitions. No I/O, no processes: it is fed updates and writes evidence. Every count an
agent controls has a bound (see editor/session.py for the journey's own).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Callable

from acp_journeys.editor.clipping import NAME_LIMIT, clip_json, clip_text, note_over
from acp_journeys.editor.connection import Clock
from acp_journeys.protocol import framing
from acp_journeys.rules.evidence import BoundHit, RequestEvidence, ToolCallEvidence, TurnEvidence

REPLY_TEXT_LIMIT = framing.DEFAULT_MAX_LINE
"""A reply up to the frame bound is kept whole: the judge reads all of it, and so does verify."""
THOUGHT_TEXT_LIMIT = 64 << 10
TOOL_CALLS_KEPT = 200
"""Tool calls of a turn kept (by toolCallId; the judge needs only the first one of a turn)."""
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
TOOL_CALL_ID_LIMIT = 256
TITLE_LIMIT = 1024
RAW_INPUT_LIMIT = 4096


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
        call_id = clip_text(str(update.get("toolCallId")), TOOL_CALL_ID_LIMIT)
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
                setattr(known, field, clip_json(value, limit) if field == "raw_input" else clip_text(str(value), limit))

    def _count(self, counts: dict[str, int], kind: str, turn: str | None) -> None:
        """counts[kind] += 1, with at most UPDATE_KINDS_KEPT names that ACP does not know (a
        dict of them is small, so counting them is cheap); the rest go to OTHER_KINDS."""
        if kind in KNOWN_UPDATE_KINDS:
            counts[kind] = counts.get(kind, 0) + 1
            return
        kind = clip_text(kind, NAME_LIMIT)
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


def _text_of(update: dict[str, Any]) -> str | None:
    """The text of a chunk whose content is a text block; None for an image, a resource..."""
    content = update.get("content")
    text = content.get("text") if isinstance(content, dict) and content.get("type") == "text" else None
    return text if isinstance(text, str) else None
