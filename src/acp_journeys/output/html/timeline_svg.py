"""A journey's timeline as inline SVG, drawn to scale: one band of lanes per agent process.

Rules of this module:
- Linear time: x is proportional to the seconds of the evidence over the drawn range; a zoomed
  panel is the same drawing over a shorter range, never a broken or stretched axis.
- Markup only through `htmlsafe` (every label and tooltip is untrusted text). No style
  attributes (the page's CSP allows its one stylesheet only): colours are CSS classes.
- Every point has a `<title>` tooltip with its time and whole detail; labels that would overlap
  are stacked on up to `LEVELS` rows and dropped after that (the tooltip stays), higher
  `priority` first, so the cancel latency is always written.
- Many points on one pixel (10,000 update frames) are drawn once, with the count in the tooltip.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from acp_journeys.output.html.htmlsafe import attr, text
from acp_journeys.output.html.timeline import LANES, JourneyTimeline, Point, seconds

WIDTH = 1100
GUTTER = 132
RIGHT = 14
X0, X1 = GUTTER, WIDTH - RIGHT
AXIS_H = 22
HEADER_H = 20
MARK_H = 16
LEVEL_H = 13
LEVELS = 4
CHAR_W = 6.1
LANE_TITLES = {"process": "process", "requests": "requests, turns", "updates": "updates",
               "tools": "tools, permissions", "cancel": "stop", "model": "model stub", "mcp": "MCP, no turn"}
KNOWN_UPDATES = ("agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan",
                 "user_message_chunk", "available_commands_update", "current_mode_update", "config_option_update")
_DEDUP = {"update", "tool-status", "warning", "model", "mcp", "agent-request"}


def update_class(kind: str) -> str:
    return "u-" + kind.replace("_", "-") if kind in KNOWN_UPDATES else "u-other"


@dataclass
class _Label:
    point: Point
    x: float
    anchor: str
    level: int


class _Scale:
    def __init__(self, t0: float, t1: float) -> None:
        self.t0, self.t1 = t0, t1 if t1 > t0 else t0 + 1e-3

    def x(self, t: float) -> float:
        t = min(max(t, self.t0), self.t1)
        return X0 + (t - self.t0) / (self.t1 - self.t0) * (X1 - X0)

    def inside(self, p: Point) -> bool:
        end = p.end if p.end is not None else p.at
        return end >= self.t0 and p.at <= self.t1


def nice_step(span: float, ticks: int = 8) -> float:
    raw = span / max(ticks, 1)
    if raw <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def _tick_text(t: float, step: float) -> str:
    digits = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    if step < 1 and abs(step * 10 ** digits - round(step * 10 ** digits)) > 1e-9:
        digits += 1
    return f"{t:.{digits}f} s"


def _place_labels(points: list[Point], scale: _Scale) -> list[_Label]:
    placed: list[_Label] = []
    taken: list[list[tuple[float, float]]] = [[] for _ in range(LEVELS)]
    for p in sorted((p for p in points if p.label), key=lambda p: (-p.priority, p.at)):
        if p.at < scale.t0 and (p.end is None or p.end < scale.t0):
            continue
        x = scale.x(p.at) + (3 if p.end is not None else 6)
        width = len(p.label) * CHAR_W
        anchor = "start"
        if x + width > X1:
            x, anchor = max(scale.x(p.at) - 6, X0 + width), "end"
        left, right = (x, x + width) if anchor == "start" else (x - width, x)
        for level in range(LEVELS):
            if all(right + 6 < a or left - 6 > b for a, b in taken[level]):
                taken[level].append((left, right))
                placed.append(_Label(p, x, anchor, level))
                break
    return placed


def _title(p: Point, more: int = 0) -> str:
    when = seconds(p.at) + (f" → {seconds(p.end)} ({seconds(p.end - p.at)})" if p.end is not None else "")
    extra = f" (and {more} more here)" if more else ""
    return f"<title>{text(when + ': ' + (p.detail or p.label) + extra)}</title>"


def _marker(p: Point, scale: _Scale, y: float, more: int, lane_end: float) -> str:
    x = scale.x(p.at)
    mid = y + MARK_H / 2
    tone = f" {p.tone}" if p.tone else ""
    title = _title(p, more)
    kind = p.kind
    if kind == "alive":
        end = scale.x(p.end) if p.end is not None else X1
        dash = "" if p.end is not None else " open"
        return f'<g class="m-alive{dash}">{title}<line x1="{x:.1f}" y1="{mid:.1f}" x2="{end:.1f}" y2="{mid:.1f}"/></g>'
    if p.end is not None or kind in ("turn", "request", "initialize", "cancel-answer"):
        end = scale.x(p.end) if p.end is not None else X1
        open_ = "" if p.end is not None else " open"
        h = {"turn": 12, "cancel-answer": 6}.get(kind, 8)
        top = mid - h / 2
        return (f'<g class="m-{kind}{tone}{open_}">{title}<rect x="{x:.1f}" y="{top:.1f}" '
                f'width="{max(end - x, 2):.1f}" height="{h}" rx="2"/></g>')
    if kind == "update":
        return (f'<g class="m-update {update_class(p.group)}">{title}<line x1="{x:.1f}" y1="{y + 2:.1f}" '
                f'x2="{x:.1f}" y2="{y + MARK_H - 2:.1f}"/></g>')
    if kind == "stdin":
        return (f'<g class="m-stdin">{title}<line x1="{x:.1f}" y1="{y:.1f}" x2="{x:.1f}" '
                f'y2="{lane_end:.1f}"/><circle cx="{x:.1f}" cy="{mid:.1f}" r="3"/></g>')
    shapes = {
        "start": f'<circle cx="{x:.1f}" cy="{mid:.1f}" r="4"/>',
        "exit": f'<circle cx="{x:.1f}" cy="{mid:.1f}" r="4.5"/>',
        "last-ended": f'<rect x="{x - 3.5:.1f}" y="{mid - 3.5:.1f}" width="7" height="7" rx="1"/>',
        "tool-call": f'<circle cx="{x:.1f}" cy="{mid:.1f}" r="4.5"/>',
        "tool-status": f'<circle cx="{x:.1f}" cy="{mid:.1f}" r="2.6"/>',
        "model": f'<circle cx="{x:.1f}" cy="{mid:.1f}" r="3.5"/>',
        "permission": f'<path d="M{x:.1f} {mid - 5:.1f}l5 5-5 5-5-5z"/>',
        "seen": f'<path d="M{x:.1f} {mid - 5:.1f}l5 5-5 5-5-5z"/>',
        "mcp": f'<rect x="{x - 4:.1f}" y="{mid - 4:.1f}" width="8" height="8"/>',
        "agent-request": f'<rect x="{x - 3.5:.1f}" y="{mid - 3.5:.1f}" width="7" height="7"/>',
        "cancel": f'<path d="M{x - 5:.1f} {mid - 5:.1f}h10l-5 9z"/>',
        "killed": f'<path d="M{x - 4:.1f} {mid - 4:.1f}l8 8m0-8l-8 8"/>',
    }
    shape = shapes.get(kind, f'<path d="M{x:.1f} {mid - 5:.1f}l5 9h-10z"/>')  # leftovers, warnings
    return f'<g class="m-{kind}{tone}">{title}{shape}</g>'


def _lane(name: str, points: list[Point], scale: _Scale, y: float, note: str = "") -> tuple[str, float]:
    visible = [p for p in points if scale.inside(p)]
    labels = _place_labels(visible, scale)
    levels = max((lab.level + 1 for lab in labels), default=0)
    height = MARK_H + levels * LEVEL_H + 6
    parts = [f'<g class="lane lane-{name}">',
             f'<rect class="lane-bg" x="{X0}" y="{y:.1f}" width="{X1 - X0}" height="{height - 2:.1f}"/>',
             f'<text class="lane-title" x="{X0 - 8}" y="{y + 12:.1f}">{text(LANE_TITLES.get(name, name))}</text>']
    if note:
        parts.append(f'<text class="note" x="{X0 + 6}" y="{y + 12:.1f}">{text(note)}</text>')
    # Lines joining the status changes of one tool call.
    groups: dict[str, list[float]] = {}
    for p in visible:
        if p.kind in ("tool-call", "tool-status"):
            groups.setdefault(p.group, []).append(scale.x(p.at))
    for xs in groups.values():
        if len(xs) > 1:
            parts.append(f'<line class="m-call-line" x1="{min(xs):.1f}" y1="{y + MARK_H / 2:.1f}" '
                         f'x2="{max(xs):.1f}" y2="{y + MARK_H / 2:.1f}"/>')
    seen: dict[tuple[str, str, int], int] = {}
    drawn: list[tuple[Point, int]] = []
    for p in sorted(visible, key=lambda p: (p.kind != "alive", p.end is None, p.at)):
        if p.kind in _DEDUP:
            key = (p.kind, p.group, round(scale.x(p.at)))
            if key in seen:
                drawn[seen[key]] = (drawn[seen[key]][0], drawn[seen[key]][1] + 1)
                continue
            seen[key] = len(drawn)
        drawn.append((p, 0))
    parts.extend(_marker(p, scale, y, more, y + height - 2) for p, more in drawn)
    for lab in labels:
        p = lab.point
        cls = "label" + (f" {p.tone}" if p.tone else "")
        extra = ""
        if p.kind == "cancel-answer":
            cls += " cancel-latency"
            if p.value is not None:
                extra = f' data-latency-s="{p.value:.4f}"'
        ly = y + MARK_H + 10 + lab.level * LEVEL_H
        parts.append(f'<text class="{cls}" x="{lab.x:.1f}" y="{ly:.1f}" text-anchor="{lab.anchor}"{extra}>'
                     f'{text(p.label)}</text>')
    parts.append("</g>")
    return "".join(parts), height


def draw(timeline: JourneyTimeline, t0: float, t1: float, *, label: str, notes: bool = True) -> str:
    """One panel: the axis, then each process's lanes, then the journey's own lanes (`notes`:
    say in the updates lane when no frame was kept)."""
    scale = _Scale(t0, t1)
    body: list[str] = []
    y = AXIS_H + 4.0
    for proc in timeline.processes:
        body.append(f'<text class="proc-title" x="4" y="{y + 14:.1f}">{text(proc.title)}</text>')
        y += HEADER_H
        by_lane: dict[str, list[Point]] = {}
        for p in proc.points:
            by_lane.setdefault(p.lane, []).append(p)
        for name in LANES:
            points = by_lane.get(name, [])
            note = ""
            if name == "updates" and not timeline.updates_kept and notes:
                note = "the frames of a passing journey are not kept (--transcripts keeps them): no ticks"
            if note and not any(p.kind == "turn" for p in by_lane.get("requests", [])):
                note = ""  # a process with no turn has no updates to miss
            if name != "process" and not note and not any(scale.inside(p) for p in points):
                continue
            svg, height = _lane(name, points, scale, y, note)
            body.append(svg)
            y += height
        y += 6
    by_lane = {}
    for p in timeline.journey_points:
        by_lane.setdefault(p.lane, []).append(p)
    for name in ("model", "mcp"):
        if any(scale.inside(p) for p in by_lane.get(name, [])):
            svg, height = _lane(name, by_lane[name], scale, y)
            body.append(svg)
            y += height
    height = y + 4
    step = nice_step(scale.t1 - scale.t0)
    axis = []
    first = math.ceil(scale.t0 / step - 1e-9)
    for k in range(first, first + 200):
        t = k * step
        if t > scale.t1 + 1e-9:
            break
        x = scale.x(t)
        axis.append(f'<line class="grid" x1="{x:.1f}" y1="{AXIS_H - 4}" x2="{x:.1f}" y2="{height - 4:.1f}"/>'
                    f'<text class="tick" x="{x:.1f}" y="{AXIS_H - 8}">{text(_tick_text(t, step))}</text>')
    return (f'<svg class="timeline" viewBox="0 0 {WIDTH} {height:.0f}" role="img" '
            f'aria-label="{attr(label)}" xmlns="http://www.w3.org/2000/svg">'
            + "".join(axis) + "".join(body) + "</svg>")


ZOOM_SHARE = 0.35
"""A stretch shorter than this share of the journey gets a zoomed panel of its own."""


def panels(timeline: JourneyTimeline) -> list[tuple[str, str]]:
    """(title, svg): the whole journey from 0 s, then zoomed panels (each to scale over its own
    range) where points crowd: each busy stretch when long quiet gaps split the journey (a stop
    answered 30 s after the rest), else the stretch of the turns when it is short."""
    from acp_journeys.output.html.timeline import clusters

    end = max(timeline.end, 1e-3)
    out = [(f"the whole journey, 0 – {end:.2f} s", draw(timeline, 0.0, end, label="whole journey, to scale"))]
    points = timeline.all_points()
    times = [t for p in points for t in (p.at, p.end) if t is not None]
    stretches = clusters(times, end)
    if len(stretches) <= 1:
        turns = [p for p in points if p.kind in ("turn", "cancel-answer")]
        stretches = [(min(p.at for p in turns), max(p.end or p.at for p in turns))] if turns else []
    shortest = end
    for a, b in stretches:
        pad = max((b - a) * 0.03, 0.003)
        lo, hi = max(0.0, a - pad), min(end, b + pad)
        if hi - lo > ZOOM_SHARE * end:
            continue
        shortest = min(shortest, hi - lo)
        title = f"zoom {lo:.3f} – {hi:.3f} s"
        out.append((title, draw(timeline, lo, hi, label=f"{title}, to scale", notes=False)))
    stop = _stop_stretch(points)
    if stop is not None:
        a, b = stop
        pad = max((b - a) * 0.05, 0.002)
        lo, hi = max(0.0, a - pad), min(end, b + pad)
        if hi - lo <= ZOOM_SHARE * shortest:
            title = f"zoom on the stop {lo:.3f} – {hi:.3f} s"
            out.append((title, draw(timeline, lo, hi, label=f"{title}, to scale", notes=False)))
    return out


def _stop_stretch(points: list[Point]) -> tuple[float, float] | None:
    """From what led to session/cancel (the command seen, tool calls and permission requests of
    the 2 s before) to the answer and the sleeps left: the seconds a slow stop is about."""
    cancels = [p for p in points if p.kind == "cancel"]
    if not cancels:
        return None
    sent = max(p.at for p in cancels)
    before = [p.at for p in points if (p.lane == "tools" or p.kind == "seen") and sent - 2.0 <= p.at <= sent]
    after = [t for p in points if p.lane == "cancel" for t in (p.at, p.end) if t is not None]
    return min([sent, *before]), max([sent, *after])


_SAFE_ID = re.compile(r"[^a-z0-9-]+")


def dom_id(prefix: str, value: str) -> str:
    return prefix + (_SAFE_ID.sub("-", value.lower()).strip("-") or "x")
