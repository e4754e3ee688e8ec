"""The same fixture table in docker mode: every fixture's verdict matches local mode exactly.

The fixture agents run as `python3 /agent/<defect>.py` in the runner image, from a folder that
holds them and a copy of the tree's reference agent (conftest.fixture_agent_dir), mounted with
--agent-dir: they import that copy, not the image's installed one, which may be older.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FAST_SCALE, fixture_agent_dir
from test_fixture_verdicts import EXPECTED, PROTOCOL_EXPECTED, tier_verdicts

docker = pytest.importorskip("docker")
IMAGE = os.environ.get("ACP_JOURNEYS_TEST_IMAGE", "acp-journeys/runner:dev")


@pytest.fixture(scope="module")
def image() -> str:
    try:
        client = docker.from_env(timeout=30)
        client.images.get(IMAGE)
    except Exception as exc:
        pytest.skip(f"docker mode needs an engine and {IMAGE} ({type(exc).__name__}); scripts/test.sh makes both")
    return IMAGE


@pytest.fixture(scope="module")
def agent_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fixture_agent_dir(tmp_path_factory.mktemp("agents"))


@pytest.mark.parametrize("defect", [None, *sorted(EXPECTED)])
def test_fixture_verdict_is_the_same_in_containers(image: str, agent_dir: Path, tmp_path: Path,
                                                   defect: str | None) -> None:
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, "-m", "acp_journeys", "run", "-q", "--timeout-scale", FAST_SCALE, "-o", str(out),
         "--image", image, "--agent-dir", str(agent_dir), "--", "python3",
         f"/agent/{defect or 'reference_agent'}.py"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    result = json.loads(out.read_text())
    failures = {j["id"]: sorted(f["id"] for f in j["failures"]) for j in result["journeys"] if j["verdict"] != "pass"}
    assert failures == (EXPECTED[defect] if defect else {}), proc.stdout[-3000:]
    assert result["launch"]["kind"] == "docker"
    assert proc.returncode == (1 if failures else 0)


@pytest.mark.parametrize("defect", [None, *sorted(PROTOCOL_EXPECTED)])
def test_protocol_tier_verdict_is_the_same_in_containers(image: str, agent_dir: Path, tmp_path: Path,
                                                         defect: str | None) -> None:
    """The tier's probe runs in a container of its own, as a journey does, with the same verdicts;
    one journey is enough here (the journeys' own table is above), so the tier's checks that read
    the journeys' evidence read that one journey's and the probe's."""
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, "-m", "acp_journeys", "run", "-q", "--timeout-scale", FAST_SCALE, "-o", str(out),
         "--tier", "protocol", "--journey", "turn-to-end", "--image", image, "--agent-dir", str(agent_dir),
         "--", "python3", f"/agent/{defect or 'reference_agent'}.py"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    result = json.loads(out.read_text())
    assert tier_verdicts(result) == (PROTOCOL_EXPECTED[defect] if defect else {}), proc.stdout[-3000:]
    assert [j["verdict"] for j in result["journeys"]] == ["pass"] and proc.returncode == 0, proc.stderr[-2000:]
    assert result["tiers"]["protocol"]["probe"]["processes"][0]["leftovers"] == []


def _run(image: str, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, "-m", "acp_journeys", "run", "-q", "--timeout-scale", FAST_SCALE, "-o", str(out),
         "--image", image, "--agent-dir", str(fixture_agent_dir(tmp_path / "agents")), *args],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    return proc, json.loads(out.read_text())


def test_a_memory_hog_fails_its_journey_and_nothing_else(image: str, tmp_path: Path) -> None:
    proc, result = _run(image, tmp_path, "--journey", "turn-to-end", "--",
                        "python3", "/agent/memory-hog.py")
    [journey] = result["journeys"]
    assert [f["id"] for f in journey["failures"]] == ["agent-exited"], proc.stdout
    assert journey["evidence"]["processes"][0]["exit_code"] == 137  # killed at the memory limit
    assert proc.returncode == 1


def test_a_fork_bomb_fails_its_journey_and_is_gone_after_it(image: str, tmp_path: Path) -> None:
    import uuid

    import psutil

    # This run's own: its bomb carries a token on its command line and its containers mount this
    # test's agent folder (another suite beside, or another worker, runs containers of this image).
    token = f"bomb-{uuid.uuid4().hex[:12]}"
    proc, result = _run(image, tmp_path, "--journey", "turn-to-end", "--setting", f"FORK_BOMB_TOKEN={token}", "--",
                        "python3", "/agent/fork-bomb.py")
    [journey] = result["journeys"]
    assert journey["verdict"] == "fail" and "process-left" in [f["id"] for f in journey["failures"]], proc.stdout
    assert proc.returncode == 1
    assert token in json.dumps(journey["evidence"]), "no copy of this run's bomb among its leftovers"
    # Held by the container's pids limit, and killed with it: no copy of the bomb is left here.
    assert not [p for p in psutil.process_iter(["cmdline"]) if token in " ".join(p.info["cmdline"] or [])]
    mine = [c for c in docker.from_env().api.containers(all=True, filters={"label": "acp-journeys"})
            if any(m.get("Source", "").startswith(str(tmp_path)) for m in c.get("Mounts") or [])]
    assert mine == []


def test_a_sleep_that_starts_late_is_cancelled_on_its_process_in_a_container(image: str, tmp_path: Path) -> None:
    """Issue 23: a container shows every process of the agent, so the cancel waits for the sleep
    that starts 4.5 s after its in_progress report, and goes out on it (no warning)."""
    proc, result = _run(image, tmp_path, "--journey", "stop-running-turn", "--", "python3", "/agent/sleep-starts-late.py")
    [journey] = result["journeys"]
    [turn] = journey["evidence"]["turns"]
    assert journey["verdict"] == "pass" and journey["warnings"] == [], proc.stdout
    assert turn["cancel_trigger"] == "process" and turn["sees_every_process"] is True
    assert turn["cancel_sent_at"] - turn["tool_calls"][0]["at"] >= 4.0


def test_a_helper_that_ends_within_the_window_passes_in_a_container(image: str, tmp_path: Path) -> None:
    proc, result = _run(image, tmp_path, "--journey", "turn-to-end", "--", "python3", "/agent/helper-ends-in-window.py")
    [journey] = result["journeys"]
    [process] = journey["evidence"]["processes"]
    assert journey["verdict"] == "pass", proc.stdout
    assert process["exited_at"] + 2.5 <= process["last_process_ended_at"] < process["leftover_window_closes_at"]
