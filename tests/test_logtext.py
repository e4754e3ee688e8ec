"""Agent text in the CI log: no line break, no control character, no workflow command of its own."""

from __future__ import annotations

import io

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
