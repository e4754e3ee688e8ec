"""Shared helpers: run the real CLI against real agent processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_AGENT = ROOT / "src" / "acp_journeys" / "demo" / "reference_agent.py"
AGENTS = Path(__file__).resolve().parent / "agents"

# Small bounds keep the hung-agent fixtures short; Rondar's own 10 s / 30 s rules are not scaled.
# Not smaller: a bound is a verdict only for an agent that never answers, and at 0.05 (3 s for
# initialize) a correct agent under 4 suites at once on 2 cores missed it. 0.2 gives 12 s for
# initialize and each request and 36 s for a turn; only the hung-agent fixtures wait that long.
FAST_SCALE = "0.2"


@dataclass
class RunOutcome:
    code: int
    stdout: str
    stderr: str
    result: dict | None
    path: Path

    def failures(self) -> dict[str, list[str]]:
        """journey id -> failure ids, for the journeys that did not pass."""
        assert self.result is not None, self.stderr
        return {j["id"]: sorted(f["id"] for f in j["failures"]) for j in self.result["journeys"]
                if j["verdict"] != "pass"}


def run_cli(args: list[str], tmp_path: Path, *, env: dict[str, str] | None = None, timeout: float = 300,
            output: str = "result.json") -> RunOutcome:
    path = tmp_path / output
    full_env = {**os.environ, "ACP_REFERENCE_AGENT_STATE": str(tmp_path / "agent-state"), **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "acp_journeys", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=tmp_path)
    result = json.loads(path.read_text()) if path.exists() else None
    return RunOutcome(proc.returncode, proc.stdout, proc.stderr, result, path)


def run_journeys(agent: list[str], tmp_path: Path, *extra: str, **kw) -> RunOutcome:
    return run_cli(["run", "--timeout-scale", FAST_SCALE, "-q", "-o", str(tmp_path / "result.json"),
                    *extra, "--", *agent], tmp_path, **kw)


def reference_agent(*defects: str) -> list[str]:
    argv = [sys.executable, str(REFERENCE_AGENT)]
    for defect in defects:
        argv += ["--defect", defect]
    return argv


@pytest.fixture
def stub():
    """The scripted model endpoint on loopback, for one test (it starts in milliseconds)."""
    from acp_journeys.services.model_stub import ModelStub

    server = ModelStub().start()
    try:
        yield server
    finally:
        server.stop()
