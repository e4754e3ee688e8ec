"""The points of a journey's timeline, read from its evidence and transcript: data only, no markup.

Rules of this module:
- Input: one journey of result.json as plain JSON (dicts and lists), never the pydantic model, and
  every field is read with a default: a result.json of a neighbouring version, where a field of
  the evidence was added, renamed or dropped, still gives a timeline (what is missing is not drawn).
- Times are the evidence's own: seconds since the journey started. Nothing is computed from a
  clock; the same file always gives the same points.
- Each agent process gets lanes: `process` (start, initialize, stdin closed, exit, the end of its
  last process when one outlived it, leftovers as the window closed, protocol warnings), `requests` (our requests and the turns, as spans), `updates` (one tick per
  session/update frame, by kind: only when the transcript was kept), `tools` (tool calls and their
  status changes, permission requests with our answer, MCP calls, refused agent requests) and
  `cancel` (the command seen, session/cancel, the answer with its latency, sleeps left). The
  journey has lanes of its own for model-stub requests and MCP calls outside any turn.
- Labels are short (`evidence_json.LABEL_CHARS`); the whole story of a point is its `detail` (a tooltip).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from acp_journeys.output.html.evidence_json import as_dict, as_list, as_str, frame_info, num, short
from acp_journeys.rules.catalog import RULES

POINTS_KEPT = 3000
"""Points of one process (and of the journey's own lanes) drawn, the earliest ones: the page of
a result with a flood of frames or calls stays a page (result.json holds everything)."""
DETAIL_CHARS = 600
CANCEL_BOUND_S = RULES.cancel_s
"""Rondar's bound on the stop (the judge's rule); the timeline only writes it next to the latency."""

LANES = ("process", "requests", "updates", "tools", "cancel")


@dataclass(frozen=True)
class Point:
    at: float
    lane: str
    kind: str
    """What it is, for the drawing: start, initialize, stdin, exit, killed, last-ended, leftover, warning,
    request, turn, update, tool-call, tool-status, permission, mcp, agent-request, seen,
    cancel, cancel-answer, sleep-left, model."""
    label: str = ""
    detail: str = ""
    end: float | None = None
    """A span ends here; None for a point."""
    tone: str = ""
    """ok, bad, warn or empty."""
    group: str = ""
    """Points of one thing (the status changes of one tool call) share a group."""
    priority: int = 0
    """Labels of higher priority are placed first (the cancel latency is never crowded out)."""
    value: float | None = None
    """A number the point stands for (the cancel latency in seconds)."""


@dataclass
class ProcessTimeline:
    index: int
    title: str
    points: list[Point] = field(default_factory=list)


@dataclass
class JourneyTimeline:
    end: float
    processes: list[ProcessTimeline]
    journey_points: list[Point]
    """Model-stub requests and MCP calls outside any turn (lanes `model` and `mcp`)."""
    updates_kept: bool
    """Whether the transcript was there to draw the update ticks from."""

    def all_points(self) -> list[Point]:
        return [p for proc in self.processes for p in proc.points] + self.journey_points


def seconds(value: float) -> str:
    return f"{value:.3f} s"


# --- the points ---------------------------------------------------------------------------------

def journey_timeline(journey: Mapping[str, Any]) -> JourneyTimeline:
    evidence = as_dict(journey.get("evidence"))
    transcript = journey.get("transcript")
    frames = [as_dict(f) for f in as_list(transcript)]
    processes: dict[int, ProcessTimeline] = {}

    def lane_owner(index: Any) -> ProcessTimeline:
        i = int(index) if isinstance(index, int) and not isinstance(index, bool) else 0
        if i not in processes:
            processes[i] = ProcessTimeline(i, f"agent process {i + 1}")  # shown from 1, as every output
        return processes[i]

    for p in as_list(evidence.get("processes")):
        p = as_dict(p)
        owner = lane_owner(p.get("index"))
        pid = p.get("pid")
        argv = " ".join(as_str(a) for a in as_list(p.get("argv")))
        owner.title = f"agent process {owner.index + 1}" + (f" · pid {pid}" if isinstance(pid, int) else "")
        owner.points.extend(_process_points(p, argv))
    for r in as_list(evidence.get("requests")):
        r = as_dict(r)
        point = _request_point(r)
        if point is not None:
            lane_owner(r.get("process")).points.append(point)
    for t in as_list(evidence.get("turns")):
        t = as_dict(t)
        lane_owner(t.get("process")).points.extend(_turn_points(t))
    for w in as_list(evidence.get("protocol_warnings")):
        w = as_dict(w)
        at = num(w.get("at"))
        if at is not None:
            kind = as_str(w.get("kind"), "warning")
            lane_owner(w.get("process")).points.append(
                Point(at, "process", "warning", f"warning: {short(kind, 20)}", short(w.get("message"), DETAIL_CHARS),
                      tone="warn"))
    _add_frame_points(frames, lane_owner)

    journey_points: list[Point] = []
    for m in as_list(evidence.get("mcp_calls_outside_turns")):
        point = _mcp_point(as_dict(m), lane="mcp")
        if point is not None:
            journey_points.append(point)
    for record in as_list(evidence.get("model_requests")):
        point = _model_request_point(as_dict(record))
        if point is not None:
            journey_points.append(point)

    end = max([num(journey.get("duration_s")) or 0.0]
              + [t for p in (*[q for proc in processes.values() for q in proc.points], *journey_points)
                 for t in (p.at, p.end) if t is not None]
              + [num(f.get("at")) or 0.0 for f in frames])
    for owner in processes.values():
        if len(owner.points) > POINTS_KEPT:
            owner.points = sorted(owner.points, key=lambda q: q.at)[:POINTS_KEPT]
    if len(journey_points) > POINTS_KEPT:
        journey_points = sorted(journey_points, key=lambda q: q.at)[:POINTS_KEPT]
    ordered = [processes[i] for i in sorted(processes)]
    return JourneyTimeline(end=end, processes=ordered, journey_points=journey_points,
                           updates_kept=transcript is not None)


def _add_frame_points(frames: list[dict[str, Any]], lane_owner: Callable[[Any], ProcessTimeline]) -> None:
    """The agent's frames on its process's lane: each update, and each status of a tool call."""
    for i, frame in enumerate(frames):
        at = num(frame.get("at"))
        if at is None or as_str(frame.get("direction")) != "from-agent":
            continue
        info = frame_info(frame)
        owner = lane_owner(frame.get("process"))
        if info.update_kind is not None:
            owner.points.append(Point(at, "updates", "update", "", f"frame {i + 1}: {info.what}",
                                      group=info.update_kind))
        if info.tool_call_id is not None and info.status is not None:
            owner.points.append(Point(at, "tools", "tool-status", short(info.status, 20),
                                      f"tool call {short(info.tool_call_id, 40)}: {info.update_kind} "
                                      f"{short(info.status, 40)} (frame {i + 1})",
                                      group=f"call:{info.tool_call_id}"))


def _model_request_point(record: Mapping[str, Any]) -> Point | None:
    """One request to the model stub on the journey's lane: what the stub decided, and why."""
    at = num(record.get("at"))
    if at is None:
        return None
    decision = as_dict(record.get("decision"))
    said = (f"tool {short(decision.get('tool_call'), 24)}" if decision.get("tool_call") else
            "text" if "text" in decision else short(record.get("dialect") or "request", 24))
    status = record.get("status")
    bad = isinstance(status, int) and status >= 400
    detail = "; ".join(x for x in (
        f"#{as_str(record.get('seq'))} {as_str(record.get('method'))} {as_str(record.get('path'))}",
        f"status {as_str(status)}", f"intent {as_str(record.get('intent'))}" if record.get("intent") else "",
        short(record.get("why"), 300)) if x)
    return Point(at, "model", "model", f"model: {said}", detail, tone="bad" if bad else "")


def _process_points(p: Mapping[str, Any], argv: str) -> list[Point]:
    points: list[Point] = []
    started = num(p.get("started_at"))
    stdin = num(p.get("stdin_closed_at"))
    exited = num(p.get("exited_at"))
    killed_after = num(p.get("killed_after"))
    killed = stdin + killed_after if stdin is not None and killed_after is not None else None
    gone = exited if exited is not None else killed
    if started is not None:
        error = p.get("start_error")
        if error:
            points.append(Point(started, "process", "start", "did not start", short(error, DETAIL_CHARS), tone="bad"))
        else:
            points.append(Point(started, "process", "alive", "", f"the agent process: {short(argv, 300)}",
                                end=gone))
            points.append(Point(started, "process", "start", "start", f"started: {short(argv, 300)}"))
    sent, answered = num(p.get("initialize_sent_at")), num(p.get("initialize_answered_at"))
    if sent is not None:
        timed_out = bool(p.get("initialize_timed_out"))
        label = "initialize: no answer" if timed_out or answered is None else "initialize"
        points.append(Point(sent, "process", "initialize", label,
                            "initialize answered: " + short(p.get("initialize_raw"), DETAIL_CHARS)
                            if p.get("initialize_raw") else "initialize got no answer",
                            end=answered if answered is not None else None,
                            tone="bad" if answered is None else ""))
    if stdin is not None:
        mid = bool(p.get("turn_running_at_close"))
        points.append(Point(stdin, "process", "stdin", "stdin closed" + (" mid-turn" if mid else ""),
                            "we closed the agent's standard input" + (" while a turn ran" if mid else "")))
    if exited is not None:
        code = p.get("exit_code")
        early = bool(p.get("exited_before_stdin_close"))
        label = f"exit {code}" if code is not None else "exited"
        if stdin is not None and not early:
            label += f" (+{exited - stdin:.2f} s)"
        points.append(Point(exited, "process", "exit", label,
                            "the process ended" + (" before its input was closed" if early else "")
                            + (f" with code {code}" if code is not None else ""),
                            tone="bad" if early else "ok"))
    if killed is not None:
        points.append(Point(killed, "process", "killed", f"killed {killed_after:.0f} s after stdin closed",
                            "the agent did not end by itself after its input closed, so it was killed",
                            tone="bad", priority=1))
    last = num(p.get("last_process_ended_at"))
    window = num(p.get("leftover_window_closes_at"))
    if last is not None and (gone is None or last > gone):
        # Its processes outlived it, and ended within Rondar's window: part of its ending.
        points.append(Point(last, "process", "last-ended", f"last process ended (+{last - gone:.2f} s)"
                            if gone is not None else "last process ended",
                            f"the last of the agent's processes ended at {seconds(last)}"
                            + (f", {seconds(last - gone)} after the agent itself" if gone is not None else "")
                            + (f", within the window that closed at {seconds(window)}" if window is not None else ""),
                            tone="ok"))
    leftovers = [as_dict(x) for x in as_list(p.get("leftovers"))]
    if leftovers:
        at = window if window is not None else gone if gone is not None else (
            stdin if stdin is not None else started or 0.0)
        names = "; ".join(f"pid {as_str(x.get('pid'))}: {short(x.get('command'), 80)}" for x in leftovers[:20])
        points.append(Point(at, "process", "leftover", f"{len(leftovers)} left: {short(leftovers[0].get('command'), 24)}",
                            f"left after the agent ended: {names}"
                            + (f" (alive when the window closed at {seconds(window)})" if window is not None else ""),
                            tone="bad", priority=1))
    return points


def _request_point(r: Mapping[str, Any]) -> Point | None:
    sent = num(r.get("sent_at"))
    if sent is None:
        return None
    method = as_str(r.get("method"), "request")
    answered = num(r.get("answered_at"))
    error = r.get("error")
    if error:
        outcome, tone = f"error {short(as_dict(error).get('message') or error, 40)}", "bad"
    elif r.get("timed_out"):
        outcome, tone = "no answer in time", "bad"
    elif r.get("agent_exited"):
        outcome, tone = "the agent exited", "bad"
    else:
        outcome, tone = "answered", ""
    replayed = as_dict(r.get("replayed_updates"))
    detail = f"{method} sent at {seconds(sent)}; {outcome}"
    if answered is not None:
        detail += f" after {seconds(answered - sent)}"
    if replayed:
        detail += "; replayed updates: " + ", ".join(f"{k} {v}" for k, v in replayed.items())
    label = short(method.removeprefix("session/"), 24) + ("" if tone == "" else f": {short(outcome, 24)}")
    return Point(sent, "requests", "request", label, detail, end=answered, tone=tone)


def _mcp_point(m: Mapping[str, Any], lane: str = "tools") -> Point | None:
    at = num(m.get("at"))
    if at is None:
        return None
    tool = as_str(m.get("tool"), "?")
    error = bool(m.get("is_error"))
    detail = (f"MCP {tool}({short(m.get('arguments'), 200)}) → {short(m.get('result'), 300)}"
              + (" (an error)" if error else ""))
    return Point(at, lane, "mcp", f"MCP {short(tool, 24)}", detail, tone="bad" if error else "")


def _turn_points(t: Mapping[str, Any]) -> list[Point]:
    points: list[Point] = []
    name = as_str(t.get("name"), "turn")
    sent = num(t.get("sent_at"))
    answered = num(t.get("answered_at"))
    stop = t.get("stop_reason")
    error = t.get("error")
    if error:
        outcome, tone = "error", "bad"
    elif t.get("timed_out"):
        outcome, tone = "no answer", "bad"
    elif t.get("agent_exited"):
        outcome, tone = "the agent exited", "bad"
    elif stop is not None:
        outcome, tone = short(stop, 20), ""
    else:
        outcome, tone = "no answer", "bad"
    counts = as_dict(t.get("update_counts"))
    if sent is not None:
        mode = as_str(t.get("mode"), "default")
        detail = (f"turn {name} ({mode} mode): “{short(t.get('prompt_text'), 300)}”"
                  + (" + an image" if t.get("has_image") else "")
                  + f"; {outcome}"
                  + (f" after {seconds(answered - sent)}" if answered is not None else "")
                  + ("; updates: " + ", ".join(f"{k} {v}" for k, v in counts.items()) if counts else "")
                  + ("; reply: “" + short(t.get("reply_text"), 200) + "”" if t.get("reply_text") else ""))
        points.append(Point(sent, "requests", "turn", f"turn {short(name, 20)}: {outcome}", detail, end=answered,
                            tone=tone))
    for c in as_list(t.get("tool_calls")):
        c = as_dict(c)
        at = num(c.get("at"))
        if at is None:
            continue
        call_id = as_str(c.get("tool_call_id"), "?")
        title = c.get("title") or c.get("kind") or call_id
        status = as_str(c.get("status"), "no status")
        points.append(Point(at, "tools", "tool-call", f"tool {short(title, 28)}",
                            f"tool call {short(call_id, 40)}: {short(title, 200)} (kind {as_str(c.get('kind'), '?')}); "
                            f"last status {status}; input {short(c.get('raw_input'), 200)}",
                            group=f"call:{call_id}", tone="bad" if status == "failed" else ""))
    for q in as_list(t.get("permissions")):
        q = as_dict(q)
        at = num(q.get("at"))
        if at is None:
            continue
        decision = as_str(q.get("decision"), "?")
        about = as_dict(q.get("tool_call"))
        points.append(Point(at, "tools", "permission", f"permission: {short(decision, 12)}",
                            f"permission request for {short(about.get('title') or about.get('toolCallId'), 120)}; "
                            f"we answered {decision}: {short(q.get('reason'), 200)}; "
                            f"answer {short(q.get('answer'), 200)}",
                            tone="warn" if decision != "allow" else ""))
    for m in as_list(t.get("mcp_calls")):
        point = _mcp_point(as_dict(m))
        if point is not None:
            points.append(point)
    for a in as_list(t.get("agent_requests")):
        a = as_dict(a)
        at = num(a.get("at"))
        if at is not None:
            method = as_str(a.get("method"), "?")
            points.append(Point(at, "tools", "agent-request", f"asked {short(method, 24)}",
                                f"the agent asked {short(method, 80)}; we refused it "
                                f"(error {as_str(a.get('error_code'))})", tone="warn"))
    points.extend(_cancel_points(t, answered, stop))
    return points


def _cancel_points(t: Mapping[str, Any], answered: float | None, stop: Any) -> list[Point]:
    points: list[Point] = []
    seen = num(t.get("command_seen_at"))
    trigger = t.get("cancel_trigger")
    cancel = num(t.get("cancel_sent_at"))
    if seen is not None:
        how = {"process": ("sleep process appeared", "the sleep process appeared among the agent's processes"),
               "tool_call": ("tool call under way", "a tool call about the sleep is under way"),
               "permission": ("permission asked", "a permission request for the sleep came"),
               "bound": ("nothing ran (bound)", "nothing showed the sleep running within the turn's bound")}
        label, what = how.get(as_str(trigger), (f"seen: {short(trigger or 'command', 16)}",
                                                f"trigger {short(trigger, 60)}" if trigger else "the command ran"))
        wait = num(t.get("process_wait_s"))
        if trigger == "tool_call" and wait is not None:
            label = f"no sleep process in {wait:.0f} s"
            what += (f", and no sleep process appeared within {wait:.0f} s"
                     + (" though tracking sees every process of the agent" if t.get("sees_every_process") is True
                        else " (this tracking cannot see every process of the agent)"))
        points.append(Point(seen, "cancel", "seen", label, f"the command counts as running: {what}",
                            tone="warn" if trigger in ("bound", "tool_call") else ""))
    if cancel is not None:
        points.append(Point(cancel, "cancel", "cancel", "session/cancel" + (
                                f" on the {short(trigger, 12).replace('_', ' ')}" if trigger else ""),
                            f"we sent session/cancel at {seconds(cancel)}"
                            + (f" (trigger: {short(trigger, 30)})" if trigger else "")))
        if answered is not None:
            latency = round(answered - cancel, 4)  # the evidence's own precision, for label and value alike
            slow = latency > CANCEL_BOUND_S
            good = not slow and stop == "cancelled"
            label = f"answered {short(stop, 16)} in {seconds(latency)}"
            points.append(Point(cancel, "cancel", "cancel-answer", label,
                                f"the turn answered {short(stop, 40)} {seconds(latency)} after session/cancel "
                                f"(Rondar's bound: {CANCEL_BOUND_S:.0f} s)",
                                end=answered, tone="ok" if good else "bad", priority=2, value=latency))
        else:
            points.append(Point(cancel, "cancel", "cancel-answer", "no answer to the cancel",
                                f"the turn got no answer after session/cancel (Rondar's bound: {CANCEL_BOUND_S:.0f} s)",
                                tone="bad", priority=2))
    left = [as_dict(x) for x in as_list(t.get("sleep_left"))]
    if left:
        at = answered if answered is not None else (cancel or 0.0)
        names = "; ".join(f"pid {as_str(x.get('pid'))}: {short(x.get('command'), 80)}" for x in left[:20])
        points.append(Point(at, "cancel", "sleep-left", f"{len(left)} sleep left", f"still running: {names}",
                            tone="bad", priority=1))
    return points


def cancel_latencies(timeline: JourneyTimeline) -> list[float]:
    """The cancel latencies the timeline writes, in order (for the page and its tests)."""
    return [p.value for p in timeline.all_points() if p.kind == "cancel-answer" and p.value is not None]


def clusters(times: Sequence[float], span: float, *, gap_share: float = 0.25, min_gap: float = 1.0,
             most: int = 3) -> list[tuple[float, float]]:
    """Busy stretches of a timeline that a long quiet gap (over `gap_share` of `span` and over
    `min_gap` seconds) splits, at most `most`; one stretch means no zoom is needed."""
    ordered = sorted(set(times))
    if len(ordered) < 2 or span <= 0:
        return [(ordered[0], ordered[0])] if ordered else []
    gaps = sorted(((b - a, i) for i, (a, b) in enumerate(zip(ordered, ordered[1:]))), reverse=True)
    cuts = sorted(i for g, i in gaps[: most - 1] if g > max(gap_share * span, min_gap))
    out: list[tuple[float, float]] = []
    start = 0
    for i in cuts:
        out.append((ordered[start], ordered[i]))
        start = i + 1
    out.append((ordered[start], ordered[-1]))
    return out
