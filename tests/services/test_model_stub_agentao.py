"""A real third-party agent against the model stub: agentao (PyPI `agentao`, `agentao --acp`),
pinned in scripts/setup/setup-agentao.sh, which installs it in build/agentao-venv and exports
ACP_JOURNEYS_AGENTAO; scripts/setup/build-agentao-image.sh puts the same version in an agent image
for docker mode. With no Python 3.10+ (or no Docker engine) these tests skip.

It takes its model from the environment: LLM_PROVIDER, OPENAI_BASE_URL, OPENAI_MODEL (settings,
no secrets: `--setting`) and OPENAI_API_KEY (`--env`, a secret).

The verdict its own behaviour earns: 6 of 7 pass, and plan-turn-saved-plan fails with
plan-changed-workspace, the changed file being `agentao.log`. agentao writes its LLM debug log
into the session's working directory (agentao/agent.py: "ACP sessions land it under the
frozen, client-supplied project cwd") and appends to it on every model request, so the Plan
turn changes the workspace, and Rondar's rule for step 8 is that no file in the workspace
changes. Step 9 (plan-regular-plan) asks nothing of the workspace, so the same log does not
fail it. The rest passes on agentao's own plumbing: `loadSession`, a `plan` mode,
`run_shell_command` and `read_file`, the MCP tools as `mcp_rondar_*`, and a cancel that kills
the sleep.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import RunOutcome, run_journeys

AGENTAO = os.environ.get("ACP_JOURNEYS_AGENTAO")
IMAGE = os.environ.get("ACP_JOURNEYS_AGENTAO_IMAGE", "acp-journeys/agentao-agent:dev")
PREDICTED = {"plan-turn-saved-plan": ["plan-changed-workspace"]}
ARGS = ("--timeout-scale", "1", "--parallel", str(min(7, 2 * (os.cpu_count() or 1))), "--model-stub",
        "--setting", "OPENAI_BASE_URL={model_url}/v1", "--env", "OPENAI_API_KEY=stub-key",
        "--setting", "LLM_PROVIDER=openai", "--setting", "OPENAI_MODEL=acp-journeys-stub")

pytestmark = pytest.mark.skipif(not AGENTAO, reason="no agentao: scripts/setup/setup-agentao.sh found no Python 3.10+ "
                                "(or set ACP_JOURNEYS_AGENTAO to an agentao executable)")


def assert_predicted_verdict(outcome: RunOutcome) -> None:
    assert outcome.result is not None, outcome.stderr
    assert outcome.failures() == PREDICTED, outcome.stdout
    assert outcome.code == 1
    assert outcome.result["model_stub"]["dialects"] == ["openai-chat"]
    journeys = {j["id"]: j for j in outcome.result["journeys"]}
    [failure] = journeys["plan-turn-saved-plan"]["failures"]
    assert "changed agentao.log" in failure["detail"], failure  # with its session files, written before it exits
    requests = [r for j in journeys.values() for r in j["evidence"]["model_requests"]]
    assert requests and all(r["status"] == 200 for r in requests)
    turns = [r for r in requests if not r["side_request"]]
    assert {"reply", "remember", "recall", "read_and_look", "shell", "plan"} <= {r["intent"] for r in turns}
    calls = {(r["decision"] or {}).get("tool_call") for r in turns}
    assert {"run_shell_command", "read_file", "mcp_rondar_create_plan", "mcp_rondar_get_plan"} <= calls


def test_agentao_gets_its_predicted_verdict(tmp_path: Path) -> None:
    assert AGENTAO is not None
    outcome = run_journeys([AGENTAO, "--acp"], tmp_path, *ARGS, timeout=560)
    assert_predicted_verdict(outcome)
    assert outcome.result["launch"]["kind"] == "local"


def test_agentao_gets_its_predicted_verdict_in_containers(tmp_path: Path) -> None:
    docker = pytest.importorskip("docker")
    try:
        labels = docker.from_env(timeout=30).images.get(IMAGE).labels or {}
    except Exception as exc:
        pytest.skip(f"docker mode needs an engine and {IMAGE} ({type(exc).__name__}); scripts/setup/setup-agentao.sh "
                    "builds it when an engine runs")
    assert (labels.get("org.acp-journeys.pypi-requirement") or "").startswith("agentao=="), \
        f"{IMAGE} is not an agentao image of ours"
    outcome = run_journeys(["agentao", "--acp"], tmp_path, "--image", IMAGE, *ARGS, timeout=900)
    assert_predicted_verdict(outcome)
    assert outcome.result["launch"]["kind"] == "docker"
