"""result.json masking: only our own schema's fields are exempt; agent JSON keys are masked too."""

from __future__ import annotations

import typing

from acp_journeys.output.redact import Redactor
from acp_journeys.output.result_file import dump
from acp_journeys.output.result_masking import OURS, _is_literal, mask_result
from acp_journeys.rules import evidence as ev
from acp_journeys.rules.judge import judge_result

SECRET = "sk-live-123456"


def _result() -> ev.RunResult:
    evidence = ev.JourneyEvidence(
        journey="turn-to-end", markers={"reply": "REPLY-ABCDEFGH"},
        requests=[ev.RequestEvidence(method="session/new", process=0, sent_at=0.1,
                                     result={"id": SECRET, "kind": SECRET, "mode": SECRET, SECRET: {"x": 1}})],
        turns=[ev.TurnEvidence(name="reply", process=0, prompt_text="p", sent_at=0.2,
                               tool_calls=[ev.ToolCallEvidence(tool_call_id=SECRET, at=0.3, kind=SECRET)])],
    )
    journey = ev.JourneyResult(id="turn-to-end", title="A turn to its end", doc="d", verdict="fail",
                               evidence=evidence)
    return ev.RunResult(tool_version="0", agent_command=["agent", SECRET], started_at="t", docs_url="d",
                        journeys=[journey])


def test_agent_values_under_any_key_and_agent_keys_are_masked() -> None:
    r = Redactor()
    r.add(SECRET)
    text = dump(_result(), r)
    assert SECRET not in text
    masked = ev.RunResult.model_validate_json(text)
    request = masked.journeys[0].evidence.requests[0]
    assert request.result == {"id": "***", "kind": "***", "mode": "***", "***": {"x": 1}}
    assert request.method == "session/new" and masked.journeys[0].id == "turn-to-end"
    assert masked.journeys[0].evidence.turns[0].tool_calls[0].kind == "***"


def test_our_fields_are_kept_even_when_a_secret_reads_like_them() -> None:
    r = Redactor()
    for secret in ("turn-to-end", "session/new", "reply", "fail"):
        r.add(secret)
    masked = mask_result(_result(), r)
    journey = masked.journeys[0]
    assert (journey.id, journey.verdict, journey.evidence.journey) == ("turn-to-end", "fail", "turn-to-end")
    assert journey.evidence.requests[0].method == "session/new" and journey.evidence.turns[0].name == "reply"
    judge_result(ev.RunResult.model_validate_json(masked.model_dump_json(by_alias=True)))  # still judges


def test_every_field_of_ours_exists_and_literal_fields_are_found() -> None:
    for model, names in OURS.items():
        assert names <= set(model.model_fields), model
    literal = [(m.__name__, n) for m in vars(ev).values() if isinstance(m, type) and issubclass(m, ev._Model)
               for n, f in m.model_fields.items() if _is_literal(f.annotation)]
    assert ("Frame", "direction") in literal and ("TurnEvidence", "cancel_trigger") in literal
    assert typing.get_origin(ev.JourneyResult.model_fields["verdict"].annotation) is typing.Literal
