"""A real third-party agent against the model stub: Mistral Vibe (PyPI `mistral-vibe`, `vibe-acp`).

`scripts/test.sh` installs it (`scripts/setup/setup-vibe.sh`: Vibe needs Python 3.12 or newer, so it
lives in build/vibe-venv) and exports ACP_JOURNEYS_VIBE_ACP; with no such Python on the machine
these tests skip. `scripts/setup/build-vibe-image.sh` puts the same install in an agent image for
docker mode. Vibe takes an OpenAI-compatible provider from `~/.vibe/config.toml`: the runner
writes `examples/vibe/config.toml` there with `--model-stub-config-template`, its endpoint's
address filled in, in a home of the journey's own (the container user's home in docker mode).
The template lets Vibe's shell tool run without a permission request: with one, Vibe 3.0.2
sometimes answers the cancelled turn of stop-running-turn with an error (see the template).

The verdict its documented behaviour predicts: the 5 journeys without Plan mode pass; both Plan
journeys fail with no-plan-mode, because Vibe 3 removed its `plan` agent (its modes over ACP are
ask, accept-edits and auto-approve).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import ROOT, RunOutcome, run_journeys

VIBE_ACP = os.environ.get("ACP_JOURNEYS_VIBE_ACP")
IMAGE = os.environ.get("ACP_JOURNEYS_VIBE_IMAGE", "acp-journeys/vibe-agent:dev")
TEMPLATE = ROOT / "examples" / "vibe" / "config.toml"
PREDICTED = {"plan-turn-saved-plan": ["no-plan-mode"], "plan-regular-plan": ["no-plan-mode"]}
# Each Vibe start costs about 4 s of CPU; seven at once on a small machine could push an exit
# past the journeys' 10 s bound (not scaled), so one journey runs per CPU.
ARGS = ("--timeout-scale", "1", "--parallel", str(min(7, os.cpu_count() or 1)), "--model-stub",
        "--model-stub-config-template", f"{TEMPLATE}:.vibe/config.toml", "--env", "STUB_API_KEY=stub")

pytestmark = pytest.mark.skipif(not VIBE_ACP, reason="no vibe-acp: scripts/setup/setup-vibe.sh found no Python 3.12+ "
                                "(or set ACP_JOURNEYS_VIBE_ACP to a vibe-acp executable)")


def assert_predicted_verdict(outcome: RunOutcome) -> None:
    assert outcome.result is not None, outcome.stderr
    assert outcome.failures() == PREDICTED, outcome.stdout
    assert outcome.code == 1
    assert outcome.result["model_stub"]["dialects"] == ["openai-chat"]
    journeys = {j["id"]: j for j in outcome.result["journeys"]}
    # Every journey that prompts reached the stub, on that journey's own route; the Plan
    # journeys stop at the missing mode, before their prompt, so they send the model nothing.
    for journey in journeys.values():
        records = journey["evidence"]["model_requests"]
        assert journey["evidence"]["model_stub_used"], journey["id"]
        assert bool(records) == (journey["id"] not in PREDICTED), journey["id"]
        assert all(r["tag"] == journey["id"] and r["status"] == 200 for r in records), journey["id"]
    requests = [r for j in journeys.values() for r in j["evidence"]["model_requests"]]
    assert {"reply", "remember", "recall", "read_and_look", "shell"} <= {r["intent"] for r in requests}
    assert any(r["image_decoded"] for r in journeys["image-and-file"]["evidence"]["model_requests"])
    assert any((r["decision"] or {}).get("tool_call") == "bash" for r in requests)


def test_mistral_vibe_gets_its_predicted_verdict(tmp_path: Path) -> None:
    assert VIBE_ACP is not None
    outcome = run_journeys([VIBE_ACP], tmp_path, *ARGS, timeout=560)
    assert_predicted_verdict(outcome)
    assert outcome.result["launch"]["kind"] == "local"


def _vibe_image() -> str:
    docker = pytest.importorskip("docker")
    from acp_journeys.launch.docker.sandbox import DockerSandbox

    if "model_endpoint" not in vars(DockerSandbox):
        pytest.skip("docker mode does not reach the model stub yet (no DockerSandbox.model_endpoint)")
    try:
        client = docker.from_env(timeout=30)
        labels = client.images.get(IMAGE).labels or {}
    except Exception as exc:
        pytest.skip(f"docker mode needs an engine and {IMAGE} ({type(exc).__name__}); scripts/setup/setup-vibe.sh "
                    "builds it when an engine runs")
    # The image holds the same install at the same paths (scripts/setup/build-vibe-image.sh).
    inside = labels.get("org.acp-journeys.vibe-acp")
    assert inside == VIBE_ACP, f"{IMAGE} holds {inside}, not {VIBE_ACP}: run scripts/setup/build-vibe-image.sh"
    return inside


def test_mistral_vibe_gets_its_predicted_verdict_in_containers(tmp_path: Path) -> None:
    vibe_acp = _vibe_image()
    outcome = run_journeys([vibe_acp], tmp_path, "--image", IMAGE, *ARGS, timeout=900)
    assert_predicted_verdict(outcome)
    assert outcome.result["launch"]["kind"] == "docker"
