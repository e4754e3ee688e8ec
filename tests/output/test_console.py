"""What a user reads on the console: a failure's cause said once, the agent's stderr beside it, the
links to fix it, and a heartbeat while the journeys wait.

The runs are real (the CLI as a process, real agent processes); the grouping and the masking of
what the agent wrote are also checked on built results, with no process.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FAST_SCALE, REFERENCE_AGENT, reference_agent, run_cli, run_journeys
from sample_results import DOCS, failure, journey, run

from acp_journeys.cli import parser
from acp_journeys.cli.common import UsageError
from acp_journeys.cli.run import HEARTBEAT_ENV, plan_run
from acp_journeys.output import console
from acp_journeys.rules import catalog
from acp_journeys.rules.evidence import ProcessEvidence, TurnEvidence

FATAL = "fatal: ZOO_MODEL_KEY is not set; export it or pass --model-key"
HEADLINE = "- 7 journeys: the agent exited with code 1 before it answered initialize"


def _hint(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("hint:")]


def test_a_crash_at_start_is_said_once_with_its_stderr_the_fix_links_and_one_hint(tmp_path: Path) -> None:
    outcome = run_journeys(reference_agent("crash-at-start"), tmp_path)
    assert outcome.code == 1, outcome.stderr
    lines = outcome.stdout.splitlines()
    # One cause for the seven journeys, not two blocks a journey; no protocolVersion advice.
    assert lines.count(HEADLINE) == 1, outcome.stdout
    assert 'answer it with "protocolVersion"' not in outcome.stdout
    assert sum(1 for line in lines if line.startswith("- ")) == 1
    # The agent's own words, marked as its.
    assert f"    the agent's stderr (process 1 of turn-to-end): | {FATAL}" in lines
    # Each failure id links its own paragraph, with the step beside it.
    docs = catalog.DEFAULT_DOCS_URL
    assert (f"    how to fix: {docs}#failure-initialize-protocol-version, {docs}#failure-agent-exited "
            f"(step: {docs}#step-2)") in lines
    [hint] = _hint(outcome.stdout)
    assert "--env NAME" in hint and "--inherit-env" in hint and "--setting" in hint
    failures = lines[lines.index("failures:"):lines.index("result: " + str(outcome.path))]
    assert len(failures) <= 5, failures
    assert len(lines) <= 17, outcome.stdout  # 55 before: two blocks a journey
    # verify judges the file again and says the same.
    checked = subprocess.run([sys.executable, "-m", "acp_journeys", "verify", str(outcome.path)],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 1 and HEADLINE in checked.stdout.splitlines() and FATAL in checked.stdout
    message = outcome.result["journeys"][0]["failures"][0]
    assert message["id"] == "initialize-protocol-version"
    assert message["message"].startswith("the agent exited before it answered initialize")


def test_no_environment_hint_when_the_agent_had_the_whole_environment(tmp_path: Path) -> None:
    outcome = run_journeys(reference_agent("crash-at-start"), tmp_path, "--inherit-env", "--journey", "turn-to-end")
    assert outcome.code == 1 and FATAL in outcome.stdout
    assert _hint(outcome.stdout) == []


def test_the_agents_stderr_is_masked_and_can_start_no_line_of_the_log(tmp_path: Path) -> None:
    secret = "s3cr3t-zoo-value-9f2a"
    script = ('echo "::error::pwned by $ZOO_MODEL_KEY" >&2; printf "\\033[31mred\\r::warning::cr\\n" >&2; '
              'echo "::add-mask::x" >&2; exit 1')
    outcome = run_journeys(["sh", "-c", script], tmp_path, "--journey", "turn-to-end",
                           "--env", f"ZOO_MODEL_KEY={secret}")
    assert outcome.code == 1
    everything = outcome.stdout + outcome.stderr
    assert secret not in everything
    for line in outcome.stdout.splitlines():
        assert not line.lstrip().startswith("::"), line
        assert "\x1b" not in line and "\r" not in line
    shown = [line.removeprefix("    | ") for line in outcome.stdout.splitlines() if line.startswith("    | ")]
    # Behind our mark; a carriage return ends a line as a terminal shows it. (logtext may also
    # escape a leading `::` of the agent's: either way no line of the log starts with it.)
    plain = [line.replace("\\x3a", ":") for line in shown]
    assert len(plain) == 4 and plain[0].startswith("::error::pwned by ") and plain[1:] == [
        "\\x1b[31mred", "::warning::cr", "::add-mask::x"], shown
    assert "- turn-to-end: the agent exited with code 1 before it answered initialize" in outcome.stdout


def _crashed(jid: str, code: int, stderr: str = "") -> object:
    j = journey(jid, "fail", [failure("initialize-protocol-version", jid, "process 1 exited"),
                              failure("agent-exited", jid, "process 1 exited early")], stderr=stderr)
    j.evidence.processes[0] = ProcessEvidence(index=0, argv=["a"], started_at=0.0, initialize_sent_at=0.1,
                                              exited_at=0.2, exit_code=code, exited_before_stdin_close=True,
                                              stderr_tail=stderr)
    return j


def test_a_shared_cause_is_said_once_with_the_journeys_it_hit_then_the_rest_per_journey() -> None:
    result = run([_crashed("turn-to-end", 2, "boom\n"), _crashed("image-and-file", 2, "boom\n"),
                  journey("follow-up-same-session", "fail",
                          [failure("reply-missing-word", "follow-up-same-session", "the reply lacks it")]),
                  journey("stop-running-turn")], launch={"kind": "local", "environment": "minimal"})
    lines = console.failures_section(result)
    assert lines[0] == "failures:"
    assert lines[1] == ("- 2 journeys (turn-to-end, image-and-file): the agent exited with code 2 before it "
                        "answered initialize")
    assert lines.count("    the agent's stderr (process 1 of turn-to-end): | boom") == 1
    rest = lines.index("- follow-up-same-session: reply-missing-word: " + catalog.FAILURES["reply-missing-word"].message)
    assert lines[rest + 1] == "    the reply lacks it"
    assert lines[rest + 2] == f"    how to fix: {DOCS}#failure-reply-missing-word (step: {DOCS}#step-4)"
    assert sum(1 for line in lines if line.startswith("hint:")) == 1
    # The table puts the section after the verdict line.
    table = console.table(result).splitlines()
    assert table.index("failures:") > next(i for i, l in enumerate(table) if l.startswith("verdict: "))


def test_a_failure_shared_by_journeys_with_different_details_is_said_once() -> None:
    result = run([journey(jid, "fail", [failure("timeout", jid, f"turn {jid}: no answer")])
                  for jid in ("turn-to-end", "image-and-file")])
    lines = console.failures_section(result)
    assert lines[1] == "- 2 journeys: timeout: " + catalog.FAILURES["timeout"].message
    assert lines[2:4] == ["    turn-to-end: turn turn-to-end: no answer", "    image-and-file: turn image-and-file: no answer"]
    # An id without an anchor of its own links its own paragraph: its step is the journey's.
    assert lines[4] == f"    how to fix: {DOCS}#failure-timeout (step: {DOCS}#step-3)"
    # Ids with different steps each keep their own beside them; an unknown id links the list.
    assert console.fix_links(["reply-missing-word", "initialize-protocol-version", "brand-new"], "turn-to-end",
                             DOCS) == (f"how to fix: {DOCS}#failure-reply-missing-word (step: {DOCS}#step-3), "
                                       f"{DOCS}#failure-initialize-protocol-version (step: {DOCS}#step-2), "
                                       f"{DOCS}#failure-ids")


# --- the heartbeat ------------------------------------------------------------------------------

def _slow_run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    """The reference agent answering each prompt after 3 s; a heartbeat every 0.5 s."""
    return run_cli(["run", "--timeout-scale", FAST_SCALE, "--journey", "turn-to-end", *extra,
                    "-o", str(tmp_path / "result.json"), "--", sys.executable, str(REFERENCE_AGENT),
                    "--latency", "3"], tmp_path, env={HEARTBEAT_ENV: "0.5"})


def test_a_waiting_journey_says_what_it_waits_on_and_against_which_bound(tmp_path: Path) -> None:
    outcome = _slow_run(tmp_path, "--parallel", "1", "--journey", "image-and-file")
    assert outcome.code == 0, outcome.stderr
    beats = [line for line in outcome.stderr.splitlines() if line.startswith("acp-journeys: waiting: ")]
    turn = [re.search(r"turn-to-end on turn reply \(session/prompt\), (\d+) s of its 36 s bound", line)
            for line in beats]
    waited = [int(m.group(1)) for m in turn if m]
    assert len(waited) >= 3, outcome.stderr
    assert waited == sorted(waited) and waited[-1] >= 2
    # The journey behind it in the queue says what it waits for.
    assert any(re.search(r"image-and-file: waiting \d+ s for a free slot \(--parallel 1\)", line) for line in beats)
    assert any("image-and-file on turn image (session/prompt)" in line for line in beats)


def test_quiet_keeps_the_output_as_it_was(tmp_path: Path) -> None:
    outcome = _slow_run(tmp_path, "-q")
    assert outcome.code == 0
    assert outcome.stderr == ""


def test_the_heartbeat_is_ten_seconds_unless_a_test_shortens_it() -> None:
    args = parser().parse_args(["run", "--", "agent"])
    assert plan_run(args, {}, python="python3", reference_agent="ra.py").heartbeat_s == 10.0
    assert plan_run(args, {HEARTBEAT_ENV: "0.5"}, python="python3", reference_agent="ra.py").heartbeat_s == 0.5
    for bad in ("0", "-1", "soon", "inf", "nan"):
        with pytest.raises(UsageError, match=HEARTBEAT_ENV):
            plan_run(args, {HEARTBEAT_ENV: bad}, python="python3", reference_agent="ra.py")


def test_on_a_terminal_the_heartbeat_is_one_live_line(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    env = {**os.environ, HEARTBEAT_ENV: "0.5", "ACP_REFERENCE_AGENT_STATE": str(tmp_path / "state")}
    proc = subprocess.Popen([sys.executable, "-m", "acp_journeys", "run", "--timeout-scale", FAST_SCALE,
                             "--journey", "turn-to-end", "-o", str(tmp_path / "result.json"), "--",
                             sys.executable, str(REFERENCE_AGENT), "--latency", "3"],
                            stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL, env=env, cwd=tmp_path)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other side closed
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
        proc.wait(30)
    assert proc.returncode == 0
    text = seen.decode()
    assert "\r\x1b[Kacp-journeys: waiting: turn-to-end on turn reply (session/prompt)" in text
    # Rewritten in place: no heartbeat ends a line of its own, and the last one is cleared.
    assert not re.search(r"acp-journeys: waiting:[^\r\n]*\r?\n", text), text
    assert "turn-to-end: pass" in text


def test_a_hit_bound_names_itself_and_the_timeout_scale(tmp_path: Path) -> None:
    outcome = run_journeys(reference_agent("hang-turn"), tmp_path, "--journey", "turn-to-end",
                           "--timeout-scale", "0.1")
    assert outcome.code == 1
    assert ("    turn reply: session/prompt got no answer within 18 s (180 s × --timeout-scale 0.1); raise "
            "--timeout-scale if your model is slow") in outcome.stdout.splitlines(), outcome.stdout


def test_the_hint_fits_where_the_agent_ran() -> None:
    crashed = [_crashed("turn-to-end", 1, "fatal\n")]
    local = console.failures_section(run(crashed, launch={"kind": "local", "environment": "minimal"}))
    [hint] = [line for line in local if line.startswith("hint:")]
    assert "--inherit-env" in hint and "--env NAME" in hint and "--setting NAME=VALUE" in hint
    docker = console.failures_section(run(crashed, launch={"kind": "docker", "image": "x"}))
    [hint] = [line for line in docker if line.startswith("hint:")]
    assert "container" in hint and "--inherit-env" not in hint and "--env NAME" in hint
    for launch in ({"kind": "local", "environment": "inherited"}, {}):
        assert not [line for line in console.failures_section(run(crashed, launch=launch))
                    if line.startswith("hint:")]
    # A crash in the first turn may be a key that the first model call needs: the hint.
    first = _crashed("follow-up-same-session", 3)
    first.evidence.processes[0].initialize_raw = '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}'
    first.failures = [failure("agent-exited", "follow-up-same-session", "the agent ended during turn remember")]
    first.evidence.turns = [TurnEvidence(name="remember", process=0, prompt_text="p", sent_at=0.5,
                                         agent_exited=True)]
    lines = console.failures_section(run([first], launch={"kind": "local", "environment": "minimal"}))
    assert lines[1] == "- follow-up-same-session: the agent exited with code 3 during a turn"
    assert [line for line in lines if line.startswith("hint:")]
    # After a turn it answered, a crash is no missing variable: no hint.
    late = first.model_copy(deep=True)
    late.evidence.turns.insert(0, TurnEvidence(name="remember", process=0, prompt_text="p", sent_at=0.2,
                                               answered_at=0.4, stop_reason="end_turn"))
    late.evidence.turns[1].name = "ask"
    lines = console.failures_section(run([late], launch={"kind": "local", "environment": "minimal"}))
    assert lines[1] == "- follow-up-same-session: the agent exited with code 3 during a turn"
    assert not [line for line in lines if line.startswith("hint:")]


def test_a_silent_initialize_names_its_bound_and_the_timeout_scale() -> None:
    j = journey("turn-to-end", "fail", [failure("initialize-protocol-version", "turn-to-end", "no answer")])
    j.evidence.processes[0] = ProcessEvidence(index=0, argv=["a"], started_at=0.0, initialize_sent_at=0.1,
                                              initialize_timed_out=True, initialize_bound_s=12.0)
    lines = console.failures_section(run([j], timeout_scale=0.2))
    assert lines[1] == ("- turn-to-end: the agent did not answer initialize within 12 s (60 s × --timeout-scale "
                        "0.2); raise --timeout-scale if your model is slow")
    assert not [line for line in lines if line.startswith("hint:")]  # it did not exit
