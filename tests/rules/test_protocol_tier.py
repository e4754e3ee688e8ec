"""The protocol tier's catalog, judge and outputs, without an agent process (built evidence, not mocks).

The fixture agents that fail each check for real are in tests/fixture_tables/test_fixture_verdicts.py; here: the
catalog and the judge hold the same ids both ways, the docs explain each, a SHOULD never fails,
checks skip what the evidence lacks, `verify` re-judges a hand-edited tier, and agent text in a
detail never becomes markup or a line of its own in any output.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

from conftest import ROOT, reference_agent, run_journeys
from sample_results import INJECTION, journey, run

from acp_journeys.output import protocol_tier as out
from acp_journeys.output.html.report import render_html
from acp_journeys.output.junit import junit_xml
from acp_journeys.output.markdown import summary_markdown
from acp_journeys.rules import protocol_catalog as pc
from acp_journeys.rules.evidence import (JourneyEvidence, ProcessEvidence, ProtocolTier, RequestEvidence, Tiers,
                                         TurnEvidence)
from acp_journeys.rules.judge import judge_result
from acp_journeys.rules.protocol_tier import CHECK_FUNCTIONS, judge_tiers, must_failures

DOC = (ROOT / "docs" / "protocol-tier.md").read_text()


def test_the_catalog_and_the_judge_name_the_same_checks_and_the_docs_explain_each() -> None:
    assert list(CHECK_FUNCTIONS) == list(pc.CHECK_IDS) and len(set(pc.CHECK_IDS)) == len(pc.CHECK_IDS)
    for check in pc.CHECKS:
        assert check.level in ("MUST", "SHOULD")
        assert check.anchor.startswith(pc.SPEC_URL + "/") and "#" in check.anchor
        assert f"| `{check.id}` | {check.level} | [{check.section}]({check.anchor}) |" in DOC, check.id
        assert f"`{check.id}`" in DOC.split("## Beside acp-tck and acpx")[1], f"{check.id} is not in the comparison"
        assert f"### {check.id}" in DOC or any(f"### " in line and check.id in line for line in DOC.splitlines())


def _with_tier(journeys_evidence: list[JourneyEvidence], probe: JourneyEvidence | None = None, **sent: float):
    results = [journey(e.journey).model_copy(update={"evidence": e}) for e in journeys_evidence]
    result = run(results)
    result.tiers = Tiers(protocol=ProtocolTier(probe=probe, probe_sent=sent))
    return judge_tiers(judge_result(result))


def _verdicts(result) -> dict[str, str]:
    return {c.id: c.verdict for c in result.tiers.protocol.checks}


def _turn(name: str, session: str | None = "s1", **kw) -> TurnEvidence:
    return TurnEvidence(name=name, process=0, session_id=session, prompt_text="p", sent_at=1.0, **kw)


def _process(**kw) -> ProcessEvidence:
    return ProcessEvidence(index=0, argv=["agent"], started_at=0.0, **kw)


def test_without_a_probe_its_checks_skip_and_the_journeys_evidence_is_judged() -> None:
    evidence = JourneyEvidence(journey="turn-to-end", processes=[_process(update_session_ids={"s1": 2, "other": 1})],
                               turns=[_turn("reply", answered_at=2.0, stop_reason="end_turn",
                                            late_updates={"available_commands_update": 1})])
    result = _with_tier([evidence])
    verdicts = _verdicts(result)
    assert verdicts["update-names-session"] == "fail"  # "other" is not the session in use
    assert verdicts["no-update-after-answer"] == "pass"  # a session-level update may come at any time
    for probe_only in ("session-survives-cancel", "cancel-idle-harmless", "unknown-session-error",
                       "unknown-method-not-found", "session-list", "relative-cwd-error"):
        assert verdicts[probe_only] == "skip", probe_only
    tier = result.tiers.protocol
    assert tier.verdict == "fail" and [c.id for c in must_failures(result)] == ["update-names-session"]
    assert tier.musts_applicable == sum(1 for c in tier.checks if c.level == "MUST" and c.verdict != "skip")
    # Rondar's verdict is untouched by the tier: the same as judged without it.
    plain = judge_result(run([journey("turn-to-end").model_copy(update={"evidence": evidence})]))
    assert (result.verdict, result.passed, [j.failures for j in result.journeys]) == \
        (plain.verdict, plain.passed, [j.failures for j in plain.journeys])


def test_a_should_never_fails_and_a_must_with_another_error_code_warns() -> None:
    probe = JourneyEvidence(journey=pc.PROBE_ID, processes=[_process()], requests=[
        RequestEvidence(method="session/new", process=0, params={"cwd": pc.RELATIVE_CWD}, sent_at=1.0,
                        answered_at=1.1, result={"sessionId": "rel"}),
        RequestEvidence(method=pc.UNKNOWN_METHOD, process=0, sent_at=2.0, answered_at=2.1,
                        error={"code": -32603, "message": "internal"})])
    verdicts = _verdicts(_with_tier([], probe, **{"unknown-notification": 1.9}))
    assert verdicts["relative-cwd-error"] == "warn" and verdicts["agent-info"] == "skip"
    assert verdicts["unknown-method-not-found"] == "warn" and verdicts["unknown-notification-ignored"] == "pass"


def test_a_response_to_a_notification_and_a_wedged_session_fail() -> None:
    probe = JourneyEvidence(journey=pc.PROBE_ID, processes=[_process(null_id_responses=[1.05])], turns=[
        _turn("after-idle-cancel", answered_at=1.5, stop_reason="end_turn"),
        _turn("to-cancel", cancel_sent_at=3.0, answered_at=3.2, stop_reason="cancelled"),
        _turn("after-cancel", timed_out=True)])
    verdicts = _verdicts(_with_tier([], probe, **{"idle-cancel": 1.0}))
    assert verdicts["cancel-idle-harmless"] == "fail" and verdicts["session-survives-cancel"] == "fail"


def test_verify_judges_a_hand_edited_tier_again_from_its_evidence(tmp_path) -> None:
    outcome = run_journeys(reference_agent("foreign-session-updates"), tmp_path, "--journey", "turn-to-end",
                           "--tier", "protocol")
    data = json.loads(outcome.path.read_text())
    tier = data["tiers"]["protocol"]
    for check in tier["checks"]:
        check["verdict"] = "pass"
    tier["verdict"], tier["musts_passed"] = "pass", tier["musts_applicable"]
    outcome.path.write_text(json.dumps(data))
    args = [sys.executable, "-m", "acp_journeys", "verify", str(outcome.path), "--journey", "turn-to-end"]
    plain = subprocess.run(args, capture_output=True, text=True, timeout=60)
    gated = subprocess.run(args + ["--tier", "protocol"], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and re.search(r"^update-names-session +MUST +FAIL ", plain.stdout, re.M)
    assert gated.returncode == 1 and "MUST checks update-names-session" in gated.stderr
    assert "the stored verdicts of the protocol tier do not match its evidence" in plain.stderr


def test_agent_text_in_a_detail_never_becomes_markup_or_a_line_of_its_own() -> None:
    evidence = JourneyEvidence(journey="turn-to-end", processes=[_process(update_session_ids={INJECTION: 1})],
                               turns=[_turn("reply", answered_at=2.0, stop_reason="end_turn")])
    result = _with_tier([evidence])
    [detail] = [c.detail for c in result.tiers.protocol.checks if c.id == "update-names-session"]
    assert "<script>" in detail  # the agent's text is in the evidence's detail, as it came
    console = out.console_text(result)
    assert all(not line.startswith(("- list item", "```", "::")) for line in console.splitlines())
    markdown = summary_markdown(result, docs_url=result.docs_url)
    section = markdown[markdown.index("### Protocol tier"):]
    assert "<script>" not in section and "[link](https://evil.test)" not in section
    page = render_html(result)
    tier_html = page[page.index('id="protocol-tier"'):]
    assert "<script>alert" not in tier_html and "<img" not in tier_html
    root = ET.fromstring(junit_xml(result, docs_url=result.docs_url))
    [suite] = [s for s in root if s.get("name") == out.SUITE]
    assert suite.get("tests") == str(len(pc.CHECKS)) and suite.get("failures") == "1"
    assert int(root.get("tests")) == 1 + len(pc.CHECKS)


def test_a_result_without_the_tier_shows_none_of_it() -> None:
    result = judge_tiers(judge_result(run([journey("turn-to-end")])))
    assert result.tiers is None and out.console_text(result) == "" and must_failures(result) == []
    assert "Protocol tier" not in summary_markdown(result, docs_url=result.docs_url)
    assert 'id="protocol-tier"' not in render_html(result)
    root = ET.fromstring(junit_xml(result, docs_url=result.docs_url))
    assert [s.get("name") for s in root] == ["acp-journeys"]


def test_a_tier_whose_evidence_shows_no_must_met_does_not_pass() -> None:
    result = _with_tier([], JourneyEvidence(journey=pc.PROBE_ID, stopped_early="initialize got no usable answer"))
    tier = result.tiers.protocol
    assert tier.musts_applicable == 0 and tier.verdict == "fail" and must_failures(result) == []
