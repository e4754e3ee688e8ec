"""The honest model: a pure function from the conversation an agent sent to what the model says.

Rules of this module (the rules of the issue "a scripted model endpoint"):
- It only says what the agent's plumbing gave it, so the journeys keep judging the agent: the
  word to recall only when the conversation holds the "Remember this word" message; the word of
  the file only from a tool result of this turn; the colour only from an image that is in the
  request and that it could decode, or from a description of the image in this turn (an agent
  that had a vision side call describe the image puts that description in the conversation).
- It answers the newest instruction (see `instructions`); a side request (title, summary,
  suggestions, a description of an image) or a conversation with no journey sentence gets a
  short plain answer and is marked as no turn (`Decision.side`).
- A tool is called only when the request offers one that fits (see `tools`): a shell tool, else
  a Python cell tool (`!command`), else, when no tools are offered, a fenced block of a language
  that the system prompt shows (tools in Markdown: the block is the call, and the messages that
  follow it are its result). Every step of a tool plan is taken once, and its result decides
  the next: a failed step ends the turn with a reply that says what failed, never a loop. One
  exception, as a model follows the agent: a shell call that the agent refuses while naming an
  argument of that tool's own schema to set ("must use run_in_background") is made again ONCE
  with it (`Decision.retried` says so in the records); a command so started in the background
  is then waited for in the foreground, since the prompt says to wait for it.
- Every decision says why, in words that a failure message can quote.
- Pure: no I/O, no clock, no randomness. Tool-call ids belong to the dialects.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, replace
from typing import Any

import acp_journeys.services.model_stub.instructions as instructions
import acp_journeys.services.model_stub.tools as tools
from acp_journeys.services.model_stub.colour import COLOUR_NAMES, look
from acp_journeys.services.model_stub.conversation import (
    Conversation,
    Decision,
    ImagePart,
    Intent,
    Message,
    PlannedCall,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from acp_journeys.services.model_stub.shell_wait import wait_for

PLAN_ID = re.compile(r"\bPLAN-[A-Z0-9]{8}\b")
MARKER = re.compile(r"\b[A-Z]+-[A-Z0-9]{8}\b")  # the journeys' markers: FILE-XXXXXXXX
DESCRIBED_COLOUR = re.compile(r"\bimage\b[^\n]{0,200}?\b(?P<colour>" + "|".join(n for n, _ in COLOUR_NAMES) + r")\b", re.I)
LINE_NUMBER = re.compile(r"^\s*(?:L?\d+\s*[\t:|→]\s*)")  # "     1\tword" and "1: word" of read tools


@dataclass(frozen=True)
class Step:
    """A tool call of this turn and its result (None when the agent sent no result for it)."""

    call: ToolCall
    result: ToolResult | None
    role: str

    @property
    def ok(self) -> bool:
        return self.result is not None and not self.result.is_error and not _refused(self.result.text)


FAILED_HEAD = re.compile(r"^\W*(error\b|exit code:? [1-9]|failed\b|blocked\b|permission (denied|refused)|"
                         r"the user (doesn't|does not) want)", re.I)
FAILED_ANYWHERE = ("<tool_use_error>", "permission denied by user", "permission refused", "user rejected", "user denied",
                   "rejected by the user", "was cancelled", "was canceled", "tool use was rejected",
                   "not allowed to run", "no such file or directory", "enoent")


def _refused(text: str) -> bool:
    # Chat Completions has no error flag for a tool result, so agents say it in words: a refused
    # permission, a cancel, a missing file. Only the head counts: a file may hold such words.
    head = text.strip()[:300]
    return bool(FAILED_HEAD.search(head)) or any(p in head.lower() for p in FAILED_ANYWHERE)


def _offered(conversation: Conversation) -> str:
    names = conversation.tool_names()
    return f"tools were [{', '.join(names)}]" if names else "no tools were offered"


def _first_line(text: str, limit: int = 160) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:limit]


def markdown_calls(conversation: Conversation, start: int) -> Conversation:
    """The conversation with each fenced shell or cell block of an assistant message since
    `start` made a tool call, and the text of the messages after it (up to the next assistant
    message) its result: how an agent with tools in Markdown runs them."""
    messages = list(conversation.messages)
    for index in range(start, len(messages)):
        message = messages[index]
        if message.role != "assistant" or message.tool_calls:
            continue
        calls = []
        for k, (lang, body) in enumerate(tools.fenced_blocks(message.text)):
            if lang in tools.SHELL_BLOCKS:
                calls.append(ToolCall(f"md-{index}-{k}", lang, {"command": body}))
            elif lang in tools.CELL_BLOCKS:
                calls.append(ToolCall(f"md-{index}-{k}", lang, {"code": body}))
        if not calls:
            continue
        following = []
        for later in conversation.messages[index + 1:]:
            if later.role == "assistant":
                break
            following.append(later.text)
        results = (ToolResult(calls[-1].id, "\n".join(following)),) if following else ()
        messages[index] = Message("assistant", message.texts, message.images, tuple(calls), results)
    return Conversation(tuple(messages), conversation.tools, conversation.model)


def steps_of_turn(conversation: Conversation, start: int) -> list[Step]:
    """The tool calls made since message `start`, each with its result (by call id)."""
    if not conversation.tools:
        conversation = markdown_calls(conversation, start)
    messages = conversation.messages[start:]
    results: dict[str, ToolResult] = {r.call_id: r for m in messages for r in m.tool_results}
    calls = [c for m in messages for c in m.tool_calls]
    orphans = [r for m in messages for r in m.tool_results if r.call_id not in {c.id for c in calls}]
    steps = []
    for call in calls:
        result = results.get(call.id)
        if result is None and orphans:
            result = orphans.pop(0)  # an agent that renumbered the call: results still come in order
        steps.append(Step(call, result, tools.call_role(call)))
    return steps


def _latest(steps: list[Step], *roles: str) -> Step | None:
    return next((s for s in reversed(steps) if s.role in roles), None)


def word_of(text: str) -> str:
    """The word that a file holds, from a read or cat result (line numbers and frames dropped)."""
    marker = MARKER.search(text)
    if marker:
        return marker.group(0)
    lines = [LINE_NUMBER.sub("", ln).strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    return lines[-1].split()[-1] if lines else ""


def plan_id_of(text: str) -> str | None:
    """The plan id of a create_plan result: JSON {"id": ...} (anywhere in the text) or a token."""
    candidates = [text] + re.findall(r"\{[^{}]*\}", text)
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            for key in ("id", "plan_id", "planId"):
                if isinstance(value.get(key), str) and value[key]:
                    return value[key]
    token = PLAN_ID.search(text)
    return token.group(0) if token else None


def _images_of_turn(conversation: Conversation, start: int) -> list[ImagePart]:
    return [img for m in conversation.messages[start:] for img in m.all_images()]


def described_colour(conversation: Conversation, start: int) -> tuple[str | None, str]:
    """The colour word of a description of the image in the messages since `start`."""
    for index in range(len(conversation.messages) - 1, start - 1, -1):
        message = conversation.messages[index]
        if message.role == "assistant":
            continue
        for text in (message.text, *(r.text for r in message.tool_results)):
            match = DESCRIBED_COLOUR.search(text)
            if match:
                return match.group("colour").lower(), f"no image in the request, but message {index + 1} " \
                    f"describes it: {_first_line(text[max(0, match.start() - 40):match.end() + 40], 120)!r}"
    return None, "image not in request"


def see_colour(images: list[ImagePart]) -> tuple[str | None, str]:
    """The colour word of the newest decodable image, and why."""
    if not images:
        return None, "image not in request"
    for image in reversed(images):
        if image.data is None:
            continue
        seen = look(image.data)
        if seen is not None:
            return seen.colour, (f"image {image.media_type} {seen.size[0]}x{seen.size[1]} "
                                 f"average {seen.average} is {seen.colour}")
    return None, f"image in request but not decodable ({', '.join(i.source for i in images)})"


class Script:
    """One decision: built per request, so that its helpers share the conversation."""

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation

    def reply(self, intent: Intent, text: str, why: str) -> Decision:
        return Decision(intent=intent, why=why, text=text)

    def call(self, intent: Intent, name: str, arguments: dict, why: str) -> Decision:
        return Decision(intent=intent, why=why, call=PlannedCall(name, arguments))

    @property
    def system_text(self) -> str:
        return "\n".join(m.text for m in self.conversation.messages if m.role == "system")

    def decide(self) -> Decision:
        conv = self.conversation
        side = instructions.side_request(conv)
        if side is not None:
            return self.plain(side)
        found = instructions.newest_instruction(conv)
        if found is None:
            return self.plain("no journey sentence in the user messages")
        steps = steps_of_turn(conv, found.message_index + 1)
        handler = getattr(self, f"do_{found.intent}")
        return handler(found, steps)

    def plain(self, side: str) -> Decision:
        # A vision side call sends the image with its question: the newest user message.
        newest = instructions.newest_user_message(self.conversation)
        colour, _ = see_colour(list(newest.images) if newest is not None else [])
        text = f"The image is mostly {colour}." if colour else "OK."
        return Decision(intent="other", why=f"not about a journey: {side}", text=text, side=side)

    def run_command(self, intent: Intent, command: str) -> Decision | None:
        """A call that runs `command` with a tool the agent offers, or None when it offers none."""
        conv = self.conversation
        shell = tools.find_shell_tool(conv.tools)
        if shell is not None:
            return self.call(intent, shell.name, tools.shell_arguments(shell, command),
                             f"run `{command}` with the shell tool {shell.name}")
        cell = tools.find_cell_tool(conv.tools)
        if cell is not None:
            return self.call(intent, cell.name, tools.cell_arguments(cell, f"!{command}"),
                             f"run `{command}` as `!{command}` in the Python cell tool {cell.name}")
        if not conv.tools:
            lang = tools.markdown_block_language(self.system_text, tools.SHELL_BLOCKS + tools.CELL_BLOCKS)
            if lang is not None:
                code = command if lang in tools.SHELL_BLOCKS else f"!{command}"
                return self.reply(intent, f"```{lang}\n{code}\n```",
                                  f"no tools offered, but the system prompt shows ```{lang} blocks: "
                                  f"run `{command}` in one")
        return None

    def call_mcp(self, intent: Intent, base: str, server: str | None, arguments: dict, why: str,
                 steps: list[Step] | None = None) -> Decision | None:
        """A call of the MCP tool `base`: offered as a tool, from a Python cell whose agent says
        so, or found with a search tool and called through its bridge (`via_search`)."""
        conv = self.conversation
        tool = tools.find_mcp_tool(conv.tools, base, server)
        if tool is not None:
            return self.call(intent, tool.name, _mcp_arguments(tool, base, arguments), f"{why} with {tool.name}")
        cell = tools.find_cell_tool(conv.tools)
        if cell is not None and server and tools.cell_reaches_mcp(cell, self.system_text):
            code = tools.mcp_cell_code(server, base, arguments)
            return self.call(intent, cell.name, tools.cell_arguments(cell, code),
                             f"{why} with mcp.call_tool in the Python cell tool {cell.name}, as the agent's prompt says")
        return self.via_search(intent, base, server, arguments, why, steps or [])

    def via_search(self, intent: Intent, base: str, server: str | None, arguments: dict, why: str,
                   steps: list[Step]) -> Decision | None:
        """MCP tools deferred behind a search tool (Qwen Code's tool_search and tool_call): search
        once for `base` (`select:<name>` when the conversation names the deferred tool, else
        keywords), then call what the search declared through the bridge, as a model would."""
        pair = tools.find_search_bridge(self.conversation.tools)
        if pair is None:
            return None
        search, bridge = pair
        searches = [s for s in steps if s.role == "search"]
        found = tuple(t for s in searches if s.result is not None for t in tools.found_tools(s.result.text))
        tool = tools.find_mcp_tool(found, base, server)
        if tool is not None:
            return self.call(intent, bridge.name, {"name": tool.name, "arguments": _mcp_arguments(tool, base, arguments)},
                             f"{why} with {tool.name} through {bridge.name}, as {search.name} declared it")
        if any(base in json.dumps(s.call.arguments) for s in searches):
            return None  # searched for it once already: not found
        name = self.deferred_name(base, server)
        query = f"select:{name}" if name else " ".join(w for w in (server, base) if w)
        return self.call(intent, search.name, {"query": query},
                         f"no {base} tool offered, but {search.name} finds deferred tools: search for it")

    def deferred_name(self, base: str, server: str | None) -> str | None:
        """The full name of the tool `base` where the conversation lists it (a deferred-tools list)."""
        texts = [t for m in self.conversation.messages for t in m.texts]
        names = {n for text in texts for n in re.findall(r"[A-Za-z0-9_.-]*" + re.escape(base) + r"\b", text[:100_000])
                 if tools.matches_base(n, base) and n.lower() != base.lower()}  # the bare name is the prompt's
        ranked = sorted(names, key=lambda n: (not (server and server.lower() in n.lower()), len(n)))
        return ranked[0] if ranked else None

    def do_reply(self, found: instructions.Instruction, steps: list[Step]) -> Decision:
        return self.reply("reply", found.groups["token"], "the newest instruction asks for its marker")

    def do_remember(self, found: instructions.Instruction, steps: list[Step]) -> Decision:
        return self.reply("remember", "ACK", "the newest instruction asks to remember a word")

    def do_recall(self, found: instructions.Instruction, steps: list[Step]) -> Decision:
        held = instructions.remembered_word(self.conversation)
        count = len(self.conversation.messages)
        if held is None:
            return self.reply("recall", "I don't know.",
                              f"the conversation sent ({count} messages) holds no 'Remember this word' message")
        word, index = held
        return self.reply("recall", word, f"the conversation holds 'Remember this word' in message {index + 1} of {count}")

    def do_read_and_look(self, found: instructions.Instruction, steps: list[Step]) -> Decision:
        path = found.groups["path"]
        colour, seen = see_colour(_images_of_turn(self.conversation, found.turn_start))
        if colour is None and seen == "image not in request":
            colour, seen = described_colour(self.conversation, found.turn_start)
        step = _latest(steps, "read", "shell")
        if step is None or (not step.ok and step.role == "read"):
            tried_read = step is not None
            reader = None if tried_read else tools.find_read_tool(self.conversation.tools)
            if reader is not None:
                return self.call("read_and_look", reader.name, tools.read_arguments(reader, path),
                                 f"read the file with the read tool {reader.name}")
            ran = self.run_command("read_and_look", f"cat {shlex.quote(path)}")
            if ran is not None:
                why = "the read tool failed" if tried_read else "no read tool offered"
                return replace(ran, why=f"{why}: {ran.why}")
            if tried_read:
                return self.reply("read_and_look", self._with_colour("I could not read the file.", colour),
                                  f"the read tool failed ({_first_line(step.result.text if step.result else '')}) "
                                  f"and no shell tool offered; {seen}")
            return self.reply("read_and_look", self._with_colour("I cannot read the file.", colour),
                              f"no read or shell tool offered: {_offered(self.conversation)}; {seen}")
        if not step.ok:
            detail = _first_line(step.result.text) if step.result else "no tool result came back"
            return self.reply("read_and_look", self._with_colour("I could not read the file.", colour),
                              f"{step.call.name} failed: {detail}; {seen}")
        assert step.result is not None
        word = word_of(step.result.text)
        return self.reply("read_and_look", self._with_colour(word, colour),
                          f"the word {word!r} is from the result of {step.call.name}; {seen}")

    @staticmethod
    def _with_colour(text: str, colour: str | None) -> str:
        return f"{text} {colour}" if colour else text

    def do_shell(self, found: instructions.Instruction, steps: list[Step]) -> Decision:
        command = found.groups["command"]
        shells = [s for s in steps if s.role == "shell"]
        step = shells[-1] if shells else None
        if step is None:
            ran = self.run_command("shell", command)
            if ran is None:
                return self.reply("shell", f"I cannot run `{command}`: I have no shell tool.",
                                  f"no shell tool offered: {_offered(self.conversation)}")
            return ran
        fix = self.refusal_fix(shells[0]) if len(shells) >= 2 else None
        retried = fix is not None and shells[1].call.arguments.get(fix[0]) == fix[1]
        if step.ok:
            if retried and len(shells) == 2 and "background" in fix[0].lower():  # type: ignore[index]
                waited = self.run_command("shell", wait_for(command))
                if waited is not None:
                    return replace(waited, why=f"`{command}` runs in the background ({fix[0]}: "  # type: ignore[index]
                                               f"{json.dumps(fix[1])}), and the prompt says to wait for it: "  # type: ignore[index]
                                               f"{waited.why}")
            return self.reply("shell", f"Done: `{command}` finished.", f"{step.call.name} gave a result")
        detail = _first_line(step.result.text) if step.result else "no tool result came back"
        if len(shells) == 1:
            again = self.retry_refused(step, detail)
            if again is not None:
                return again
        return self.reply("shell", f"The command `{command}` did not finish: {detail}", f"{step.call.name} failed: {detail}")

    def refusal_fix(self, step: Step) -> tuple[str, Any] | None:
        """The argument that the agent's refusal of `step` asked to set, if any (see tools)."""
        if step.ok or step.result is None:
            return None
        spec = self.tool_of(step)
        return tools.refusal_fix(spec, step.call.arguments, step.result.text) if spec is not None else None

    def tool_of(self, step: Step) -> ToolSpec | None:
        return next((t for t in self.conversation.tools if t.name == step.call.name), None)

    def retry_refused(self, step: Step, detail: str) -> Decision | None:
        """The refused call once more, with the argument that its refusal names set."""
        fix = self.refusal_fix(step)
        if fix is None:
            return None
        name, value = fix
        how = (f"offered a trailing comment that keeps it in the foreground: retry once as `{value}`"
               if name == (tools.command_property(self.tool_of(step)) or ("", ""))[0]
               else f"named its argument {name}: retry once with {name}: {json.dumps(value)}")
        return Decision(intent="shell", call=PlannedCall(step.call.name, {**step.call.arguments, name: value}),
                        why=f"{step.call.name} refused the call ({detail}) and {how}",
                        retried={"tool": step.call.name, "argument": name, "value": value, "refusal": detail})

    def do_plan(self, found: instructions.Instruction, steps: list[Step]) -> Decision:
        conv = self.conversation
        command, title = found.groups["command"], found.groups["title"]
        server = found.groups.get("server")
        create_name, get_name = found.groups.get("create", "create_plan"), found.groups.get("get", "get_plan")

        cat = _latest(steps, "shell", "read")
        if cat is None:
            ran = self.run_command("plan", command)
            if ran is not None:
                return ran
            reader = tools.find_read_tool(conv.tools)
            words = shlex.split(command) if command.startswith("cat ") else []
            if reader is not None and len(words) == 2:
                return self.call("plan", reader.name, tools.read_arguments(reader, words[1]),
                                 f"no shell tool offered: read the file with {reader.name} instead of cat")
            return self.reply("plan", f"I cannot run `{command}`: I have no shell tool.",
                              f"no shell tool offered: {_offered(conv)}")
        if not cat.ok:
            detail = _first_line(cat.result.text) if cat.result else "no tool result came back"
            return self.reply("plan", f"The command `{command}` did not run: {detail}", f"{cat.call.name} failed: {detail}")
        assert cat.result is not None
        description = cat.result.text.strip()

        created = _latest(steps, "create_plan")
        if created is None:
            planned = self.call_mcp("plan", create_name, server, {"title": title, "description": description},
                                    f"save the plan, the description from {cat.call.name},", steps)
            if planned is None:
                return self.reply("plan", f"I cannot save the plan: no {create_name} tool.",
                                  f"no {create_name} tool of the {server} server offered: {_offered(conv)}")
            return planned
        if not created.ok:
            detail = _first_line(created.result.text) if created.result else "no tool result came back"
            return self.reply("plan", f"{create_name} failed: {detail}", f"{created.call.name} failed: {detail}")
        assert created.result is not None
        plan_id = plan_id_of(created.result.text)
        if plan_id is None:
            return self.reply("plan", f"{create_name} returned no plan ID.",
                              f"no plan id in the result of {created.call.name}: {_first_line(created.result.text)}")

        got = _latest(steps, "get_plan")
        if got is None:
            planned = self.call_mcp("plan", get_name, server, {"plan_id": plan_id}, "read the plan back", steps)
            if planned is None:
                return self.reply("plan", plan_id, f"no {get_name} tool offered: {_offered(conv)}")
            return planned
        if not got.ok:
            detail = _first_line(got.result.text) if got.result else "no tool result came back"
            return self.reply("plan", f"{get_name} failed for {plan_id}: {detail}", f"{got.call.name} failed: {detail}")
        return self.reply("plan", plan_id, f"{got.call.name} read the plan back")


def _mcp_arguments(tool: ToolSpec, base: str, arguments: dict) -> dict:
    if base == "create_plan":
        return tools.create_plan_arguments(tool, arguments["title"], arguments["description"])
    return tools.get_plan_arguments(tool, arguments["plan_id"])


def decide(conversation: Conversation) -> Decision:
    """What the honest model says to this conversation."""
    return Script(conversation).decide()
