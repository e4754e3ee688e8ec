"""Reading a file we are handed (result.json, a baseline): a regular file of bounded size, or a
clear error at once. The baseline's file is read here (`load_baseline`) and parsed by the pure
`rules.baseline`.

Rules of this module: never block and never read past the bound. A FIFO is opened without
blocking and refused, as are folders and devices (`/dev/zero`); the size is checked before
reading and again while reading (a file that grows). Errors are `UnreadableFile` with a message
that names the path; callers turn them into exit 2.

It must not know what the bytes mean: the caller parses them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from acp_journeys.rules.baseline import Baseline, BaselineError, parse_baseline

MAX_RESULT_BYTES = 64 << 20
"""result.json: a run's evidence is bounded per journey (replies, stderr, frames are clipped)."""
MAX_BASELINE_BYTES = 1 << 20
MAX_JSON_DEPTH = 64
"""Nesting of result.json: our own schema is 6 deep and agent JSON in it is clipped at 32."""


class UnreadableFile(Exception):
    pass


def read_bounded(path: str, limit: int, what: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise UnreadableFile(f"{path}: no such file") from None
    except OSError as exc:
        raise UnreadableFile(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise UnreadableFile(f"{path}: a folder, not a {what}")
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(f"{path}: not a regular file (a device, a pipe or a socket), not a {what}")
        too_big = f"{path}: larger than {limit >> 20} MiB, the bound for a {what}"
        if info.st_size > limit:
            raise UnreadableFile(too_big)
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise UnreadableFile(too_big)
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise UnreadableFile(f"{path}: cannot read it: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def load_baseline(path: str | Path) -> Baseline:
    """Read and check a baseline file; raises BaselineError (file and line) when it is not usable."""
    name = str(path)
    try:
        text = read_bounded(name, MAX_BASELINE_BYTES, "baseline").decode("utf-8")
    except UnreadableFile as exc:
        raise BaselineError(f"cannot read the baseline: {exc}") from None
    except UnicodeDecodeError as exc:
        raise BaselineError(f"{name}: cannot read the baseline: {exc}") from None
    return parse_baseline(text, Path(path).name if Path(path).name else name)
