"""Newline-delimited framing with a size bound (protocol/framing.py): bytes in, lines out."""

from __future__ import annotations

import pytest

from acp_journeys.protocol.framing import DEFAULT_MAX_LINE, Line, LineBuffer, Overlong


def frame(*feeds: bytes, max_line: int = DEFAULT_MAX_LINE) -> list[Line | Overlong]:
    """Everything a buffer gives for these feeds, then the end of the stream."""
    buffer = LineBuffer(max_line)
    out: list[Line | Overlong] = []
    for data in feeds:
        out += buffer.feed(data)
    return out + buffer.finish()


def test_one_line_in_one_feed() -> None:
    buffer = LineBuffer()
    assert buffer.feed(b'{"a":1}\n') == [Line(b'{"a":1}')]
    assert buffer.finish() == []


def test_a_line_split_across_feeds_comes_out_once_whole() -> None:
    buffer = LineBuffer()
    assert buffer.feed(b'{"jsonrpc":') == []
    assert buffer.feed(b'"2.0","id"') == []
    assert buffer.feed(b':1}\n') == [Line(b'{"jsonrpc":"2.0","id":1}')]


def test_a_line_fed_one_byte_at_a_time() -> None:
    data = b'{"k":"v"}\n{"k":"w"}\n'
    assert frame(*(data[i:i + 1] for i in range(len(data)))) == [Line(b'{"k":"v"}'), Line(b'{"k":"w"}')]


def test_many_lines_in_one_feed_keep_their_order() -> None:
    lines = [f'{{"n":{n}}}'.encode() for n in range(100)]
    assert LineBuffer().feed(b"\n".join(lines) + b"\n") == [Line(raw) for raw in lines]


def test_crlf_line_ends_lose_the_carriage_return() -> None:
    assert frame(b"first\r\nsecond\r\n") == [Line(b"first"), Line(b"second")]


def test_crlf_split_between_the_cr_and_the_lf() -> None:
    assert frame(b"first\r", b"\nsecond\n") == [Line(b"first"), Line(b"second")]


def test_a_carriage_return_inside_a_line_is_kept() -> None:
    assert frame(b"a\rb\n") == [Line(b"a\rb")]


@pytest.mark.parametrize("blank", [b"\n", b"\r\n", b"   \n", b"\t \r\n"], ids=["lf", "crlf", "spaces", "tab-crlf"])
def test_blank_lines_are_skipped(blank: bytes) -> None:
    assert frame(b"one\n" + blank + blank + b"two\n") == [Line(b"one"), Line(b"two")]


def test_a_last_line_with_no_newline_counts_at_finish() -> None:
    buffer = LineBuffer()
    assert buffer.feed(b'{"a":1}\n{"b":') == [Line(b'{"a":1}')]
    assert buffer.finish() == [Line(b'{"b":')]


def test_a_last_line_split_across_feeds_with_no_newline_counts_at_finish() -> None:
    assert frame(b"par", b"tial") == [Line(b"partial")]


def test_finish_with_only_whitespace_left_gives_nothing() -> None:
    assert frame(b"one\n  ") == [Line(b"one")]


def test_finish_resets_the_buffer() -> None:
    buffer = LineBuffer()
    buffer.feed(b"tail")
    assert buffer.finish() == [Line(b"tail")]
    assert buffer.finish() == []


def test_a_line_exactly_at_the_bound_is_kept() -> None:
    line = b"x" * 64
    assert frame(line + b"\n", max_line=64) == [Line(line)]


def test_a_line_exactly_at_the_bound_split_across_feeds_is_kept() -> None:
    assert frame(b"x" * 40, b"x" * 24 + b"\n", max_line=64) == [Line(b"x" * 64)]


def test_a_line_one_byte_over_the_bound_is_dropped_and_reported_with_its_size() -> None:
    assert frame(b"x" * 65 + b"\n", max_line=64) == [Overlong(65)]


def test_after_an_overlong_line_the_next_lines_still_frame() -> None:
    out = frame(b"short\n" + b"y" * 100 + b"\nnext\nlast\n", max_line=10)
    assert out == [Line(b"short"), Overlong(100), Line(b"next"), Line(b"last")]


def test_an_overlong_line_across_many_feeds_is_reported_once_with_its_whole_size() -> None:
    buffer = LineBuffer(max_line=10)
    out: list[Line | Overlong] = []
    for _ in range(50):
        out += buffer.feed(b"z" * 7)
    out += buffer.feed(b"zzz\nafter\n")
    assert out == [Overlong(50 * 7 + 3), Line(b"after")]


def test_an_overlong_line_keeps_no_bytes_in_memory() -> None:
    buffer = LineBuffer(max_line=10)
    for _ in range(1000):
        buffer.feed(b"z" * 100)
    assert buffer._parts == []  # the whole point of the bound: memory does not grow


def test_an_overlong_last_line_at_finish_reports_what_was_seen() -> None:
    assert frame(b"ok\n", b"w" * 30, b"w" * 5, max_line=10) == [Line(b"ok"), Overlong(35)]


def test_a_line_exactly_at_the_bound_ending_in_crlf_is_kept() -> None:
    line = b"x" * 64
    assert frame(line + b"\r\n", max_line=64) == [Line(line)]
