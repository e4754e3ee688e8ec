"""What an agent can make the rondar MCP hub hold: plans and the bytes of a line, each bounded.

Real hub, real Unix sockets (and the real relay for the plans), as in test_mcp_server.py.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time

import pytest

from acp_journeys.services import mcp_hub, mcp_streams, plan_tools
from acp_journeys.services.mcp_hub import RondarMcpHub


@pytest.fixture
def socket_dir():
    path = tempfile.mkdtemp(prefix="rmcp-", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


class Session:
    """An MCP session spoken by hand on the channel's socket (what the relay would pipe)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.next_id = 1

    @classmethod
    async def open(cls, path: str) -> "Session":
        reader, writer = await asyncio.open_unix_connection(path, limit=1 << 26)
        session = cls(reader, writer)
        await session.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "t", "version": "1"}})
        await session.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode() + b"\n")
        return session

    async def send(self, data: bytes, piece: int = 65536) -> None:
        for i in range(0, len(data), piece):
            self.writer.write(data[i:i + piece])
            await self.writer.drain()

    async def request(self, method: str, params: dict, pad: str = "") -> dict:
        req_id, self.next_id = self.next_id, self.next_id + 1
        message = {"jsonrpc": "2.0", "id": req_id, "method": method, "params": params}
        if pad:
            message["params"] = {**params, "_meta": {"pad": pad}}
        await self.send(json.dumps(message).encode() + b"\n")
        answer = json.loads(await asyncio.wait_for(self.reader.readline(), 60))
        assert answer["id"] == req_id, answer
        return answer

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


def test_a_channel_keeps_a_bounded_number_and_size_of_plans(socket_dir, monkeypatch) -> None:
    monkeypatch.setattr(plan_tools, "MAX_PLANS", 3)
    monkeypatch.setattr(plan_tools, "MAX_PLAN_CHARS", 1000)

    async def main() -> None:
        hub = RondarMcpHub(socket_dir)
        channel = await hub.open_channel("bounds", lambda record: None)
        session = await Session.open(channel.socket_path)
        try:
            async def create(description: str) -> dict:
                answer = await session.request("tools/call", {"name": "create_plan",
                                                              "arguments": {"title": "T", "description": description}})
                return answer["result"]

            assert (await create("x" * 990)).get("isError") is not True
            refused = await create("y" * 20)  # 1012 characters in all
            assert refused["isError"] is True and "at most" in refused["content"][0]["text"]
            assert not (await create("a")).get("isError") and not (await create("b")).get("isError")
            assert (await create("c"))["isError"] is True  # a fourth plan
            assert len(channel.plans) == 3
        finally:
            await session.close()
            await hub.close()

    asyncio.run(main())


def test_a_long_line_costs_time_in_proportion_to_its_length(socket_dir) -> None:
    """A 30 MB request line sent in 64 kB pieces: reading it must not re-scan what came before
    (that took seconds of CPU, growing with the square of the length)."""

    async def main() -> float:
        hub = RondarMcpHub(socket_dir)
        channel = await hub.open_channel("long", lambda record: None)
        session = await Session.open(channel.socket_path)
        try:
            began = time.process_time()
            answer = await session.request("tools/call", {"name": "get_plan", "arguments": {"plan_id": "PLAN-X"}},
                                           pad="p" * (30 * 1024 * 1024))
            spent = time.process_time() - began
            assert answer["result"]["isError"] is True  # read whole, and answered
            return spent
        finally:
            await session.close()
            await hub.close()

    spent = asyncio.run(main())
    assert spent < 2.5, f"{spent:.1f} s of CPU for one 30 MB line"


def test_a_line_over_the_bound_drops_only_its_connection(socket_dir, monkeypatch) -> None:
    """The lines come from protocol.framing with the hub's bound: a longer one ends that
    connection (without holding its bytes), and the next connection is served as before."""
    monkeypatch.setattr(mcp_streams, "MAX_LINE_BYTES", 4096)

    async def main() -> None:
        hub = RondarMcpHub(socket_dir)
        channel = await hub.open_channel("overlong", lambda record: None)
        greedy = await Session.open(channel.socket_path)
        try:
            within = await greedy.request("tools/call", {"name": "get_plan", "arguments": {"plan_id": "P"}},
                                          pad="p" * 3000)
            assert within["result"]["isError"] is True  # under the bound: read whole and answered
            await greedy.send(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/list",
                                          "params": {"_meta": {"pad": "p" * 10_000}}}).encode() + b"\n")
            assert await asyncio.wait_for(greedy.reader.read(), 10) == b""  # closed, no answer
            polite = await Session.open(channel.socket_path)
            try:
                listed = await polite.request("tools/list", {})
                assert [t["name"] for t in listed["result"]["tools"]] == ["create_plan", "get_plan"]
            finally:
                await polite.close()
        finally:
            await greedy.close()
            await hub.close()

    asyncio.run(main())


def test_a_channel_keeps_a_bounded_number_of_calls_and_hands_each_to_its_callback(socket_dir) -> None:
    async def main() -> None:
        hub = RondarMcpHub(socket_dir)
        seen: list[str] = []
        channel = await hub.open_channel("calls", lambda record: seen.append(record.tool))
        session = await Session.open(channel.socket_path)
        try:
            for _ in range(mcp_hub.CALLS_KEPT + 10):
                await session.request("tools/call", {"name": "get_plan", "arguments": {"plan_id": "PLAN-NOPE0000"}})
            assert len(seen) == mcp_hub.CALLS_KEPT + 10
            assert len(channel.calls()) == mcp_hub.CALLS_KEPT and channel.calls_not_kept == 10
        finally:
            await session.close()
            await hub.close()

    asyncio.run(main())


def test_a_channel_serves_a_bounded_number_of_connections_at_once(socket_dir, monkeypatch) -> None:
    """An agent that opens socket after socket and leaves them open: past the bound each new one
    is closed at once; the ones open still work, and a new one is served once one has closed."""
    monkeypatch.setattr(mcp_hub, "MAX_OPEN_CONNECTIONS", 4)

    async def main() -> None:
        hub = RondarMcpHub(socket_dir)
        channel = await hub.open_channel("many", lambda record: None)
        sessions = [await Session.open(channel.socket_path) for _ in range(4)]
        extra = []
        try:
            for _ in range(20):
                reader, writer = await asyncio.open_unix_connection(channel.socket_path)
                extra.append(writer)
                assert await asyncio.wait_for(reader.read(), 30) == b""  # closed by the hub, unread
            assert channel.connections_refused == 20
            for session in sessions:
                listed = await session.request("tools/list", {})
                assert {t["name"] for t in listed["result"]["tools"]} >= {"create_plan"}
            await sessions.pop().close()
            deadline = time.monotonic() + 30
            while len(channel._tasks) >= 4 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)  # the hub sees the end of the closed session
            sessions.append(await Session.open(channel.socket_path))
            assert channel.connections_refused == 20
        finally:
            for writer in extra:
                writer.close()
            for session in sessions:
                await session.close()
            await hub.close()

    asyncio.run(asyncio.wait_for(main(), 120))
