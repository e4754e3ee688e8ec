"""How the editor answers `session/request_permission`, as tables.

Rules of this module: pure decisions from the request and the journey's state; no I/O. The
answer picks one of the options the agent offered, by kind: allow_once/allow_always to allow,
reject_once/reject_always to refuse. After session/cancel every request is answered cancelled.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Literal

Decision = Literal["allow", "refuse", "cancelled"]
PolicyName = Literal["allow-all", "plan", "cancelled"]

ALLOW_KINDS = ("allow_once", "allow_always")
REFUSE_KINDS = ("reject_once", "reject_always")
PLAN_TOOLS = ("create_plan", "get_plan")
PLAN_ALLOWED_KINDS = ("read",)  # tool kinds that Plan mode allows
PLAN_ALLOWED_COMMANDS = ("cat",)  # shell commands that Plan mode allows
WRITING_KINDS = ("edit", "delete", "move", "execute")
SHELLS = ("sh", "bash", "zsh", "dash")


@dataclass(frozen=True)
class PermissionAnswer:
    decision: Decision
    reason: str
    outcome: dict[str, Any]


def decide(policy: PolicyName, params: Any) -> PermissionAnswer:
    params = params if isinstance(params, dict) else {}
    tool_call = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}
    options = [o for o in params.get("options") or [] if isinstance(o, dict)]
    if policy == "cancelled":
        return PermissionAnswer("cancelled", "the turn was cancelled", {"outcome": "cancelled"})
    if policy == "allow-all":
        return _pick(options, ALLOW_KINDS, "allow", "every request is allowed in this turn")
    allowed, why = plan_allows(tool_call)
    if allowed:
        return _pick(options, ALLOW_KINDS, "allow", why)
    return _pick(options, REFUSE_KINDS, "refuse", why)


def plan_allows(tool_call: dict[str, Any]) -> tuple[bool, str]:
    """Rondar's Plan mode: reads, the two Plan tools and the `cat` command; nothing else."""
    kind = tool_call.get("kind")
    if kind in PLAN_ALLOWED_KINDS:
        return True, f"Plan mode allows tool kind {kind}"
    names = " ".join(str(tool_call.get(k) or "") for k in ("title", "toolCallId"))
    raw = tool_call.get("rawInput")
    if isinstance(raw, dict):
        names += " " + " ".join(str(raw.get(k) or "") for k in ("name", "tool", "toolName"))
    # By name only for tools that do not say they write or run: "Write get_plan.md" stays refused.
    if kind not in WRITING_KINDS and any(tool in names for tool in PLAN_TOOLS):
        return True, "Plan mode allows the rondar Plan tools"
    command = shell_command(tool_call)
    if command is not None and is_plain_command(command, PLAN_ALLOWED_COMMANDS):
        return True, "Plan mode allows the cat command"
    return False, "Plan mode refuses everything but reads, the Plan tools and cat"


def shell_command(tool_call: dict[str, Any]) -> str | None:
    raw = tool_call.get("rawInput")
    if isinstance(raw, dict):
        for key in ("command", "cmd", "commandLine"):
            value = raw.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return shlex.join(value)
    title = tool_call.get("title")
    if isinstance(title, str) and tool_call.get("kind") == "execute":
        return title.strip("` ")
    return None


def is_plain_command(command: str, programs: tuple[str, ...]) -> bool:
    """One simple command of one of `programs`: no pipes, redirections, chaining or substitution."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    # `bash -lc 'cat x'` is the way many agents run every command: judge the inner one.
    if len(words) == 3 and words[0].rsplit("/", 1)[-1] in SHELLS and words[1] in ("-c", "-lc"):
        return is_plain_command(words[2], programs)
    if any(ch in command for ch in ";|&<>`$\n()"):
        return False
    return bool(words) and words[0].rsplit("/", 1)[-1] in programs


def _pick(options: list[dict[str, Any]], kinds: tuple[str, ...], decision: Decision, why: str) -> PermissionAnswer:
    for kind in kinds:
        for option in options:
            if option.get("kind") == kind and "optionId" in option:
                return PermissionAnswer(decision, why, {"outcome": "selected", "optionId": option["optionId"]})
    # No option of the wanted kind: refusing is the safe side, and cancelling says we had no choice.
    return PermissionAnswer("cancelled", f"{why}; no option of kind {'/'.join(kinds)} was offered",
                            {"outcome": "cancelled"})
