"""The gate's word on a judged result: PASS, FAIL, PARTIAL or REFUSED, and why.

Rules of this module: pure. The verdict is the judge's (or the baseline's); the gate only adds
what it cannot vouch for, and a result it cannot vouch for is never a pass: REFUSED when the
result belongs to another commit or image than the one expected, PARTIAL when the run was
stopped or the file lacks journeys it must hold. REFUSED goes before PARTIAL, PARTIAL before the
verdict. `verify`, `report` and every output of them print this one word.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from acp_journeys.rules.evidence import RunResult

Word = Literal["PASS", "FAIL", "PARTIAL", "REFUSED"]

SHORT_SHA = 7
"""A prefix of at least this many characters names a commit (as git's short form)."""


@dataclass(frozen=True)
class Gate:
    word: Word
    why: str = ""
    """Empty for PASS and FAIL; else one sentence that says what was refused or is missing."""

    @property
    def passed(self) -> bool:
        return self.word == "PASS"


def check_expected_sha(expect_sha: str | None) -> str | None:
    """The commit to expect, or None when no check was asked for (the option not given at all).
    An empty or blank value is an error: it is what an unset variable of a workflow gives, and it
    must not turn the check off. Raises ValueError with the reason."""
    if expect_sha is None:
        return None
    if not expect_sha.strip():
        raise ValueError("--expect-sha is empty (an unset variable?): give the commit or image under test, "
                         "or leave the option out to check no commit")
    if expect_sha != expect_sha.strip() or any(c.isspace() for c in expect_sha):
        raise ValueError("--expect-sha holds white space: give one commit sha or image")
    return expect_sha


def other_subject(result: RunResult, expect_sha: str) -> str | None:
    """Why the result is not of `expect_sha` (the commit or image it recorded), or None when it is."""
    tested = sorted({result.subject.get("sha"), result.subject.get("image")} - {None, ""})
    for subject in tested:
        if expect_sha == subject or (len(expect_sha) >= SHORT_SHA and subject.startswith(expect_sha)):
            return None
    return f"this result is not of {expect_sha}: it tested {', '.join(tested) or 'no recorded commit or image'}"


def gate(result: RunResult, verdict: str, *, missing: Sequence[str] = (), expect_sha: str | None = None) -> Gate:
    """The word for `result` whose verdict (the judge's, or under a baseline the baseline's) is
    `verdict`; `missing`: the journeys it must hold and lacks; `expect_sha`: the commit it must be of."""
    if expect_sha is not None:
        refused = other_subject(result, expect_sha)
        if refused is not None:
            return Gate("REFUSED", refused)
    if missing:
        return Gate("PARTIAL", f"the result lacks the journeys {', '.join(missing)}")
    if result.partial:
        return Gate("PARTIAL", "the run was stopped before every journey ended")
    return Gate("PASS" if verdict == "pass" else "FAIL")
