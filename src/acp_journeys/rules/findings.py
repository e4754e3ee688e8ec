"""What a journey's checks find: failures, each id once, and warnings; and how a failure shows a value.

Rules of this module: pure, like the judge it serves (see judge.py): no I/O, no clock. A check adds
what it finds here and never decides the verdict; the texts it makes (`short`, `one_line`,
`bound_text`) are the ones every output shows.
"""

from __future__ import annotations

import json
from typing import Any

from acp_journeys.rules import catalog
from acp_journeys.rules.evidence import Failure


class Findings:
    """Collects failures for one journey, each id once (details joined)."""

    def __init__(self, journey_id: str, docs_url: str, strict: bool = False, timeout_scale: float = 1.0) -> None:
        self.journey_id = journey_id
        self.docs_url = docs_url
        self.strict = strict
        self.timeout_scale = timeout_scale
        self.items: dict[str, Failure] = {}
        self.warnings: list[str] = []

    def add_strict(self, failure_id: str, detail: str) -> None:
        """A check where Rondar's page names no rule: a failure only with --strict, else a warning."""
        if self.strict:
            self.add(failure_id, detail)
        else:
            self.warnings.append(f"{failure_id} (fails only with --strict): {detail}")

    def no_answer(self, what: str, bound_s: float | None) -> str:
        """`what got no answer within B`: the bound and how --timeout-scale made it, so that a
        slow model's author knows which knob to turn."""
        return f"{what} got no answer within {bound_text(bound_s, self.timeout_scale)}"

    def add(self, failure_id: str, detail: str, cause: str | None = None) -> None:
        if failure_id in self.items:
            old = self.items[failure_id]
            if detail and detail not in old.detail:
                old.detail = f"{old.detail}; {detail}" if old.detail else detail
            return
        kind = catalog.FAILURES[failure_id]
        anchor = catalog.anchor_for(failure_id, self.journey_id)
        self.items[failure_id] = Failure(
            id=failure_id, message=kind.message_for(cause), doc=catalog.doc_link(anchor, self.docs_url),
            detail=detail,
        )


def bound_text(bound_s: float | None, scale: float) -> str:
    """`36 s (180 s × --timeout-scale 0.2); raise --timeout-scale if your model is slow`, or
    `the bound` for evidence that does not record it (an older result.json)."""
    if bound_s is None or bound_s <= 0:
        return "the bound"
    hint = "; raise --timeout-scale if your model is slow"
    if scale <= 0:
        return f"{bound_s:g} s{hint}"
    return f"{bound_s:g} s ({round(bound_s / scale, 3):g} s × --timeout-scale {scale:g}){hint}"


def short(value: Any, limit: int = 200) -> str:
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return clip(text, limit)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(command: str, limit: int) -> str:
    """A command line as failures show it: every run of whitespace (a title padded with spaces,
    the lines of a `python -c` source) one space, then clipped. result.json keeps the full argv."""
    return clip(" ".join(command.split()), limit)


def shown(marker: str | None) -> str:
    """A marker as a failure names it; a marker the evidence lacks is named as such."""
    return marker if marker is not None else "(no marker recorded)"


def quote(text: str) -> str:
    return json.dumps(clip(text, 120))
