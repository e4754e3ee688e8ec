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

from acp_journeys.rules.model_requests import RequestRecord
from acp_journeys.services.model_stub import hints
from conftest import AGENTS, run_journeys

MODEL_AGENT = AGENTS / "model_agent.py"

EXPECTED: dict[str, dict[str, list[str]]] = {
    "": {},
    "--drop-image": {"image-and-file": ["reply-missing-red"]},
    "--forget-on-restart": {"follow-up-after-restart": ["reply-missing-word"]},
    "--wrong-tool": {"plan-turn-saved-plan": ["create-plan-not-called"],
                     "plan-regular-plan": ["create-plan-not-called"]},
    # Claude Code's way (issue 23 point 5): a long foreground sleep is refused with "use
    # run_in_background: true"; the stub retries in the background, and the cancel kills it...
    "--background-tasks": {},
    # ...or, as Claude Code does, leaves it running until the agent exits.
    "--background-tasks --keep-background": {"stop-running-turn": ["sleep-left"]},
    # The stub's wait for the background command needs no procps (a slim image has none).
    "--background-tasks --no-procps": {},
}


@pytest.mark.parametrize("flag", list(EXPECTED), ids=lambda f: f or "no-defect")
def test_model_agent_verdicts(tmp_path: Path, flag: str) -> None:
    """`run --model-stub`: the runner serves the endpoint and fills {model_url} per journey."""
    agent = [sys.executable, str(MODEL_AGENT), *flag.split()]
    outcome = run_journeys(agent, tmp_path, "--timeout-scale", "0.2", "--model-stub",
                           "--env", "OPENAI_BASE_URL={model_url}/v1", "--env", "OPENAI_API_KEY=stub",
                           env={"MODEL_AGENT_STATE": str(tmp_path / "model-agent-state")})
    assert outcome.result is not None, outcome.stderr
    assert outcome.failures() == EXPECTED[flag], outcome.stdout
    assert outcome.code == (0 if not EXPECTED[flag] else 1)
    assert outcome.result["model_stub"]["dialects"] == ["openai-chat"]
    journeys = {j["id"]: j for j in outcome.result["journeys"]}
    for journey in journeys.values():
        records = journey["evidence"]["model_requests"]
        assert journey["evidence"]["model_stub_used"] and records, journey["id"]
        assert all(r["tag"] == journey["id"] and r["status"] == 200 and r["stream"] for r in records)
    if flag.startswith("--background-tasks"):
        # The evidence of why: the refusal, the retry in the background, the cancel on the sleep.
        stop = journeys["stop-running-turn"]["evidence"]
        [retry] = [r for r in stop["model_requests"] if r.get("retried")]
        assert (retry["retried"]["argument"], retry["retried"]["value"]) == ("run_in_background", True)
        assert retry["decision"]["arguments"] == {"command": "sleep 120", "run_in_background": True}
        [sleep] = stop["turns"]
        assert sleep["cancel_trigger"] == "process" and sleep["stop_reason"] == "cancelled"
        left = [x["argv"] for x in sleep["sleep_left"]]
        assert (["sleep", "120"] in left or ["/bin/sh", "-c", "sleep 120"] in left) == ("--keep-background" in flag)
    intents = {r["intent"] for j in journeys.values() for r in j["evidence"]["model_requests"]}
    assert {"reply", "remember", "recall", "read_and_look", "shell", "plan"} <= intents
    image = journeys["image-and-file"]
    if flag == "--drop-image":
        assert "the image never reached the model" in image["failures"][0]["detail"]
        assert not any(r["image_present"] for r in image["evidence"]["model_requests"])
    else:
        assert any(r["image_decoded"] for r in image["evidence"]["model_requests"])
    # The records were judged again from result.json: verify gives the same hints.
    assert hints([RequestRecord.from_dict(r) for r in image["evidence"]["model_requests"]]) == [
        w.removeprefix("model endpoint: ") for w in image["warnings"] if w.startswith("model endpoint: ")]


def test_model_stub_and_its_placeholder_are_checked(tmp_path: Path) -> None:
    lonely = run_journeys([sys.executable, str(MODEL_AGENT)], tmp_path, "--journey", "turn-to-end",
                          "--model-stub-config-template", "x:y")
    assert lonely.code == 2 and "goes with --model-stub" in lonely.stderr
    warned = run_journeys([sys.executable, str(MODEL_AGENT)], tmp_path, "--journey", "turn-to-end",
                          "--model-stub", "--env", "OPENAI_API_KEY=stub")
    assert "no --env or --setting value or config template holds {model_url}" in warned.stderr
    assert warned.failures() != {}


def test_a_config_template_lands_in_a_home_of_the_journey(tmp_path: Path) -> None:
    template = tmp_path / "agent.json"
    template.write_text('{"base_url": "{model_url}/v1", "keep": {"braces": true}}')
    # The agent reads its base URL from the file in its home, not from the environment.
    agent = ["sh", "-c", 'export OPENAI_BASE_URL="$(python3 -c \'import json,os;'
             'print(json.load(open(os.path.expanduser("~/.config/agent.json")))["base_url"])\')"; exec "$@"',
             "sh", sys.executable, str(MODEL_AGENT)]
    outcome = run_journeys(agent, tmp_path, "--timeout-scale", "0.2", "--journey", "turn-to-end", "--model-stub",
                           "--model-stub-config-template", f"{template}:.config/agent.json",
                           "--env", "OPENAI_API_KEY=stub", env={"MODEL_AGENT_STATE": str(tmp_path / "s")})
    assert outcome.failures() == {}, outcome.stdout


STYLES: dict[str, dict[str, list[str]]] = {
    # prime-agent's way: one `ipython {code}` tool; MCP tools from the cell. All 7 pass.
    "--tools=ipython": {},
    # gptme's way: no tools, fenced blocks; Hermes' way: the image described by a side call.
    # The agent has no way to reach its MCP servers from a block, so the model cannot save
    # the plan: both Plan journeys fail with create-plan-not-called, as they should.
    "--tools=markdown --vision-side-call": {"plan-turn-saved-plan": ["create-plan-not-called"],
                                            "plan-regular-plan": ["create-plan-not-called"]},
}


@pytest.mark.parametrize("style", list(STYLES))
def test_model_agent_tool_styles(tmp_path: Path, style: str) -> None:
    """The stub plays the model through whatever tool the agent offers (issue points 3, 4, 5)."""
    agent = [sys.executable, str(MODEL_AGENT), *style.split()]
    outcome = run_journeys(agent, tmp_path, "--timeout-scale", "0.2", "--model-stub",
                           "--env", "OPENAI_BASE_URL={model_url}/v1", "--env", "OPENAI_API_KEY=stub",
                           env={"MODEL_AGENT_STATE": str(tmp_path / "model-agent-state")})
    assert outcome.result is not None, outcome.stderr
    assert outcome.failures() == STYLES[style], outcome.stdout
    journeys = {j["id"]: j["evidence"]["model_requests"] for j in outcome.result["journeys"]}
    decisions = {jid: [r["decision"] for r in records if r["side_request"] is None] for jid, records in journeys.items()}
    if "ipython" in style:
        assert {"tool_call": "ipython", "arguments": {"code": "!sleep 120"}} in decisions["stop-running-turn"]
        codes = [d["arguments"]["code"] for d in decisions["plan-turn-saved-plan"] if d.get("tool_call")]
        assert any(c.startswith('print(await mcp.call_tool("rondar", "create_plan"') for c in codes), codes
        assert any('mcp.call_tool("rondar", "get_plan"' in c for c in codes), codes
    else:
        assert {"text": "```shell\nsleep 120\n```"} in decisions["stop-running-turn"]
        image = journeys["image-and-file"]
        side = [r for r in image if r["side_request"] is not None]
        assert side and side[0]["image_decoded"] and side[0]["decision"] == {"text": "The image is mostly red."}
        assert any("describes it" in r["why"] for r in image if r["side_request"] is None)
        for journey in outcome.result["journeys"]:
            assert not any("no shell tool" in w for w in journey["warnings"]), journey["warnings"]
