"""How the editor answers `session/request_permission`, as tables.

Rules of this module: pure decisions from the request and the journey's state; no I/O. The
answer picks one of the options the agent offered, by kind: allow_once/allow_always to allow,
reject_once/reject_always to refuse. After session/cancel every request is answered cancelled.

It must not know the connection or the journeys' scripts: a request and a policy name in, an answer out.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any, Literal

Decision = Literal["allow", "refuse", "cancelled"]
PolicyName = Literal["allow-all", "plan", "cancelled"]

ALLOW_KINDS = ("allow_once", "allow_always")
REFUSE_KINDS = ("reject_once", "reject_always")
PLAN_TOOLS = ("create_plan", "get_plan")
PLAN_ALLOWED_KINDS = ("read", "search")  # the "reads" that Plan mode allows
PLAN_ALLOWED_COMMANDS = ("cat",)  # shell commands that Plan mode allows
WRITING_KINDS = ("edit", "delete", "move", "execute")
SHELLS = ("sh", "bash", "zsh", "dash")
# A Plan tool's name as agents show it: bare, or with the server's name and an MCP prefix
# (mcp__rondar__create_plan, rondar__create_plan, mcp_rondar_create_plan; rondar.create_plan
# splits into two words).
PLAN_TOOL_NAME = re.compile(r"^(?:mcp_{1,2})?(?:rondar_{1,2})?(create_plan|get_plan)$")


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
    # By name only for tools that do not say they write or run: "Write get_plan.md" stays refused.
    if kind not in WRITING_KINDS and names_plan_tool(tool_call):
        return True, "Plan mode allows the rondar Plan tools"
    command = shell_command(tool_call)
    if command is not None and is_plain_command(command, PLAN_ALLOWED_COMMANDS):
        return True, "Plan mode allows the cat command"
    return False, "Plan mode refuses everything but reads, the Plan tools and cat"


def names_plan_tool(tool_call: dict[str, Any]) -> bool:
    """The ToolCall's name, title, toolCallId, rawInput or _meta names create_plan or get_plan."""
    texts = [str(tool_call.get(k) or "") for k in ("name", "title", "toolCallId")]
    texts += _tool_names(tool_call.get("rawInput")) + _tool_names(tool_call.get("_meta"))
    return any(PLAN_TOOL_NAME.match(word) for text in texts for word in re.findall(r"\w+", text))


def _tool_names(value: Any, depth: int = 0) -> list[str]:
    """The strings under keys that name a tool ("name", "tool", "toolName", "mcp_tool"...), at any
    depth: not the arguments, where a note about create_plan names no tool."""
    if not isinstance(value, dict) or depth > 4:
        return []
    found: list[str] = []
    for key, item in value.items():
        if isinstance(item, str) and re.search(r"name|tool", str(key), re.IGNORECASE):
            found.append(item)
        elif isinstance(item, dict):
            found += _tool_names(item, depth + 1)
    return found


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
    if isinstance(title, str) and tool_call.get("kind") in ("execute", None):
        quoted = re.search(r"`([^`]+)`", title)  # Run `cat x`
        if quoted:
            return quoted.group(1).strip()
        # A description after the command: "cat /x (Read file)"
        return re.sub(r"\s*\([^()]*\)\s*$", "", title).strip("` ")
    return None


def is_plain_command(command: str, programs: tuple[str, ...]) -> bool:
    """One simple command of one of `programs`: no pipes, redirections, chaining or substitution."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    # `bash -lc 'cat x'` is the way many agents run every command: judge the inner one.
    if (len(words) >= 3 and words[0].rsplit("/", 1)[-1] in SHELLS
            and all(re.fullmatch(r"-[a-z]+", w) for w in words[1:-1]) and "c" in words[-2]):
        return is_plain_command(words[-1], programs)
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
