"""Reading a conversation: the newest journey instruction, the turn it opens, side requests.

Rules of this module: pure functions of a `Conversation`; no I/O.
- The instruction is the LAST journey sentence (see acp_journeys/prompts.py) in the newest
  user or system message that holds one. Agents prepend reminder blocks to the prompt, merge the
  text of a cancelled turn into the next message, append reminders after it, and some send the
  prompt last with the `system` role; taking the last journey sentence copes with all of these.
  Messages made only of tool results are skipped: Anthropic carries them with the `user` role.
- A turn starts after the last assistant message before the instruction, so an image that an
  agent sends as a message of its own just before the prompt text still belongs to the turn.
- A side request (a title, a summary, prompt suggestions) is recognised by its newest message
  only: the system prompt of a coding agent mentions such words all the time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from acp_journeys.model_stub.conversation import Conversation, Intent, Message

# Each pattern covers its whole sentence, so that a shorter sentence inside it (the shell command
# inside the Plan prompt, "Reply with exactly ACK" inside the Remember prompt) is not taken for a
# later instruction of its own.
PATTERNS: tuple[tuple[Intent, re.Pattern[str]], ...] = (
    ("remember", re.compile(r"Remember this word: (?P<word>\S+?)\.(?:\s+Reply with exactly \S+ and nothing else\.)?")),
    ("recall", re.compile(r"What is the word that I asked you to remember\?(?:\s+Reply with the word and nothing else\.)?")),
    ("reply", re.compile(r"Reply with exactly (?P<token>\S+?) and nothing else\.")),
    ("read_and_look", re.compile(r"Read the file (?P<path>\S+) and look at the attached image\.(?:[^\n]*?and nothing else\.)?")),
    ("plan", re.compile(
        r"Run the shell command `(?P<command>[^`]+)`\.\s*Then call the tool (?P<create>[\w.-]+) of the "
        r"(?P<server>[\w.-]+) tool server with the title \"(?P<title>[^\"]*)\""
        r"(?:[^\n]*?Then call the tool (?P<get>[\w.-]+) of the [\w.-]+ tool server)?"
        r"(?:[^\n]*?Reply with the plan ID and nothing else\.)?")),
    ("shell", re.compile(r"Create the file (?P<path>\S+) with the shell command `(?P<command>[^`]+)`\.?")),
    ("shell", re.compile(r"(?:Run )?the shell command `(?P<command>[^`]+)`(?: and wait for it\.)?")),
)
REMEMBER = PATTERNS[0][1]

# Words that mark a side request in the newest message (outside reminder blocks).
SIDE_REQUEST = re.compile(
    r"\b(title|summar(?:y|ise|ize|ies)|suggest(?:ion|ions)?|compact|topic|describe the image)\b", re.I)
TAG_BLOCK = re.compile(r"<(?P<tag>[A-Za-z][\w-]*)[^>]*>.*?</(?P=tag)>", re.S)


@dataclass(frozen=True)
class Instruction:
    intent: Intent
    groups: dict[str, str]
    sentence: str
    message_index: int  # the message that holds it
    turn_start: int  # the first message of its turn


def instruction_messages(conversation: Conversation) -> list[tuple[int, Message]]:
    """User and system messages with text of their own, oldest first."""
    return [(i, m) for i, m in enumerate(conversation.messages)
            if m.role in ("user", "system") and m.text.strip()]


def last_sentence(text: str) -> tuple[Intent, re.Match[str]] | None:
    """The journey sentence that starts last in `text`, ignoring one that lies inside another."""
    found: list[tuple[Intent, re.Match[str]]] = []
    for intent, pattern in PATTERNS:
        found.extend((intent, m) for m in pattern.finditer(text))
    outer = [(i, m) for i, m in found
             if not any(o is not m and o.start() <= m.start() and m.end() <= o.end()
                        and (o.start(), o.end()) != (m.start(), m.end()) for _, o in found)]
    # Equal spans (the two shell patterns on "the shell command `x`"): the earlier pattern wins.
    outer.sort(key=lambda pair: pair[1].start())
    return outer[-1] if outer else None


def newest_instruction(conversation: Conversation) -> Instruction | None:
    for index, message in reversed(instruction_messages(conversation)):
        hit = last_sentence(message.text)
        if hit is None:
            continue
        intent, match = hit
        turn_start = index
        while turn_start > 0 and conversation.messages[turn_start - 1].role != "assistant":
            turn_start -= 1
        groups = {k: v for k, v in match.groupdict().items() if v is not None}
        return Instruction(intent, groups, match.group(0), index, turn_start)
    return None


def remembered_word(conversation: Conversation) -> tuple[str, int] | None:
    """The word of the newest "Remember this word" message, and that message's index."""
    for index, message in reversed(instruction_messages(conversation)):
        matches = list(REMEMBER.finditer(message.text))
        if matches:
            return matches[-1].group("word"), index
    return None


def side_request(conversation: Conversation) -> str | None:
    """Why the newest message is a side request (a title, a summary...), or None."""
    if not conversation.messages:
        return "the request has no messages"
    last = conversation.messages[-1]
    if last.role not in ("user", "system") or last.tool_results:
        return None
    if last_sentence(last.text) is not None:
        return None
    visible = TAG_BLOCK.sub(" ", last.text)
    match = SIDE_REQUEST.search(visible)
    return f"the newest message asks for a {match.group(1).lower()}" if match else None
