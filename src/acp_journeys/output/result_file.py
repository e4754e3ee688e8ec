"""Reading and writing result.json.

Rules of this module: a file that is not a valid result raises `ResultFileError` with a message
that says what is wrong (verify exits 2 with it, never a traceback).

It must not know how a run is driven: it reads and writes the file, masked and judged as verify will.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pydantic import ValidationError

from acp_journeys.output.bounded_file import MAX_JSON_DEPTH, MAX_RESULT_BYTES, UnreadableFile, read_bounded
from acp_journeys.output.redact import Redactor
from acp_journeys.output.result_masking import mask_result
from acp_journeys.protocol.json_depth import json_depth_over
from acp_journeys.rules import catalog
from acp_journeys.rules.evidence import RESULT_SCHEMA, RunResult


class ResultFileError(Exception):
    pass


def dump(result: RunResult, redactor: Redactor | None = None) -> str:
    if redactor:
        result = mask_result(result, redactor)
    return result.model_dump_json(by_alias=True, indent=2)


def masked_and_judged(result: RunResult, redactor: Redactor) -> RunResult:
    """What `run` writes and reports: the masked result, judged again from its masked evidence,
    which is exactly what `verify` does with the file (so the two always agree)."""
    from acp_journeys.rules.judge import judge_result
    from acp_journeys.rules.protocol_tier import judge_tiers

    return judge_tiers(judge_result(mask_result(result, redactor))) if redactor else result


def write(result: RunResult, path: str, redactor: Redactor | None = None) -> None:
    """Atomic: a run stopped mid-write never leaves half a file. A result above verify's size
    bound drops its transcripts (the evidence stays whole); one still above it is an error."""
    text = dump(result, redactor) + "\n"
    if len(text.encode()) > MAX_RESULT_BYTES:
        result = result.model_copy(update={"journeys": [j.model_copy(update={"transcript": None})
                                                        for j in result.journeys]})
        if result.tiers is not None and result.tiers.protocol is not None:  # the protocol tier's probe's too
            result.tiers.protocol.probe_transcript = None
        text = dump(result, redactor) + "\n"
        if len(text.encode()) > MAX_RESULT_BYTES:
            raise ResultFileError(f"{path}: the result would be larger than {MAX_RESULT_BYTES >> 20} MiB, "
                                  "the bound that verify reads")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".result-", dir=str(target.parent))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read(path: str) -> RunResult:
    """A result that `verify` can judge: a regular file within the size bound, JSON within the
    depth bound, valid against the schema, each journey known and present at most once."""
    try:
        data = read_bounded(path, MAX_RESULT_BYTES, "result.json")
    except UnreadableFile as exc:
        raise ResultFileError(str(exc)) from None
    try:
        parsed = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ResultFileError(f"{path}: not UTF-8 text: {exc}") from None
    except RecursionError:
        raise ResultFileError(f"{path}: not a result: JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except MemoryError:
        raise ResultFileError(f"{path}: too large to read in this machine's memory") from None
    except ValueError as exc:
        raise ResultFileError(f"{path}: not JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise ResultFileError(f"{path}: not a result: the top level is not an object")
    if parsed.get("schema") != RESULT_SCHEMA:
        raise ResultFileError(f"{path}: not a result of this version: \"schema\" is "
                              f"{_shown(parsed.get('schema'))}, expected \"{RESULT_SCHEMA}\"")
    if json_depth_over(parsed, MAX_JSON_DEPTH):
        raise ResultFileError(f"{path}: not a result: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        result = RunResult.model_validate(parsed)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise ResultFileError(f"{path}: not a valid result: {problems}") from None
    seen: set[str] = set()
    for journey in result.journeys:
        if journey.id not in catalog.JOURNEYS_BY_ID:
            raise ResultFileError(f"{path}: unknown journey {_shown(journey.id)}; the journeys are: "
                                  f"{', '.join(catalog.JOURNEY_IDS)}")
        if journey.id in seen:
            raise ResultFileError(f"{path}: journey {journey.id} appears twice")
        if journey.evidence.journey != journey.id:
            raise ResultFileError(f"{path}: the evidence of journey {journey.id} is that of "
                                  f"{_shown(journey.evidence.journey)}")
        seen.add(journey.id)
    return result


def _shown(value: object) -> str:
    text = json.dumps(value) if isinstance(value, (str, int, float, bool, type(None))) else type(value).__name__
    return text if len(text) <= 80 else text[:79] + "…"


def json_schema() -> dict:
    return RunResult.model_json_schema(by_alias=True)
