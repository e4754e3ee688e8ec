"""The verdict table and the progress lines, for a terminal and for a plain CI log alike.

Every field read from a result (ids, messages, details, links) is printed through
`logtext.one_line`: no line break or control character of the agent's reaches the log.

It must not know the launcher or the editor: a result (or progress lines) in, text out.
"""

from __future__ import annotations

import sys
from typing import TextIO

from acp_journeys.output.logtext import one_line
from acp_journeys.output.redact import Redactor
from acp_journeys.rules.evidence import JourneyResult, RunResult
from acp_journeys.rules.gate import Gate

SYMBOL = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}


class Progress:
    """One line per event on stderr: readable with no terminal, no colour codes, no rewriting."""

    def __init__(self, stream: TextIO | None = None, redactor: Redactor | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.redactor = redactor
        self.quiet = quiet

    def say(self, text: str) -> None:
        if self.quiet:
            return
        if self.redactor:
            text = self.redactor.redact(text)
        print(f"acp-journeys: {one_line(text)}", file=self.stream, flush=True)

    def started(self, journey_id: str) -> None:
        self.say(f"{journey_id}: started")

    def finished(self, result: JourneyResult) -> None:
        ids = ", ".join(f.id for f in result.failures)
        self.say(f"{result.id}: {result.verdict} in {result.duration_s:.1f}s" + (f" ({ids})" if ids else ""))


def table(result: RunResult, gate: Gate | None = None) -> str:
    """The verdict table; `gate`: the gate's word, said instead of the verdict when it refuses the
    result or finds it partial (a result the gate refuses never reads as a pass)."""
    width = max([len(one_line(j.id)) for j in result.journeys] + [7])
    lines = [f"{'journey':<{width}}  verdict  seconds  failures"]
    for j in result.journeys:
        ids = one_line(", ".join(f.id for f in j.failures)) or "-"
        lines.append(f"{one_line(j.id):<{width}}  {SYMBOL[j.verdict]:<7}  {j.duration_s:>7.1f}  {ids}")
    lines.append("")
    total = len(result.journeys)
    partial = " (partial: the run was stopped)" if result.partial else ""
    word = "PARTIAL" if result.partial else result.verdict.upper()
    if gate is not None and gate.word in ("PARTIAL", "REFUSED"):
        word, partial = gate.word, f" ({one_line(gate.why)})" if gate.why else partial
    lines.append(f"verdict: {word}: {result.passed} of {total} journeys passed{partial}")
    details = []
    for j in result.journeys:
        for f in j.failures:
            details.append(one_line(f"- {j.id}: {f.id}: {f.message}"))
            if f.detail:
                details.append(f"    {one_line(f.detail)}")
            details.append(f"    see {one_line(f.doc)}")
    if details:
        lines += ["", "failures:"] + details
    return "\n".join(lines)
