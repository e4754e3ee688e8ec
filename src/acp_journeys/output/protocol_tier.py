"""The protocol tier in each output: console lines, a JUnit suite, Markdown blocks, an HTML section.

Rules of this module: one function per output, each called by that output's module with a line
or two, so the tier stays apart from Rondar's verdict everywhere (its own heading, its own suite,
its own verdict). Every field read from a result goes through that output's own escaping (one_line,
ElementTree, escape_markdown, htmlsafe); the links are the catalog's, by check id, never the file's.

It must not know how the tier was run or judged: a result in, text out.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from typing import Any

from acp_journeys.output.logtext import one_line
from acp_journeys.rules import protocol_catalog as pc
from acp_journeys.rules.evidence import ProtocolTier, RunResult

SUITE = "acp-journeys.protocol"
WORD = {"pass": "PASS", "fail": "FAIL", "warn": "WARN", "skip": "SKIP"}


def _tier(result: RunResult) -> ProtocolTier | None:
    return result.tiers.protocol if result.tiers is not None else None


def _anchor(check_id: str) -> str | None:
    row = pc.CHECKS_BY_ID.get(check_id)
    return row.anchor if row else None


def summary_line(tier: ProtocolTier) -> str:
    return (f"protocol tier: {tier.verdict.upper()}: {tier.musts_passed} of {tier.musts_applicable} MUST checks "
            "passed (its own verdict: Rondar's above is unchanged)")


# --- console --------------------------------------------------------------------------------


def console_text(result: RunResult) -> str:
    """The tier's table for a terminal or a CI log; "" when the run had no tier."""
    tier = _tier(result)
    if tier is None:
        return ""
    width = max([len(one_line(c.id)) for c in tier.checks] + [5])
    lines = [f"{'check':<{width}}  level   verdict  detail"]
    for c in tier.checks:
        lines.append(one_line(f"{c.id:<{width}}  {c.level:<6}  {WORD.get(c.verdict, c.verdict):<7}  {c.detail or '-'}"))
    lines += ["", one_line(summary_line(tier))]
    for c in tier.checks:
        if c.verdict in ("fail", "warn") and _anchor(c.id):
            lines.append(one_line(f"- {c.id}: see {_anchor(c.id)}"))
    return "\n".join(lines)


# --- JUnit ----------------------------------------------------------------------------------


def add_junit_suite(root: ET.Element, result: RunResult, clean=lambda s: s) -> None:
    """A `<testsuite name="acp-journeys.protocol">` of its own, one testcase per check: fail is a
    `<failure>` (a SHOULD never fails: warn is `<system-out>`), skip is `<skipped>`."""
    tier = _tier(result)
    if tier is None:
        return
    suite = ET.SubElement(root, "testsuite", {"name": SUITE})
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for c in tier.checks:
        case = ET.SubElement(suite, "testcase", {"classname": SUITE, "name": clean(c.id), "time": "0"})
        counts["tests"] += 1
        text = clean(f"{c.level}: {c.detail}\n{_anchor(c.id) or ''}")
        if c.verdict == "fail":
            counts["failures"] += 1
            failure = ET.SubElement(case, "failure", {"message": clean(f"{c.level} {c.id}: {c.detail}"),
                                                      "type": clean(c.id)})
            failure.text = text
        elif c.verdict == "skip":
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", {"message": clean(c.detail)})
        elif c.verdict == "warn":
            ET.SubElement(case, "system-out").text = clean(f"warning: {text}")
    for key, value in counts.items():
        suite.set(key, str(value))
        if key != "skipped":
            root.set(key, str(int(root.get(key, "0")) + value))
    suite.set("time", f"{tier.duration_s:.3f}")


# --- Markdown (the job summary) -------------------------------------------------------------


def markdown_blocks(result: RunResult, escape_markdown: Callable[[str], str],
                    _link: Callable[[str, str], str]) -> list[str]:
    """The tier's section of the summary; markdown.py hands in its escaping and its links."""
    tier = _tier(result)
    if tier is None:
        return []
    icon = {"pass": "✅", "fail": "❌", "warn": "⚠️", "skip": "⏭️"}
    blocks = [f"### Protocol tier: {escape_markdown(tier.verdict)} — {tier.musts_passed} of "
              f"{tier.musts_applicable} MUST checks passed\n\n",
              "Its own verdict, beside Rondar's: it does not change the journeys' verdict.\n\n",
              "| Check | Level | Verdict | Detail |\n| --- | --- | --- | --- |\n"]
    for c in tier.checks:
        anchor = _anchor(c.id)
        name = _link(c.id, anchor) if anchor else escape_markdown(c.id)
        detail = escape_markdown(c.detail[:300]) or "—"
        blocks.append(f"| {name} | {c.level} | {icon.get(c.verdict, '')} {escape_markdown(c.verdict)} | {detail} |\n")
    blocks.append("\n")
    return blocks


# --- HTML -----------------------------------------------------------------------------------


def html_section(data: Mapping[str, Any]) -> str:
    """The tier's section of the page, from the result's JSON form; "" without a tier."""
    from acp_journeys.output.html.htmlsafe import attr, safe_href, text

    tiers = data.get("tiers") if isinstance(data.get("tiers"), dict) else {}
    tier = tiers.get("protocol") if isinstance(tiers.get("protocol"), dict) else None
    if tier is None:
        return ""
    klass = {"pass": "pass", "fail": "fail"}
    rows = []
    for c in tier.get("checks") or []:
        if not isinstance(c, dict):
            continue
        cid, verdict = str(c.get("id", "")), str(c.get("verdict", ""))
        href = safe_href(_anchor(cid) or "")
        name = (f'<a href="{href}" rel="noopener noreferrer">{text(cid)}</a>' if href else text(cid))
        rows.append(f'<tr><td><code>{name}</code></td><td>{text(c.get("level", ""))}</td>'
                    f'<td><span class="badge {attr(klass.get(verdict, ""))}">{text(WORD.get(verdict, verdict))}</span>'
                    f'</td><td>{text(c.get("detail", ""))}</td></tr>')
    verdict = str(tier.get("verdict", ""))
    return (f'<h2 id="protocol-tier">Protocol tier <span class="badge {attr(klass.get(verdict, ""))}">'
            f'{text(WORD.get(verdict, verdict))}</span></h2>'
            f'<p class="dim">{text(tier.get("musts_passed", 0))} of {text(tier.get("musts_applicable", 0))} MUST '
            "checks passed. Its own verdict, beside Rondar's: it does not change the journeys' verdict.</p>"
            '<table class="journeys"><thead><tr><th>Check</th><th>Level</th><th>Verdict</th><th>Detail</th></tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table>')
