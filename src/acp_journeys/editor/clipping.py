"""What the agent sends, kept within bounds: every value and count it controls has one in the evidence.

Rules of this module: pure functions over what they are given. A value over its bound is kept
shortened (or as a string that says why it was not kept), never dropped silently, so that
result.json stays writable and within verify's depth bound whatever the agent sends; a count over
its bound keeps the first ones and notes the rest (`note_over`, a `BoundHit` in the evidence).
"""

from __future__ import annotations

import json
from typing import Any

from acp_journeys.protocol.json_depth import json_depth_over
from acp_journeys.rules.evidence import BoundHit, Leftover

MAX_AGENT_JSON_DEPTH = 32
"""Agent JSON kept in the evidence nests at most this deep (result.json's own bound is larger)."""
NAME_LIMIT = 128
"""An update kind, an agent request's method, a tool call's kind or status."""
MCP_KEYS_KEPT = 32


def clip_json(value: Any, limit: int = 8192) -> Any:
    """Large or deep values (a 4 MB result, a huge rawInput, JSON nested 300 deep) are kept as a
    clipped string: result.json must stay writable and within verify's depth bound."""
    if json_depth_over(value, MAX_AGENT_JSON_DEPTH):
        return f"[JSON nested deeper than {MAX_AGENT_JSON_DEPTH} levels, not kept]"
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return f"[a value that is not JSON: {type(value).__name__}]"
    return value if len(text) <= limit else text[:limit] + "…"


def clip_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"…[{len(text)} characters]"


def clip_values(value: Any, limit: int) -> dict[str, Any]:
    """An MCP call's arguments (or result) with each value clipped on its own, so that its keys
    stay readable (a create_plan's title beside a huge description); at most MCP_KEYS_KEPT keys."""
    if not isinstance(value, dict):
        return clip_dict(value, limit)
    out: dict[str, Any] = {}
    left = limit
    for n, (key, item) in enumerate(value.items()):
        if n >= MCP_KEYS_KEPT:
            out["…"] = f"[{len(value) - MCP_KEYS_KEPT} more arguments not kept]"
            break
        key = clip_text(str(key), NAME_LIMIT)
        room = max(left, 256)
        out[key] = clip_text(item, room) if isinstance(item, str) else clip_json(item, room)
        left -= json_size(out[key])
    return out


def json_size(value: Any) -> int:
    """About how many characters `value` takes in result.json (it is JSON already)."""
    return len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))


def clip_dict(value: Any, limit: int = 8192) -> dict[str, Any]:
    """`clip_json` for a field that must stay an object: a clipped value is kept under "clipped"."""
    clipped = clip_json(value, limit)
    return clipped if isinstance(clipped, dict) else {"clipped": clipped}


def note_over(hits: dict[tuple[Any, Any], BoundHit], out: list[BoundHit], what: str, turn: str | None,
              kept: int, kept_what: str = "kept") -> None:
    """One more of `what` (in `turn`) beyond the `kept` first ones: its BoundHit, made at the first."""
    hit = hits.get((what, turn))
    if hit is None:
        hit = hits[(what, turn)] = BoundHit(what=what, seen=kept, kept=kept, kept_what=kept_what, turn=turn)
        out.append(hit)
    hit.seen += 1


LEFTOVERS_KEPT = 100
"""Processes left by one agent process that are listed (each still killed); the rest counted."""
ARGV_CHARS = 8192
"""The characters of one left process's argv kept, all its arguments together."""


def kept_leftovers(found: list[Any], hits: dict[tuple[Any, Any], BoundHit], out: list[BoundHit],
                   what: str) -> list[Leftover]:
    """The first LEFTOVERS_KEPT of `found` (each with pid, command and cmdline, as launch's ProcInfo), their argv clipped;
    the rest noted over the bound in `out`."""
    kept = []
    for p in found[:LEFTOVERS_KEPT]:
        argv, room = [], ARGV_CHARS
        for arg in p.cmdline:
            if room <= 0:
                argv.append(f"[{len(p.cmdline) - len(argv)} more arguments]")
                break
            argv.append(clip_text(arg, room))
            room -= len(arg)
        kept.append(Leftover(pid=p.pid, command=clip_text(p.command, ARGV_CHARS), argv=argv))
    for _ in found[LEFTOVERS_KEPT:]:
        note_over(hits, out, what, None, LEFTOVERS_KEPT)
    return kept
