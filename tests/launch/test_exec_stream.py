"""The holder's pid line taken off the front of an agent's stderr (exec_stream.PidLine), without
any engine: the agent's stderr must come out exactly as the agent wrote it, however it is cut."""

from __future__ import annotations

import pytest

from acp_journeys.launch.agent_side import PID_LINE_PREFIX
from acp_journeys.launch.docker.exec_stream import PID_LINE_MAX, PidLine


def feed_all(chunks: list[bytes]) -> tuple[int | None, bytes]:
    line = PidLine()
    out = b"".join(line.feed(c) for c in chunks)
    if not line.settled:
        out += line.end()  # the stream ended first
    return line.pid, out


STDERR = PID_LINE_PREFIX + b"42\nthe agent's own\n"


@pytest.mark.parametrize("cut", range(1, len(STDERR)))
def test_the_pid_line_is_taken_off_wherever_the_frames_cut_it(cut: int) -> None:
    assert feed_all([STDERR[:cut], STDERR[cut:]]) == (42, b"the agent's own\n")


def test_byte_by_byte_too() -> None:
    assert feed_all([bytes([b]) for b in STDERR]) == (42, b"the agent's own\n")


@pytest.mark.parametrize("stderr", [
    b"a plain agent line\n",  # no pid line at all (a holder that could not write it)
    b"\0acp-journeys-pi",  # a cut prefix, then the end of the stream
    PID_LINE_PREFIX + b"4x2\nrest",  # not a number
    PID_LINE_PREFIX + b"\n",  # no number
    b"\0other\n",
])
def test_stderr_without_a_whole_pid_line_is_left_as_it_is(stderr: bytes) -> None:
    assert feed_all([stderr]) == (None, stderr)


def test_a_line_that_never_ends_is_given_back_once_past_its_bound() -> None:
    line = PidLine()
    long = PID_LINE_PREFIX + b"1" * (PID_LINE_MAX + 1)
    assert line.feed(long) == long and line.settled and line.pid is None
    assert line.feed(b"more") == b"more"


def test_only_the_first_line_is_ever_taken() -> None:
    second = PID_LINE_PREFIX + b"7\n"
    assert feed_all([PID_LINE_PREFIX + b"5\n", second]) == (5, second)
