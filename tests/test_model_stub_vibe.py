"""A real third-party agent against the model stub: Mistral Vibe (PyPI `mistral-vibe`, `vibe-acp`).

Opt-in: set ACP_JOURNEYS_VIBE_ACP to the `vibe-acp` executable of an install of mistral-vibe
(it needs Python 3.12 or newer, so it lives in a venv of its own). Vibe takes an
OpenAI-compatible provider from `$VIBE_HOME/config.toml`, which this test writes with the stub's
address. The verdict its documented behaviour predicts: the 5 journeys without Plan mode pass;
both Plan journeys fail with no-plan-mode, because Vibe 3 removed its `plan` agent (its modes
are ask, accept-edits and auto-approve).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_journeys.model_stub import ModelStub
from conftest import run_journeys

VIBE_ACP = os.environ.get("ACP_JOURNEYS_VIBE_ACP")
pytestmark = pytest.mark.skipif(not VIBE_ACP, reason="set ACP_JOURNEYS_VIBE_ACP to a vibe-acp executable")

CONFIG = """\
active_model = "stub"

[[providers]]
name = "stub"
api_base = "{model_url}/v1"
api_key_env_var = "STUB_API_KEY"
api_style = "openai"
backend = "generic"

[[models]]
name = "acp-journeys-stub"
provider = "stub"
alias = "stub"
supports_images = true
"""


def test_mistral_vibe_gets_its_predicted_verdict(stub: ModelStub, tmp_path: Path) -> None:
    from acp_journeys.model_stub.placeholders import fill

    home = tmp_path / "vibe-home"
    home.mkdir()
    (home / "config.toml").write_text(fill(CONFIG, stub.url))
    assert VIBE_ACP is not None
    outcome = run_journeys([VIBE_ACP], tmp_path, "--timeout-scale", "1",
                           "--env", f"VIBE_HOME={home}", "--env", "STUB_API_KEY=stub", timeout=560)
    assert outcome.failures() == {"plan-turn-saved-plan": ["no-plan-mode"],
                                  "plan-regular-plan": ["no-plan-mode"]}, outcome.stdout
    model_requests = [r for r in stub.records.snapshot() if r.dialect == "openai-chat"]
    assert any(r.image_decoded for r in model_requests)
    assert any(r.decision and r.decision.get("tool_call") == "bash" for r in model_requests)
