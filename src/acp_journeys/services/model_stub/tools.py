"""Finding the agent's tools among those it offered, and filling in their arguments.

Rules of this module: pure functions of `ToolSpec`s; no I/O.
- A shell tool is found by its name (the names below were seen in real agents) AND by a
  `command` (or `cmd`) property that is a string or an array of strings; a tool with any
  other name but such a property comes second. A `command` with an `enum` is an editor's
  sub-command (str_replace_based_edit_tool), never a shell.
- A read tool is found by its name and a path-like property.
- An MCP tool is found by its base name whatever prefix the agent gives it (`mcp_<server>_`,
  `mcp__<server>__`, `<server>__`, `<server>_`, `<server>.`, or none); a name that holds the
  server's name comes first.
- A Python cell tool (prime-agent's `ipython {code}`) is found by its name and a string `code`
  property: a shell command goes in it as `!command`, and an MCP tool is reached from it with
  `await mcp.call_tool(server, tool, arguments)` only when the agent's prompt says so.
- Tools in Markdown: a request that offers no tools but whose system prompt shows fenced blocks
  (```` ```shell ````, ```` ```ipython ````) is answered with such a block (gptme runs them).
- Arguments fill the properties we mean and every other REQUIRED property with a harmless value
  of its type, so that a strict agent does not refuse the call.
- A refusal that names an argument of the refused tool's own schema to set ("must use
  run_in_background", "with is_background: true") gives that argument and its value
  (`refusal_fix`): the model follows the agent's own instruction, as a real one would; a
  refusal that offers a trailing comment to keep the command in the foreground ("add a trailing
  comment like `# intentional-sleep: ...`") is taken first, since the prompt says to wait.
"""

from __future__ import annotations

import json
import re
from typing import Any

from acp_journeys.services.model_stub.conversation import ToolCall, ToolSpec

SHELL_NAMES = frozenset({
    "run_shell_command", "bash", "shell", "terminal", "execute", "exec_command", "exec",
    "run_command", "run_terminal_cmd", "execute_command", "shell_command", "run_shell", "sh",
    "command", "cmd", "local_shell", "run_in_terminal", "powershell",
})
READ_NAMES = frozenset({
    "read", "read_file", "view", "read_text_file", "readfile", "view_file", "file_read", "cat",
    "open_file", "str_replace_based_edit_tool", "str_replace_editor", "text_editor",
})
CELL_NAMES = frozenset({"ipython", "python", "jupyter", "notebook", "run_python", "execute_python",
                        "python_exec", "code_interpreter", "run_code", "execute_code"})
COMMAND_PROPERTIES = ("command", "cmd", "commandLine")
SHELL_BLOCKS = ("shell", "bash", "sh")
CELL_BLOCKS = ("ipython", "python")
FENCE = re.compile(r"^```(?P<lang>[\w+-]+)[^\n]*\n(?P<body>.*?)^```", re.S | re.M)
MCP_FROM_CELL = re.compile(r"\bmcp\.call_tool\(")
PATH_PROPERTIES = ("path", "file_path", "filePath", "absolute_path", "absolutePath", "filename",
                   "file", "target_file", "file_name", "uri")
ID_PROPERTIES = ("plan_id", "planId", "id")
SEPARATORS = ("__", "_", ".", "/", ":", "-")


def base_names(name: str) -> set[str]:
    """The name, lower-cased, and what follows each separator-split prefix of it."""
    lowered = name.lower()
    names = {lowered}
    for sep in ("__", ".", "/", ":"):
        if sep in lowered:
            names.add(lowered.rsplit(sep, 1)[1])
    return names


def _schema_types(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    kinds = schema.get("type")
    types = {kinds} if isinstance(kinds, str) else set(kinds) if isinstance(kinds, list) else set()
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key) or []:
            types |= _schema_types(option)
    return types


def command_property(tool: ToolSpec) -> tuple[str, str] | None:
    """(property name, "string" | "array") of a shell-like command argument, or None."""
    for name in COMMAND_PROPERTIES:
        schema = tool.properties().get(name)
        if not isinstance(schema, dict) or "enum" in schema:
            continue
        types = _schema_types(schema)
        if "string" in types or not types:
            return name, "string"
        if "array" in types:
            return name, "array"
    return None


def path_property(tool: ToolSpec) -> str | None:
    props = tool.properties()
    return next((name for name in PATH_PROPERTIES if name in props), None)


def find_shell_tool(tools: tuple[ToolSpec, ...]) -> ToolSpec | None:
    named = [t for t in tools if base_names(t.name) & SHELL_NAMES and command_property(t)]
    if named:
        return named[0]
    return next((t for t in tools if command_property(t) and not base_names(t.name) & READ_NAMES), None)


def find_read_tool(tools: tuple[ToolSpec, ...]) -> ToolSpec | None:
    return next((t for t in tools if base_names(t.name) & READ_NAMES and path_property(t)), None)


def matches_base(name: str, base: str) -> bool:
    """`name` is the tool `base` under some prefix: create_plan, mcp__rondar__create_plan..."""
    lowered, base = name.lower(), base.lower()
    return lowered == base or any(lowered.endswith(sep + base) for sep in SEPARATORS)


def find_mcp_tool(tools: tuple[ToolSpec, ...], base: str, server: str | None) -> ToolSpec | None:
    candidates = [t for t in tools if matches_base(t.name, base)]
    if server:
        candidates.sort(key=lambda t: (server.lower() not in t.name.lower(), len(t.name)))
    return candidates[0] if candidates else None


def filler(name: str, schema: Any, purpose: str) -> Any:
    """A harmless value for a required property that we have no meaning for."""
    if not isinstance(schema, dict):
        return purpose
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    types = _schema_types(schema)
    if "string" in types or not types:
        if re.search(r"dir|cwd|folder", name, re.I):
            return "."
        return purpose
    if "integer" in types or "number" in types:
        return 600000 if "timeout" in name.lower() else 1
    if "boolean" in types:
        return False
    if "array" in types:
        return []
    if "object" in types:
        return {}
    return None


def complete(tool: ToolSpec, arguments: dict[str, Any], purpose: str) -> dict[str, Any]:
    """`arguments` plus a filler for every required property that they lack."""
    full = dict(arguments)
    props = tool.properties()
    for name in tool.required():
        if name not in full:
            full[name] = filler(name, props.get(name), purpose)
    return full


def shell_arguments(tool: ToolSpec, command: str) -> dict[str, Any]:
    prop = command_property(tool) or ("command", "string")
    # An array command is an argv (Codex's `shell`): run the line through a login shell.
    value: Any = ["bash", "-lc", command] if prop[1] == "array" else command
    return complete(tool, {prop[0]: value}, f"Run {command}")


def read_arguments(tool: ToolSpec, path: str) -> dict[str, Any]:
    arguments: dict[str, Any] = {path_property(tool) or "path": path}
    sub = tool.properties().get("command")
    if isinstance(sub, dict) and "view" in (sub.get("enum") or []):
        arguments["command"] = "view"  # the editor tools read with their `view` sub-command
    return complete(tool, arguments, f"Read {path}")


def create_plan_arguments(tool: ToolSpec, title: str, description: str) -> dict[str, Any]:
    props = tool.properties()
    title_key = next((k for k in ("title", "name") if k in props), "title")
    body_key = next((k for k in ("description", "body", "content", "plan", "text") if k in props), "description")
    return complete(tool, {title_key: title, body_key: description}, title)


def get_plan_arguments(tool: ToolSpec, plan_id: str) -> dict[str, Any]:
    props = tool.properties()
    key = next((k for k in ID_PROPERTIES if k in props), None)
    if key is None:
        key = tool.required()[0] if tool.required() else next(iter(props), "plan_id")
    return complete(tool, {key: plan_id}, plan_id)


REFUSAL_HEAD = 2000
"""How much of a refused call's result is read for the argument that it names."""
# "add a trailing comment like `# intentional-sleep: <reason>`" (Qwen Code's refusal of a
# standalone sleep): the way it offers to keep the command in the foreground, as the prompt asks.
FOREGROUND_COMMENT = re.compile(r"trailing comment like `(?P<key>#\s*[A-Za-z][\w-]*:)[^`\n]*`")
FOREGROUND_REASON = "the user asked to run it and wait for it"
VALUE_AFTER = re.compile(r'\s*[`\'"]?\s*(?:[:=]|to)\s*[`\'"]?(?P<value>true|false|-?\d+(?:\.\d+)?)\b', re.I)


def refusal_fix(tool: ToolSpec, arguments: dict[str, Any], text: str) -> tuple[str, Any] | None:
    """The argument (and value) that a refusal of a call of `tool` tells the model to set: a
    property of the tool's own schema named as a word in the result, other than the command,
    with a value given after it ("is_background: true") or, for a boolean, true; None when the
    result names none, or the call already had that value. A refusal that offers a trailing
    comment to keep the command in the foreground (FOREGROUND_COMMENT) comes first: the command
    with that comment, since the prompt says to wait for it (the background would change what
    was asked)."""
    head = text[:REFUSAL_HEAD]
    command = (command_property(tool) or ("command", ""))[0]
    comment = FOREGROUND_COMMENT.search(head)
    given_command = arguments.get(command)
    if comment is not None and isinstance(given_command, str) and comment.group("key") not in given_command:
        return command, f"{given_command} {comment.group('key')} {FOREGROUND_REASON}"
    for name, schema in tool.properties().items():
        if name == command or len(name) < 4:
            continue
        found = re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", head)
        if found is None:
            continue
        types = _schema_types(schema)
        given = VALUE_AFTER.match(head, found.end())
        if given is not None:
            value: Any = json.loads(given.group("value").lower())
        elif "boolean" in types:
            value = True
        else:
            continue
        if ("boolean" in types and not isinstance(value, bool)) or \
                (types and "boolean" not in types and isinstance(value, bool)):
            continue
        if arguments.get(name) == value:
            continue
        return name, value
    return None


MCP_CALL_IN_CODE = re.compile(r"\.call_tool\(\s*[\"'][^\"']*[\"']\s*,\s*[\"'](?P<tool>[^\"']+)[\"']")


SEARCH_TOOLS = ("tool_search",)
BRIDGE_TOOLS = ("tool_call",)
FUNCTION_TAG = re.compile(r"<function>(?P<json>.*?)</function>", re.S)


def find_search_bridge(tools: tuple[ToolSpec, ...]) -> tuple[ToolSpec, ToolSpec] | None:
    """(search, bridge): a tool that finds deferred tools by a `query` and one that calls them by
    `name` and `arguments` (Qwen Code's tool_search and tool_call, behind which it defers MCP
    tools), when both are offered."""
    search = next((t for t in tools if t.name in SEARCH_TOOLS and "query" in t.properties()), None)
    bridge = next((t for t in tools if t.name in BRIDGE_TOOLS
                   and {"name", "arguments"} <= set(t.properties())), None)
    return (search, bridge) if search is not None and bridge is not None else None


def found_tools(text: str) -> list[ToolSpec]:
    """The declarations a search result gives, each `<function>{"name", "description",
    "parameters" or "parametersJsonSchema"}</function>` (unreadable ones are skipped)."""
    specs = []
    for match in FUNCTION_TAG.finditer(text[:200_000]):
        try:
            decl = json.loads(match.group("json"))
        except ValueError:
            continue
        if isinstance(decl, dict) and isinstance(decl.get("name"), str):
            schema = decl.get("parametersJsonSchema") or decl.get("parameters") or decl.get("input_schema") or {}
            specs.append(ToolSpec(decl["name"], schema if isinstance(schema, dict) else {},
                                  str(decl.get("description") or "")))
    return specs


def bridged(call: ToolCall) -> ToolCall:
    """The call that a bridge call (tool_call {name, arguments}) makes, else the call itself."""
    inner = call.arguments.get("name")
    if call.name in BRIDGE_TOOLS and isinstance(inner, str) and isinstance(call.arguments.get("arguments"), dict):
        return ToolCall(call.id, inner, call.arguments["arguments"])
    return call


def call_role(call: ToolCall) -> str:
    """What an earlier tool call was: "create_plan", "get_plan", "search", "shell", "read" or
    "other" (a bridge call counts as the call it makes)."""
    if call.name in SEARCH_TOOLS:
        return "search"
    call = bridged(call)
    for base in ("create_plan", "get_plan"):
        if matches_base(call.name, base):
            return base
    code = call.arguments.get("code")
    if isinstance(code, str):  # a Python cell
        called = MCP_CALL_IN_CODE.search(code)
        if called:
            return next((b for b in ("create_plan", "get_plan") if matches_base(called.group("tool"), b)), "other")
        return "shell" if code.lstrip().startswith("!") else "other"
    if any(isinstance(call.arguments.get(k), (str, list)) for k in COMMAND_PROPERTIES) \
            and call.arguments.get("command") != "view":
        return "shell"
    if base_names(call.name) & READ_NAMES or any(k in call.arguments for k in PATH_PROPERTIES):
        return "read"
    return "other"


def find_cell_tool(tools: tuple[ToolSpec, ...]) -> ToolSpec | None:
    """A Python cell tool: a cell name and a string `code` property."""
    for tool in tools:
        code = tool.properties().get("code")
        if base_names(tool.name) & CELL_NAMES and isinstance(code, dict) and "string" in (_schema_types(code) or {"string"}):
            return tool
    return None


def cell_arguments(tool: ToolSpec, code: str) -> dict[str, Any]:
    return complete(tool, {"code": code}, code.splitlines()[0] if code else "code")


def cell_reaches_mcp(tool: ToolSpec, prompt_text: str) -> bool:
    """Whether the agent says its MCP tools are called from the cell with `mcp.call_tool`."""
    return bool(MCP_FROM_CELL.search(tool.description) or MCP_FROM_CELL.search(prompt_text))


def mcp_cell_code(server: str, tool: str, arguments: dict[str, Any]) -> str:
    # JSON literals are Python literals too, for the strings and dicts used here.
    return f"print(await mcp.call_tool({json.dumps(server)}, {json.dumps(tool)}, {json.dumps(arguments)}))"


def markdown_block_language(system_text: str, wanted: tuple[str, ...]) -> str | None:
    """The first of `wanted` that the system prompt shows as a fenced block's language."""
    shown = {m.group("lang").lower() for m in FENCE.finditer(system_text)}
    shown |= {lang for lang in wanted if f"```{lang}" in system_text}
    return next((lang for lang in wanted if lang in shown), None)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced block of a text, in order."""
    return [(m.group("lang").lower(), m.group("body").rstrip("\n")) for m in FENCE.finditer(text)]
