"""Newline-delimited framing with a size bound.

Rules of this module: bytes in, lines out; it knows nothing of JSON or ACP. A line longer than
the bound is dropped (and reported with its size) instead of growing memory without end, and
the rest of the stream goes on framing normally.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_LINE = 16 * 1024 * 1024


@dataclass(frozen=True)
class Line:
    raw: bytes


@dataclass(frozen=True)
class Overlong:
    size: int
    """Bytes dropped (the line's length, or how much was seen before end of file)."""


class LineBuffer:
    def __init__(self, max_line: int = DEFAULT_MAX_LINE) -> None:
        self.max_line = max_line
        self._parts: list[bytes] = []
        self._size = 0
        self._dropping = False

    def feed(self, data: bytes) -> list[Line | Overlong]:
        out: list[Line | Overlong] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                self._keep(data[start:], out)
                return out
            self._keep(data[start:end], out)
            line = b"" if self._dropping else b"".join(self._parts)
            if line.endswith(b"\r"):
                line = line[:-1]
            if self._dropping or len(line) > self.max_line:
                out.append(Overlong(self._size))
            elif line.strip():
                out.append(Line(line))
            self._reset()
            start = end + 1

    def finish(self) -> list[Line | Overlong]:
        """End of stream: a last line with no newline still counts."""
        out: list[Line | Overlong] = []
        line = b"".join(self._parts)
        if self._dropping or len(line) > self.max_line:
            out.append(Overlong(self._size))
        elif line.strip():
            out.append(Line(line))
        self._reset()
        return out

    def _keep(self, chunk: bytes, out: list[Line | Overlong]) -> None:
        if not chunk:
            return
        self._size += len(chunk)
        if self._dropping:
            return
        if self._size > self.max_line + 1:  # +1: the CR of a CRLF line end is not content
            self._dropping = True
            self._parts.clear()
            return
        self._parts.append(chunk)

    def _reset(self) -> None:
        self._parts.clear()
        self._size = 0
        self._dropping = False
