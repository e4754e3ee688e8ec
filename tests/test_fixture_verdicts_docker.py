"""The same fixture table in docker mode: every fixture's verdict matches local mode exactly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FAST_SCALE, ROOT
from test_fixture_verdicts import EXPECTED

docker = pytest.importorskip("docker")
BUNDLED = ROOT / "src" / "acp_journeys" / "bundled"
IMAGE = os.environ.get("ACP_JOURNEYS_TEST_IMAGE", "acp-journeys/runner:dev")


@pytest.fixture(scope="module")
def image() -> str:
    try:
        client = docker.from_env(timeout=30)
        client.images.get(IMAGE)
    except Exception as exc:
        pytest.skip(f"docker mode needs an engine and {IMAGE} ({type(exc).__name__}); scripts/test.sh makes both")
    return IMAGE


@pytest.mark.parametrize("defect", [None, *sorted(EXPECTED)])
def test_fixture_verdict_is_the_same_in_containers(image: str, tmp_path: Path, defect: str | None) -> None:
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, "-m", "acp_journeys", "run", "-q", "--timeout-scale", FAST_SCALE, "-o", str(out),
         "--image", image, "--agent-dir", str(BUNDLED), "--", "python3", "/agent/reference_agent.py",
         *([f"--defect={defect}"] if defect else [])],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    result = json.loads(out.read_text())
    failures = {j["id"]: sorted(f["id"] for f in j["failures"]) for j in result["journeys"] if j["verdict"] != "pass"}
    assert failures == (EXPECTED[defect] if defect else {}), proc.stdout[-3000:]
    assert result["launch"]["kind"] == "docker"
    assert proc.returncode == (1 if failures else 0)
