"""The expected-failures baseline: real files, real results."""

from __future__ import annotations

from pathlib import Path

import pytest
from sample_results import failure, journey, mixed, run

from acp_journeys.output.bounded_file import load_baseline
from acp_journeys.rules.baseline import Baseline, BaselineError, apply_baseline, parse_baseline
from acp_journeys.rules.catalog import JOURNEYS


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "acp-baseline.yml"
    path.write_text(text)
    return path


def test_load_strings_and_mappings_with_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "# known gaps\n"
                           "- turn-to-end:reply-not-in-chunks\n"
                           "- id: image-and-file\n"
                           "  reason: no vision model yet\n"
                           "- {id: 'stop-running-turn:cancel-too-slow', reason: slow tools}\n")
    baseline = load_baseline(path)
    assert [(e.id, e.journey, e.failure, e.reason, e.line) for e in baseline.entries] == [
        ("turn-to-end:reply-not-in-chunks", "turn-to-end", "reply-not-in-chunks", None, 2),
        ("image-and-file", "image-and-file", None, "no vision model yet", 3),
        ("stop-running-turn:cancel-too-slow", "stop-running-turn", "cancel-too-slow", "slow tools", 5),
    ]


def test_empty_file_is_an_empty_baseline(tmp_path: Path) -> None:
    assert load_baseline(write(tmp_path, "# nothing expected any more\n")).entries == ()
    assert load_baseline(write(tmp_path, "[]\n")).entries == ()


@pytest.mark.parametrize(("text", "line", "words"), [
    ("- turn-to-end\n- [unclosed\n", 3, "not valid YAML"),
    ("- a: b\n  c: d\n c: x\n", 3, "not valid YAML"),
    ("turn-to-end: yes\n", 1, "is a list of `journey` or `journey:failure-id` items, not a mapping"),
    ("just text\n", 1, "not a string"),
    ("- turn-to-end\n- no-such-journey\n", 2, "unknown journey id 'no-such-journey'"),
    ("- turn-to-end:no-such-failure\n", 1, "unknown failure id 'no-such-failure'"),
    ("- turn-to-end:no-plan-mode\n", 1, "cannot fail with 'no-plan-mode'"),
    ("- 'turn-to-end:'\n", 1, "no failure id"),
    ("- turn-to-end: stop-reason\n", 1, "write 'turn-to-end:stop-reason' with no space after the colon"),
    ("\n\n- reason: forgot the id\n", 3, "has no `id`"),
    ("- id: turn-to-end\n  reasn: typo\n", 1, "unknown key 'reasn'"),
    ("- id: 12\n", 1, "`id` must be a string"),
    ("- 12\n", 1, "not a number"),
    ("- turn-to-end\n- image-and-file\n- {id: turn-to-end, reason: again}\n", 3, "given twice (first at line 1)"),
    ("- turn-to-end:stop-reason\n- ' turn-to-end:stop-reason'\n", 2, "given twice"),
    ("- id: turn-to-end\n  id: image-and-file\n", 2, "not valid YAML"),
])
def test_bad_baselines_name_the_file_and_the_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(BaselineError) as info:
        load_baseline(path)
    message = str(info.value)
    assert message.startswith(f"acp-baseline.yml:{line}:"), message
    assert words in message, message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="cannot read"):
        load_baseline(tmp_path / "none.yml")


def test_only_baselined_failures_pass() -> None:
    result = run([journey("turn-to-end", "fail", [failure("reply-not-in-chunks", "turn-to-end")]),
                  journey("image-and-file", "fail", [failure("reply-missing-red", "image-and-file"),
                                                     failure("no-image-capability", "image-and-file")]),
                  journey("stop-running-turn")])
    outcome = apply_baseline(result, parse_baseline(
        "- turn-to-end:reply-not-in-chunks\n- id: image-and-file\n  reason: no vision\n", "b.yml"))
    assert outcome.verdict == "pass"
    assert [f.key for f in outcome.expected] == ["turn-to-end:reply-not-in-chunks", "image-and-file:reply-missing-red",
                                                 "image-and-file:no-image-capability"]
    assert not outcome.new and not outcome.stale
    assert "covered by baseline entry 'image-and-file' (b.yml:2), reason: no vision" in outcome.expected[1].message


def test_a_new_failure_fails_and_says_which() -> None:
    result = run([journey("turn-to-end", "fail", [failure("reply-not-in-chunks", "turn-to-end"),
                                                  failure("stop-reason", "turn-to-end")])])
    outcome = apply_baseline(result, parse_baseline("- turn-to-end:reply-not-in-chunks\n", "b.yml"))
    assert outcome.verdict == "fail"
    assert [f.key for f in outcome.new] == ["turn-to-end:stop-reason"]
    assert outcome.new[0].message == "new failure turn-to-end:stop-reason: not in the baseline b.yml"
    assert outcome.messages[0] == outcome.new[0].message


def test_stale_entries_fail_and_name_the_entry() -> None:
    result = run([journey("turn-to-end", "fail", [failure("reply-not-in-chunks", "turn-to-end")]),
                  journey("image-and-file"), journey("stop-running-turn")])
    outcome = apply_baseline(result, parse_baseline(
        "- turn-to-end:reply-not-in-chunks\n- turn-to-end:stop-reason\n- image-and-file\n"
        "- plan-regular-plan\n", "b.yml"))
    assert outcome.verdict == "fail" and not outcome.new
    assert [s.entry.id for s in outcome.stale] == ["turn-to-end:stop-reason", "image-and-file"]
    assert outcome.stale[0].message == ("stale baseline entry 'turn-to-end:stop-reason' (b.yml:2): the journey no "
                                        "longer fails with stop-reason; remove the entry")
    assert "the journey now passes" in outcome.stale[1].message
    # plan-regular-plan did not run: neither used nor stale
    assert [u.entry.id for u in outcome.unchecked] == ["plan-regular-plan"]


def test_error_journeys_and_partial_runs() -> None:
    result = mixed()
    outcome = apply_baseline(result, parse_baseline("- turn-to-end\n- stop-running-turn:runner-error\n", "b.yml"))
    assert outcome.verdict == "pass", outcome.messages
    no_ids = run([journey("turn-to-end", "error")])
    assert apply_baseline(no_ids, Baseline("b.yml")).new[0].message.startswith("journey turn-to-end failed (error)")
    assert apply_baseline(no_ids, parse_baseline("- turn-to-end\n", "b.yml")).verdict == "pass"
    partial = run([journey(j.id) for j in JOURNEYS], partial=True)
    out = apply_baseline(partial, Baseline("b.yml"))
    assert out.verdict == "fail" and "partial" in out.messages[0]


def test_empty_baseline_follows_the_run() -> None:
    assert apply_baseline(run([journey(j.id) for j in JOURNEYS]), Baseline("b.yml")).verdict == "pass"
    assert apply_baseline(mixed(), Baseline("b.yml")).verdict == "fail"
