"""Joining the result.json files of a matrix (each job ran some of the journeys) into one result.

Rules of this module: pure (results in, a result or `MergeError` out; no files, no printing).
The parts must be of one agent under one set of conditions: everything that could change a
verdict is compared, and every difference is named in the refusal: the tool version, agent
command, subject, strict mode, docs URL, timeout scale, model-stub use, the protocol tier's
presence (when every part has it, the merged tier is the first probe that fails with all the
parts' journeys, else the first part's: see `_tiers`), and every field of the
launch section (its kind, settings, the names of the --env values, network, tracking, the image,
the container limits, the own home...) but those in `LAUNCH_FACTS`, which differ between
machines without changing what is tested. A new launch field is a condition unless it is added
there. No journey may be in two parts. The evidence of the merged result is the union of the
parts' evidence, untouched, and its verdicts are the judge's (`judge_result`), so `verify` on it
says what one run of all the journeys would have said. The facts that differ between jobs (the
machine, the launch facts) are kept per part. A field of the wrong type (the free-form launch
and model-stub sections) is a `MergeError` that names the part and the field.

It must not read or write files: `cli/merge.py` does, around it.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any, Sequence

from acp_journeys.rules import catalog
from acp_journeys.rules.evidence import RunResult, Tiers
from acp_journeys.rules.judge import judge_result
from acp_journeys.rules.protocol_tier import judge_protocol

# The tag the action gives an agent image it built in a job: `<sha12>-<job's own suffix>`. Two
# jobs that built the same commit have two such tags for one subject.
_JOB_IMAGE = re.compile(r"^acp-journeys-agent:([0-9a-f]{7,12})-[a-z0-9]+$")


# Launch fields that are facts of the job's machine, not conditions of the run: the engine's
# versions and cgroup, the id of an image rebuilt from the same commit, why the engine gave no
# disk bound (whether there is one, `disk`, is a condition), an earlier merge's parts.
LAUNCH_FACTS = frozenset({"image_id", "engine_version", "api_version", "cgroup_version", "cgroup_driver",
                          "disk_note", "parts"})
_LAUNCH_NAMES = {"kind": "launch kind (local or docker)", "settings": "settings (--setting)",
                 "env": "the names of the --env values", "network": "network (--network)",
                 "tracking": "process tracking (--tracking)", "image": "agent image",
                 "environment": "environment (--inherit-env)", "own_home": "own home (--isolate-home)",
                 "logins": "logins (--login)", "agent_dir": "agent folder (--agent-dir)",
                 "nofile": "open-files limit", "disk": "disk bound"}
_SHOWN = 200  # characters of a differing value in a refusal


class MergeError(Exception):
    """The parts cannot be one result; the message says which parts and why."""


def merge_results(parts: Sequence[tuple[str, RunResult]]) -> RunResult:
    """`parts`: (a name for messages, such as the file's path; the result), at least one."""
    if not parts:
        raise MergeError("nothing to merge: give at least one result.json")
    first_name, first = parts[0]
    for name, part in parts[1:]:
        differ = [f"{field}: {_show(theirs)} vs {_show(mine)}" for field, mine, theirs in _conditions(first, part)
                  if not _same(mine, theirs)]
        if differ:
            raise MergeError(f"{name} and {first_name} differ in {'; '.join(differ)}; "
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
        "model_stub": _model_stub([(name, p.model_stub) for name, p in parts]),
        "journeys": journeys,
    })
    return judge_result(merged.model_copy(update={"tiers": _tiers(merged, [p for _, p in parts])}))


def missing_journeys(result: RunResult, expected: Sequence[str]) -> list[str]:
    """The expected journeys that no part ran (a matrix job that failed before its result)."""
    present = {j.id for j in result.journeys}
    return [jid for jid in expected if jid not in present]


def _conditions(a: RunResult, b: RunResult) -> list[tuple[str, Any, Any]]:
    conditions: list[tuple[str, Any, Any]] = [
        ("tool version", a.tool_version, b.tool_version),
        ("agent command", a.agent_command, b.agent_command),
        ("subject", _subject_key(a), _subject_key(b)),
        ("strict mode", a.strict, b.strict),
        ("docs URL", a.docs_url, b.docs_url),
        ("timeout scale", a.timeout_scale, b.timeout_scale),
        ("model-stub use", a.model_stub is not None, b.model_stub is not None),
        ("protocol tier (--tier protocol)", _probed(a), _probed(b)),
    ]
    mine, theirs = _launch_key(a), _launch_key(b)
    for key in sorted(mine.keys() | theirs.keys(), key=lambda k: (k != "kind", k)):
        conditions.append((_LAUNCH_NAMES.get(key, f"launch {key}"), mine.get(key), theirs.get(key)))
    return conditions


def _probed(result: RunResult) -> bool:
    return result.tiers is not None and result.tiers.protocol is not None


def _tiers(merged: RunResult, parts: Sequence[RunResult]) -> Tiers | None:
    """Every job ran the tier's probe: each probe is judged with all the parts' journeys, and the
    first that fails is the merged tier's, else the first part's. Jobs whose probes disagree (an
    agent that is not the same every time) must not pass on the one probe that passed."""
    probes = [p.tiers.protocol for p in parts if p.tiers is not None and p.tiers.protocol is not None]
    if not probes:
        return merged.tiers
    judged = [judge_protocol(merged, probe) for probe in probes]
    return Tiers(protocol=next((t for t in judged if t.verdict == "fail"), judged[0]))


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: `true` is not the number 1, whatever Python says."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def _launch_key(result: RunResult) -> dict[str, Any]:
    """The launch section as conditions: without the machine's facts, and without an image that
    the action built in the job itself (its tag is the job's own; the subject's commit names it)."""
    launch = {k: v for k, v in result.launch.items() if k not in LAUNCH_FACTS}
    image, sha = launch.get("image"), result.subject.get("sha", "")
    match = _JOB_IMAGE.match(image) if isinstance(image, str) else None
    if match and sha.startswith(match.group(1)):
        del launch["image"]
    return launch


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
        instant = datetime.fromisoformat(stamp)
    except ValueError:
        raise MergeError(f"started_at/ended_at {_show(stamp)} is not an ISO 8601 time") from None
    # A time without an offset is taken as UTC (ours always have one), so that times compare.
    return instant if instant.tzinfo is not None else instant.replace(tzinfo=timezone.utc)


def _ended(stamps: list[str | None]) -> str | None:
    if any(s is None for s in stamps):
        return None  # a part that never ended: the merged run did not either
    return max((s for s in stamps if s is not None), key=_instant)


def _model_stub(values: list[tuple[str, dict[str, Any] | None]]) -> dict[str, Any] | None:
    present = [(name, v) for name, v in values if v is not None]
    if not present:
        return None
    requests, dialects = 0, set()
    for name, value in present:
        count = value.get("requests", 0)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise MergeError(f"{name}: model_stub.requests is {_show(count)}, not a count of requests")
        kinds = value.get("dialects", [])
        if not isinstance(kinds, list) or not all(isinstance(d, str) for d in kinds):
            raise MergeError(f"{name}: model_stub.dialects is {_show(kinds)}, not a list of dialect names")
        requests += count
        dialects.update(kinds)
    return {"requests": requests, "dialects": sorted(dialects)}


def _show(value: Any) -> str:
    if value is None:
        text = "(none)"
    elif isinstance(value, str):
        text = value
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        text = " ".join(value) or "(none)"
    elif isinstance(value, dict) and all(isinstance(v, (str, int, float, bool)) for v in value.values()):
        text = ", ".join(f"{k}={json.dumps(v) if isinstance(v, bool) else v}" for k, v in sorted(value.items())) \
            or "(none)"
    else:
        text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"
