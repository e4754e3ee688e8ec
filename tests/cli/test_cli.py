"""The command line as users meet it: exit codes, messages, verify, list, signals, secrets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import ROOT, live_processes_below, reference_agent, run_cli, run_journeys

from acp_journeys.rules import catalog


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acp_journeys", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def test_unknown_command_is_exit_2_with_a_message(tmp_path):
    outcome = run_journeys(["no-such-agent-command-xyz"], tmp_path)
    assert outcome.code == 2
    assert "not found" in outcome.stderr and "Traceback" not in outcome.stderr
    assert outcome.result is None


def test_no_command_and_unknown_journey_are_exit_2(tmp_path):
    assert cli("run").returncode == 2
    bad = cli("run", "--journey", "nope", "--", "true")
    assert bad.returncode == 2 and "unknown journey nope" in bad.stderr
    both = cli("run", "--demo", "--", "true")
    assert both.returncode == 2 and "--demo" in both.stderr


def test_list_names_every_journey_and_failure_with_its_anchor():
    out = cli("list").stdout
    for journey in catalog.JOURNEYS:
        assert f"{journey.id}: {journey.title}" in out
        for failure_id in catalog.JOURNEY_FAILURES[journey.id]:
            assert failure_id in out
    assert "#step-7" in out and "#step-2" in out
    # Each failure line links the id's own paragraph, with the step anchor beside it.
    lines = out.splitlines()
    for failure_id in catalog.FAILURES:
        mine = [l for l in lines if l.strip().startswith(failure_id + " ")]
        assert mine or failure_id in ("interrupted", "runner-error"), failure_id  # never the agent's
        for line in mine:
            assert line.endswith(f"(how to fix: {catalog.DEFAULT_DOCS_URL}#failure-{failure_id})"), line


@pytest.mark.parametrize("content,message", [
    (None, "no such file"),
    ("{not json", "not JSON"),
    ("[1, 2]", "top level is not an object"),
    ('{"schema": "other/9"}', "not a result of this version"),
    ('{"schema": "acp-journeys/result/1", "journeys": 3}', "not a valid result"),
])
def test_verify_rejects_a_bad_file_with_exit_2(tmp_path, content, message):
    path = tmp_path / "result.json"
    if content is not None:
        path.write_text(content)
    out = cli("verify", str(path))
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr


def test_hand_edited_verdict_does_not_change_verify(tmp_path):
    outcome = run_journeys(reference_agent("wrong-reply"), tmp_path, "--journey", "turn-to-end")
    assert outcome.code == 1
    data = json.loads(outcome.path.read_text())
    data["verdict"] = "pass"
    data["passed"], data["failed"] = 1, 0
    data["journeys"][0]["verdict"] = "pass"
    data["journeys"][0]["failures"] = []
    outcome.path.write_text(json.dumps(data))
    out = cli("verify", str(outcome.path))
    assert out.returncode == 1
    assert "reply-missing-marker" in out.stdout
    assert "do not match their evidence" in out.stderr


def test_edited_evidence_does_change_verify(tmp_path):
    outcome = run_journeys(reference_agent(), tmp_path, "--journey", "turn-to-end")
    data = json.loads(outcome.path.read_text())
    data["journeys"][0]["evidence"]["turns"][0]["reply_text"] = "nothing"
    outcome.path.write_text(json.dumps(data))
    assert cli("verify", str(outcome.path)).returncode == 1


def test_parallel_one_gives_the_same_verdict(tmp_path):
    outcome = run_journeys(reference_agent("cancel-end-turn"), tmp_path, "--parallel", "1")
    assert outcome.failures() == {"stop-running-turn": ["stop-reason"]}


def test_two_runs_at_once_keep_their_own_note(tmp_path):
    agent = reference_agent()
    procs = []
    for n in range(2):
        out = tmp_path / f"r{n}.json"
        procs.append((out, subprocess.Popen(
            [sys.executable, "-m", "acp_journeys", "run", "-q", "--journey", "image-and-file",
             "-o", str(out), "--", *agent], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "ACP_REFERENCE_AGENT_STATE": str(tmp_path / f"s{n}")})))
    for out, proc in procs:
        proc.communicate(timeout=120)
        assert proc.returncode == 0
        assert json.loads(out.read_text())["verdict"] == "pass"


def test_secrets_given_with_env_never_reach_any_output(tmp_path):
    canary = "canary-SECRET-9f8e7d6c5b"
    # The agent prints its secret to stderr (which result.json keeps a tail of) and still works.
    agent = ["sh", "-c", 'echo "token=$ACPJ_TOKEN" >&2; exec "$0" "$@"', *reference_agent()]
    outcome = run_journeys(agent, tmp_path, "--env", f"ACPJ_TOKEN={canary}", "--transcripts")
    assert outcome.code == 0, outcome.stderr
    text = outcome.path.read_text()
    assert "token=***" in text
    for output in (text, outcome.stdout, outcome.stderr):
        assert canary not in output


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_mid_run_writes_a_partial_result_and_leaves_nothing(tmp_path, signum):
    out = tmp_path / "result.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "acp_journeys", "run", "-o", str(out), "--", *reference_agent("hang-turn")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "ACP_REFERENCE_AGENT_STATE": str(tmp_path / "s")})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if len(live_processes_below(proc.pid, "hang-turn.py")) >= 7:
            break
        time.sleep(0.2)
    agents = [k for k in psutil.Process(proc.pid).children(recursive=True) if _alive(k)]
    assert agents
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum
    result = json.loads(out.read_text())
    assert result["partial"] is True and result["verdict"] == "fail"
    assert {j["verdict"] for j in result["journeys"]} == {"error"}
    assert all(f["id"] == "interrupted" for j in result["journeys"] for f in j["failures"])
    time.sleep(0.5)
    assert not [a for a in agents if _alive(a)]


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_demo_runs_with_no_other_argument(tmp_path):
    out = run_cli(["run", "--demo", "-o", str(tmp_path / "result.json")], tmp_path)
    assert out.code == 0, out.stderr
    assert "7 of 7 journeys passed" in out.stdout
    for journey in catalog.JOURNEY_IDS:
        assert f"{journey}: started" in out.stderr and f"{journey}: pass in" in out.stderr


def test_entrypoint_calls_the_same_main():
    out = subprocess.run([sys.executable, str(ROOT / "entrypoint.py"), "list"], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert out.returncode == 0 and "turn-to-end" in out.stdout


def test_a_runner_error_is_exit_2_not_a_finding_about_the_agent(tmp_path):
    outcome = run_journeys(reference_agent(), tmp_path, "--journey", "turn-to-end")
    data = json.loads(outcome.path.read_text())
    data["journeys"][0]["evidence"]["runner_error"] = "RuntimeError: boom"
    outcome.path.write_text(json.dumps(data))
    out = cli("verify", str(outcome.path))
    assert out.returncode == 2
    assert "ERROR" in out.stdout and "not a finding about the agent" in out.stderr


def test_relative_paths_of_the_command_are_taken_from_where_it_runs(tmp_path):
    from acp_journeys.cli.run import absolute_paths

    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "agent.py").write_text("")
    (tmp_path / "conf.toml").write_text("")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert absolute_paths(["bin/agent.py", "--acp", "conf.toml", "plan"]) == [
            str(tmp_path / "bin" / "agent.py"), "--acp", str(tmp_path / "conf.toml"), "plan"]
        assert absolute_paths(["python3", "bin/agent.py"]) == ["python3", str(tmp_path / "bin" / "agent.py")]
    finally:
        os.chdir(cwd)
    import shutil

    shutil.copy(ROOT / "src" / "acp_journeys" / "demo" / "reference_agent.py", tmp_path / "agent.py")
    out = run_journeys([sys.executable, "agent.py"], tmp_path, "--journey", "turn-to-end")
    assert out.code == 0, out.stdout


def test_a_closed_pipe_ends_quietly_not_with_an_internal_error():
    """`acp-journeys list | head -1`: the reader goes away; we stop as Unix tools do on SIGPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # gone before the first write: every write meets a closed pipe
    try:
        proc = subprocess.run([sys.executable, "-m", "acp_journeys", "list"], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert proc.returncode == 141 and "internal error" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


def test_agent_text_with_a_lone_surrogate_prints_escaped(tmp_path):
    """JSON allows "\\ud800"; printing it as UTF-8 would raise. verify shows it escaped instead."""
    out = cli("run", "--demo", "-q", "--journey", "turn-to-end", "-o", str(tmp_path / "result.json"))
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "result.json").read_text())
    data["journeys"][0]["evidence"]["processes"][0]["leftovers"] = [{"pid": 7, "command": "x\ud800y", "argv": []}]
    (tmp_path / "result.json").write_text(json.dumps(data))  # json.dumps escapes it as \ud800
    out = cli("verify", str(tmp_path / "result.json"), "--journey", "turn-to-end")
    assert out.returncode == 1 and "internal error" not in out.stderr, out.stderr
    assert "x\\ud800y" in out.stdout, out.stdout
