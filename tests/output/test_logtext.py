"""Agent text in the CI log: no line break, no control character, no workflow command of its own."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from action_harness import workflow_commands
from conftest import reference_agent, run_journeys
from fake_github import FakeGitHub, serve
from sample_results import all_pass, failure, journey, run

from acp_journeys.output import console
from acp_journeys.output.logtext import command_data, one_line
from acp_journeys.rules.catalog import JOURNEYS

FORGED = "ok\n::error title=Forged::x\r::add-mask::y\u2028::warning::z\x1b[31m\x85end"


def test_one_line_escapes_every_break_and_control() -> None:
    out = one_line(FORGED)
    assert out == "ok\\n::error title=Forged::x\\r::add-mask::y\\u2028::warning::z\\x1b[31m\\x85end"
    assert out.splitlines() == [out] and out.isprintable()
    assert one_line("plain: ünïcode ✓") == "plain: ünïcode ✓"


def test_command_data_cannot_end_the_command() -> None:
    assert command_data("100% done\r\n::error::x") == "100%25 done%0D%0A::error::x"


def test_the_table_and_the_progress_lines_keep_agent_text_on_one_line() -> None:
    js = [journey(j.id, "fail", [failure("no-plan-mode", j.id, detail="session/new offered: " + FORGED)])
          if j.id == "plan-turn-saved-plan" else journey(j.id) for j in JOURNEYS]
    result = run(js)
    result.journeys[0].id = "turn-to-end\n::error::forged id"
    text = console.table(result)
    assert "session/new offered: ok\\n::error title=Forged::x" in text
    for line in text.splitlines():
        assert not line.lstrip().startswith("::"), line
    stream = io.StringIO()
    console.Progress(stream).say("journey\n::error::forged")
    assert stream.getvalue() == "acp-journeys: journey\\n::error::forged\n"
    assert "\n::" not in console.table(all_pass())


# --- the legacy form `##[...]`, obeyed anywhere in a line -------------------------------------------

LEGACY = "nope ##[error]INJECTED ##[add-mask]journeys ##[stop-commands]forged ##[set-output name=x]y"


def test_one_line_breaks_the_legacy_form_anywhere_and_a_leading_double_colon() -> None:
    assert one_line(LEGACY) == ("nope ##\\x5berror]INJECTED ##\\x5badd-mask]journeys ##\\x5bstop-commands]forged "
                                "##\\x5bset-output name=x]y")
    assert one_line("###[x") == "###\\x5bx"  # no `##[` left however many `#` come first
    assert one_line("::error::X") == "\\x3a:error::X" and one_line("  ::add-mask::y") == "  \\x3a:add-mask::y"
    assert one_line("a::b::c") == "a::b::c"  # `::` starts a command only at the start of a line
    # A `#` at the end is escaped, so that text we put after a piece cannot complete a `##[`.
    assert one_line("issue #") == "issue \\x23" and "##[" not in one_line("a##") + "[error]x"
    # Invisible characters (which .NET's culture-aware search may skip inside `##[`), bidi
    # overrides and blanks other than the space are shown as escapes too.
    assert one_line("#\u00ad#[error]x \u202e \u200d \u00a0") == "#\\xad#[error]x \\u202e \\u200d \\xa0"
    assert one_line("plain: ünïcode ✓ #1 [x]") == "plain: ünïcode ✓ #1 [x]"
    for text in (LEGACY, FORGED, "::error::X", "\u00a0::error::X", "##\u200b[error]x", "x\n##[error]y"):
        line = "acp-journeys: " + one_line(text)
        assert workflow_commands(line) == [] and workflow_commands(one_line(text)) == [], line


def test_command_data_breaks_the_legacy_form() -> None:
    assert command_data("x ##[error]y\n") == "x ##\\x5berror]y%0A"


def test_the_table_breaks_the_legacy_form_in_every_agent_text() -> None:
    js = [journey(j.id, "fail", [failure("no-plan-mode", j.id, detail=LEGACY)]) if j.id == "plan-turn-saved-plan"
          else journey(j.id) for j in JOURNEYS]
    result = run(js)
    result.journeys[0].id = "##[error]forged id"
    text = console.table(result)
    assert "INJECTED" in text and "forged id" in text
    assert workflow_commands(text) == [], text


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acp_journeys", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env={**os.environ, **(env or {})})


def test_no_printed_line_of_run_verify_merge_or_report_obeys_the_agent(tmp_path: Path) -> None:
    """The workflow-command-reply fixture answers `nope ##[error]INJECTED ... \\n::error::X`, which
    each command quotes: every line printed is one that GitHub's runner obeys nothing in, but
    our own `::warning::` lines."""
    outcome = run_journeys(reference_agent("workflow-command-reply"), tmp_path, "--journey", "turn-to-end",
                           "--junit", str(tmp_path / "junit.xml"))
    assert outcome.code == 1, outcome.stderr
    verify = _cli("verify", str(outcome.path), "--journey", "turn-to-end", cwd=tmp_path)
    merge = _cli("merge", str(tmp_path / "merged.json"), str(outcome.path), cwd=tmp_path)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"after": "b" * 40}))
    with serve(FakeGitHub(statuses=[403])) as api:  # a read-only token: a `::warning::` of ours
        report = _cli("report", str(outcome.path), "--github", "--html", str(tmp_path / "r.html"), cwd=tmp_path,
                      env={"GITHUB_API_URL": api.url, "GITHUB_REPOSITORY": "o/agent", "GITHUB_SHA": "b" * 40,
                           "GITHUB_EVENT_NAME": "push", "GITHUB_EVENT_PATH": str(event), "GITHUB_TOKEN": "t0ken",
                           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
                           "GITHUB_OUTPUT": str(tmp_path / "output"), "NO_PROXY": "127.0.0.1,localhost",
                           "no_proxy": "127.0.0.1,localhost"})
    assert (verify.returncode, merge.returncode, report.returncode) == (1, 0, 0), verify.stderr + merge.stderr
    for name, proc in (("run", outcome), ("verify", verify), ("merge", merge)):
        assert "INJECTED" in proc.stdout, (name, proc.stdout)  # the agent's text did reach the log
    for name, text in (("run", outcome.stdout), ("run", outcome.stderr), ("verify", verify.stdout),
                       ("verify", verify.stderr), ("merge", merge.stdout), ("merge", merge.stderr),
                       ("report", report.stdout), ("report", report.stderr)):
        commands = workflow_commands(text)
        assert all(c.startswith("::warning::") and "INJECTED" not in c for c in commands), (name, commands)
    assert any(c.startswith("::warning::") for c in workflow_commands(report.stdout)), report.stdout


def test_an_error_that_quotes_a_result_json_obeys_no_command_in_it(tmp_path: Path) -> None:
    (tmp_path / "forged.json").write_text(json.dumps({"schema": "x ##[error]INJECTED\n::error::X"}))
    for command in (["verify", "forged.json"], ["report", "forged.json", "--html", "r.html"],
                    ["merge", "out.json", "forged.json"]):
        proc = _cli(*command, cwd=tmp_path)
        assert proc.returncode == 2 and "INJECTED" in proc.stderr, (command, proc.stderr)
        assert workflow_commands(proc.stdout + proc.stderr) == [], (command, proc.stderr)
