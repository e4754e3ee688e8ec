"""A journey of result.json read as plain JSON, defensively: every value with a default, every frame
for what its text says.

Rules of this module: input is JSON (dicts and lists), never the pydantic model; a value of the
wrong type reads as its default (a result.json of a neighbouring version still reads), and a frame
cut at its size limit is read with patterns instead of JSON. Nothing here draws.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LABEL_CHARS = 48
_KIND = re.compile(r'"sessionUpdate"\s*:\s*"([^"]{1,64})"')
_METHOD = re.compile(r'"method"\s*:\s*"([^"]{1,64})"')


@dataclass(frozen=True)
class FrameInfo:
    """What one frame of the transcript is, as far as its text says."""

    what: str
    update_kind: str | None = None
    tool_call_id: str | None = None
    status: str | None = None
    title: str | None = None


# --- reading JSON defensively -------------------------------------------------------------------

def num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any, default: str = "") -> str:
    if value is None:
        return default
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def short(value: Any, chars: int = LABEL_CHARS) -> str:
    s = " ".join(as_str(value).split())
    return s if len(s) <= chars else s[: chars - 1] + "…"


def frame_info(frame: Mapping[str, Any]) -> FrameInfo:
    """The method, update kind and tool call of a frame; a frame cut at its size limit is read
    with patterns instead of JSON."""
    direction = as_str(frame.get("direction"))
    text = as_str(frame.get("text"))
    if direction in ("stderr", "note"):
        return FrameInfo(direction)
    try:
        message = json.loads(text)
    except ValueError:
        kind = _KIND.search(text)
        method = _METHOD.search(text)
        if kind:
            return FrameInfo(f"update {kind.group(1)}", update_kind=kind.group(1))
        return FrameInfo(method.group(1) if method else "not JSON")
    if not isinstance(message, dict):
        return FrameInfo("not a JSON object")
    method = message.get("method")
    if isinstance(method, str):
        params = as_dict(message.get("params"))
        update = as_dict(params.get("update"))
        kind = update.get("sessionUpdate")
        if method == "session/update" and isinstance(kind, str):
            call = update.get("toolCallId")
            status = update.get("status")
            return FrameInfo(f"update {short(kind, 40)}", update_kind=kind,
                             tool_call_id=as_str(call) if call is not None else None,
                             status=status if isinstance(status, str) else None,
                             title=update.get("title") if isinstance(update.get("title"), str) else None)
        return FrameInfo(short(method, 40))
    ident = short(message.get("id"), 16)
    if "error" in message:
        return FrameInfo(f"error #{ident}")
    return FrameInfo(f"answer #{ident}")
