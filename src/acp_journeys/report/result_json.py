"""Reading and writing result.json.

Rules of this module: a file that is not a valid result raises `ResultFileError` with a message
that says what is wrong (verify exits 2 with it, never a traceback).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pydantic import ValidationError

from acp_journeys.evidence import RESULT_SCHEMA, RunResult
from acp_journeys.redact import Redactor
from acp_journeys.result_masking import mask_result


class ResultFileError(Exception):
    pass


def dump(result: RunResult, redactor: Redactor | None = None) -> str:
    if redactor:
        result = mask_result(result, redactor)
    return result.model_dump_json(by_alias=True, indent=2)


def masked_and_judged(result: RunResult, redactor: Redactor) -> RunResult:
    """What `run` writes and reports: the masked result, judged again from its masked evidence,
    which is exactly what `verify` does with the file (so the two always agree)."""
    from acp_journeys.judge import judge_result

    return judge_result(mask_result(result, redactor)) if redactor else result


def write(result: RunResult, path: str, redactor: Redactor | None = None) -> None:
    """Atomic: a run stopped mid-write never leaves half a file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".result-", dir=str(target.parent))
    with os.fdopen(fd, "w") as f:
        f.write(dump(result, redactor))
        f.write("\n")
    os.replace(tmp, target)


def read(path: str) -> RunResult:
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise ResultFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultFileError(f"{path}: cannot read it: {exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ResultFileError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ResultFileError(f"{path}: not a result: the top level is not an object")
    if data.get("schema") != RESULT_SCHEMA:
        raise ResultFileError(f"{path}: not a result of this version: \"schema\" is "
                              f"{json.dumps(data.get('schema'))}, expected \"{RESULT_SCHEMA}\"")
    try:
        return RunResult.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise ResultFileError(f"{path}: not a valid result: {problems}") from None


def json_schema() -> dict:
    return RunResult.model_json_schema(by_alias=True)
