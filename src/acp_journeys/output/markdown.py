"""The Markdown summary of a run: the check run's summary and the job summary on GitHub.

Rules of this module:
- Layout: a title line with the verdict and the counts; a table of the journeys (verdict,
  seconds, failure ids); then one section per journey, failed and errored journeys first, then
  the passes, each failure with its message, its detail and a link to its anchor
  (`docs_url#failure-ID`, its own paragraph, from `catalog.fix_anchor`) and its step's beside it
  (`docs_url#step-N`, from `catalog.anchor_for` and `catalog.doc_link`); last, the agent's
  stderr tail of each failed journey in a fenced block.
- Every string read from the result (replies, stderr, details, commands, ids, titles, baseline
  reasons) is untrusted: `escape_markdown` turns it into plain text that can start no Markdown
  or HTML construct (`\\`, `|`, backticks, `*`, `_`, `[`, `]`, `#`, `~`, `$`, a leading `-`,
  `+` or `=` and the dot of a leading `1.` get a backslash; `<`, `>`, `&` become entities;
  newlines become spaces; control and bidi characters are dropped). No bare URL, `www.` name
  or e-mail address of agent text becomes a link on GitHub (its autolink extension): a `:`
  before `/` and the dot of `www.` get a backslash, and `@` is followed by an invisible word joiner. Fenced blocks use a
  backtick fence longer than any backtick run inside them, so they cannot be closed from inside.
- Links are built only from `docs_url` and the catalog's anchors, and only for http(s) URLs
  (and the one link to the HTML report's artifact, which the action gives).
- The text is at most `limit` characters. It is cut only between blocks (a table row, a line,
  a whole fenced block, or a fenced block shortened to its tail and closed), never inside an
  escape, and then ends with the line "… summary cut at N characters; see result.json".

It must not know GitHub's API (github.py posts) nor any file: a result in, text out.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acp_journeys.rules.catalog import FAILURES, JOURNEYS_BY_ID, anchor_for, doc_link, fix_anchor
from acp_journeys.rules.evidence import JourneyResult, RunResult

if TYPE_CHECKING:
    from acp_journeys.rules.baseline import BaselineOutcome
    from acp_journeys.rules.gate import Gate

GITHUB_SUMMARY_LIMIT = 65535
STDERR_TAIL_CHARS = 3000
"""The last characters of each agent process's stderr that the summary shows."""
DETAIL_CHARS = 2000
"""Details and warnings are shown up to this many characters (result.json has them whole)."""
MIN_LIMIT = 120

_MD_SPECIAL = set("\\`*_[]#|~$")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
_LEADING = set("-+=")
_ORDERED = re.compile(r"\d{1,9}[.)]")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_ICONS = {"pass": "✅", "fail": "❌", "error": "⚠️"}


def _drop_controls(text: str, keep: str = "") -> str:
    text = _ANSI.sub("", text)
    return "".join(
        c for c in text
        if c in keep or not (ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in _BIDI or 0xD800 <= ord(c) < 0xE000)
    )


def _cap(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars] + " … (cut; see result.json)"


def escape_markdown(text: str) -> str:
    """Plain text for any inline place (a paragraph, a list item, a table cell, bold)."""
    text = _drop_controls(" ".join(text.splitlines()).replace("\t", " "))
    out: list[str] = []
    for i, c in enumerate(text):
        if c == ":" and text[i + 1:i + 2] == "/":
            out.append("\\:")  # "https\\://x" is no autolink
        elif c == "." and text[max(0, i - 3):i].lower() == "www":
            out.append("\\.")  # "www\\.x" is no autolink
        elif c == "@":
            out.append("@\u2060")  # an invisible word joiner: "a@\u2060b.c" is no e-mail link
        elif c in _ENTITIES:
            out.append(_ENTITIES[c])
        elif c in _MD_SPECIAL:
            out.append("\\" + c)
        else:
            out.append(c)
    if out and out[0] in _LEADING:
        out[0] = "\\" + out[0]
    ordered = _ORDERED.match(text)
    if ordered:  # "1." or "1)" would start an ordered list
        out[ordered.end() - 1] = "\\" + out[ordered.end() - 1]
    return "".join(out)


def code_fence(text: str, info: str = "text") -> str:
    """A fenced code block holding `text` verbatim; no line inside can close it."""
    body = _drop_controls(text.replace("\r\n", "\n").replace("\r", "\n"), keep="\n\t")
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    if not body.endswith("\n"):
        body += "\n"
    return f"{fence}{info}\n{body}{fence}\n"


def _safe_url(url: str) -> str | None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return urllib.parse.quote(url, safe=":/?#=&%~+@!$,;.-_")


def _link(text: str, url: str) -> str:
    safe = _safe_url(url)
    return f"[{escape_markdown(text)}]({safe})" if safe else escape_markdown(text)


def failure_anchor(failure_id: str, journey_id: str) -> str:
    """The doc anchor of a failure in a journey, also for ids this version does not know."""
    if failure_id in FAILURES and journey_id in JOURNEYS_BY_ID:
        return anchor_for(failure_id, journey_id)
    if journey_id in JOURNEYS_BY_ID:
        return JOURNEYS_BY_ID[journey_id].anchor
    return "step-10"


def fix_and_step(failure_id: str, journey_id: str) -> tuple[str, str | None]:
    """The anchors to link for a failure: its own `failure-ID` paragraph (how to fix it), and the
    step of the journey beside it (None when it is the same or unknown). An id this version does
    not know links its step (or the common failures) only."""
    step = failure_anchor(failure_id, journey_id)
    fix = fix_anchor(failure_id)
    if fix is None:
        return step, None
    return fix, (step if step != fix else None)


def _failure_link(failure_id: str, journey_id: str, docs_url: str) -> str:
    fix, step = fix_and_step(failure_id, journey_id)
    text = _link(f"how to fix (#{fix})", doc_link(fix, docs_url))
    return text + (f" · {_link(f'step (#{step})', doc_link(step, docs_url))}" if step else "")


def _journey_title(journey: JourneyResult, docs_url: str) -> str:
    known = JOURNEYS_BY_ID.get(journey.id)
    if known is None:
        return escape_markdown(journey.title or journey.id)
    return _link(known.title, doc_link(known.anchor, docs_url))


@dataclass(frozen=True)
class _Fence:
    """A fenced block that may be shortened to its tail when the summary is cut."""

    heading: str
    body: str


_Block = str | _Fence


def _render(block: _Block) -> str:
    if isinstance(block, str):
        return block
    return block.heading + code_fence(block.body) + "\n"


def _verdict_of(result: RunResult, baseline: BaselineOutcome | None, gate: Gate | None = None) -> str:
    if gate is not None and gate.word in ("PARTIAL", "REFUSED"):
        return gate.word.lower()  # the gate's word: a result it refuses is never shown as a pass
    if result.partial:
        return "partial"
    return baseline.verdict if baseline is not None else result.verdict


def summary_title(result: RunResult, baseline: BaselineOutcome | None = None, gate: Gate | None = None) -> str:
    """The title line's text without Markdown: the verdict (the gate's word, when it refuses) and the counts."""
    verdict = _verdict_of(result, baseline, gate)
    n = {v: sum(1 for j in result.journeys if j.verdict == v) for v in ("pass", "fail", "error")}
    counts = f"{n['pass']} of {len(result.journeys)} journeys passed, {n['fail']} failed"
    if n["error"]:
        counts += f", {n['error']} error{'s' if n['error'] != 1 else ''} of acp-journeys"
    extra = ""
    if baseline is not None:
        extra = (f"; baseline: {len(baseline.expected)} expected, {len(baseline.new)} new, "
                 f"{len(baseline.stale)} stale")
    partial = "; partial run" if result.partial else ""
    why = f"; {gate.why}" if gate is not None and gate.why and gate.word in ("PARTIAL", "REFUSED") else ""
    return f"ACP journeys: {verdict} — {counts}{extra}{partial if not why else why}"


def _blocks(result: RunResult, docs_url: str, baseline: BaselineOutcome | None,
            report_link: str | None = None, gate: Gate | None = None) -> list[_Block]:
    verdict = _verdict_of(result, baseline, gate)
    title = escape_markdown(summary_title(result, baseline, gate))
    blocks: list[_Block] = [f"## {_ICONS.get(verdict, '❌')} {title}\n\n"]
    if result.agent_command:
        blocks.append(f"Agent command: {escape_markdown(' '.join(result.agent_command))}\n\n")
    if report_link and _safe_url(report_link):
        blocks.append(f"The HTML report, with a timeline of each journey: "
                      f"{_link('the artifact of this run', report_link)} (unzip it, open the .html file)\n\n")
    if result.strict:
        blocks.append("Strict mode: protocol warnings count as failures.\n\n")

    blocks.append("| Journey | Verdict | Seconds | Failures |\n| --- | --- | ---: | --- |\n")
    for j in result.journeys:
        ids = ", ".join(escape_markdown(f.id) for f in j.failures) or "—"
        blocks.append(f"| {_journey_title(j, docs_url)} | {_ICONS.get(j.verdict, '')} {escape_markdown(j.verdict)} "
                      f"| {j.duration_s:.1f} | {ids} |\n")
    blocks.append("\n")

    if baseline is not None and (baseline.stale or baseline.new):
        blocks.append("### Baseline\n\n")
        for found in baseline.new:
            blocks.append(f"- {escape_markdown(found.message)}\n")
        for stale in baseline.stale:
            blocks.append(f"- {escape_markdown(stale.message)}\n")
        blocks.append("\n")

    ordered = [j for j in result.journeys if j.verdict != "pass"] + [j for j in result.journeys if j.verdict == "pass"]
    for j in ordered:
        blocks.append(f"### {_ICONS.get(j.verdict, '')} {_journey_title(j, docs_url)} "
                      f"({escape_markdown(j.id)}): {escape_markdown(j.verdict)}\n\n")
        for f in j.failures:
            tag = ""
            if baseline is not None:
                entry = baseline.entry_for(j.id, f.id)
                tag = (f" (expected: {escape_markdown(entry.describe())})" if entry
                       else " (new: not in the baseline)")
            link = _failure_link(f.id, j.id, docs_url)
            text = f"- **{escape_markdown(f.id)}**{tag}: {escape_markdown(f.message)} {link}\n"
            if f.detail:
                text += f"  - Detail: {escape_markdown(_cap(f.detail, DETAIL_CHARS))}\n"
            blocks.append(text)
        for w in j.warnings:
            blocks.append(f"- Warning: {escape_markdown(_cap(w, DETAIL_CHARS))}\n")
        if not j.failures and not j.warnings:
            blocks.append("- Every check passed.\n" if j.verdict == "pass" else "- No failure was recorded.\n")
        blocks.append("\n")

    from acp_journeys.output.protocol_tier import markdown_blocks

    blocks += markdown_blocks(result, escape_markdown, _link)  # the protocol tier's own section, if it ran

    failed = [j for j in result.journeys if j.verdict != "pass"]
    tails = [(j, p) for j in failed for p in j.evidence.processes if p.stderr_tail.strip()]
    if tails:
        blocks.append("### Agent stderr of the failed journeys\n\n")
        for j, p in tails:
            tail = p.stderr_tail[-STDERR_TAIL_CHARS:]
            shown = f"last {len(tail)} characters of {p.stderr_bytes} bytes" if p.stderr_bytes else "tail"
            blocks.append(_Fence(f"{escape_markdown(j.id)}, agent process {p.index + 1} ({shown}):\n\n", tail))
    return blocks


def _shorten(block: _Fence, room: int) -> str | None:
    """The fence cut to its tail so that the whole rendered block fits in `room`, or None."""
    overhead = len(_render(_Fence(block.heading, ""))) + 2 + 2 * 8
    keep = room - overhead - len("… (cut)\n")
    if keep < 80:
        return None
    body = "… (cut)\n" + block.body[-keep:]
    text = _render(_Fence(block.heading, body))
    while len(text) > room and keep >= 80:  # the fence may have grown; bounded by len(body)
        keep -= max(1, len(text) - room)
        body = "… (cut)\n" + block.body[-keep:]
        text = _render(_Fence(block.heading, body))
    return text if len(text) <= room else None


def cut_marker(limit: int) -> str:
    return f"\n… summary cut at {limit} characters; see result.json\n"


def summary_markdown(result: RunResult, *, docs_url: str, limit: int = GITHUB_SUMMARY_LIMIT,
                     baseline: BaselineOutcome | None = None, report_link: str | None = None,
                     gate: Gate | None = None) -> str:
    """The Markdown summary of `result`, at most `limit` characters (see the module's rules);
    `report_link`, an http(s) URL, is where the HTML report is (the run's artifact); `gate`: the
    gate's word, which the title says when it refuses the result or finds it partial."""
    if limit < MIN_LIMIT:
        raise ValueError(f"limit must be at least {MIN_LIMIT} characters")
    blocks = _blocks(result, docs_url, baseline, report_link, gate)
    rendered = [_render(b) for b in blocks]
    if sum(len(r) for r in rendered) <= limit:
        return "".join(rendered)
    marker = cut_marker(limit)
    room = limit - len(marker)
    out: list[str] = []
    used = 0
    for block, text in zip(blocks, rendered, strict=True):
        if used + len(text) <= room:
            out.append(text)
            used += len(text)
            continue
        if isinstance(block, _Fence):
            short = _shorten(block, room - used)
            if short is not None:
                out.append(short)
        break
    return "".join(out) + marker
