"""Text for a line of a CI log: what the agent (or a result.json) wrote, unable to start a line
or to hold a workflow command.

Rules of this module:
- `one_line`: every character that Python does not print (CR, LF, every other C0 and C1
  control, DEL, the Unicode line and paragraph separators, format characters such as bidi
  overrides and zero-width joiners, blanks other than the space, lone surrogates) becomes a
  visible escape (`\\n`, `\\x1b`, `\\u2028`). Every piece of agent or result text that we print
  goes through it, so no line of ours ends early and hands the start of the next line to the
  agent, and no terminal escape sequence runs.
- It also breaks both forms of GitHub's workflow commands with an escape: `::` where it would
  start the line (`::error::`, `::add-mask::`, `::stop-commands::`) and the legacy `##[`, which
  GitHub's runner obeys anywhere in a line (`nope ##[error]x`, `##[add-mask]`,
  `##[stop-commands]`); a `#` that ends the text is escaped too, so that no text we put after
  it can complete a `##[`. The invisible characters go first, since .NET's culture-aware search
  (the runner's) may skip them inside `##[`.
- `command_data`: the data of a workflow command that we print (`::warning::DATA`): `%`, CR and
  LF escaped as GitHub's runner reads them back (`%25`, `%0D`, `%0A`), and `##[` broken.
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
LEGACY_COMMAND = "##["
_LEGACY_BROKEN = "##\\x5b"  # `[` as its escape: the runner finds no `##[` in the line


def _escape(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _no_command(text: str) -> str:
    """`text` (printable) with no `##[`, no `::` at its start (after blanks) and no `#` at its end."""
    text = text.replace(LEGACY_COMMAND, _LEGACY_BROKEN)
    blank = len(text) - len(text.lstrip(" "))
    if text.startswith("::", blank):
        text = f"{text[:blank]}\\x3a{text[blank + 1:]}"
    if text.endswith("#"):
        text = text[:-1] + "\\x23"
    return text


def one_line(text: str) -> str:
    """`text` with no line break, no control or invisible character and no workflow command left."""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else _escape(c) for c in text)
    return _no_command(text)


def command_data(text: str) -> str:
    """The data part of a workflow command: it can neither end the command nor start another."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(LEGACY_COMMAND, _LEGACY_BROKEN)
