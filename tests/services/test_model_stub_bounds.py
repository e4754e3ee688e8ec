"""The model stub holds no more than its bound of what an agent sends, whatever sizes it declares."""

from __future__ import annotations

import json
import socket
import time
import zlib

import pytest

from acp_journeys.services.model_stub import ModelStub
from acp_journeys.services.model_stub.server import MAX_BODY_BYTES

HEAD = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


@pytest.fixture
def stub():
    with ModelStub() as server:
        yield server


def answer(stub: ModelStub, request: bytes) -> tuple[int, bytes]:
    """Send `request` and keep the connection open: the answer must come without our EOF."""
    with socket.create_connection(stub.address, timeout=5) as conn:
        conn.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)  # a timeout here: the stub waits for more than we declared
            assert chunk, data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = int(next(l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")))
        while len(body) < length:
            body += conn.recv(65536)
    return int(head.split()[1]), body


@pytest.mark.parametrize("size", ["-1", "-10", "FFFFFFFFFFFF", f"{MAX_BODY_BYTES + 1:X}", "zz"])
def test_a_chunk_size_is_checked_before_anything_is_read(stub: ModelStub, size: str) -> None:
    request = (HEAD + "Transfer-Encoding: chunked\r\n\r\n" + size + "\r\n{\"model\": ").encode()
    status, body = answer(stub, request)
    assert status == 400, body
    assert stub.records.as_dicts()[-1]["status"] == 400


@pytest.mark.parametrize("length", ["-1", str(MAX_BODY_BYTES + 1), "x"])
def test_a_content_length_is_checked_before_anything_is_read(stub: ModelStub, length: str) -> None:
    status, body = answer(stub, (HEAD + f"Content-Length: {length}\r\n\r\n{{").encode())
    assert status == 400, body


def _bomb(encoding: str, size: int) -> bytes:
    """`size` zero bytes compressed (a few hundred kB), made a megabyte at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
    block = b"0" * (1 << 20)
    out = [packer.compress(block) for _ in range(size >> 20)]
    return b"".join(out) + packer.flush()


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compressed_body_is_inflated_only_up_to_the_bound(stub: ModelStub, encoding: str) -> None:
    bomb = _bomb(encoding, MAX_BODY_BYTES + (1 << 20))
    assert len(bomb) < MAX_BODY_BYTES // 100
    request = (HEAD + f"Content-Encoding: {encoding}\r\nContent-Length: {len(bomb)}\r\n\r\n").encode() + bomb
    status, body = answer(stub, request)
    assert status == 400 and b"too large once decompressed" in body, body


def test_a_small_compressed_body_still_works(stub: ModelStub) -> None:
    payload = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    for encoding, wbits in (("gzip", 16 + zlib.MAX_WBITS), ("deflate", zlib.MAX_WBITS)):
        packer = zlib.compressobj(6, zlib.DEFLATED, wbits)
        data = packer.compress(payload) + packer.flush()
        request = (HEAD + f"Content-Encoding: {encoding}\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data
        status, body = answer(stub, request)
        assert status == 200, body


def _post_reply(stub: ModelStub, tag: str, conn: socket.socket | None = None) -> int:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Reply with exactly REPLY-ABCD1234 "
                                                                               "and nothing else."}]}).encode()
    request = (f"POST /t/{tag}/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    return answer(stub, request)[0]


def test_records_of_a_tag_are_bounded_and_the_rest_counted() -> None:
    """An agent that sends many requests: the first ones of its journey are kept, then only one
    that shows something new (here a 404: a failure of a route), and the rest are counted."""
    from acp_journeys.services.model_stub.records import RecordLog

    with ModelStub() as stub:
        stub.records = RecordLog(kept=5)
        for _ in range(30):
            assert _post_reply(stub, "j1") == 200
        status, _ = answer(stub, b"GET /t/j1/nowhere HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status == 404
        assert _post_reply(stub, "j2") == 200
        kept = stub.records.snapshot(tag="j1")
        assert [r.status for r in kept] == [200] * 5 + [404]
        assert stub.records.dropped("j1") == 25 and stub.records.dropped("j2") == 0
        assert stub.records.received == 32 and len(stub.records.snapshot(tag="j2")) == 1


def test_connections_at_once_are_bounded_and_the_refused_counted() -> None:
    """A flood of connections costs a close each, never a thread each; the stub still answers
    once they are closed."""
    from acp_journeys.services.model_stub import server

    with ModelStub() as stub:
        held = [socket.create_connection(stub.address, timeout=5) for _ in range(server.MAX_CONNECTIONS + 20)]
        try:
            refused = 0
            for conn in held[server.MAX_CONNECTIONS:]:
                conn.settimeout(5)
                try:
                    refused += conn.recv(1) == b""  # closed at once, nothing read
                except ConnectionResetError:
                    refused += 1
            assert refused == 20
            assert stub.refused_connections == 20
        finally:
            for conn in held:
                conn.close()
        deadline = time.monotonic() + 5
        while stub._admitted and time.monotonic() < deadline:  # the handlers see the ends
            time.sleep(0.05)
        assert _post_reply(stub, "after") == 200


def test_a_long_conversation_keeps_its_first_and_last_messages_in_the_record(stub: ModelStub) -> None:
    from acp_journeys.services.model_stub import server

    messages = [{"role": "user" if n % 2 == 0 else "assistant", "content": f"message {n}"} for n in range(500)]
    messages.append({"role": "user", "content": "Reply with exactly REPLY-ABCD1234 and nothing else."})
    body = json.dumps({"model": "m" * 5000, "messages": messages,
                       "tools": [{"type": "function", "function": {"name": f"tool{n}", "parameters": {}}}
                                 for n in range(1000)]}).encode()
    request = (f"{HEAD}Content-Length: {len(body)}\r\n\r\n").encode() + body
    assert answer(stub, request)[0] == 200
    [record] = stub.records.as_dicts()
    assert len(record["sent"]) == server.SENT_HEAD + server.SENT_TAIL + 1
    assert record["sent"][server.SENT_HEAD] == {"role": "…", "text": "[461 messages not kept]"}
    assert record["sent"][-1]["text"].startswith("Reply with exactly") and record["messages"] == 501
    assert len(record["tools_offered"]) == server.TOOLS_KEPT and len(record["model"]) < 200
    assert record["decision"] == {"text": "REPLY-ABCD1234"}
