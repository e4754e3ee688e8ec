"""THE table: the journeys, the checks, Rondar's bounds and every way a journey can fail.

One row per journey (`JOURNEYS`): its id, title, doc anchor, how many agent processes it starts,
its own failure ids, the turns its script sends and the markers its checks look for. Every other
table keyed by journey id is derived from these rows (`JOURNEY_FAILURES` here, what a pass needs
in the judge) or is code that must name the same ids (the judge's checks, the journey scripts;
tests/rules/test_catalog.py holds them to the same set, both ways, with the anchors of the docs).
`RULES` holds Rondar's own bounds, which the judge and the driver both read.

Rules of this module: data only. Every failure id is stable (it is in result.json, baselines and
users' CI logs); its message tells the agent author what to fix; its anchor is on Rondar's page
("What your ACP agent must do to pass"), whose anchors are `#step-1` ... `#step-10`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DEFAULT_DOCS_URL = "https://github.com/rondar/acp-journeys/blob/v1/docs/journeys.md"

Tier = Literal["rondar", "strict"]
"""`rondar`: part of Rondar's verdict. `strict`: a protocol warning that fails only with --strict."""


@dataclass(frozen=True)
class Rules:
    """Rondar's bounds: part of the verdict, so never scaled by --timeout-scale."""

    exit_s: float = 10.0
    """The agent ends by itself in 10 seconds after its input closes."""
    cancel_s: float = 30.0
    """The stop reason `cancelled` in 30 seconds or less after session/cancel."""


RULES = Rules()

PROCESS_CHECKS: tuple[tuple[str, str], ...] = (
    ("initialize-protocol-version", "The answer to initialize has protocolVersion 1, as a number."),
    ("no-exit-after-stdin-close",
     f"The agent ends by itself in {RULES.exit_s:.0f} seconds after its input closes."),
    ("process-left", "No process is left after the agent ends (shell commands, tool servers)."),
)
"""The checks on every agent process of every journey (#step-2), with their text for `list`."""

PROCESS_FAILURE_IDS: tuple[str, ...] = tuple(i for i, _ in PROCESS_CHECKS) + (
    "agent-exited", "timeout", "session-new-error")
"""The failure ids that any journey can produce through its processes and requests."""


@dataclass(frozen=True)
class Journey:
    id: str
    title: str
    anchor: str
    processes: int
    """How many agent processes the journey starts, one after another."""
    failures: tuple[str, ...]
    """Its own failure ids, after `PROCESS_FAILURE_IDS` (the order is that of `acp-journeys list`)."""
    turns: tuple[str, ...]
    """The names of the turns its script sends: a pass needs each of them answered."""
    markers: tuple[str, ...] = ()
    """The keys of `evidence.markers` that its checks look for."""

    @property
    def failure_ids(self) -> tuple[str, ...]:
        """Every failure id this journey can produce: its processes' and its own."""
        return PROCESS_FAILURE_IDS + self.failures


@dataclass(frozen=True)
class FailureKind:
    id: str
    message: str
    anchor: str | None
    """None: the anchor of the journey in which it happens (shared ids such as `stop-reason`)."""
    tier: Tier = "rondar"
    common: bool = False
    """One of the 9 common failures that Rondar's page names (#step-10)."""
    causes: tuple[tuple[str, str], ...] = ()
    """(cause, message): the message when the judge knows a narrower cause than the id's
    general one (the id stays the same, so baselines and logs keep matching)."""

    def message_for(self, cause: str | None) -> str:
        return dict(self.causes).get(cause or "", self.message)


_TURN = ("stop-reason", "prompt-error")  # on every turn

JOURNEYS: tuple[Journey, ...] = (
    Journey("turn-to-end", "A turn to its end", "step-3", 1,
            ("reply-not-in-chunks", "reply-missing-marker") + _TURN,
            turns=("reply",), markers=("reply",)),
    Journey("follow-up-same-session", "A follow-up in the same session", "step-4", 1,
            ("reply-not-in-chunks", "reply-missing-word") + _TURN,
            turns=("remember", "ask"), markers=("word",)),
    Journey("follow-up-after-restart", "A follow-up after a restart", "step-5", 2,
            ("no-load-session", "session-load-error", "reply-not-in-chunks", "reply-missing-word") + _TURN,
            turns=("remember", "ask"), markers=("word",)),
    Journey("image-and-file", "An image and a file", "step-6", 1,
            ("no-image-capability", "reply-not-in-chunks", "reply-missing-word", "reply-missing-red") + _TURN,
            turns=("image",), markers=("file",)),
    Journey("stop-running-turn", "Stop a running turn", "step-7", 1,
            ("no-tool-call-before-cancel", "sleep-never-started", "cancel-too-slow", "stop-reason", "sleep-left",
             "prompt-error"),
            turns=("sleep",)),
    Journey("plan-turn-saved-plan", "A Plan turn to a saved plan", "step-8", 1,
            ("no-plan-mode", "set-mode-error", "create-plan-not-called", "get-plan-not-called",
             "reply-not-in-chunks", "reply-missing-plan-id", "plan-changed-workspace") + _TURN,
            turns=("plan",), markers=("input",)),
    # Rondar asks only that both Plan turns save their plan here (#step-9), not get_plan or the id.
    Journey("plan-regular-plan", "Plan, then regular, then Plan again", "step-9", 1,
            ("no-plan-mode", "set-mode-error", "create-plan-not-called", "regular-file-missing") + _TURN,
            turns=("plan", "regular", "plan-again"), markers=("input",)),
)
JOURNEY_IDS: tuple[str, ...] = tuple(j.id for j in JOURNEYS)
JOURNEYS_BY_ID: dict[str, Journey] = {j.id: j for j in JOURNEYS}

_FAILURES: tuple[FailureKind, ...] = (
    # The checks on every agent process (#step-2); the 9 common failures are Rondar's (#step-10).
    FailureKind("initialize-protocol-version",
                "initialize got no answer with protocolVersion 1: answer it with \"protocolVersion\": 1, "
                "a JSON number (not \"1\", not 1.0, not another version).", "step-2", common=True,
                causes=(("exited", "the agent exited before it answered initialize: its stderr says why (a "
                                   "missing key or setting, a wrong flag, a missing binary); fix that, so that "
                                   "it starts and answers initialize."),
                        ("no-answer", "initialize got no answer within the bound: answer initialize first, "
                                      "before any slow set-up (a model or a login), with \"protocolVersion\": 1."))),
    FailureKind("no-exit-after-stdin-close",
                "the agent did not end by itself after its input closed: end the process when standard "
                "input closes, also while a turn runs.", "step-2", common=True),
    FailureKind("process-left",
                "a process was left after the agent ended: stop the child processes of a turn and the "
                "tool servers when the session ends.", "step-2", common=True),
    FailureKind("agent-exited",
                "the agent process ended before the journey was done: it must keep serving until its "
                "input closes (see its stderr).", "step-2"),
    FailureKind("timeout",
                "the agent gave no answer within the bound: answer every request, and end every turn.",
                None),
    FailureKind("session-new-error",
                "session/new answered with an error: accept a session with a cwd and one stdio MCP server.",
                "step-1"),
    # A turn to its end (#step-3) and every turn.
    FailureKind("reply-not-in-chunks",
                "the reply came in no agent_message_chunk update: send the text of the reply as "
                "session/update notifications before the answer to session/prompt.", "step-3", common=True),
    FailureKind("reply-missing-marker",
                "the reply does not hold the marker that the prompt asked for.", "step-3"),
    FailureKind("stop-reason",
                "session/prompt did not answer with the expected stop reason (end_turn for a finished "
                "turn, cancelled after session/cancel).", None),
    FailureKind("prompt-error",
                "session/prompt answered with an error instead of a stop reason.", None),
    # Follow-ups (#step-4, #step-5).
    FailureKind("reply-missing-word",
                "the reply does not hold the word: keep the conversation (or read the file) and answer "
                "from it.", None),
    FailureKind("no-load-session",
                "the agent does not advertise loadSession: set agentCapabilities.loadSession to true and "
                "keep sessions, so that a new process can load one.", "step-5", common=True),
    FailureKind("session-load-error",
                "session/load answered with an error: load the session that an earlier process of the "
                "agent saved.", "step-5"),
    # An image and a file (#step-6).
    FailureKind("no-image-capability",
                "initialize does not give agentCapabilities.promptCapabilities.image true: accept image "
                "blocks and say so.", "step-6"),
    FailureKind("reply-missing-red",
                "the reply does not name the colour of the image (red): pass image blocks to the model.",
                "step-6"),
    # Stop a running turn (#step-7).
    FailureKind("no-tool-call-before-cancel",
                "no tool_call update and no permission request came before the stop: report the shell "
                "command as a tool call.", "step-7"),
    FailureKind("sleep-never-started",
                "the command `sleep 120` never ran (no sleep process, no tool call about it in progress) "
                "before the turn ended or the bound ran out, so the stop could not be tried.", "step-7"),
    FailureKind("cancel-too-slow",
                f"the turn ended more than {RULES.cancel_s:.0f} seconds after session/cancel: stop the running "
                "tool call when session/cancel comes, and answer the prompt with cancelled.", "step-7", common=True),
    FailureKind("sleep-left",
                "a sleep process was left after the stop: kill the running command on session/cancel.",
                "step-7"),
    # Plan mode (#step-8, #step-9).
    FailureKind("no-plan-mode",
                "the agent advertises no Plan mode: give a mode \"plan\" in modes, or a \"plan\" value in "
                "a configOptions entry of the category \"mode\".", "step-8", common=True),
    FailureKind("set-mode-error",
                "a change of mode (session/set_mode or session/set_config_option) answered with an error.",
                None),
    FailureKind("create-plan-not-called",
                "create_plan was not called with the title: start the stdio tool servers of mcpServers "
                "from session/new and session/load, and call create_plan with the title and a description "
                "that holds the output of cat.", None, common=True),
    FailureKind("get-plan-not-called",
                "get_plan was not called with the ID that create_plan returned.", None),
    FailureKind("reply-missing-plan-id",
                "the reply does not hold the ID of the saved plan.", None),
    FailureKind("plan-changed-workspace",
                "the Plan turn changed the workspace: in Plan mode, do not write files.", "step-8",
                common=True),
    FailureKind("regular-file-missing",
                "the regular turn did not create the file with the shell command that it asked for.",
                "step-9"),
    # Protocol warnings that fail only with --strict.
    FailureKind("schema-violation",
                "a frame of the agent does not match the ACP v1 JSON Schema (see the warnings).", "step-2",
                tier="strict"),
    FailureKind("stdout-not-protocol",
                "the agent wrote a line to stdout that is not a JSON-RPC message: write diagnostics to "
                "stderr.", "step-2", tier="strict"),
    # Our own fault or the user's stop, never the agent's: the journey's verdict is `error`.
    FailureKind("interrupted",
                "the run was stopped (Ctrl-C or SIGTERM) before this journey ended: run it again.", None),
    FailureKind("runner-error",
                "acp-journeys itself failed during this journey (not a finding about the agent): "
                "please report it.", None),
    # What `verify` finds in a file: evidence that cannot show a pass (cut, hand-made or from
    # another version) never passes.
    FailureKind("evidence-incomplete",
                "the evidence of this journey lacks what its checks need (a turn, a process, a marker), "
                "so it cannot pass: judge a result.json that a run wrote whole.", "failure-evidence-incomplete"),
)

FAILURES: dict[str, FailureKind] = {f.id: f for f in _FAILURES}

# Which failure ids each journey can produce, for `acp-journeys list`, the docs and baselines.
JOURNEY_FAILURES: dict[str, tuple[str, ...]] = {j.id: j.failure_ids for j in JOURNEYS}


def anchor_for(failure_id: str, journey_id: str) -> str:
    """The doc anchor of a failure as it happens in one journey."""
    kind = FAILURES[failure_id]
    return kind.anchor or JOURNEYS_BY_ID[journey_id].anchor


def doc_link(anchor: str, docs_url: str = DEFAULT_DOCS_URL) -> str:
    return f"{docs_url}#{anchor}"


FIX_ANCHOR_PREFIX = "failure-"
"""docs/journeys.md holds a `#failure-ID` paragraph (what it means, how to fix it) for every id."""


def fix_anchor(failure_id: str) -> str | None:
    """The doc anchor of a failure id's own paragraph, or None for an id this version does not know."""
    return FIX_ANCHOR_PREFIX + failure_id if failure_id in FAILURES else None
