"""The rondar MCP hub and its relay, with real processes and real sockets (no mocks).

Each test runs its own asyncio loop (`asyncio.run`); the hub lives in that loop, the relay is a
real `python3 mcp_relay.py SOCKET` subprocess, and we speak MCP to the relay's stdin/stdout by
hand, or through the official `mcp` client.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from acp_journeys.launch import RELAY_SCRIPT, relay_command
from acp_journeys.services.mcp_hub import McpCallRecord, RondarMcpHub, mcp_server_entry

PLAN_ID = re.compile(r"^PLAN-[A-Z0-9]{8}$")
IO_TIMEOUT = 5.0


@pytest.fixture(autouse=True)
def no_errors_logged(caplog):
    """A misbehaving peer is logged as a warning at most; the hub and asyncio never log errors."""
    caplog.set_level(logging.WARNING)
    yield
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [f"{r.name}: {r.getMessage()}" for r in errors]


@pytest.fixture
def socket_dir():
    # Short on purpose: a Unix socket path must stay under 100 bytes, pytest's tmp_path may not.
    path = tempfile.mkdtemp(prefix="rmcp-", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


class Relay:
    """A relay subprocess that we speak newline-delimited JSON-RPC to."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.next_id = 1

    @classmethod
    async def start(cls, socket_path: str) -> Relay:
        proc = await asyncio.create_subprocess_exec(
            *relay_command(socket_path),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        return cls(proc)

    async def send(self, message: dict | bytes) -> None:
        data = message if isinstance(message, bytes) else (json.dumps(message) + "\n").encode()
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def read(self) -> dict:
        line = await asyncio.wait_for(self.proc.stdout.readline(), IO_TIMEOUT)
        assert line, "the relay closed its stdout"
        return json.loads(line)

    async def request(self, method: str, params: dict | None = None) -> dict:
        req_id = self.next_id
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": req_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        answer = await self.read()
        assert answer.get("id") == req_id, answer
        return answer

    async def handshake(self) -> dict:
        answer = await self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test-agent", "version": "1"},
            },
        )
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer["result"]

    async def call(self, tool: str, arguments: dict) -> dict:
        answer = await self.request("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in answer, answer
        return answer["result"]

    async def end(self) -> tuple[int, float]:
        """Close the relay's stdin; return its exit code and how long it took to exit."""
        started = time.monotonic()
        self.proc.stdin.close()
        code = await asyncio.wait_for(self.proc.wait(), IO_TIMEOUT)
        return code, time.monotonic() - started

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()


def test_relay_session_calls_and_records(socket_dir):
    async def main():
        hub = RondarMcpHub(socket_dir)
        seen: list[McpCallRecord] = []
        channel = await hub.open_channel("plan-turn", seen.append)
        assert channel.socket_path == os.path.join(socket_dir, "plan-turn.sock")
        assert os.path.exists(channel.socket_path)
        relay = await Relay.start(channel.socket_path)
        try:
            init = await relay.handshake()
            assert init["protocolVersion"] == "2025-06-18"
            assert init["serverInfo"]["name"] == "rondar"
            assert "tools" in init["capabilities"]

            listed = (await relay.request("tools/list"))["result"]["tools"]
            tools = {tool["name"]: tool for tool in listed}
            assert set(tools) == {"create_plan", "get_plan"}
            assert tools["create_plan"]["description"].startswith("Save a plan")
            assert tools["create_plan"]["inputSchema"]["required"] == ["title", "description"]
            assert tools["get_plan"]["inputSchema"]["required"] == ["plan_id"]

            created = await relay.call("create_plan", {"title": "Journey 8", "description": "cat says hi"})
            assert not created["isError"]
            plan_id = created["structuredContent"]["id"]
            assert PLAN_ID.match(plan_id)
            assert plan_id in created["content"][0]["text"]  # agents that read only text get it too

            got = await relay.call("get_plan", {"plan_id": plan_id})
            assert not got["isError"]
            plan = {"id": plan_id, "title": "Journey 8", "description": "cat says hi"}
            assert got["structuredContent"] == plan
            assert json.loads(got["content"][0]["text"]) == plan

            unknown = await relay.call("get_plan", {"plan_id": "PLAN-NOTSAVED"})
            assert unknown["isError"] is True
            assert "Unknown plan id" in unknown["content"][0]["text"]
            assert "PLAN-NOTSAVED" in unknown["content"][0]["text"]

            missing = await relay.call("create_plan", {"title": "no description"})
            assert missing["isError"] is True
            assert "description" in missing["content"][0]["text"]

            bogus = await relay.call("delete_plan", {"plan_id": plan_id})
            assert bogus["isError"] is True

            code, took = await relay.end()
            assert code == 0
            # Its drain bound is 1 s; the rest is room for a loaded machine (a hang is what fails).
            assert took < 4.0, f"the relay took {took:.2f}s to exit after stdin EOF"
        finally:
            relay.kill()

        calls = channel.calls()
        assert calls == seen
        assert [c.tool for c in calls] == ["create_plan", "get_plan", "get_plan", "create_plan", "delete_plan"]
        assert [c.is_error for c in calls] == [False, False, True, True, True]
        assert {c.connection for c in calls} == {1}
        assert calls[0].arguments == {"title": "Journey 8", "description": "cat says hi"}
        assert calls[0].result == {"id": plan_id}
        assert calls[1].arguments == {"plan_id": plan_id}
        assert calls[1].result == plan
        assert calls[2].arguments == {"plan_id": "PLAN-NOTSAVED"}
        assert "Unknown plan id" in calls[2].result["error"]
        assert calls[4].tool == "delete_plan" and "error" in calls[4].result
        assert all(a.at <= b.at for a, b in zip(calls, calls[1:]))
        assert channel.plans == {plan_id: plan}
        assert channel.connections == 1

        await hub.close()
        assert not os.path.exists(channel.socket_path)

    asyncio.run(main())


def test_connections_share_plans_and_channels_do_not(socket_dir):
    async def main():
        hub = RondarMcpHub(socket_dir)
        channel_a = await hub.open_channel("a", lambda record: None)
        channel_b = await hub.open_channel("b", lambda record: None)

        first = await Relay.start(channel_a.socket_path)
        await first.handshake()
        plan_id = (await first.call("create_plan", {"title": "T", "description": "D"}))["structuredContent"]["id"]
        assert (await first.end())[0] == 0

        # The agent's restart: a second process on the same channel reads the first one's plan.
        second = await Relay.start(channel_a.socket_path)
        other = await Relay.start(channel_b.socket_path)
        try:
            await second.handshake()
            again = await second.call("get_plan", {"plan_id": plan_id})
            assert again["structuredContent"]["title"] == "T"

            await other.handshake()
            elsewhere = await other.call("get_plan", {"plan_id": plan_id})
            assert elsewhere["isError"] is True
        finally:
            for relay in (second, other):
                relay.kill()
                await relay.proc.wait()

        assert [(c.tool, c.connection, c.is_error) for c in channel_a.calls()] == [
            ("create_plan", 1, False),
            ("get_plan", 2, False),
        ]
        assert [(c.tool, c.connection, c.is_error) for c in channel_b.calls()] == [("get_plan", 1, True)]
        assert channel_a.connections == 2 and channel_b.connections == 1
        assert list(channel_a.plans) == [plan_id] and channel_b.plans == {}
        await hub.close()

    asyncio.run(main())


def test_garbage_and_abrupt_disconnects_do_not_hurt_the_hub(socket_dir):
    async def main():
        hub = RondarMcpHub(socket_dir)
        channel = await hub.open_channel("garbage", lambda record: None)
        relay = await Relay.start(channel.socket_path)
        try:
            await relay.handshake()

            await relay.send(b"this is not json\n")
            parse_error = await relay.read()
            assert parse_error["error"]["code"] == -32700 and parse_error["id"] is None
            await relay.send(b'{"id": 77, "method": 5}\n')  # JSON, but no JSON-RPC request
            invalid = await relay.read()
            assert invalid["error"]["code"] == -32600 and invalid["id"] == 77

            # Other connections misbehave at the socket level, without any relay.
            def misbehave():
                with socket.socket(socket.AF_UNIX) as raw:  # binary junk, then gone
                    raw.connect(channel.socket_path)
                    raw.sendall(b"\xff\xfe\x00garbage{{{\n\x80\x81")
                with socket.socket(socket.AF_UNIX) as raw:  # half a request, then gone
                    raw.connect(channel.socket_path)
                    raw.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "initia')
                with socket.socket(socket.AF_UNIX) as raw:  # connect and vanish
                    raw.connect(channel.socket_path)

            await asyncio.to_thread(misbehave)
            await asyncio.sleep(0.1)

            # The first session still works, and a new one can connect.
            created = await relay.call("create_plan", {"title": "still", "description": "alive"})
            assert not created["isError"]
            newcomer = await Relay.start(channel.socket_path)
            try:
                await newcomer.handshake()
                got = await newcomer.call("get_plan", {"plan_id": created["structuredContent"]["id"]})
                assert got["structuredContent"]["description"] == "alive"
                assert (await newcomer.end())[0] == 0
            finally:
                newcomer.kill()
            assert channel.connections == 5
            assert [c.connection for c in channel.calls()] == [1, 5]
            assert (await relay.end())[0] == 0
        finally:
            relay.kill()
        await hub.close()

    asyncio.run(main())


def test_requests_sent_just_before_a_half_close_are_still_answered(socket_dir):
    """An agent that writes its last calls and closes its end at once still gets every answer:
    the server's input ends only once they are answered (or DRAIN_SECONDS passed)."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        *({"jsonrpc": "2.0", "id": 3 + i, "method": "tools/call",
           "params": {"name": "create_plan", "arguments": {"title": f"t{i}", "description": "d"}}} for i in range(5)),
    ]

    def client(path: str) -> list[dict]:
        with socket.socket(socket.AF_UNIX) as raw:
            raw.connect(path)
            raw.sendall(b"".join((json.dumps(m) + "\n").encode() for m in messages))
            raw.shutdown(socket.SHUT_WR)  # all of it at once, then our end is closed
            raw.settimeout(IO_TIMEOUT)
            data = b""
            while chunk := raw.recv(65536):
                data += chunk
        return [json.loads(line) for line in data.splitlines()]

    async def main():
        hub = RondarMcpHub(socket_dir)
        calls: list[McpCallRecord] = []
        channel = await hub.open_channel("drain", calls.append)
        answers = await asyncio.to_thread(client, channel.socket_path)
        assert sorted(a["id"] for a in answers) == list(range(1, 8)), answers
        assert all("result" in a for a in answers), answers
        assert len(calls) == 5
        await hub.close()

    asyncio.run(main())


def test_relay_lifecycle(socket_dir):
    async def main():
        hub = RondarMcpHub(socket_dir)
        socket_path = os.path.join(socket_dir, "late.sock")

        # The agent may start its server before the channel listens: the relay retries briefly.
        # What the agent writes meanwhile is kept and delivered.
        early = await Relay.start(socket_path)
        handshake = asyncio.ensure_future(early.handshake())
        await asyncio.sleep(0.3)
        assert not handshake.done()
        channel = await hub.open_channel("late", lambda record: None, socket_path=socket_path)
        try:
            await asyncio.wait_for(handshake, IO_TIMEOUT)
            # A request sent right before stdin closes is still answered and recorded.
            await early.send(
                {
                    "jsonrpc": "2.0",
                    "id": 99,
                    "method": "tools/call",
                    "params": {"name": "create_plan", "arguments": {"title": "t", "description": "d"}},
                }
            )
            code, took = await early.end()
            rest = await early.proc.stdout.read()
            assert code == 0 and took < 4.0
            assert json.loads(rest)["id"] == 99
            assert [c.tool for c in channel.calls()] == ["create_plan"]
        finally:
            early.kill()

        # When the hub closes the socket, a relay whose stdin is still open exits by itself.
        waiting = await Relay.start(socket_path)
        try:
            await waiting.handshake()
            await channel.close()
            assert not os.path.exists(socket_path)
            assert await asyncio.wait_for(waiting.proc.wait(), 4.0) is not None
        finally:
            waiting.kill()

        # SIGTERM ends it at once.
        reopened = await hub.open_channel("late", lambda record: None, socket_path=socket_path)
        term = await Relay.start(reopened.socket_path)
        try:
            await term.handshake()
            term.proc.terminate()
            await asyncio.wait_for(term.proc.wait(), 4.0)  # not its drain nor its connect retries
        finally:
            term.kill()
        await hub.close()
        assert os.listdir(socket_dir) == []

    asyncio.run(main())


def test_relay_ends_with_its_stdin_even_before_it_connects(socket_dir):
    started = time.monotonic()
    ended = subprocess.run(
        [sys.executable, str(RELAY_SCRIPT), os.path.join(socket_dir, "never.sock")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=10,
    )
    assert ended.returncode == 0 and ended.stderr == b""
    assert time.monotonic() - started < 3.0  # not its 5 s of connect retries


def test_relay_errors_are_one_line():
    usage = subprocess.run([sys.executable, str(RELAY_SCRIPT)], capture_output=True, text=True, timeout=5)
    assert usage.returncode == 2
    assert usage.stderr.startswith("mcp_relay: usage") and usage.stderr.count("\n") == 1

    with tempfile.NamedTemporaryFile(dir="/tmp") as a_file:  # ENOTDIR is no reason to retry
        started = time.monotonic()
        failed = subprocess.run(
            [sys.executable, str(RELAY_SCRIPT), a_file.name + "/x.sock"], capture_output=True, text=True, timeout=10
        )
    assert failed.returncode == 1
    assert failed.stderr.startswith("mcp_relay: cannot connect to") and failed.stderr.count("\n") == 1
    assert time.monotonic() - started < 3.0  # no 5 s of retries


def test_official_mcp_client_through_the_relay(socket_dir):
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def main():
        hub = RondarMcpHub(socket_dir)
        channel = await hub.open_channel("official", lambda record: None)
        command = relay_command(channel.socket_path)
        params = StdioServerParameters(command=command[0], args=command[1:])
        async with stdio_client(params) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                init = await session.initialize()
                assert init.server_info.name == "rondar"
                names = sorted(tool.name for tool in (await session.list_tools()).tools)
                assert names == ["create_plan", "get_plan"]
                created = await session.call_tool("create_plan", {"title": "Plan", "description": "Steps"})
                assert not created.is_error
                plan_id = created.structured_content["id"]
                got = await session.call_tool("get_plan", {"plan_id": plan_id})
                assert got.structured_content == {"id": plan_id, "title": "Plan", "description": "Steps"}
                unknown = await session.call_tool("get_plan", {"plan_id": "PLAN-00000000"})
                assert unknown.is_error
                assert "Unknown plan id" in unknown.content[0].text
        assert [(c.tool, c.is_error, c.connection) for c in channel.calls()] == [
            ("create_plan", False, 1),
            ("get_plan", False, 1),
            ("get_plan", True, 1),
        ]
        await hub.close()
        assert not os.path.exists(channel.socket_path)

    asyncio.run(main())


def test_serve_stdio_with_the_official_client():
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    src = str(Path(__file__).resolve().parents[2] / "src")
    code = "import asyncio; from acp_journeys.services.mcp_hub import serve_stdio; asyncio.run(serve_stdio())"
    params = StdioServerParameters(
        command=sys.executable, args=["-c", code], env={"PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    )

    async def main():
        with tempfile.TemporaryFile("w+") as errlog:
            async with stdio_client(params, errlog=errlog) as (read_stream, write_stream):
                async with ClientSession(read_stream, write_stream) as session:
                    await session.initialize()
                    created = await session.call_tool("create_plan", {"title": "x", "description": "y"})
                    got = await session.call_tool("get_plan", {"plan_id": created.structured_content["id"]})
                    assert got.structured_content["title"] == "x"
            errlog.seek(0)
            logged = [json.loads(line) for line in errlog if line.startswith("{")]
        assert [entry["tool"] for entry in logged] == ["create_plan", "get_plan"]

    asyncio.run(main())


def test_entry_command_and_limits(socket_dir):
    command = relay_command("/tmp/x.sock")
    assert command == [sys.executable, str(RELAY_SCRIPT), "/tmp/x.sock"]
    assert os.path.isabs(command[1]) and os.path.isfile(command[1])
    assert mcp_server_entry(command) == {
        "name": "rondar",
        "command": sys.executable,
        "args": [str(RELAY_SCRIPT), "/tmp/x.sock"],
        "env": [],
    }

    async def main():
        hub = RondarMcpHub(socket_dir)
        with pytest.raises(ValueError, match="under 100"):
            await hub.open_channel("x", lambda record: None, socket_path="/tmp/" + "s" * 120 + ".sock")
        channel = await hub.open_channel("dup", lambda record: None)
        with pytest.raises(ValueError, match="already"):
            await hub.open_channel("dup", lambda record: None)
        await channel.close()
        await channel.close()  # idempotent
        await hub.close()

    asyncio.run(main())


def test_import_is_cheap():
    src = str(Path(__file__).resolve().parents[2] / "src")
    probe = "import sys, acp_journeys.services.mcp_hub; print(sorted(m for m in ('mcp', 'anyio', 'pydantic') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=10, env={**os.environ, "PYTHONPATH": src}
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
