"""`acp-journeys dashboard DIR --out FILE`: one self-contained page of a registry run, from its
summary (output/registry_summary.py, made from `DIR/agents/*/` alone).

Rules of this module:
- Input: the summary; output: one string. No file but our own assets, no request, no clock.
- The page loads nothing. Its Content-Security-Policy is the report's: `default-src 'none'`, its
  one inline stylesheet and one inline script allowed by their sha256 hashes.
- Every string of the summary is untrusted (agent names, descriptions, error messages come from
  the registry and the agents): it reaches the page only through `htmlsafe.text`/`attr`. Links
  are built by the page only: a failure id to the doc's `#failure-ID` anchor (from `docs_url`
  and the catalog), a cell to the agent's report at `agents/<id>/report.html`, where the id is
  one the registry's id rule allows (lowercase letters, digits, hyphens), else no link.
- Layout: counts, tool version and date; what changed since the previous run (regressions, then
  fixes); filters (journey, failure id, distribution kind, status) and sorting; the grid of
  agents x 7 journeys, a protocol-tier column, and per journey how many agents pass.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acp_journeys.output.html.htmlsafe import attr, safe_href, text
from acp_journeys.output.html.report import _asset, content_security_policy
from acp_journeys.output.html.timeline_svg import dom_id
from acp_journeys.output.markdown import failure_anchor
from acp_journeys.rules.catalog import DEFAULT_DOCS_URL, JOURNEY_IDS, JOURNEYS_BY_ID, doc_link, fix_anchor

ID = re.compile(r"^[a-z][a-z0-9-]*$")
STATUS_WORD = {"ran": "ran", "needs-login": "needs a login", "not-installed": "not installed",
               "bad-entry": "bad entry", "run-error": "run error"}
SHORT = {"turn-to-end": "turn", "follow-up-same-session": "follow-up", "follow-up-after-restart": "restart",
         "image-and-file": "image+file", "stop-running-turn": "stop", "plan-turn-saved-plan": "plan saved",
         "plan-regular-plan": "plan regular"}


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _report_href(agent_id: str, journey: str | None = None) -> str | None:
    if not ID.match(agent_id):
        return None
    href = f"agents/{agent_id}/report.html"
    return href + (f"#{dom_id('j-', journey)}" if journey in JOURNEYS_BY_ID else "")


def _failure_link(fid: str, jid: str, docs_url: str) -> str:
    # docs/journeys.md has a `failure-ID` paragraph for every id of the catalog; an id this
    # version does not know links to its journey's step instead.
    anchor = fix_anchor(fid) or failure_anchor(fid, jid)
    href = safe_href(doc_link(anchor, docs_url))
    if href is None:
        return f'<span class="fid">{text(fid)}</span>'
    return f'<a class="fid" href="{href}" rel="noopener noreferrer">{text(fid)}</a>'


def _changes(summary: Mapping[str, Any]) -> tuple[str, dict[tuple[str, str], str]]:
    changes = summary.get("changes")
    marks: dict[tuple[str, str], str] = {}
    if not isinstance(changes, dict):
        return "", marks
    parts = []
    for key, title, cls in (("regressions", "Regressions", "regressed"), ("fixes", "Fixes", "fixed")):
        items = [c for c in changes.get(key, []) if isinstance(c, dict)]
        for c in items:
            marks[(_s(c.get("agent")), _s(c.get("journey")))] = cls
        lis = "".join(f'<li class="{cls}"><code>{text(_s(c.get("agent")))}</code> '
                      f'{text(_s(c.get("journey")) or "(the agent)")}: {text(_s(c.get("was")))} → '
                      f'{text(_s(c.get("now")))}</li>' for c in items)
        parts.append(f'<section class="changes {cls}"><h2>{title} ({len(items)})</h2>'
                     + (f"<ul>{lis}</ul>" if lis else "<p class=\"dim\">none</p>") + "</section>")
    since = _s(summary.get("previous_date"))
    head = f'<p class="dim">Since the previous run{f" of {text(since)}" if since else ""}.</p>'
    return head + "".join(parts), marks


def _cell(row: Mapping[str, Any], jid: str, docs_url: str, marks: dict) -> str:
    j = row.get("journeys", {}).get(jid) if isinstance(row.get("journeys"), dict) else None
    if not isinstance(j, dict):
        return '<td class="cell none">—</td>'
    verdict = _s(j.get("verdict"))
    word = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}.get(verdict, "?")
    agent_id = _s(row.get("id"))
    href = _report_href(agent_id, jid) if row.get("report") else None
    badge = (f'<a class="badge {attr(verdict)}" href="{attr(href)}">{word}</a>' if href
             else f'<span class="badge {attr(verdict)}">{word}</span>')
    mark = marks.get((agent_id, jid), "")
    sign = {"regressed": ' <span class="mark" title="regressed since the previous run">▼</span>',
            "fixed": ' <span class="mark" title="fixed since the previous run">▲</span>'}.get(mark, "")
    ids = [f for f in j.get("failures", []) if isinstance(f, str)]
    fails = "".join(f"<li>{_failure_link(f, jid, docs_url)}</li>" for f in ids)
    return (f'<td class="cell {attr(verdict)} {mark}" data-journey="{attr(jid)}" data-verdict="{attr(verdict)}">'
            f'{badge}{sign}' + (f'<ul class="fids">{fails}</ul>' if fails else "") + "</td>")


def _protocol(row: Mapping[str, Any]) -> str:
    tier = row.get("protocol")
    if isinstance(tier, dict) and isinstance(tier.get("passed"), int) and isinstance(tier.get("applicable"), int):
        return f'<td class="tier">{tier["passed"]}/{tier["applicable"]} MUST</td>'
    return '<td class="tier dim">—</td>'


def _secs(value: Any) -> str:
    return f"{value:.0f} s" if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


def _row(row: Mapping[str, Any], docs_url: str, marks: dict) -> str:
    agent_id, status = _s(row.get("id")), _s(row.get("status"))
    journeys = row.get("journeys") if isinstance(row.get("journeys"), dict) else {}
    failing = [jid for jid, j in journeys.items() if isinstance(j, dict) and j.get("verdict") != "pass"]
    passing = [jid for jid, j in journeys.items() if isinstance(j, dict) and j.get("verdict") == "pass"]
    failure_ids = sorted({f for j in journeys.values() if isinstance(j, dict)
                          for f in j.get("failures", []) if isinstance(f, str)})
    passed = row.get("passed") if isinstance(row.get("passed"), int) else 0
    report = _report_href(agent_id) if row.get("report") else None
    name = text(_s(row.get("name")) or agent_id)
    head = (f'<th class="agent" scope="row"><span class="name">{name}</span> <code>{text(agent_id)}</code>'
            f' <span class="dim">{text(_s(row.get("version")))} · {text(_s(row.get("kind")) or "?")}</span>'
            + (f' <a class="report" href="{attr(report)}">report</a>' if report else "")
            + "".join(f'<p class="note">{text(n)}</p>' for n in row.get("notes", []) if isinstance(n, str))
            + "</th>")
    agent_mark = marks.get((agent_id, ""), "")
    state = f'<td class="state {attr(status)} {agent_mark}">{text(STATUS_WORD.get(status, status))}'
    if status in ("ran", "needs-login") and journeys:
        state += f' <span class="count">{passed}/{len(journeys)}</span>'
    reason = _s(row.get("reason"))
    why = f'<p class="reason">{text(reason)}</p>' if reason else ""
    if journeys:
        state += why + "</td>"
        cells = "".join(_cell(row, jid, docs_url, marks) for jid in JOURNEY_IDS)
    else:  # no journey ran: the reason takes the grid's width
        state += "</td>"
        cells = f'<td class="cell none" colspan="{len(JOURNEY_IDS)}">{why or text(STATUS_WORD.get(status, status))}</td>'
    data = (f' data-id="{attr(agent_id)}" data-kind="{attr(_s(row.get("kind")))}" data-status="{attr(status)}"'
            f' data-passed="{passed}" data-fails="{attr(" ".join(failing))}" data-passes="{attr(" ".join(passing))}"'
            f' data-failures="{attr(" ".join(failure_ids))}"')
    times = f'<td class="times">{_secs(row.get("install_s"))} / {_secs(row.get("run_s"))}</td>'
    return f'<tr class="agent-row"{data}>{head}{state}{cells}{_protocol(row)}{times}</tr>'


def _options(values: list[tuple[str, str]]) -> str:
    return "".join(f'<option value="{attr(v)}">{text(label)}</option>' for v, label in values)


def render_dashboard(summary: Mapping[str, Any], *, docs_url: str = DEFAULT_DOCS_URL) -> str:
    """The whole page (see the module's rules)."""
    style, script = _asset("dashboard.css"), _asset("dashboard.js")
    rows = [r for r in summary.get("agents", []) if isinstance(r, dict)]
    changes, marks = _changes(summary)
    counts = summary.get("journeys") if isinstance(summary.get("journeys"), dict) else {}
    ran = sum(1 for r in rows if r.get("status") == "ran")
    line = (f"{len(rows)} agents: " + ", ".join(f"{sum(1 for r in rows if r.get('status') == s)} {w}"
                                              for s, w in STATUS_WORD.items()))
    all_seven = sum(1 for r in rows if r.get("status") == "ran" and r.get("passed") == len(JOURNEY_IDS))
    failure_ids = sorted({f for r in rows if isinstance(r.get("journeys"), dict) for j in r["journeys"].values()
                          if isinstance(j, dict) for f in j.get("failures", []) if isinstance(f, str)})
    kinds = sorted({_s(r.get("kind")) for r in rows if _s(r.get("kind"))})
    journey_options = [("", "any journey")] + [(f"fail:{j}", f"fails {j}") for j in JOURNEY_IDS] + \
        [(f"pass:{j}", f"passes {j}") for j in JOURNEY_IDS]
    filters = ('<form class="filters" id="filters">'
               f'<label>Journey <select id="f-journey">{_options(journey_options)}</select></label> '
               f'<label>Failure <select id="f-failure">{_options([("", "any failure")] + [(f, f) for f in failure_ids])}'
               '</select></label> '
               f'<label>Distribution <select id="f-kind">{_options([("", "any")] + [(k, k) for k in kinds])}</select></label> '
               f'<label>Status <select id="f-status">{_options([("", "any")] + list(STATUS_WORD.items()))}</select></label> '
               f'<label>Sort <select id="f-sort">{_options([("id", "by id"), ("passed", "most journeys passed"), ("failed", "fewest journeys passed")])}'
               '</select></label> <span id="shown" class="dim"></span></form>')
    header = ('<tr><th scope="col">Agent</th><th scope="col">Status</th>'
              + "".join(f'<th scope="col" class="jcol"><a href="{safe_href(doc_link(JOURNEYS_BY_ID[j].anchor, docs_url)) or ""}"'
                        f' rel="noopener noreferrer" title="{attr(JOURNEYS_BY_ID[j].title)}">{text(SHORT.get(j, j))}</a></th>'
                        for j in JOURNEY_IDS)
              + '<th scope="col">Protocol tier</th><th scope="col">Install / run</th></tr>')
    totals = ('<tr class="totals"><th scope="row">Agents that pass</th><td></td>'
              + "".join(f'<td class="total" data-journey="{attr(j)}">{int(counts.get(j, 0)) if isinstance(counts.get(j, 0), int) else 0}'
                        f'/{ran}</td>' for j in JOURNEY_IDS) + "<td></td><td></td></tr>")
    body = "".join(_row(r, docs_url, marks) for r in rows)
    tool, date = _s(summary.get("tool_version")) or "?", _s(summary.get("date"))
    title = f"ACP registry: {all_seven} of {len(rows)} agents pass all 7 journeys"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{attr(content_security_policy(style, script))}">'
        '<meta name="referrer" content="no-referrer"><meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{text(title)}</title><style>{style}</style></head><body>"
        f'<header><h1>{text(title)}</h1><p class="counts">{text(line)}</p>'
        f'<p class="dim">acp-journeys {text(tool)} · {text(date)} · the scripted model (--model-stub) for every agent</p>'
        "</header><main>" + changes + filters
        + f'<table class="grid" id="grid"><thead>{header}</thead><tbody>{body}</tbody><tfoot>{totals}</tfoot></table>'
        + '</main><footer>Made from the agents\' result.json files alone; it loads nothing from the network.</footer>'
        f"<script>{script}</script></body></html>\n")


def write_dashboard(summary: Mapping[str, Any], path: str, *, docs_url: str = DEFAULT_DOCS_URL) -> None:
    """Atomic: a stopped job never leaves half a page."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    page = render_dashboard(summary, docs_url=docs_url)
    fd, tmp = tempfile.mkstemp(prefix=".dashboard-", suffix=".html", dir=str(target.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
