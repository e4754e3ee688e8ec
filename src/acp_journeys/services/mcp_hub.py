"""The `rondar` MCP server that each journey gives the agent: `create_plan` and `get_plan`.

What lives here (the tools themselves are `plan_tools`; the socket's MCP streams, `mcp_streams`):
- `RondarMcpHub`: ONE MCP server (the `mcp` package's low-level `Server`) for the whole run,
  inside the runner's asyncio loop. Each journey opens a channel: a Unix socket on which every
  accepted connection is one MCP session, served by the real `mcp` server code.
- `McpChannel`: one journey's socket, its plans and its record of tool calls. Plans belong to
  the channel, so a plan that the first agent process saved is readable by the process that a
  restart starts. Connections are numbered 1, 2, ... in the order they connect.
- `mcp_server_entry`: the stdio server entry that the runner puts in ACP `session/new`, around
  the sandbox's relay command (locally `launch/agent_side/mcp_relay.py`, a tiny standard-library
  script that pipes its stdin and stdout to the channel's socket). Importing `mcp` costs 0.4-1 s of CPU and
  40-64 MiB, so no agent session ever starts a Python MCP server of its own.
- `serve_stdio`: the same tools over plain stdio, for `acp-journeys mcp-server`, so an agent
  author can poke at the server by hand.

Rules:
- This module records and never judges. Every `tools/call` that reaches the server, also for an
  unknown tool or with wrong arguments, becomes one `McpCallRecord` with what the agent sent and
  what we answered; what a record means for a journey is decided elsewhere.
- Importing this module stays cheap: `mcp` and `anyio` load only inside the hub's methods.
- A connection that sends garbage or goes away abruptly never crashes the hub or another
  connection; such trouble goes to the logger `acp_journeys.mcp`.
- Tool errors (an unknown plan id, a missing argument, an unknown tool) are MCP tool results with
  `isError` true and a text that says what is wrong, so the agent's model can correct itself.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import re
import stat
import sys
import time
from collections.abc import Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any

from acp_journeys.services import plan_tools
from acp_journeys.services.mcp_streams import SocketSession

logger = logging.getLogger("acp_journeys.mcp")

SERVER_NAME = "rondar"
MAX_SOCKET_PATH_BYTES = 100  # sun_path is 108 bytes on Linux, 104 on macOS
CALLS_KEPT = 64  # per channel, for `calls()`: each is handed to on_call, which keeps what it needs
MAX_OPEN_CONNECTIONS = 32
"""Per channel, at once: an agent opens one a session (the relay's), a journey a few sessions; a
connection past this is closed at once, so that an agent cannot make the hub hold a task and an
MCP session for each of thousands of sockets it leaves open."""


@dataclass(frozen=True)
class McpCallRecord:
    """One `tools/call` as it reached the server, and what we answered."""

    at: float  # time.monotonic() when the call arrived
    tool: str  # "create_plan" | "get_plan" | an unknown name
    arguments: dict[str, Any]
    result: dict[str, Any]  # what we answered: {"id": ...} / the plan / {"error": "..."}
    is_error: bool
    connection: int  # 1, 2, ... per channel, in order of connect (so a restart's second server is visible)


def mcp_server_entry(command: list[str], name: str = SERVER_NAME) -> dict:
    """An ACP `McpServerStdio` for `session/new` / `session/load`."""
    if not command:
        raise ValueError("an MCP server command needs at least the executable")
    return {"name": name, "command": command[0], "args": list(command[1:]), "env": []}


# --- channels -----------------------------------------------------------------------------------


@dataclass
class _Connection:
    """What a tool handler knows about the MCP session it serves (the server's lifespan state)."""

    channel: McpChannel
    number: int


# Set in each connection's task before `Server.run`; the server's lifespan hands it to handlers.
_CURRENT_CONNECTION: contextvars.ContextVar[_Connection] = contextvars.ContextVar("rondar_mcp_connection")


class McpChannel:
    """One journey's socket: its plans, its connections and its record of tool calls."""

    socket_path: str
    plans: dict[str, dict]
    connections: int

    def __init__(self, hub: RondarMcpHub, name: str, on_call: Callable[[McpCallRecord], None], socket_path: str):
        self.name = name
        self.socket_path = socket_path
        self.plans = {}
        self.connections = 0
        self._hub = hub
        self._on_call = on_call
        self._calls: list[McpCallRecord] = []
        self.calls_not_kept = 0
        self.connections_refused = 0
        self._listener: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[Any]] = set()  # one per open connection
        self._closed = False

    def calls(self) -> list[McpCallRecord]:
        """The first CALLS_KEPT tool calls on this channel, in order of arrival (an agent decides
        how many it makes, each up to mcp_streams.MAX_LINE_BYTES; `calls_not_kept` counts the rest)."""
        return list(self._calls)

    def _next_connection(self) -> int:
        self.connections += 1
        return self.connections

    def _record(self, record: McpCallRecord) -> None:
        if len(self._calls) < CALLS_KEPT:
            self._calls.append(record)
        else:
            self.calls_not_kept += 1
        try:
            self._on_call(record)
        except Exception:
            logger.exception("channel %s: the on_call callback raised", self.name)

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """asyncio's callback for each accepted connection.

        The session runs in an inner task, which `close` cancels. This callback's own task must
        never end cancelled: Python 3.11's asyncio then logs a spurious "Exception in callback".
        """
        if self._closed or len(self._tasks) >= MAX_OPEN_CONNECTIONS:
            if not self._closed:
                self.connections_refused += 1
                if self.connections_refused == 1:
                    logger.warning("channel %s: more than %d connections at once; closing the ones past it",
                                   self.name, MAX_OPEN_CONNECTIONS)
            writer.close()
            return
        inner = asyncio.get_running_loop().create_task(self._hub._serve_connection(self, reader, writer))
        self._tasks.add(inner)
        try:
            await asyncio.wait([inner])
        except asyncio.CancelledError:  # the loop is going down: end the session, quietly
            inner.cancel()
            with suppress(BaseException):
                await asyncio.wait([inner], timeout=1)
        finally:
            self._tasks.discard(inner)

    async def close(self) -> None:
        """Stop listening, end every connection of this channel and remove its socket."""
        if self._closed:
            return
        self._closed = True
        if self._listener is not None:
            self._listener.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        _remove_socket(self.socket_path)
        self._hub._forget(self)


def _remove_socket(path: str) -> None:
    with suppress(FileNotFoundError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)


_CHANNEL_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class RondarMcpHub:
    """One MCP server for the whole run; one channel (Unix socket) per journey."""

    def __init__(self, socket_dir: str):
        self.socket_dir = socket_dir
        self._server: Any = None  # mcp.server.lowlevel.Server, built on first use
        self._building: asyncio.Future[Any] | None = None
        self._channels: dict[str, McpChannel] = {}

    async def open_channel(
        self, name: str, on_call: Callable[[McpCallRecord], None], socket_path: str | None = None
    ) -> McpChannel:
        """Listen on a new socket now (default `socket_dir/NAME.sock`) and return its channel."""
        safe = _CHANNEL_NAME.sub("-", name).strip("-.") or "channel"
        if socket_path is None:
            socket_path = os.path.join(self.socket_dir, safe + ".sock")
        socket_path = os.path.abspath(socket_path)
        if len(os.fsencode(socket_path)) >= MAX_SOCKET_PATH_BYTES:
            raise ValueError(
                f"the MCP socket path is {len(os.fsencode(socket_path))} bytes, it must be under "
                f"{MAX_SOCKET_PATH_BYTES}: {socket_path}"
            )
        if socket_path in self._channels:
            raise ValueError(f"a channel already listens on {socket_path}")
        await self._start()
        os.makedirs(os.path.dirname(socket_path), exist_ok=True)
        _remove_socket(socket_path)  # a stale socket of an earlier run; never a regular file
        channel = McpChannel(self, name, on_call, socket_path)
        channel._listener = await asyncio.start_unix_server(channel._on_connect, path=socket_path)
        # An agent image may run as another user than the runner: the socket must let it connect.
        os.chmod(socket_path, 0o666)
        self._channels[socket_path] = channel
        logger.debug("channel %s listens on %s", name, socket_path)
        return channel

    async def close(self) -> None:
        """Close every channel and connection, and remove the sockets."""
        for channel in list(self._channels.values()):
            await channel.close()

    def _forget(self, channel: McpChannel) -> None:
        self._channels.pop(channel.socket_path, None)

    # --- the one MCP server ---

    async def _start(self) -> None:
        """Build the server once; importing `mcp` (~0.4 s CPU) runs in a thread, off the loop."""
        if self._server is None:
            if self._building is None:
                self._building = asyncio.ensure_future(asyncio.to_thread(_build_server))
            server = await asyncio.shield(self._building)
            self._server = self._server or server

    def _ensure_server(self) -> Any:
        if self._server is None:
            self._server = _build_server()
        return self._server

    async def _serve_connection(
        self, channel: McpChannel, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Serve one accepted socket as one MCP session; never raises (except cancellation)."""
        number = channel._next_connection()
        logger.debug("channel %s: connection %d opened", channel.name, number)
        try:
            token = _CURRENT_CONNECTION.set(_Connection(channel, number))
            try:
                label = f"channel {channel.name}: connection {number}"
                await SocketSession(self._ensure_server(), label, reader, writer).run()
            finally:
                _CURRENT_CONNECTION.reset(token)
        except Exception:
            logger.exception("channel %s: connection %d failed", channel.name, number)
        finally:
            writer.close()
            logger.debug("channel %s: connection %d closed", channel.name, number)


def _build_server() -> Any:
    """The low-level `mcp` Server with our two tools (MCPServer would configure root logging)."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    @asynccontextmanager
    async def lifespan(_server: Any):
        # Server.run enters this once per connection, in the connection's task.
        yield _CURRENT_CONNECTION.get()

    tools = [types.Tool(**spec) for spec in plan_tools.TOOL_SPECS]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        at = time.monotonic()
        conn: _Connection = ctx.lifespan_context
        arguments = dict(params.arguments or {})
        try:
            result = plan_tools.call_tool(conn.channel.plans, params.name, arguments)
            is_error = False
            answer = types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
                structured_content=result,
            )
        except plan_tools.ToolFailure as failure:
            result, is_error = {"error": str(failure)}, True
            answer = types.CallToolResult(content=[types.TextContent(type="text", text=str(failure))], is_error=True)
        conn.channel._record(
            McpCallRecord(
                at=at,
                tool=params.name,
                arguments=arguments,
                result=result,
                is_error=is_error,
                connection=conn.number,
            )
        )
        return answer

    server = Server(
        SERVER_NAME,
        version=_package_version(),
        title="Rondar plans",
        instructions="Save a plan with create_plan and read it back with get_plan.",
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    # The package wraps each request in an OpenTelemetry span, a no-op with no exporter, which
    # the runner never installs; its own way out is to drop the middleware (a sixth of a session's CPU).
    server.middleware = [m for m in getattr(server, "middleware", []) if type(m).__name__ != "OpenTelemetryMiddleware"]
    return server


def _package_version() -> str:
    try:
        from acp_journeys import __version__

        return __version__
    except Exception:
        return "0"



# --- plain stdio --------------------------------------------------------------------------------


async def serve_stdio() -> None:
    """Serve the same tools over this process's stdin/stdout (`acp-journeys mcp-server`).

    One session, one in-memory plan store; each tool call is logged to stderr as a JSON line.
    """
    from mcp.server.stdio import stdio_server

    def log_call(record: McpCallRecord) -> None:
        line = {
            "tool": record.tool,
            "arguments": record.arguments,
            "result": record.result,
            "is_error": record.is_error,
        }
        print(json.dumps(line, ensure_ascii=False), file=sys.stderr, flush=True)

    hub = RondarMcpHub(socket_dir="")
    server = hub._ensure_server()
    channel = McpChannel(hub, "stdio", log_call, socket_path="")
    token = _CURRENT_CONNECTION.set(_Connection(channel, channel._next_connection()))
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        _CURRENT_CONNECTION.reset(token)

