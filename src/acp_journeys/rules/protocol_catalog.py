"""The protocol tier's table: the ACP rules that Rondar's journeys do not judge, one row a check.

Each row has a stable id (it is in result.json and users' CI logs), its level as the ACP spec
words the rule (MUST or SHOULD), the link to the spec's section, what it checks and what to fix.
`rules/protocol_tier.py` holds one check function per row (tests/rules/test_protocol_tier.py holds them
to the same set); docs/protocol-tier.md explains each row, by the same id.

Rules of this module: data only. The tier never changes Rondar's verdict: it has its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SPEC_URL = "https://agentclientprotocol.com/protocol/v1"
"""The ACP v1 spec (the version Rondar speaks, and the vendored schema's own links)."""

Level = Literal["MUST", "SHOULD"]

TIER_NAME = "protocol"


@dataclass(frozen=True)
class ProtocolCheck:
    id: str
    level: Level
    section: str
    """The spec's page and anchor under SPEC_URL, as "prompt-turn#cancellation"."""
    title: str
    """What the check asks, for `list` and the reports."""
    fix: str
    """What the agent author changes when it fails."""
    source: Literal["journeys", "probe", "both"]
    """Where its evidence comes from: the 7 journeys, the tier's own probe, or both."""

    @property
    def anchor(self) -> str:
        return f"{SPEC_URL}/{self.section}"


CHECKS: tuple[ProtocolCheck, ...] = (
    ProtocolCheck("session-survives-cancel", "MUST", "prompt-turn#cancellation",
                  "a prompt after a cancelled turn in the same session ends normally (end_turn)",
                  "after session/cancel, answer the turn with cancelled and keep serving the session: "
                  "the next session/prompt must run", "probe"),
    ProtocolCheck("cancel-idle-harmless", "MUST", "prompt-turn#cancellation",
                  "session/cancel on an idle session gets no answer and the next prompt ends normally",
                  "ignore a cancel when no turn runs: a notification gets no response", "probe"),
    ProtocolCheck("update-names-session", "MUST", "prompt-turn#3-agent-reports-output",
                  "every session/update names the session in use",
                  "send each session/update with the sessionId of the session it belongs to", "both"),
    ProtocolCheck("unknown-session-error", "MUST", "session-setup#session-id",
                  "a request that names an unknown session id gets an error, not a result",
                  "answer session/prompt (and session/load) for a session id you never handed out with "
                  "a JSON-RPC error", "probe"),
    ProtocolCheck("client-capabilities-respected", "MUST", "file-system#checking-support",
                  "no fs/* or terminal/* request: the client advertised no such capability",
                  "read clientCapabilities from initialize and call fs/* and terminal/* only when they "
                  "are advertised; else use your own tools", "both"),
    ProtocolCheck("unknown-method-not-found", "MUST", "extensibility#custom-requests",
                  "a request of an unknown method gets an error (-32601, Method not found)",
                  "answer every request; one of a method you do not know with error -32601", "probe"),
    ProtocolCheck("unknown-notification-ignored", "SHOULD", "extensibility#custom-notifications",
                  "an unknown notification is ignored: no answer, and the agent goes on serving",
                  "ignore notifications that you do not know", "probe"),
    ProtocolCheck("one-answer-per-prompt", "MUST", "prompt-turn#4-check-for-completion",
                  "each session/prompt gets exactly one answer",
                  "answer each session/prompt once, with its stop reason", "both"),
    ProtocolCheck("no-update-after-answer", "MUST", "prompt-turn#cancellation",
                  "no update of a turn (message, thought, tool call, plan) after the answer to its prompt",
                  "send every update of a turn before the answer to its session/prompt", "both"),
    ProtocolCheck("session-list", "MUST", "session-list#listing-sessions",
                  "advertised sessionCapabilities.list: session/list lists the session in use",
                  "list the sessions you keep, with their sessionId and cwd, or do not advertise list",
                  "probe"),
    ProtocolCheck("session-resume", "MUST", "session-setup#resuming-sessions",
                  "advertised sessionCapabilities.resume: session/resume answers with no error and "
                  "replays no history",
                  "resume the session without session/update notifications of its history, or do not "
                  "advertise resume", "probe"),
    ProtocolCheck("session-close", "MUST", "session-setup#closing-active-sessions",
                  "advertised sessionCapabilities.close: session/close answers with no error and the "
                  "closed session takes no prompt",
                  "end the session on session/close (its work and its resources), or do not advertise close",
                  "probe"),
    ProtocolCheck("relative-cwd-error", "SHOULD", "session-setup#working-directory",
                  "session/new with a relative cwd gets an error",
                  "refuse a cwd that is not an absolute path with an error", "probe"),
    ProtocolCheck("agent-info", "SHOULD", "initialization#implementation-information",
                  "initialize's answer names the agent: agentInfo with a name and a version",
                  "answer initialize with agentInfo: {name, version}", "both"),
)
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)
CHECKS_BY_ID: dict[str, ProtocolCheck] = {c.id: c for c in CHECKS}

VERDICTS = ("pass", "fail", "warn", "skip")
"""pass: met. fail: a MUST not met. warn: a SHOULD not met, or a MUST met with a remark (an error
of another code than the one JSON-RPC names). skip: it does not apply (a capability that is not
advertised is never probed) or its evidence is not there (the probe did not get that far)."""

PROBE_ID = "protocol-probe"
"""The name of the tier's own agent process run, beside the journeys' (its sandbox, its evidence)."""

UNKNOWN_SESSION_ID = "acp-journeys-unknown-session"
"""A session id that no agent handed out: the probe's requests that must get an error name it."""
UNKNOWN_METHOD = "_acp_journeys/probe_unknown"
UNKNOWN_NOTIFICATION = "_acp_journeys/probe_notice"
"""Extension names (leading underscore, as the spec reserves them): no agent implements them."""
RELATIVE_CWD = "acp-journeys-relative-cwd"

TURN_UPDATE_KINDS: frozenset[str] = frozenset({
    "agent_message_chunk", "agent_thought_chunk", "user_message_chunk", "tool_call", "tool_call_update", "plan"})
"""The updates that belong to a turn (and to a replayed history). Session-level ones
(available_commands_update, current_mode_update, config_option_update, session_info_update,
usage_update) may come at any time."""
