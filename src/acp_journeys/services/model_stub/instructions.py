"""Reading a conversation: the newest journey instruction, the turn it opens, side requests.

Rules of this module: pure functions of a `Conversation`; no I/O.
- The instruction is the LAST journey sentence (see acp_journeys/rules/prompts.py) in the newest
  user or system message that holds one. Agents prepend reminder blocks to the prompt, merge the
  text of a cancelled turn into the next message, append reminders after it, and some send the
  prompt last with the `system` role; taking the last journey sentence copes with all of these.
  Messages made only of tool results are skipped: Anthropic carries them with the `user` role.
- A turn starts after the last assistant message before the instruction, so an image that an
  agent sends as a message of its own just before the prompt text still belongs to the turn.
- Reminder and environment blocks (`<system-reminder>…</system-reminder>`) are not the user's
  words: a journey sentence inside one is not an instruction.
- A side request (a title, a summary, suggestions, a description of an image) is not a journey
  turn. It is recognised by the newest user message (trailing system messages such as an
  environment block are not asked anything): words that ask for a title, a summary... outside
  its tag blocks and journey sentences; or, in a request that offers no tools, a journey
  sentence only quoted inside a tag block (`<session>…</session>`) or a short system prompt that
  asks for such a thing. The long system prompt of a coding agent mentions such words all the
  time, so it alone never makes a side request of a request that offers tools.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from acp_journeys.services.model_stub.conversation import Conversation, Intent, Message

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
    r"\b(title|summar(?:y|ise|ize|ies)|suggest(?:ion|ions)?|compact|topic|describe)\b", re.I)
TAG_BLOCK = re.compile(r"<(?P<tag>[A-Za-z][\w-]*)[^>]*>.*?</(?P=tag)>", re.S)
REMINDER_BLOCK = re.compile(r"<(?P<tag>[\w-]*(?:reminder|environment)[\w-]*)[^>]*>.*?</(?P=tag)>", re.S | re.I)
SHORT_SYSTEM = 2000  # characters: a title or summary prompt; a coding agent's own is far longer


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


def own_words(message: Message) -> str:
    """The text of a message without its reminder and environment blocks."""
    return REMINDER_BLOCK.sub(" ", message.text)


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
        hit = last_sentence(own_words(message))
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
        matches = list(REMEMBER.finditer(own_words(message)))
        if matches:
            return matches[-1].group("word"), index
    return None


def newest_user_message(conversation: Conversation) -> Message | None:
    """The user message that the request asks about: the newest message that is not a system
    message, when that is a user message with words or images of its own (None when it is an
    assistant message or tool results: the request continues a turn)."""
    for message in reversed(conversation.messages):
        if message.role == "system":
            continue
        if message.role == "user" and not message.tool_results and (message.text.strip() or message.images):
            return message
        return None
    return None


def _without_sentences(text: str) -> str:
    for _, pattern in PATTERNS:
        text = pattern.sub(" ", text)
    return text


def side_request(conversation: Conversation) -> str | None:
    """Why the request is a side request (a title, a summary...), or None for a journey turn."""
    if not conversation.messages:
        return "the request has no messages"
    newest = newest_user_message(conversation)
    if newest is None:
        return None
    words = own_words(newest)
    outside = TAG_BLOCK.sub(" ", words)
    sentence_outside = last_sentence(outside) is not None
    if sentence_outside and conversation.tools:
        return None  # the journey's prompt itself, with tools to act on it
    asked = SIDE_REQUEST.search(_without_sentences(outside))
    if asked:
        return f"the newest user message asks for a {asked.group(1).lower()}"
    if conversation.tools:
        return None
    if not sentence_outside and last_sentence(words) is not None:
        return "the newest user message only quotes a journey prompt (in a tag block), and no tools were offered"
    system = "\n".join(m.text for m in conversation.messages if m.role == "system")
    asked = SIDE_REQUEST.search(TAG_BLOCK.sub(" ", system)) if len(system) <= SHORT_SYSTEM else None
    if asked:
        return f"a short system prompt asks for a {asked.group(1).lower()}, and no tools were offered"
    return None
