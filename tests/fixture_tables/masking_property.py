"""Masking never changes the verdict: a recorded run, masked with each of a set of --env values,
gets from `verify` the very verdict that `run` would report, journey by journey and failure id by
failure id, and each secret is gone from every field that is not our own.

Re-masking a recorded result is faithful: `run` masks only at its end (the agent never sees the
difference, its environment is not evidence), so one run of each fixture agent stands for a run
with each value. A few real runs with --env values (test_masking.py) check the whole path.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from acp_journeys.output import result_file
from acp_journeys.output.redact import MIN_SECRET, Redactor, public_words
from acp_journeys.output.result_masking import OURS
from acp_journeys.rules.evidence import RunResult
from acp_journeys.rules.judge import judge_result

FIXED_VALUES = ("true", "false", "1", "0", "null", "json", "plan", "default", "REPLY", "FILE-", "end_turn",
                "sk-live-9f8e7d6c5b4a3210")


def values_for(result: RunResult) -> list[str]:
    """The fixed values, plus ones that occur in this run's evidence: a substring of a marker, a
    whole marker, and the agent's session id (a real-looking token that the agent prints)."""
    values = list(FIXED_VALUES)
    markers = [m for j in result.journeys for m in j.evidence.markers.values()]
    if markers:
        values += [markers[0][-6:-2], markers[-1]]
    sessions = [t.session_id for j in result.journeys for t in j.evidence.turns if t.session_id]
    if sessions and len(sessions[0]) >= MIN_SECRET:
        values.append(sessions[0])
    return list(dict.fromkeys(values))


def verdicts(result: RunResult) -> dict[str, tuple[str, list[str]]]:
    return {j.id: (j.verdict, [f.id for f in j.failures]) for j in result.journeys}


def _strings(value: object):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _strings_outside_our_fields(model: BaseModel):
    """Every string of the result (dict keys too) but the values of our own fields: those in
    OURS, the Literal ones and the texts the judge writes from the masked evidence."""
    cls = type(model)
    for name, field in cls.model_fields.items():
        value = getattr(model, name)
        if name in OURS.get(cls, ()) or name in ("warnings", "detail") or "Literal" in str(field.annotation):
            continue
        if isinstance(value, BaseModel):
            yield from _strings_outside_our_fields(value)
        elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
            for item in value:
                yield from _strings_outside_our_fields(item)
        elif name in ("initialize_raw", "text") and isinstance(value, str):
            try:  # a raw JSON line: its literals are structure, not text; its strings are text
                yield from _strings(json.loads(value))
            except ValueError:
                yield value
        else:
            yield from _strings(value)


def check_masking_keeps_the_verdict(path: Path, tmp_path: Path) -> None:
    recorded = result_file.read(str(path))
    expected = verdicts(judge_result(recorded))
    for value in values_for(recorded):
        redactor = Redactor()
        redactor.add(value)
        masked = result_file.masked_and_judged(recorded, redactor)
        out = tmp_path / "masked.json"
        result_file.write(masked, str(out))
        verified = judge_result(result_file.read(str(out)))  # what `verify` computes
        assert verdicts(masked) == expected, f"--env X={value}: run's verdict changed"
        assert verdicts(verified) == expected, f"--env X={value}: verify disagrees with run"
        if not redactor:
            continue  # shorter than MIN_SECRET: not a secret
        text = out.read_text()
        leaks = [s for s in _strings_outside_our_fields(RunResult.model_validate_json(text))
                 if value in s and s not in public_words()]
        assert not leaks, f"--env X={value}: the secret shows in {leaks[:3]}"
        if value not in FIXED_VALUES:  # a value of the run itself: gone from every byte
            assert value not in text, f"--env X={value}: the secret shows in the file"
