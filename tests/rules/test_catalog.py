"""One table of rules: every table keyed by journey id names the catalog's journeys, both ways.

The catalog's rows, the judge's checks, the journey scripts and the journey sections of
docs/journeys.md are the same sets; what the judge needs in the evidence (turns, markers) is what
the scripts record; Rondar's bounds are the catalog's `RULES` wherever they are read.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from test_schema import SESSION_NEW_ANSWER, FakeSandbox, ScriptedConnection

from acp_journeys.rules import catalog, journey_checks, judge
from acp_journeys.editor.journeys import SCRIPTS
from acp_journeys.editor.session import AgentSession, Bounds, JourneyContext
from acp_journeys.output.html import timeline

DOC = (Path(__file__).resolve().parents[2] / "docs" / "journeys.md").read_text(encoding="utf-8")
# A journey's section opens with its anchor and a heading that names its id: `## 3. Title (`id`)`.
DOC_JOURNEYS = {m["id"]: (m["anchor"], m["title"]) for m in re.finditer(
    r'<a id="(?P<anchor>step-\d+)"></a>\s+## \d+\. (?P<title>[^\n]+?) \(`(?P<id>[a-z-]+)`\)\n', DOC)}
# Failures that no journey's checks produce: the runner's own, the user's stop, verify's, --strict's.
NOT_OF_A_JOURNEY = {"interrupted", "runner-error", "evidence-incomplete", "schema-violation", "stdout-not-protocol"}


def test_the_catalog_the_judge_the_scripts_and_the_docs_name_the_same_journeys() -> None:
    ids = set(catalog.JOURNEY_IDS)
    assert len(ids) == len(catalog.JOURNEYS)
    assert set(journey_checks.JOURNEY_CHECKS) == ids
    assert set(SCRIPTS) == ids
    assert set(DOC_JOURNEYS) == ids, "a journey section of docs/journeys.md and the catalog differ"
    assert set(catalog.JOURNEY_FAILURES) == ids


def test_each_row_has_the_anchor_and_title_of_its_docs_section() -> None:
    for journey in catalog.JOURNEYS:
        assert DOC_JOURNEYS[journey.id] == (journey.anchor, journey.title)
    assert len({j.anchor for j in catalog.JOURNEYS}) == len(catalog.JOURNEYS)


def test_failure_ids_of_the_rows_and_of_the_failure_table_are_the_same_both_ways() -> None:
    produced = {f for j in catalog.JOURNEYS for f in j.failure_ids}
    assert produced <= set(catalog.FAILURES)
    assert set(catalog.FAILURES) - produced == NOT_OF_A_JOURNEY
    for journey in catalog.JOURNEYS:
        assert len(set(journey.failure_ids)) == len(journey.failure_ids), journey.id
        assert catalog.JOURNEY_FAILURES[journey.id] == journey.failure_ids
        assert journey.failure_ids[:len(catalog.PROCESS_FAILURE_IDS)] == catalog.PROCESS_FAILURE_IDS
    assert {i for i, _ in catalog.PROCESS_CHECKS} <= set(catalog.PROCESS_FAILURE_IDS)


def test_rondar_s_bounds_are_one_rule_for_the_judge_the_driver_and_the_timeline() -> None:
    assert (judge.EXIT_BOUND_S, journey_checks.CANCEL_BOUND_S) == (catalog.RULES.exit_s, catalog.RULES.cancel_s) == (10, 30)
    scaled = Bounds(scale=3.0)
    assert (scaled.exit_s, scaled.cancel_s) == (catalog.RULES.exit_s, catalog.RULES.cancel_s)  # never scaled
    assert timeline.CANCEL_BOUND_S == catalog.RULES.cancel_s
    assert f"{catalog.RULES.cancel_s:.0f} seconds" in catalog.FAILURES["cancel-too-slow"].message


@pytest.mark.parametrize("journey", catalog.JOURNEYS, ids=lambda j: j.id)
def test_a_script_records_the_turns_and_markers_that_its_row_names(journey: catalog.Journey,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the script against a well-behaved scripted connection (no process): the turns it
    sends are exactly those the judge asks answered, and it sets every marker the checks read."""

    async def start(self: AgentSession) -> None:
        self.conn = ScriptedConnection(self, [], SESSION_NEW_ANSWER)  # type: ignore[assignment]

    monkeypatch.setattr(AgentSession, "start", start)
    ctx = JourneyContext(journey.id, FakeSandbox(), ["agent"], Bounds())  # type: ignore[arg-type]
    asyncio.run(asyncio.wait_for(SCRIPTS[journey.id](ctx), 30))
    assert ctx.evidence.stopped_early is None, ctx.evidence.stopped_early
    assert tuple(t.name for t in ctx.evidence.turns) == journey.turns
    # A script may keep more (plan-regular-plan's file name), never fewer than the checks read.
    assert set(journey.markers) <= set(ctx.evidence.markers)
    assert len(ctx.sessions) == journey.processes
