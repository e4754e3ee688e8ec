"""The verdict table and the progress lines, for a terminal and for a plain CI log alike.

Every field read from a result (ids, messages, details, links) is printed through
`logtext.one_line`: no line break or control character of the agent's reaches the log. The
agent's own stderr lines are shown only behind a `| ` mark of ours, so none can start a line
(a workflow command such as `::error::`) or pass for a line of ours.

Layout of the table: the journeys, the verdict line, then `SECTIONS` in order, each a function
of the result that gives its lines (or none). The failures section says a cause shared by
several journeys once (`7 journeys: the agent exited with code 1 before it answered
initialize`), then the rest per journey, each failure with the link to its own `#failure-ID`
paragraph and its step beside it, the agent's stderr tail and, for an early exit, one hint about
the environment the agent got.

It must not know the launcher or the editor: a result (or progress lines) in, text out.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from acp_journeys.output.logtext import one_line
from acp_journeys.output.redact import Redactor
from acp_journeys.rules import catalog
from acp_journeys.rules.evidence import JourneyResult, ProcessEvidence, RunResult
from acp_journeys.rules.findings import bound_text
from acp_journeys.rules.gate import Gate

STDERR_LINES = 5
"""How many of the last lines of the agent's stderr the failures section shows."""
STDERR_LINE_CHARS = 300

SYMBOL = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}


class Progress:
    """One line per event on stderr: readable with no terminal, no colour codes, no rewriting.

    On a terminal the heartbeat is one live status line instead, rewritten in place and cleared
    before any other line; in a log it is a line of its own. `quiet`: nothing at all."""

    def __init__(self, stream: TextIO | None = None, redactor: Redactor | None = None, quiet: bool = False,
                 live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.redactor = redactor
        self.quiet = quiet
        if live is None:
            try:
                live = self.stream.isatty()
            except (AttributeError, ValueError):
                live = False
        self.live = live and not quiet
        self._status = False

    def say(self, text: str) -> None:
        if self.quiet:
            return
        if self.redactor:
            text = self.redactor.redact(text)
        self.end_status()
        print(f"acp-journeys: {one_line(text)}", file=self.stream, flush=True)

    def end_status(self) -> None:
        """Clear the live status line, if one is shown."""
        if self._status:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._status = False

    def waiting(self, waits: Sequence[Wait]) -> None:
        """The heartbeat: which journeys wait on what, for how long, against which bound."""
        if not waits or self.quiet:
            return
        text = "waiting: " + "; ".join(w.describe() for w in waits)
        if not self.live:
            self.say(text)
            return
        if self.redactor:
            text = self.redactor.redact(text)
        width = shutil.get_terminal_size((100, 20)).columns - 1
        line = one_line(f"acp-journeys: {text}")
        self.stream.write("\r\x1b[K" + (line if len(line) <= width else line[: width - 1] + "…"))
        self.stream.flush()
        self._status = True

    def started(self, journey_id: str) -> None:
        self.say(f"{journey_id}: started")

    def finished(self, result: JourneyResult) -> None:
        ids = ", ".join(f.id for f in result.failures)
        self.say(f"{result.id}: {result.verdict} in {result.duration_s:.1f}s" + (f" ({ids})" if ids else ""))


@dataclass(frozen=True)
class Wait:
    """One wait of a running journey, as the heartbeat shows it."""

    journey: str
    what: str
    """What it waits on, in our words (`turn reply (session/prompt)`, `initialize`); with no
    bound, the whole state (`running 4 s, no request in flight`)."""
    waited_s: float
    bound_s: float | None = None

    def describe(self) -> str:
        if not self.bound_s:
            return f"{self.journey}: {self.what}"
        return f"{self.journey} on {self.what}, {self.waited_s:.0f} s of its {self.bound_s:g} s bound"


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
    for section in SECTIONS:
        more = section(result)
        if more:
            lines += [""] + more
    return "\n".join(lines)


# --- the failures section -------------------------------------------------------------------------

@dataclass
class _Group:
    """What several journeys have in common: one cause (or one failure id and message)."""

    headline: str
    journeys: list[str] = field(default_factory=list)
    failure_ids: list[str] = field(default_factory=list)
    details: list[tuple[str, str]] = field(default_factory=list)
    """(journey id, detail) of each journey it hit."""
    early_exit: bool = False


@dataclass(frozen=True)
class _Cause:
    headline: str
    explains: frozenset[str]
    """The failure ids of the journey that this cause says all there is to say about."""
    early_exit: bool = False


def journey_cause(j: JourneyResult, timeout_scale: float = 1.0) -> _Cause | None:
    """What stopped a journey before its checks could say much, read from its evidence: the
    agent could not start, exited before it answered initialize, gave initialize no answer, or
    exited during a request or a turn. None when its failures say it themselves."""
    ids = {f.id for f in j.failures}
    for p in j.evidence.processes:
        if p.start_error:
            return _Cause(f"the agent could not start ({p.start_error})", frozenset({"agent-exited"}), True)
        if p.initialize_raw is None and p.initialize_sent_at is not None:
            if p.initialize_timed_out:
                return _Cause(f"the agent did not answer initialize within "
                              f"{bound_text(p.initialize_bound_s, timeout_scale)}",
                              frozenset({"initialize-protocol-version", "timeout"}))
            return _Cause(f"the agent exited with code {p.exit_code} before it answered initialize",
                          frozenset({"initialize-protocol-version", "agent-exited"}), True)
        if p.exited_before_stdin_close and "agent-exited" in ids:
            # Early: before it answered a turn (a key that the first model call needs, say).
            early = not any(t.answered_at is not None for t in j.evidence.turns if t.process == p.index)
            return _Cause(f"the agent exited with code {p.exit_code} {_exited_during(j, p)}",
                          frozenset({"agent-exited"}), early_exit=early)
    return None


def _exited_during(j: JourneyResult, p: ProcessEvidence) -> str:
    turns = [t for t in j.evidence.turns if t.process == p.index]
    if any(t.agent_exited for t in turns):
        return "during a turn"
    requests = [r.method for r in j.evidence.requests if r.process == p.index and r.agent_exited]
    if requests:
        return f"during {requests[0]}"
    return "before its input was closed" if turns else "before its first turn"


def _groups(result: RunResult) -> list[_Group]:
    groups: dict[tuple[str, ...], _Group] = {}
    for j in result.journeys:
        if j.verdict == "pass":
            continue
        cause = journey_cause(j, result.timeout_scale)
        if cause is not None:
            group = groups.setdefault(("cause", cause.headline), _Group(cause.headline, early_exit=cause.early_exit))
            group.journeys.append(j.id)
            for f in j.failures:
                if f.id in cause.explains and f.id not in group.failure_ids:
                    group.failure_ids.append(f.id)
        for f in j.failures:
            if cause is not None and f.id in cause.explains:
                continue
            group = groups.setdefault(("failure", f.id, f.message), _Group(f"{f.id}: {f.message}", failure_ids=[f.id]))
            group.journeys.append(j.id)
            if f.detail:
                group.details.append((j.id, f.detail))
    return list(groups.values())


def _who(journeys: Sequence[str], total: int) -> str:
    if len(journeys) == 1:
        return journeys[0]
    if len(journeys) == total:
        return f"{len(journeys)} journeys"
    return f"{len(journeys)} journeys ({', '.join(journeys)})"


def fix_links(failure_ids: Sequence[str], journey_id: str, docs_url: str) -> str:
    """`how to fix: DOCS#failure-A, DOCS#failure-B (step: DOCS#step-N)`: each id's own paragraph,
    the step beside them (once, when they share it)."""
    pairs = []
    for failure_id in failure_ids:
        fix = catalog.fix_anchor(failure_id)
        if fix is None:  # an id of another version: the list of every id
            pairs.append((catalog.doc_link("failure-ids", docs_url), None))
            continue
        step = catalog.anchor_for(failure_id, journey_id) if journey_id in catalog.JOURNEYS_BY_ID else None
        pairs.append((catalog.doc_link(fix, docs_url), catalog.doc_link(step, docs_url) if step and step != fix
                      else None))
    steps = {step for _, step in pairs}
    if len(steps) == 1:
        [step] = steps
        return "how to fix: " + ", ".join(fix for fix, _ in pairs) + (f" (step: {step})" if step else "")
    return "how to fix: " + ", ".join(fix + (f" (step: {step})" if step else "") for fix, step in pairs)


def stderr_tail_lines(p: ProcessEvidence, limit: int = STDERR_LINES) -> list[str]:
    """The last non-blank lines of an agent process's stderr (masked in the result already), each
    one line of text, clipped."""
    text = p.stderr_tail.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line for line in text.split("\n") if line.strip()][-limit:]
    return [one_line(line if len(line) <= STDERR_LINE_CHARS else line[:STDERR_LINE_CHARS] + "…") for line in lines]


def _stderr_block(j: JourneyResult) -> tuple[str, list[str]] | None:
    """The latest process of a journey that wrote to stderr, and its last lines."""
    for p in reversed(j.evidence.processes):
        lines = stderr_tail_lines(p)
        if lines:
            last = f", last {len(lines)} lines" if len(lines) > 1 else ""
            label = f"the agent's stderr (process {p.index + 1} of {j.id}{last}):"
            return label, lines
    return None


def _environment_hint(result: RunResult) -> str | None:
    kind = result.launch.get("kind")
    if kind == "docker":
        return ("hint: the container gets only the variables that you give: --env NAME (a secret, its value "
                "masked) or --setting NAME=VALUE (no secret)")
    if kind != "local" or result.launch.get("environment") == "inherited":
        return None
    return ("hint: in local mode the agent gets a minimal environment (PATH, HOME, USER, the locale, TERM): "
            "pass a variable with --env NAME (a secret) or --setting NAME=VALUE, or all of yours with --inherit-env")


def failures_section(result: RunResult) -> list[str]:
    groups = _groups(result)
    if not groups:
        return []
    by_id = {j.id: j for j in result.journeys}
    total = len(result.journeys)
    lines = ["failures:"]
    shown_tails: set[str] = set()
    early = False
    for group in groups:
        lines.append(one_line(f"- {_who(group.journeys, total)}: {group.headline}"))
        for jid, detail in group.details:
            lines.append("    " + one_line(detail if len(group.journeys) == 1 else f"{jid}: {detail}"))
        if group.failure_ids:
            lines.append("    " + one_line(fix_links(group.failure_ids, group.journeys[0], result.docs_url)))
        for jid in group.journeys:
            block = _stderr_block(by_id[jid])
            if block is None or "\n".join(block[1]) in shown_tails:
                continue
            shown_tails.add("\n".join(block[1]))
            if len(block[1]) == 1:
                lines.append("    " + one_line(block[0]) + f" | {block[1][0]}")
            else:
                lines.append("    " + one_line(block[0]))
                lines += [f"    | {line}" for line in block[1]]
            break  # one tail a group: the others are in result.json and the HTML report
        early = early or group.early_exit
    hint = _environment_hint(result) if early else None
    if hint:
        lines.append(hint)
    return lines


SECTIONS: list[Callable[[RunResult], list[str]]] = [failures_section]
"""The parts of the table after the verdict line, in order: each gives its lines, or none."""
