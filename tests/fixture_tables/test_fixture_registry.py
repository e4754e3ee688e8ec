"""The fixture agents against the catalog, both ways, read from their files (no agent runs here).

Every failure id that an agent can cause is the verdict of at least one fixture, so each id of
the table is seen failing for real by tests/fixture_tables/test_fixture_verdicts.py; and every fixture names only
journeys and ids of the catalog.
"""

from __future__ import annotations

import ast

import pytest

from acp_journeys.rules.catalog import FAILURES, JOURNEY_FAILURES, JOURNEY_IDS
from conftest import FIXTURE_AGENTS, REFERENCE_AGENT, fixture_constant, fixture_names

# The ids that no agent can cause, each with the reason.
NOT_AN_AGENTS_DOING = {
    "interrupted": "the user stopped the run (Ctrl-C or SIGTERM), not the agent",
    "runner-error": "acp-journeys itself failed; a fixture that caused it would be a bug to fix",
    "evidence-incomplete": "only `verify` of a cut or hand-made result.json finds it; a run writes whole evidence",
}
MISSING = object()


def declared() -> dict[str, list[dict]]:
    """name -> its verdicts (VERDICT, and STRICT_VERDICT for the --strict run) that are not None."""
    out = {}
    for name in fixture_names():
        verdicts = [fixture_constant(name, c) for c in ("VERDICT", "STRICT_VERDICT")]
        out[name] = [v for v in verdicts if v is not None]
    return out


def test_every_failure_that_an_agent_can_cause_is_some_fixtures_verdict() -> None:
    produced = {i for verdicts in declared().values() for v in verdicts for ids in v.values() for i in ids}
    assert set(NOT_AN_AGENTS_DOING) <= set(FAILURES)
    assert sorted(set(FAILURES) - set(NOT_AN_AGENTS_DOING) - produced) == []
    assert produced & set(NOT_AN_AGENTS_DOING) == set()


@pytest.mark.parametrize("name", fixture_names())
def test_a_fixture_declares_its_verdict_with_catalog_ids_only(name: str) -> None:
    verdict = fixture_constant(name, "VERDICT", MISSING)
    assert verdict is not MISSING, f"{name}.py declares no VERDICT (None: not in the table)"
    assert verdict is None or isinstance(verdict, dict)
    for journeys in declared()[name]:
        for journey, ids in journeys.items():
            assert journey in JOURNEY_IDS, f"{name}: {journey} is no journey of the catalog"
            assert ids and ids == sorted(set(ids)), f"{name}: {journey} needs its ids, sorted, once each"
            assert set(ids) <= set(FAILURES), f"{name}: {journey}: not every one of {ids} is in the catalog"
            # The journey's row lists what it can produce (`list`, the docs and baselines read it);
            # the strict tier's ids (stdout noise, schema violations) are any journey's.
            own = {i for i in ids if FAILURES[i].tier != "strict"}
            assert own <= set(JOURNEY_FAILURES[journey]), f"{name}: {journey} cannot produce {ids}"


@pytest.mark.parametrize("name", fixture_names())
def test_a_fixture_is_a_documented_subclass_of_the_reference_agent(name: str) -> None:
    tree = ast.parse((FIXTURE_AGENTS / f"{name}.py").read_text())
    doc = ast.get_docstring(tree)
    assert doc and "\n" not in doc.strip(), f"{name}.py opens with a one-line docstring: the rule it breaks"
    [agent] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Agent"]
    assert agent.bases, f"{name}.py: its Agent inherits the reference agent's"
    for part in name.split("+"):  # a combination is made of fixtures that exist alone
        assert (FIXTURE_AGENTS / f"{part}.py").exists(), part


def test_the_reference_agent_knows_no_defect() -> None:
    text = REFERENCE_AGENT.read_text()
    assert "--defect" not in text and "broken(" not in text
    # None of the fixture names is spelt in it (a branch for one would name it).
    assert [n for n in fixture_names() if "+" not in n and f'"{n}"' in text] == []


# --- the protocol tier (#26): its own verdicts, read from PROTOCOL_VERDICT ------------------


def protocol_declared() -> dict[str, dict[str, str]]:
    verdicts = {name: fixture_constant(name, "PROTOCOL_VERDICT") for name in fixture_names()}
    return {name: v for name, v in verdicts.items() if v is not None}


def test_every_protocol_check_fails_or_warns_in_some_fixture() -> None:
    from acp_journeys.rules.protocol_catalog import CHECK_IDS, CHECKS_BY_ID

    seen = {check: set() for check in CHECK_IDS}
    for verdict in protocol_declared().values():
        for check, word in verdict.items():
            seen[check].add(word)
    # A MUST is seen failing, a SHOULD warning (it never fails); list/resume/close also skipping.
    for check, words in seen.items():
        bad = "fail" if CHECKS_BY_ID[check].level == "MUST" else "warn"
        assert bad in words, f"no fixture {bad}s the protocol check {check}"
    assert {"session-list", "session-resume", "session-close"} <= {
        c for v in protocol_declared().values() for c, w in v.items() if w == "skip"}


@pytest.mark.parametrize("name", sorted(protocol_declared()))
def test_a_protocol_fixture_names_catalog_checks_and_keeps_rondars_verdict(name: str) -> None:
    from acp_journeys.rules.protocol_catalog import CHECKS_BY_ID, VERDICTS

    verdict = protocol_declared()[name]
    assert isinstance(verdict, dict) and verdict, f"{name}: PROTOCOL_VERDICT lists the checks that do not pass"
    for check, word in verdict.items():
        assert check in CHECKS_BY_ID, f"{name}: {check} is no protocol check of the catalog"
        assert word in VERDICTS and word != "pass", f"{name}: {check}: {word!r}"
        assert not (word == "fail" and CHECKS_BY_ID[check].level == "SHOULD"), f"{name}: a SHOULD only warns"
    # The tier never changes Rondar's verdict: these fixtures pass the 7 journeys, as the reference does.
    assert fixture_constant(name, "VERDICT") == {}, f"{name}: a protocol fixture keeps Rondar's verdict (VERDICT = {{}})"
