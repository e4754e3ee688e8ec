"""The model stub holds no more than its bound of what an agent sends, whatever sizes it declares."""

from __future__ import annotations

import json
import socket
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
