"""Joining the result.json files of a matrix (each job ran some of the journeys) into one result.

Rules of this module: pure (results in, a result or `MergeError` out; no files, no printing).
The parts must be of one agent under one set of conditions: the same tool version, agent command,
subject, strict mode, docs URL, timeout scale, launch kind and model-stub use; no journey may be in
two parts. The evidence of the merged result is the union of the parts' evidence, untouched, and
its verdicts are the judge's (`judge_result`), so `verify` on it says what one run of all the
journeys would have said. Facts that differ between jobs without changing the conditions (the
machine, the launch details such as the image id) are kept per part.

It must not read or write files: `cli/merge.py` does, around it.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Sequence

from acp_journeys.rules import catalog
from acp_journeys.rules.evidence import RunResult
from acp_journeys.rules.judge import judge_result

# The tag the action gives an agent image it built in a job: `<sha12>-<job's own suffix>`. Two
# jobs that built the same commit have two such tags for one subject.
_JOB_IMAGE = re.compile(r"^acp-journeys-agent:([0-9a-f]{7,12})-[a-z0-9]+$")


class MergeError(Exception):
    """The parts cannot be one result; the message says which parts and why."""


def merge_results(parts: Sequence[tuple[str, RunResult]]) -> RunResult:
    """`parts`: (a name for messages, such as the file's path; the result), at least one."""
    if not parts:
        raise MergeError("nothing to merge: give at least one result.json")
    first_name, first = parts[0]
    for name, part in parts[1:]:
        for field, mine, theirs in _conditions(first, part):
            if mine != theirs:
                raise MergeError(f"{name} and {first_name} differ in {field}: {_show(theirs)} vs {_show(mine)}; "
                                 "only results of one agent under the same conditions can be merged")
    seen: dict[str, str] = {}
    for name, part in parts:
        for journey in part.journeys:
            if journey.id in seen:
                raise MergeError(f"journey {journey.id} is in both {seen[journey.id]} and {name}: "
                                 "each journey may be in one part only")
            seen[journey.id] = name
    order = {jid: i for i, jid in enumerate(catalog.JOURNEY_IDS)}
    journeys = sorted((j for _, p in parts for j in p.journeys), key=lambda j: (order.get(j.id, len(order)), j.id))
    merged = first.model_copy(update={
        "subject": _subject([p for _, p in parts]),
        "launch": _per_part([p.launch for _, p in parts]),
        "machine": _per_part([p.machine for _, p in parts]),
        "started_at": min((p.started_at for _, p in parts), key=_instant),
        "ended_at": _ended([p.ended_at for _, p in parts]),
        "partial": any(p.partial for _, p in parts),
        "model_stub": _model_stub([p.model_stub for _, p in parts]),
        "journeys": journeys,
    })
    return judge_result(merged)


def missing_journeys(result: RunResult, expected: Sequence[str]) -> list[str]:
    """The expected journeys that no part ran (a matrix job that failed before its result)."""
    present = {j.id for j in result.journeys}
    return [jid for jid in expected if jid not in present]


def _conditions(a: RunResult, b: RunResult) -> list[tuple[str, Any, Any]]:
    return [
        ("tool version", a.tool_version, b.tool_version),
        ("agent command", a.agent_command, b.agent_command),
        ("subject", _subject_key(a), _subject_key(b)),
        ("strict mode", a.strict, b.strict),
        ("docs URL", a.docs_url, b.docs_url),
        ("timeout scale", a.timeout_scale, b.timeout_scale),
        ("launch kind (local or docker)", a.launch.get("kind"), b.launch.get("kind")),
        ("model-stub use", a.model_stub is not None, b.model_stub is not None),
    ]


def _subject_key(result: RunResult) -> dict[str, str]:
    """What was tested. An image the action built in its own job is named by the commit it was
    built from (its tag is the job's own), so it is left out when that commit is recorded."""
    subject = dict(result.subject)
    image, sha = subject.get("image", ""), subject.get("sha", "")
    match = _JOB_IMAGE.match(image)
    if match and sha.startswith(match.group(1)):
        del subject["image"]
    return subject


def _subject(parts: list[RunResult]) -> dict[str, str]:
    images = {p.subject.get("image") for p in parts}
    if len(images) == 1:
        return dict(parts[0].subject)
    return _subject_key(parts[0])  # per-job tags of one commit: the commit names the subject


def _per_part(values: list[dict[str, Any]]) -> dict[str, Any]:
    """The one value when every part has it, else the first with each part's under "parts"."""
    if all(v == values[0] for v in values):
        return dict(values[0])
    return {**values[0], "parts": [dict(v) for v in values]}


def _instant(stamp: str) -> datetime:
    try:
        return datetime.fromisoformat(stamp)
    except ValueError:
        raise MergeError(f"started_at/ended_at {stamp!r} is not an ISO 8601 time") from None


def _ended(stamps: list[str | None]) -> str | None:
    if any(s is None for s in stamps):
        return None  # a part that never ended: the merged run did not either
    return max((s for s in stamps if s is not None), key=_instant)


def _model_stub(values: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return {
        "requests": sum(int(v.get("requests", 0)) for v in present),
        "dialects": sorted({d for v in present for d in v.get("dialects", [])}),
    }


def _show(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(str(v) for v in value) or "(none)"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "(none)"
    return str(value)
