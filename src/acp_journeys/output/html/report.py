"""`--html OUT`: one self-contained HTML page of a run, from result.json alone.

Rules of this module:
- Input: the (judged) result; output: one string. It reads no other file, makes no request and
  reads no clock: the same result gives the same page, which opens from an artifact zip or a
  file:// URL with no network.
- The page loads nothing: no external script, font, stylesheet or image. Its Content-Security-
  Policy (a meta tag, first in <head>) is `default-src 'none'` with the page's one inline
  stylesheet and one inline script allowed by their sha256 hashes, so nothing else could run or
  load even if markup got in.
- Every string of the result is untrusted (the agent wrote most of it): it reaches the page only
  through `htmlsafe.text`/`attr`. Links are built from `docs_url` and the catalog's anchors only
  (the same links as the check run), http(s) only; nothing the agent wrote becomes a link.
- The result is read as plain JSON with a default for every field (see `timeline`), so a
  result.json of a neighbouring version renders too.
- Layout: the verdict and the run's facts, a table of the journeys with their failures linked to
  the doc; then one <details> per journey (open when it did not pass): failures, the timeline
  (to scale), turns, requests, the frames (collapsed, searchable), the stderr tail, model-stub
  requests and protocol warnings.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp_journeys.output.html.htmlsafe import attr, safe_href, text
from acp_journeys.output.html.evidence_json import as_dict, as_list, as_str, frame_info, num, short
from acp_journeys.output.html.timeline import cancel_latencies, journey_timeline, seconds
from acp_journeys.output.html.timeline_svg import KNOWN_UPDATES, dom_id, panels, update_class
from acp_journeys.output import protocol_tier
from acp_journeys.output.markdown import fix_and_step
from acp_journeys.rules.catalog import JOURNEYS_BY_ID, doc_link
from acp_journeys.rules.evidence import RunResult

if TYPE_CHECKING:
    from acp_journeys.rules.baseline import BaselineOutcome
    from acp_journeys.rules.gate import Gate

VERDICT_WORD = {"pass": "PASS", "fail": "FAIL", "error": "ERROR", "partial": "PARTIAL", "refused": "REFUSED"}
WARNINGS_SHOWN = 500
FRAMES_SHOWN = 3000
"""Frames of a journey shown in its table; result.json has them all (a page stays readable)."""
FRAME_CHARS_SHOWN = 4000
"""Characters of one frame's text shown (a 16 KiB frame is cut here too; result.json has it)."""
DIRECTION = {"to-agent": "→ agent", "from-agent": "← agent", "stderr": "stderr", "note": "note"}



def _number(index: object) -> str:
    """An agent process as every output names it: from 1 (result.json's `index` counts from 0)."""
    return str(index + 1) if isinstance(index, int) and not isinstance(index, bool) else as_str(index)

def _asset(name: str) -> str:
    return resources.files("acp_journeys.output.html").joinpath("assets", name).read_text(encoding="utf-8")


def _sha256(source: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii")


def content_security_policy(style: str, script: str) -> str:
    return (f"default-src 'none'; script-src '{_sha256(script)}'; style-src '{_sha256(style)}'; "
            "img-src data:; base-uri 'none'; form-action 'none'")


def _link(label: str, url: str, cls: str = "") -> str:
    href = safe_href(url)
    klass = f' class="{cls}"' if cls else ""
    if href is None:
        return f"<span{klass}>{text(label)}</span>"
    return f'<a{klass} href="{href}" rel="noopener noreferrer">{text(label)}</a>'


def _badge(verdict: str) -> str:
    v = "fail" if verdict in ("partial", "refused") else verdict if verdict in VERDICT_WORD else "error"
    return f'<span class="badge {v}">{text(VERDICT_WORD.get(verdict, verdict.upper() or "?"))}</span>'


def _pre(value: str, cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f"<pre{klass}>{text(value)}</pre>"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _failure_href(failure_id: str, journey_id: str, docs_url: str) -> str:
    """The link of a failure id: its own `#failure-ID` paragraph (how to fix it)."""
    return doc_link(fix_and_step(failure_id, journey_id)[0], docs_url)


# --- the top of the page ------------------------------------------------------------------------

def _facts(data: Mapping[str, Any]) -> str:
    rows: list[tuple[str, str]] = []
    command = [as_str(a) for a in as_list(data.get("agent_command"))]
    rows.append(("Agent command", f"<code>{text(shlex.join(command))}</code>" if command else "—"))
    rows.append(("acp-journeys", text(as_str(data.get("tool_version"), "?"))))
    subject = as_dict(data.get("subject"))
    rows.append(("Subject", "<code>" + text(as_str(subject.get("sha"))) + "</code>" if subject.get("sha")
                 else "no commit recorded"))
    if subject.get("image"):
        rows.append(("Agent image", f"<code>{text(as_str(subject.get('image')))}</code>"))
    launch = as_dict(data.get("launch"))
    if launch:
        rows.append(("Launch", text(", ".join(f"{k} {short(v, 80)}" for k, v in launch.items()))))
    machine = as_dict(data.get("machine"))
    rows.append(("Machine", text(", ".join(f"{k} {short(v, 80)}" for k, v in machine.items())) or "—"))
    when = as_str(data.get("started_at"))
    if data.get("ended_at"):
        when += " → " + as_str(data.get("ended_at"))
    rows.append(("Run", text(when)))
    extras = []
    if data.get("partial"):
        extras.append("partial run (stopped before its end)")
    if data.get("strict"):
        extras.append("strict: protocol warnings count as failures")
    scale = num(data.get("timeout_scale"))
    if scale is not None and scale != 1.0:
        extras.append(f"timeout scale {scale:g}")
    stub = data.get("model_stub")
    if isinstance(stub, dict):
        extras.append("scripted model endpoint: " + short(", ".join(f"{k} {as_str(v)}" for k, v in stub.items()), 200))
    if extras:
        rows.append(("Options", text("; ".join(extras))))
    return '<dl class="facts">' + "".join(f"<dt>{text(k)}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


def _journey_table(journeys: Sequence[Mapping[str, Any]], ids: Sequence[str], docs_url: str) -> str:
    rows = []
    for j, anchor in zip(journeys, ids, strict=True):
        jid = as_str(j.get("id"))
        known = JOURNEYS_BY_ID.get(jid)
        title = as_str(j.get("title")) or (known.title if known else jid)
        step = f' {_link("#" + known.anchor, doc_link(known.anchor, docs_url), "step")}' if known else ""
        failures = []
        for f in as_list(j.get("failures")):
            f = as_dict(f)
            fid = as_str(f.get("id"), "?")
            href = safe_href(_failure_href(fid, jid, docs_url))
            tip = attr(short(f.get("message"), 300))
            failures.append(f'<a href="{href}" title="{tip}" rel="noopener noreferrer">{text(fid)}</a>' if href
                            else f'<span title="{tip}">{text(fid)}</span>')
        duration = num(j.get("duration_s"))
        rows.append(f'<tr class="{attr(as_str(j.get("verdict")))}"><td><a href="#{anchor}">{text(title)}</a>'
                    f' <code>{text(jid)}</code>{step}</td><td>{_badge(as_str(j.get("verdict")))}</td>'
                    f'<td class="num">{"" if duration is None else f"{duration:.1f}"}</td>'
                    f'<td>{", ".join(failures) or "—"}</td></tr>')
    return ('<table class="journeys"><thead><tr><th>Journey</th><th>Verdict</th><th class="num">Seconds</th>'
            "<th>Failures (how to fix)</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _baseline(outcome: BaselineOutcome | None) -> str:
    if outcome is None:
        return ""
    items = "".join(f"<li>{text(m)}</li>" for m in outcome.messages)
    return (f'<section class="baseline"><h2>Baseline: {_badge(outcome.verdict)}</h2>'
            f"<ul>{items}</ul></section>")


# --- one journey --------------------------------------------------------------------------------

def _failures(j: Mapping[str, Any], docs_url: str) -> str:
    jid = as_str(j.get("id"))
    items = []
    for f in as_list(j.get("failures")):
        f = as_dict(f)
        fid = as_str(f.get("id"), "?")
        anchor, step = fix_and_step(fid, jid)
        detail = as_str(f.get("detail"))
        step_link = f' · {_link(f"step (#{step})", doc_link(step, docs_url), "step")}' if step else ""
        items.append(f'<li><strong>{text(fid)}</strong>: {text(as_str(f.get("message")))} '
                     f'{_link(f"how to fix (#{anchor})", _failure_href(fid, jid, docs_url))}{step_link}'
                     + (f'<div class="detail">{text(detail)}</div>' if detail else "") + "</li>")
    for w in as_list(j.get("warnings")):
        items.append(f'<li class="warning">Warning: {text(short(w, 2000))}</li>')
    evidence = as_dict(j.get("evidence"))
    for key, what in (("stopped_early", "The journey stopped early"), ("runner_error", "acp-journeys failed")):
        if evidence.get(key):
            items.append(f'<li class="note">{text(what)}: {text(short(evidence.get(key), 2000))}</li>')
    if evidence.get("interrupted"):
        items.append('<li class="note">The run was stopped before this journey ended.</li>')
    if not items:
        items.append('<li class="ok">Every check passed.</li>')
    return '<ul class="failures">' + "".join(items) + "</ul>"


def _legend() -> str:
    marks = [("m-turn", "turn"), ("m-request", "request"), ("m-initialize", "initialize"),
             ("m-tool-call", "tool call"), ("m-permission", "permission request"), ("m-mcp", "MCP call"),
             ("m-cancel", "session/cancel"), ("m-cancel-answer", "cancel → answer"),
             ("m-last-ended", "last process ended"), ("m-leftover", "left behind")]
    updates = [(update_class(k), k) for k in KNOWN_UPDATES[:5]] + [("u-other", "other update")]
    return ('<p class="legend">' + "".join(f'<span class="entry"><span class="key {c}"></span>{text(n)}</span> '
                                           for c, n in marks + updates)
            + "· hover a mark for its time and detail</p>")


def _timeline(j: Mapping[str, Any]) -> str:
    timeline = journey_timeline(j)
    parts = ['<section class="timeline-panel"><h3>Timeline</h3>']
    for title, svg in panels(timeline):
        parts.append(f'<figure><figcaption>{text(title)}</figcaption>{svg}</figure>')
    parts.append(_legend())
    latencies = cancel_latencies(timeline)
    if latencies:
        parts.append('<p class="stop-summary">' + "; ".join(
            f'session/cancel answered in <span class="cancel-latency-text">{text(seconds(v))}</span>'
            for v in latencies) + "</p>")
    parts.append("</section>")
    return "".join(parts)


def _workspace(t: Mapping[str, Any]) -> str:
    before, after = t.get("workspace_before"), t.get("workspace_after")
    if not isinstance(before, dict) or not isinstance(after, dict):
        return ""
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    if not (added or removed or changed):
        return "workspace unchanged"
    return "; ".join(f"{word}: {', '.join(short(x, 60) for x in names[:20])}"
                     for word, names in (("added", added), ("removed", removed), ("changed", changed)) if names)


def _turns(evidence: Mapping[str, Any]) -> str:
    turns = [as_dict(t) for t in as_list(evidence.get("turns"))]
    if not turns:
        return ""
    rows = []
    for t in turns:
        sent, answered = num(t.get("sent_at")), num(t.get("answered_at"))
        outcome = ("error: " + short(as_dict(t.get("error")).get("message") or t.get("error"), 200)
                   if t.get("error") else as_str(t.get("stop_reason"), "no answer"))
        took = f" after {seconds(answered - sent)}" if sent is not None and answered is not None else ""
        counts = ", ".join(f"{k} {as_str(v)}" for k, v in as_dict(t.get("update_counts")).items()) or "none"
        late = as_dict(t.get("late_updates"))
        reply = as_str(t.get("reply_text"))
        length = t.get("reply_length") if isinstance(t.get("reply_length"), int) else len(reply)
        if len(reply) <= 400:
            reply_html = _pre(reply, "reply") if reply else "<em>no reply text</em>"
        else:
            reply_html = (f"<details><summary>the reply: {length:,} characters (shown: {len(reply):,})</summary>"
                          f"{_pre(reply, 'reply long')}</details>")
        thought = as_str(t.get("thought_text"))
        extra = []
        if late:
            extra.append("late updates (after the answer): " + ", ".join(f"{k} {as_str(v)}" for k, v in late.items()))
        ws = _workspace(t)
        if ws:
            extra.append(ws)
        if t.get("target_file"):
            extra.append(f"file {short(t.get('target_file'), 120)}: "
                         + ("exists" if t.get("target_file_exists") else "missing"))
        rows.append(
            f'<tr><td><strong>{text(as_str(t.get("name"), "turn"))}</strong><br><span class="dim">'
            f'process {text(_number(t.get("process")))}, {text(as_str(t.get("mode"), "default"))} mode</span></td>'
            f'<td>{_pre(as_str(t.get("prompt_text")), "prompt")}'
            + ('<span class="dim">+ an image</span>' if t.get("has_image") else "") + "</td>"
            f'<td>{reply_html}'
            + (f"<details><summary>thoughts ({len(thought):,} characters)</summary>{_pre(thought)}</details>"
               if thought else "")
            + "</td>"
            f'<td>{text(outcome + took)}<br><span class="dim">updates: {text(counts)}</span>'
            + "".join(f'<br><span class="dim">{text(e)}</span>' for e in extra) + "</td></tr>")
    return ('<h3>Turns</h3><table class="turns"><thead><tr><th>Turn</th><th>Prompt</th><th>Reply</th>'
            "<th>Answer</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _requests(evidence: Mapping[str, Any]) -> str:
    requests = [as_dict(r) for r in as_list(evidence.get("requests"))]
    if not requests:
        return ""
    rows = []
    for r in requests:
        sent, answered = num(r.get("sent_at")), num(r.get("answered_at"))
        if r.get("error"):
            outcome = "error: " + short(r.get("error"), 300)
        elif r.get("timed_out"):
            outcome = "no answer within the bound"
        elif r.get("agent_exited"):
            outcome = "the agent exited"
        else:
            outcome = "answered" + (f" after {seconds(answered - sent)}" if sent is not None and answered is not None
                                    else "")
        rows.append(f'<tr><td class="num">{"" if sent is None else f"{sent:.4f}"}</td>'
                    f'<td>{text(_number(r.get("process")))}</td><td><code>{text(as_str(r.get("method")))}</code></td>'
                    f'<td>{text(outcome)}</td></tr>')
    return ('<details class="section"><summary>Requests</summary><table class="requests"><thead><tr>'
            '<th class="num">Sent (s)</th><th>Process</th><th>Method</th><th>Outcome</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></details>")


def _frames(j: Mapping[str, Any], anchor: str) -> str:
    transcript = j.get("transcript")
    if transcript is None:
        return ('<details class="section frames"><summary>Frames: not kept</summary><p class="dim">The frames of '
                "a passing journey are kept only with <code>--transcripts</code>.</p></details>")
    frames = [as_dict(f) for f in as_list(transcript)]
    rows = []
    for i, f in enumerate(frames[:FRAMES_SHOWN], 1):
        direction = as_str(f.get("direction"))
        at = num(f.get("at"))
        body = as_str(f.get("text"))
        if len(body) > FRAME_CHARS_SHOWN:
            body = body[:FRAME_CHARS_SHOWN] + f"…[{len(body):,} characters in result.json]"
        rows.append(f'<tr class="d-{attr(direction)}"><td class="num">{i}</td>'
                    f'<td class="num">{"" if at is None else f"{at:.4f}"}</td>'
                    f'<td>{text(_number(f.get("process")))}</td>'
                    f'<td>{text(DIRECTION.get(direction, direction))}</td><td>{text(frame_info(f).what)}</td>'
                    f'<td><div class="frame-text">{text(body)}</div></td></tr>')
    table_id, count_id = f"{anchor}-frames", f"{anchor}-frames-count"
    more = (f'<p class="dim">The first {FRAMES_SHOWN:,} of {len(frames):,} frames; result.json holds them all.</p>'
            if len(frames) > FRAMES_SHOWN else "")
    return (f'<details class="section frames"><summary>Frames ({len(frames):,})</summary>' + more +
            f'<p class="search"><input type="search" class="frame-search" placeholder="filter the frames: '
            f'a method, an id, any text" data-table="{table_id}" data-count="{count_id}" '
            f'aria-label="filter the frames"> <span id="{count_id}" class="dim">{len(frames):,} frames</span></p>'
            f'<table class="frames-table" id="{table_id}"><thead><tr><th class="num">#</th><th class="num">At (s)</th>'
            "<th>Proc</th><th>Direction</th><th>What</th><th>Text</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></details>")


def _processes(evidence: Mapping[str, Any], failed: bool) -> str:
    parts = []
    for p in as_list(evidence.get("processes")):
        p = as_dict(p)
        index = _number(p.get("index"))
        argv = [as_str(a) for a in as_list(p.get("argv"))]
        tail = as_str(p.get("stderr_tail"))
        size = p.get("stderr_bytes") if isinstance(p.get("stderr_bytes"), int) else len(tail)
        open_ = " open" if failed and tail.strip() else ""
        head = f"stderr of agent process {index}: " + (
            f"the last {len(tail):,} characters of {size:,} bytes" if tail else "empty")
        parts.append(f'<details class="section stderr"{open_}><summary>{text(head)}</summary>'
                     f'<p class="dim"><code>{text(shlex.join(argv))}</code></p>'
                     + (_pre(tail, "stderr-tail") if tail else "") + "</details>")
        raw = p.get("initialize_raw")
        caps = p.get("agent_capabilities")
        if raw or caps:
            parts.append(f'<details class="section"><summary>initialize of agent process {text(index)}</summary>'
                         + (f"<p>The answer as it came:</p>{_pre(as_str(raw))}" if raw else "")
                         + (f"<p>agentCapabilities:</p>{_pre(_json(caps))}" if caps else "") + "</details>")
    return "".join(parts)


def _model_requests(evidence: Mapping[str, Any]) -> str:
    records = [as_dict(r) for r in as_list(evidence.get("model_requests"))]
    if not records:
        return ""
    rows = []
    for r in records:
        at = num(r.get("at"))
        decision = as_dict(r.get("decision"))
        said = (f"tool {short(decision.get('tool_call'), 40)} {short(decision.get('arguments'), 120)}"
                if decision.get("tool_call") else short(decision.get("text"), 160) if "text" in decision else "—")
        rows.append(f'<tr><td class="num">{text(as_str(r.get("seq")))}</td>'
                    f'<td class="num">{"" if at is None else f"{at:.4f}"}</td>'
                    f'<td>{text(as_str(r.get("dialect"), "?"))}<br><span class="dim">{text(as_str(r.get("method")))} '
                    f'{text(short(r.get("path"), 80))} → {text(as_str(r.get("status")))}</span></td>'
                    f'<td>{text(as_str(r.get("intent"), "—"))}</td><td>{text(said)}</td>'
                    f'<td>{text(short(r.get("why"), 300))}'
                    + (f'<br><span class="bad">{text(short(r.get("error"), 300))}</span>' if r.get("error") else "")
                    + f'<details><summary>record</summary>{_pre(_json(r))}</details></td></tr>')
    return (f'<details class="section" open><summary>Model-stub requests ({len(records)})</summary>'
            '<table class="model"><thead><tr><th class="num">#</th><th class="num">At (s)</th><th>Dialect</th>'
            "<th>Intent</th><th>The stub answered</th><th>Why</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></details>")


def _protocol_warnings(evidence: Mapping[str, Any]) -> str:
    warnings = [as_dict(w) for w in as_list(evidence.get("protocol_warnings"))]
    if not warnings:
        return ""
    rows = "".join(f'<tr><td class="num">{text(as_str(w.get("at")))}</td><td>{text(_number(w.get("process")))}</td>'
                   f'<td>{text(as_str(w.get("kind")))}</td><td>{text(short(w.get("message"), 1000))}</td></tr>'
                   for w in warnings[:WARNINGS_SHOWN])
    more = (f'<p class="dim">… and {len(warnings) - WARNINGS_SHOWN:,} more in result.json</p>'
            if len(warnings) > WARNINGS_SHOWN else "")
    return (f'<details class="section"><summary>Protocol warnings ({len(warnings):,})</summary>'
            '<table><thead><tr><th class="num">At (s)</th><th>Process</th><th>Kind</th><th>Message</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>{more}</details>")


def _journey(j: Mapping[str, Any], anchor: str, docs_url: str) -> str:
    jid = as_str(j.get("id"))
    verdict = as_str(j.get("verdict"))
    known = JOURNEYS_BY_ID.get(jid)
    title = as_str(j.get("title")) or (known.title if known else jid)
    evidence = as_dict(j.get("evidence"))
    failed = verdict != "pass"
    ids = ", ".join(as_str(as_dict(f).get("id")) for f in as_list(j.get("failures")))
    duration = num(j.get("duration_s"))
    step = (" " + _link(f"doc #{known.anchor}", doc_link(known.anchor, docs_url), "step")) if known else ""
    return (f'<details class="journey {attr(verdict)}" id="{anchor}" data-journey="{attr(jid)}"'
            f'{" open" if failed else ""}><summary>{_badge(verdict)} <span class="jtitle">{text(title)}</span> '
            f'<code>{text(jid)}</code>'
            f'<span class="dim">{"" if duration is None else f" · {duration:.1f} s"}</span>'
            + (f' <span class="ids">{text(ids)}</span>' if ids else "") + "</summary>"
            f'<div class="journey-body"><p class="doc">{step}</p>'
            + _failures(j, docs_url) + _timeline(j) + _turns(evidence) + _requests(evidence)
            + _frames(j, anchor) + _processes(evidence, failed) + _model_requests(evidence)
            + _protocol_warnings(evidence) + "</div></details>")


# --- the page -----------------------------------------------------------------------------------

def render_html(result: RunResult | Mapping[str, Any], *, docs_url: str | None = None,
                baseline: BaselineOutcome | None = None, gate: Gate | None = None) -> str:
    """The whole page (see the module's rules); `gate`: the gate's word, shown instead of the
    verdict when it refuses the result or finds it partial."""
    data: Mapping[str, Any] = (result.model_dump(mode="json", by_alias=True) if isinstance(result, RunResult)
                               else result)
    docs = docs_url or as_str(data.get("docs_url"))
    style, script = _asset("report.css"), _asset("report.js")
    journeys = [as_dict(j) for j in as_list(data.get("journeys"))]
    anchors: list[str] = []
    for j in journeys:
        anchor = dom_id("j-", as_str(j.get("id")))
        while anchor in anchors:
            anchor += "-x"
        anchors.append(anchor)
    verdict = baseline.verdict if baseline is not None else as_str(data.get("verdict"), "fail")
    counts = {v: sum(1 for j in journeys if j.get("verdict") == v) for v in ("pass", "fail", "error")}
    line = f"{counts['pass']} of {len(journeys)} journeys passed, {counts['fail']} failed"
    if counts["error"]:
        line += f", {counts['error']} error{'s' if counts['error'] != 1 else ''} of acp-journeys"
    if data.get("partial"):
        line += "; partial run"
    if gate is not None and gate.word in ("PARTIAL", "REFUSED"):
        verdict = gate.word.lower()
        line += f"; {gate.why}" if gate.why else ""
    title = f"ACP journeys: {VERDICT_WORD.get(verdict, verdict)} — {line}"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{attr(content_security_policy(style, script))}">'
        '<meta name="referrer" content="no-referrer"><meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{text(title)}</title><style>{style}</style></head><body>"
        f'<header class="top {attr("fail" if verdict in ("partial", "refused") else verdict)}"><h1>{_badge(verdict)} ACP journeys</h1>'
        f'<p class="counts">{text(line)}</p></header><main>'
        + _facts(data) + _baseline(baseline)
        + '<h2>Journeys</h2>' + _journey_table(journeys, anchors, docs)
        + '<p class="controls"><button type="button" id="open-all">Open every journey</button> '
          '<button type="button" id="close-all">Close every journey</button></p>'
        + "".join(_journey(j, a, docs) for j, a in zip(journeys, anchors, strict=True))
        + protocol_tier.html_section(data)
        + f'</main><footer>acp-journeys {text(as_str(data.get("tool_version"), "?"))} · made from result.json alone; '
          "it loads nothing from the network.</footer>"
        f"<script>{script}</script></body></html>\n")


def write_html(result: RunResult, path: str, *, docs_url: str | None = None,
               baseline: BaselineOutcome | None = None, gate: Gate | None = None) -> None:
    """Atomic, like result.json: a stopped run never leaves half a page."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    page = render_html(result, docs_url=docs_url, baseline=baseline, gate=gate)
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=str(target.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
