"""A real third-party agent against the model stub: Claude Code through Zed's adapter
(npm `@agentclientprotocol/claude-agent-acp`, pinned in scripts/setup/setup-claude-acp.sh, which
exports ACP_JOURNEYS_CLAUDE_ACP; with no node these tests skip).

It reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY (the key with `--env`, a secret; the rest
with `--setting`); as root it wants IS_SANDBOX=1 to accept its permission mode, and
ENABLE_TOOL_SEARCH=false keeps the MCP tools in the tool list instead of behind a search tool.
The settings template (examples/claude-code/settings.json at .claude/settings.json, in the
journey's own home) sets `permissions.defaultMode` to "default": with no default the adapter starts in "auto"
when it can (dist/session-mode.js), where Claude Code decides about tool calls itself instead
of asking the editor, and the journeys judge what an editor sees.

The verdict its own behaviour earns:
- 6 journeys pass: it offers a `plan` mode over ACP, its Bash tool runs `cat`, and its MCP
  client calls create_plan and get_plan.
- stop-running-turn fails with sleep-left: Claude Code 2.1.318 (the binary this adapter pins)
  refuses a foreground `sleep` of 25 s or more in its Bash tool's input check, before running
  anything, while background tasks are on (the default): the tool result is "Blocked: standalone
  sleep 120. ... To wait for a command you started, use run_in_background: true. ...". The stub
  follows it, as a model would, and retries once with run_in_background: true (its record says
  so). The `sleep 120` then runs in the background, the journey sees it and sends
  session/cancel; Claude Code answers `cancelled` at once but leaves the background `sleep`
  running (it stops its background tasks only when it exits), so a `sleep` is left after the
  stop. (Before the retry, the turn ended with no sleep run: sleep-never-started.)
  CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1 turns the check off; the recipe in docs/model-stub.md
  leaves it on, as a user would.
- Any journey may also fail with process-left, and only with it. On stdin EOF the adapter's
  `shutdown()` awaits `acp.dispose()` and calls `process.exit(0)` (dist/index.js); the SDK's
  `query.close()` ends the Claude Code child's input and only signals it, so the child ends in
  its own time: measured by hand here, the adapter is gone 30 to 60 ms after end of input and
  its child 1.5 to 3 s after that. When the child is still running after the runner's 2 s
  grace, Rondar's rule "No process is left after your agent ends" is broken: that is the
  agent's race, not ours, and the left process is that child.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import ROOT, run_journeys

CLAUDE_ACP = os.environ.get("ACP_JOURNEYS_CLAUDE_ACP")
TEMPLATE = ROOT / "examples" / "claude-code" / "settings.json"
ARGS = ("--timeout-scale", "1", "--parallel", str(min(7, 2 * (os.cpu_count() or 1))), "--model-stub",
        "--model-stub-config-template", f"{TEMPLATE}:.claude/settings.json",
        "--setting", "ANTHROPIC_BASE_URL={model_url}", "--env", "ANTHROPIC_API_KEY=stub-key",
        "--setting", "IS_SANDBOX=1", "--setting", "ENABLE_TOOL_SEARCH=false")

pytestmark = pytest.mark.skipif(not CLAUDE_ACP, reason="no claude-agent-acp: scripts/setup/setup-claude-acp.sh found no "
                                "node 20+ (or set ACP_JOURNEYS_CLAUDE_ACP to a claude-agent-acp executable)")


def test_claude_code_gets_its_predicted_verdict(tmp_path: Path) -> None:
    assert CLAUDE_ACP is not None
    outcome = run_journeys([CLAUDE_ACP], tmp_path, *ARGS, timeout=560)
    assert outcome.result is not None, outcome.stderr
    assert outcome.result["launch"]["kind"] == "local"
    assert outcome.result["model_stub"]["dialects"] == ["anthropic-messages"]
    for journey in outcome.result["journeys"]:
        ids = [f["id"] for f in journey["failures"]]
        own = {"sleep-left"} if journey["id"] == "stop-running-turn" else set()
        assert len(ids) == len(set(ids)) and set(ids) in (own, own | {"process-left"}), (journey["id"], ids)
        if "process-left" in ids:
            left = [p for proc in journey["evidence"]["processes"] for p in proc["leftovers"]]
            assert left and all("claude" in p["command"] for p in left), left
        records = journey["evidence"]["model_requests"]
        assert records and all(r["status"] == 200 for r in records), journey["id"]
        # Its title request quotes the prompt with no tools: a side request, never a hint.
        assert any(r["side_request"] for r in records), journey["id"]
        assert not any(w.startswith("model endpoint:") for w in journey["warnings"]), journey["warnings"]
    assert outcome.code == 1
    stop = next(j for j in outcome.result["journeys"] if j["id"] == "stop-running-turn")
    results = [t for r in stop["evidence"]["model_requests"] for m in r["sent"] for t in m.get("tool_results", [])]
    assert any("Blocked: standalone sleep 120" in t for t in results), results
    # Why: the retry in the background, the cancel on the running sleep, a prompt `cancelled`,
    # and the sleep still there after it.
    [retry] = [r for r in stop["evidence"]["model_requests"] if r.get("retried")]
    assert retry["retried"]["argument"] == "run_in_background" and retry["retried"]["value"] is True
    assert retry["decision"]["arguments"] == {"command": "sleep 120", "run_in_background": True}
    [sleep] = stop["evidence"]["turns"]
    assert sleep["cancel_trigger"] == "process" and sleep["stop_reason"] == "cancelled"
    assert sleep["answered_at"] - sleep["cancel_sent_at"] < 30
    assert any(x["argv"] == ["sleep", "120"] for x in sleep["sleep_left"]), sleep["sleep_left"]
    turns = [r for j in outcome.result["journeys"] for r in j["evidence"]["model_requests"] if not r["side_request"]]
    assert {"reply", "remember", "recall", "read_and_look", "shell", "plan"} <= {r["intent"] for r in turns}
    calls = {(r["decision"] or {}).get("tool_call") for r in turns}
    assert {"Bash", "Read", "mcp__rondar__create_plan", "mcp__rondar__get_plan"} <= calls
