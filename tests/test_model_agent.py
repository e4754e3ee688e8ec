"""The "agent with a model" fixture against the scripted model endpoint, through the real CLI.

The agent understands no prompt itself: it forwards each turn to the stub over HTTP with the
official `openai` client and does what the stub asks. So it passes all 7 journeys only if the
stub plays every journey, and each of its defect flags fails exactly the journeys it should.
The stub's records then say what reached the model, which is the evidence a failure can quote.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acp_journeys.model_stub import ModelStub, hints
from conftest import AGENTS, run_journeys

MODEL_AGENT = AGENTS / "model_agent.py"

EXPECTED: dict[str, dict[str, list[str]]] = {
    "": {},
    "--drop-image": {"image-and-file": ["reply-missing-red"]},
    "--forget-on-restart": {"follow-up-after-restart": ["reply-missing-word"]},
    "--wrong-tool": {"plan-turn-saved-plan": ["create-plan-not-called"],
                     "plan-regular-plan": ["create-plan-not-called"]},
}


@pytest.mark.parametrize("flag", list(EXPECTED), ids=lambda f: f or "no-defect")
def test_model_agent_verdicts(stub: ModelStub, tmp_path: Path, flag: str) -> None:
    began = len(stub.records)
    agent = [sys.executable, str(MODEL_AGENT), *([flag] if flag else [])]
    outcome = run_journeys(agent, tmp_path, "--timeout-scale", "0.2",
                           "--env", f"OPENAI_BASE_URL={stub.url}/v1", "--env", "OPENAI_API_KEY=stub",
                           env={"MODEL_AGENT_STATE": str(tmp_path / "model-agent-state")})
    assert outcome.result is not None, outcome.stderr
    assert outcome.failures() == EXPECTED[flag], outcome.stdout
    assert outcome.code == (0 if not EXPECTED[flag] else 1)
    records = stub.records.snapshot()[began:]
    intents = {r.intent for r in records}
    assert {"reply", "remember", "recall", "read_and_look", "shell", "plan"} <= intents
    assert all(r.status == 200 and r.dialect == "openai-chat" and r.stream for r in records)
    image_requests = [r for r in records if r.intent == "read_and_look"]
    if flag == "--drop-image":
        assert "the image never reached the model" in hints(image_requests)
    else:
        assert any(r.image_decoded for r in image_requests)
