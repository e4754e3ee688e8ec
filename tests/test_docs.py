"""docs/journeys.md has an anchor for every failure id and every anchor that the reports link to."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from acp_journeys.rules.catalog import FAILURES, JOURNEY_FAILURES, JOURNEY_IDS, JOURNEYS, anchor_for

DOC = Path(__file__).resolve().parent.parent / "docs" / "journeys.md"
TEXT = DOC.read_text(encoding="utf-8")
ANCHORS = re.findall(r'<a id="([^"]+)"></a>', TEXT)


def test_anchors_are_unique() -> None:
    assert [a for a, n in Counter(ANCHORS).items() if n > 1] == []


def test_rondar_page_anchors() -> None:
    assert [a for a in ANCHORS if a.startswith("step-")] == [f"step-{n}" for n in range(1, 11)]


def test_every_failure_id_has_its_anchor() -> None:
    missing = [f for f in FAILURES if f"failure-{f}" not in ANCHORS]
    assert missing == []
    stray = [a for a in ANCHORS if a.startswith("failure-") and a not in ("failure-ids",)
             and a.removeprefix("failure-") not in FAILURES]
    assert stray == []


def test_every_anchor_that_a_report_can_link_to_exists() -> None:
    linked = {anchor_for(f, j) for j in JOURNEY_IDS for f in FAILURES}
    linked |= {j.anchor for j in JOURNEYS}
    linked |= {FAILURES[f].anchor for f in FAILURES if FAILURES[f].anchor}
    assert sorted(linked - set(ANCHORS)) == []


def test_each_journey_lists_its_own_failures() -> None:
    sections = re.split(r'<a id="(step-\d+)"></a>', TEXT)
    by_anchor = dict(zip(sections[1::2], sections[2::2], strict=True))
    for journey in JOURNEYS:
        section = by_anchor[journey.anchor]
        assert f"(`{journey.id}`)" in section
        for failure_id in JOURNEY_FAILURES[journey.id]:
            if FAILURES[failure_id].anchor in ("step-1", "step-2"):
                continue  # listed once under the checks on every process
            assert f"(#failure-{failure_id})" in section, (journey.id, failure_id)


def test_internal_links_point_at_anchors() -> None:
    targets = set(re.findall(r"\]\(#([^)]+)\)", TEXT))
    assert sorted(targets - set(ANCHORS)) == []


def test_the_security_docs_name_the_risks_users_must_handle() -> None:
    root = DOC.parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    security = readme.split("## Security", 1)[1].split("\n## ", 1)[0]
    for words in ("pull_request_target", "attacker-controlled", "model-stub: true", "persist-credentials: false",
                  "does not stop a hostile agent", "169.254.169.254", "docs/security.md",
                  # issue 23: the build's network, and the line local mode does not draw
                  "build-network: none", "`RUN` steps", "/proc/<parent>/environ", "docker mode"):
        assert words in security, words
    [inherit] = [line for line in readme.splitlines() if line.startswith("| `--inherit-env` |")]
    assert "no secret boundary" in inherit and "/proc/<parent>/environ" in inherit and "docker mode" in inherit
    page = (root / "docs" / "security.md").read_text(encoding="utf-8")
    for words in ("cap_drop: ALL", "read-only", "enable_icc=false", "169.254.169.254", "::stop-commands::",
                  "digest", "provenance", "if: always()",
                  "no secret boundary", "/proc/<pid>/environ", "Run an untrusted agent in docker mode",
                  "build-network:", "65,536", "pquota", "launch.disk_note", "known by identity"):
        assert words in page, words
