"""JUnit XML, validated against the common Jenkins/Surefire JUnit schema (tests/data/junit.xsd)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree
from sample_results import DOCS, all_pass, failure, journey, mixed, run

from acp_journeys.output.junit import write_junit
from acp_journeys.rules.baseline import apply_baseline, parse_baseline
from acp_journeys.rules.catalog import JOURNEYS

SCHEMA = etree.XMLSchema(etree.parse(str(Path(__file__).parents[1] / "data" / "junit.xsd")))


def load(path: Path) -> etree._Element:
    doc = etree.parse(str(path))
    SCHEMA.assertValid(doc)
    return doc.getroot()


def test_all_pass_is_valid_and_counts(tmp_path: Path) -> None:
    out = tmp_path / "reports" / "junit.xml"
    write_junit(all_pass(), str(out), docs_url=DOCS)
    root = load(out)
    suite = root.find("testsuite")
    assert root.tag == "testsuites" and len(root) == 1
    assert suite.get("name") == "acp-journeys"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("7", "0", "0")
    assert suite.get("timestamp") == "2026-11-05T10:00:00"
    assert float(suite.get("time")) == pytest.approx(1.5 * 7)
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [j.id for j in JOURNEYS]
    assert {c.get("classname") for c in cases} == {"acp-journeys"}
    assert all(len(c.findall("failure")) == 0 for c in cases)


def test_failures_errors_links_and_stderr(tmp_path: Path) -> None:
    out = tmp_path / "junit.xml"
    write_junit(mixed(), str(out), docs_url=DOCS)
    suite = load(out).find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("7", "1", "1")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    fails = cases["turn-to-end"].findall("failure")
    assert [f.get("type") for f in fails] == ["reply-not-in-chunks", "stop-reason"]
    assert fails[0].get("message").startswith("the reply came in no agent_message_chunk update")
    assert "<script>alert(1)</script>" in fails[0].text  # escaped by XML, read back as text
    assert f"How to fix: {DOCS}#failure-reply-not-in-chunks (step: {DOCS}#step-3)" in fails[0].text
    assert "got max_tokens" in fails[1].text
    assert "Traceback: boom" in cases["turn-to-end"].find("system-err").text
    errors = cases["stop-running-turn"].findall("error")
    assert [e.get("type") for e in errors] == ["runner-error"] and not cases["stop-running-turn"].findall("failure")
    assert f"How to fix: {DOCS}#failure-runner-error (step: {DOCS}#step-7)" in errors[0].text
    # the NUL, the BEL and the lone surrogate are gone; the file parsed, so nothing forbidden is left
    err = cases["stop-running-turn"].find("system-err").text
    assert "\x00" not in err and "\x07" not in err and "warn" in err


def test_forbidden_characters_in_attributes_and_text(tmp_path: Path) -> None:
    nasty = "a\x00b\x01c\x0bd\x1fe\ufffef\ud800g]]>h\"'<&>\U0001F600"
    result = run([journey("turn-to-end", "fail", [failure("stop-reason", "turn-to-end", detail=nasty)],
                          stderr=nasty)])
    result.journeys[0].failures[0].message = nasty
    out = tmp_path / "junit.xml"
    write_junit(result, str(out), docs_url=DOCS)
    f = load(out).find("testsuite/testcase/failure")
    assert f.get("message") == "abcdef" + "g]]>h\"'<&>\U0001F600"
    assert "g]]>h\"'<&>\U0001F600" in f.text


def test_under_a_baseline(tmp_path: Path) -> None:
    baseline = parse_baseline("- turn-to-end:reply-not-in-chunks\n- turn-to-end:stop-reason\n"
                              "- id: image-and-file:reply-missing-red\n  reason: no vision yet\n", "b.yml")
    outcome = apply_baseline(mixed(), baseline)
    out = tmp_path / "junit.xml"
    write_junit(mixed(), str(out), docs_url=DOCS, baseline=outcome)
    suite = load(out).find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    skipped = cases["turn-to-end"].find("skipped")
    assert skipped is not None and "turn-to-end:reply-not-in-chunks" in skipped.get("message")
    assert not cases["turn-to-end"].findall("failure")
    assert "Expected by the baseline" in cases["turn-to-end"].find("system-out").text
    stale = cases["image-and-file"].findall("failure")
    assert [f.get("type") for f in stale] == ["stale-baseline"]
    assert "b.yml:3" in stale[0].get("message") and "no vision yet" in stale[0].get("message")
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("1", "1", "1")


def test_write_replaces_whole_file(tmp_path: Path) -> None:
    out = tmp_path / "junit.xml"
    out.write_text("old" * 10000)
    write_junit(all_pass(), str(out), docs_url=DOCS)
    load(out)
    assert [p.name for p in tmp_path.iterdir()] == ["junit.xml"]


def test_the_schema_refuses_what_consumers_refuse() -> None:
    bad = [b'<testsuite name="x"><testcase classname="c" name="n"/></testsuite>',  # no tests
           b'<testsuite name="x" tests="1"><testcase name="n"/></testsuite>',  # no classname
           b'<testsuite name="x" tests="1" timestamp="2026-11-05T10:00:00+00:00"/>',  # zone
           b'<testsuite name="x" tests="1"><testcase classname="c" name="n"><failure/><skipped/>'
           b'</testcase></testsuite>']  # order
    for doc in bad:
        assert not SCHEMA.validate(etree.fromstring(doc)), doc
