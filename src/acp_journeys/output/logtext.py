"""Text for a line of a CI log: what the agent (or a result.json) wrote, unable to start a line.

Rules of this module:
- `one_line`: CR, LF, every other C0 and C1 control, DEL and the Unicode line and paragraph
  separators become visible escapes (`\\n`, `\\x1b`, `\\u2028`). Every piece of agent or result
  text that we print goes through it, so no line of ours ends early and hands the start of the
  next line to the agent (a workflow command such as `::error::` or `::add-mask::`), and no
  terminal escape sequence runs.
- `command_data`: the data of a workflow command that we print (`::warning::DATA`): `%`, CR and
  LF escaped as GitHub's runner reads them back (`%25`, `%0D`, `%0A`).
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_SEPARATORS = {"\u2028", "\u2029", "\x85"}


def _escape(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(text: str) -> str:
    """`text` with no line break or control character left: each shown as an escape."""
    if text.isprintable():
        return text
    return "".join(_escape(c) if (ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in _SEPARATORS) else c
                   for c in text)


def command_data(text: str) -> str:
    """The data part of a workflow command: it can neither end the command nor start another."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
