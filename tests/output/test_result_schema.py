"""The published JSON Schema of result.json is the one the code writes, and results validate."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from conftest import ROOT, reference_agent, run_journeys

from acp_journeys.output.result_file import json_schema

PUBLISHED = ROOT / "docs" / "result.schema.json"


def test_published_schema_is_current():
    assert json.loads(PUBLISHED.read_text()) == json_schema(), \
        "docs/result.schema.json is stale: run `acp-journeys schema > docs/result.schema.json`"


def test_a_real_result_validates_against_the_published_schema(tmp_path: Path):
    outcome = run_journeys(reference_agent("wrong-reply"), tmp_path, "--journey", "turn-to-end",
                           "--journey", "image-and-file")
    jsonschema.validate(outcome.result, json.loads(PUBLISHED.read_text()))
    assert outcome.result["schema"] == "acp-journeys/result/1"
    turn = outcome.result["journeys"][0]
    assert turn["failures"][0]["doc"].endswith("#step-3")
    assert turn["transcript"], "a failed journey keeps its transcript"
    assert outcome.result["journeys"][1]["transcript"] is None


def test_a_result_with_the_protocol_tier_validates_against_the_published_schema(tmp_path: Path):
    outcome = run_journeys(reference_agent("asks-client-fs"), tmp_path, "--journey", "turn-to-end",
                           "--tier", "protocol")
    jsonschema.validate(outcome.result, json.loads(PUBLISHED.read_text()))
    checks = outcome.result["tiers"]["protocol"]["checks"]
    assert {"id", "level", "verdict", "detail", "anchor"} == set(checks[0])
    assert [c["verdict"] for c in checks if c["id"] == "client-capabilities-respected"] == ["fail"]
