"""JUnit XML of a run (`--junit PATH`), in the common Jenkins/Surefire format.

Rules of this module:
- One `<testsuite name="acp-journeys">` (inside `<testsuites>`), with tests, failures, errors,
  skipped, time (seconds, the sum of the journeys') and timestamp (the run's start, UTC, without
  a zone, as the format wants). One `<testcase classname="acp-journeys" name=JOURNEY-ID>` per
  journey, with its time.
- A journey with verdict `fail` has one `<failure message=MESSAGE type=FAILURE-ID>` per failure;
  its text is the message, the detail and the doc links (`docs_url#failure-ID`, the id's own
  paragraph, and `docs_url#step-N`, its step). A journey with
  verdict `error` (acp-journeys' own fault) has `<error>` elements instead.
- Under a baseline: failures it expects are not failures; a journey whose every failure is
  expected is `<skipped>` (the message names the entries), a stale entry is a `<failure
  type="stale-baseline">`, and the expected failures are listed in `<system-out>`.
- The agent's stderr tail of each process of the journey is the testcase's `<system-err>`.
- Every text goes through ElementTree's escaping, after characters that XML 1.0 forbids (and
  lone surrogates) are removed, so the file always parses.
- The file is written whole or not at all (a temporary file, then a rename).

It must not know how the run went beyond the result (and its baseline outcome) it is given.
"""

from __future__ import annotations

import os
import re
import tempfile
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from acp_journeys.rules.catalog import FAILURES, JOURNEYS_BY_ID, anchor_for, doc_link, fix_anchor
from acp_journeys.rules.evidence import JourneyResult, RunResult

if TYPE_CHECKING:
    from acp_journeys.rules.baseline import BaselineOutcome

SUITE = "acp-journeys"
_XML_FORBIDDEN = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """`text` without the characters that XML 1.0 cannot hold."""
    return _XML_FORBIDDEN.sub("", text)


def _timestamp(started_at: str) -> str:
    try:
        when = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S")


def _link(failure_id: str, journey_id: str, docs_url: str) -> str:
    if failure_id in FAILURES and journey_id in JOURNEYS_BY_ID:
        return doc_link(anchor_for(failure_id, journey_id), docs_url)
    if journey_id in JOURNEYS_BY_ID:
        return doc_link(JOURNEYS_BY_ID[journey_id].anchor, docs_url)
    return doc_link("step-10", docs_url)


def _how_to_fix(failure_id: str, journey_id: str, docs_url: str) -> str:
    fix = fix_anchor(failure_id)
    step = _link(failure_id, journey_id, docs_url)
    if fix is None:
        return f"How to fix: {step}"
    return f"How to fix: {doc_link(fix, docs_url)} (step: {step})"


def _el(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attrs.items()})
    if text is not None:
        el.text = xml_text(text)
    return el


def _stderr(journey: JourneyResult) -> str:
    parts = [f"--- agent process {p.index + 1} (stderr tail of {p.stderr_bytes} bytes) ---\n{p.stderr_tail}"
             for p in journey.evidence.processes if p.stderr_tail]
    return "\n".join(parts)


def _testcase(suite: ET.Element, j: JourneyResult, docs_url: str,
              baseline: BaselineOutcome | None) -> str:
    """Add the testcase of one journey; returns its outcome: pass, fail, error or skipped."""
    case = _el(suite, "testcase", classname=SUITE, name=j.id, time=f"{j.duration_s:.3f}")
    new = list(j.failures) if j.verdict != "pass" else []
    expected: list[str] = []
    stale = []
    if baseline is not None:
        stale = [s for s in baseline.stale if s.entry.journey == j.id]
        new = []
        for f in j.failures if j.verdict != "pass" else []:
            entry = baseline.entry_for(j.id, f.id)
            if entry is None:
                new.append(f)
            else:
                expected.append(f"{f.id}: {f.message} (expected by {entry.describe()})")
        whole = baseline.entry_for(j.id, None)
        if j.verdict != "pass" and not j.failures and whole is not None:
            expected.append(f"the journey failed (expected by {whole.describe()})")
    unexplained = j.verdict != "pass" and not j.failures and not expected

    outcome = "pass"
    if new or stale or unexplained:
        kind = "error" if j.verdict == "error" else "failure"
        outcome = "error" if kind == "error" else "fail"
        for f in new:
            body = "\n".join(x for x in (f.message, f.detail, _how_to_fix(f.id, j.id, docs_url)) if x)
            _el(case, kind, body, message=f.message, type=f.id)
        if unexplained:
            what = "acp-journeys itself failed during this journey" if kind == "error" else "the journey failed"
            _el(case, kind, f"{what}; see result.json.", message=what,
                type="runner-error" if kind == "error" else "fail")
        for s in stale:
            _el(case, "failure", s.message, message=s.message, type="stale-baseline")
    elif expected:
        outcome = "skipped"
        _el(case, "skipped", message=f"expected by the baseline: {'; '.join(expected)}")
    out = []
    if expected:
        out.append("Expected by the baseline:\n" + "\n".join(expected))
    if j.warnings:
        out.append("Warnings:\n" + "\n".join(j.warnings))
    if out:
        _el(case, "system-out", "\n\n".join(out))
    err = _stderr(j)
    if err:
        _el(case, "system-err", err)
    return outcome


def junit_xml(result: RunResult, *, docs_url: str, baseline: BaselineOutcome | None = None) -> bytes:
    """The JUnit XML document of `result` as UTF-8 bytes."""
    root = ET.Element("testsuites", {"name": SUITE})
    suite = _el(root, "testsuite", name=SUITE, timestamp=_timestamp(result.started_at))
    props = _el(suite, "properties")
    for name, value in (("tool_version", result.tool_version),
                        ("agent_command", " ".join(result.agent_command)),
                        ("docs_url", docs_url), ("strict", str(result.strict).lower()),
                        ("partial", str(result.partial).lower()),
                        *((f"subject.{k}", v) for k, v in sorted(result.subject.items()))):
        _el(props, "property", name=name, value=value)
    outcomes = [_testcase(suite, j, docs_url, baseline) for j in result.journeys]
    total = sum(j.duration_s for j in result.journeys)
    counts = {"tests": len(outcomes), "failures": outcomes.count("fail"), "errors": outcomes.count("error"),
              "skipped": outcomes.count("skipped")}
    for key, value in counts.items():
        suite.set(key, str(value))
        if key != "skipped":
            root.set(key, str(value))
    suite.set("time", f"{total:.3f}")
    root.set("time", f"{total:.3f}")
    from acp_journeys.output.protocol_tier import add_junit_suite

    add_junit_suite(root, result, xml_text)  # the protocol tier's suite of its own, if it ran
    ET.indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode").encode("utf-8") + b"\n"


def write_junit(result: RunResult, path: str, *, docs_url: str,
                baseline: BaselineOutcome | None = None) -> None:
    """Write the JUnit XML of `result` to `path` (parent folders are made)."""
    data = junit_xml(result, docs_url=docs_url, baseline=baseline)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".junit-", suffix=".xml", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
