"""The `rondar` MCP server that each journey gives the agent: `create_plan` and `get_plan`.

What lives here:
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
import secrets
import stat
import sys
import time
from collections.abc import Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any

from acp_journeys.protocol import framing

logger = logging.getLogger("acp_journeys.mcp")

SERVER_NAME = "rondar"
MAX_SOCKET_PATH_BYTES = 100  # sun_path is 108 bytes on Linux, 104 on macOS
MAX_LINE_BYTES = 32 * 1024 * 1024  # one JSON-RPC message (framing's bound); beyond this the connection is dropped
MAX_PLANS = 256  # per channel: a journey saves one or two; beyond this create_plan answers an error
MAX_PLAN_CHARS = 8 * 1024 * 1024  # titles and descriptions of a channel's plans, together
CALLS_KEPT = 64  # per channel, for `calls()`: each is handed to on_call, which keeps what it needs
DRAIN_SECONDS = 1.0  # after a client half-closes, in-flight requests get this long to answer

_PLAN_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

CREATE_PLAN_DESCRIPTION = (
    "Save a plan. Give it a short title and a description that holds the whole plan. "
    "Returns the id of the saved plan (PLAN-XXXXXXXX); get_plan reads it back."
)
GET_PLAN_DESCRIPTION = (
    "Read a saved plan by its id, as create_plan returned it. "
    "Returns the plan's id, title and description; an unknown id is an error."
)

TOOL_SPECS: list[dict[str, Any]] = [
    {
        "name": "create_plan",
        "title": "Save a plan",
        "description": CREATE_PLAN_DESCRIPTION,
        "input_schema": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "The title of the plan."},
                "description": {"type": "string", "description": "The plan itself, in full."},
            },
            "required": ["title", "description"],
        },
        "output_schema": {
            "type": "object",
            "properties": {"id": {"type": "string", "description": "The id of the saved plan."}},
            "required": ["id"],
        },
    },
    {
        "name": "get_plan",
        "title": "Read a saved plan",
        "description": GET_PLAN_DESCRIPTION,
        "input_schema": {
            "type": "object",
            "properties": {
                "plan_id": {"type": "string", "description": "The id that create_plan returned."},
            },
            "required": ["plan_id"],
        },
        "output_schema": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "title": {"type": "string"},
                "description": {"type": "string"},
            },
            "required": ["id", "title", "description"],
        },
    },
]


@dataclass(frozen=True)
class McpCallRecord:
    """One `tools/call` as it reached the server, and what we answered."""

    at: float  # time.monotonic() when the call arrived
    tool: str  # "create_plan" | "get_plan" | an unknown name
    arguments: dict[str, Any]
    result: dict[str, Any]  # what we answered: {"id": ...} / the plan / {"error": "..."}
    is_error: bool
    connection: int  # 1, 2, ... per channel, in order of connect (so a restart's second server is visible)


def new_plan_id() -> str:
    return "PLAN-" + "".join(secrets.choice(_PLAN_ID_ALPHABET) for _ in range(8))


def mcp_server_entry(command: list[str], name: str = SERVER_NAME) -> dict:
    """An ACP `McpServerStdio` for `session/new` / `session/load`."""
    if not command:
        raise ValueError("an MCP server command needs at least the executable")
    return {"name": name, "command": command[0], "args": list(command[1:]), "env": []}


# --- the tools: pure functions over a channel's plans -------------------------------------------


class _ToolFailure(Exception):
    """A tool error to answer with isError true; the message is what the agent reads."""


def _string_argument(tool: str, arguments: dict[str, Any], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str):
        given = ", ".join(sorted(arguments)) or "none"
        what = "is missing" if value is None else f"must be a string, not {type(value).__name__}"
        raise _ToolFailure(f"{tool}: the argument {name!r} {what} (arguments given: {given}).")
    return value


def _call_tool(plans: dict[str, dict], tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run one tool; returns its structured result or raises `_ToolFailure`."""
    if tool == "create_plan":
        title = _string_argument(tool, arguments, "title")
        description = _string_argument(tool, arguments, "description")
        held = sum(len(p["title"]) + len(p["description"]) for p in plans.values())
        if len(plans) >= MAX_PLANS or held + len(title) + len(description) > MAX_PLAN_CHARS:
            raise _ToolFailure(f"create_plan: this server keeps at most {MAX_PLANS} plans and "
                               f"{MAX_PLAN_CHARS} characters of them; the plan was not saved.")
        plan_id = new_plan_id()
        while plan_id in plans:
            plan_id = new_plan_id()
        plans[plan_id] = {"id": plan_id, "title": title, "description": description}
        return {"id": plan_id}
    if tool == "get_plan":
        plan_id = _string_argument(tool, arguments, "plan_id")
        plan = plans.get(plan_id)
        if plan is None:
            raise _ToolFailure(f"Unknown plan id {plan_id!r}: no plan with this id was saved.")
        return dict(plan)
    known = ", ".join(spec["name"] for spec in TOOL_SPECS)
    raise _ToolFailure(f"Unknown tool {tool!r}. This server has the tools: {known}.")


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
        self._listener: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[Any]] = set()  # one per open connection
        self._closed = False

    def calls(self) -> list[McpCallRecord]:
        """The first CALLS_KEPT tool calls on this channel, in order of arrival (an agent decides
        how many it makes, each up to MAX_LINE_BYTES; `calls_not_kept` counts the rest)."""
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
        if self._closed:
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
            await _SocketSession(self._ensure_server(), _Connection(channel, number), reader, writer).run()
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

    tools = [types.Tool(**spec) for spec in TOOL_SPECS]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        at = time.monotonic()
        conn: _Connection = ctx.lifespan_context
        arguments = dict(params.arguments or {})
        try:
            result = _call_tool(conn.channel.plans, params.name, arguments)
            is_error = False
            answer = types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
                structured_content=result,
            )
        except _ToolFailure as failure:
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

    return Server(
        SERVER_NAME,
        version=_package_version(),
        title="Rondar plans",
        instructions="Save a plan with create_plan and read it back with get_plan.",
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _package_version() -> str:
    try:
        from acp_journeys import __version__

        return __version__
    except Exception:
        return "0"


class _SocketSession:
    """One accepted socket as one MCP session: newline-delimited JSON-RPC in and out around
    `server.run`, until either side ends. The counterpart of `mcp.server.stdio.stdio_server`.

    The server reads and writes the socket itself, through two small stream objects (the `mcp`
    package's ReadStream and WriteStream protocols): no task and no memory stream in between,
    which cost more CPU than the rest of the session. Reading: `protocol.framing` lines become
    messages; a line that is no JSON-RPC message is answered here as JSON-RPC 2.0 says. When
    the peer half-closes, the requests already read get up to DRAIN_SECONDS to be answered
    before the end of input is reported (the `mcp` dispatcher cancels in-flight handlers at the
    end of its input). A line over MAX_LINE_BYTES drops the connection (framing holds none of
    its bytes meanwhile). Writing: each message goes out whole, in the order it is sent.
    """

    READ_CHUNK = 65536

    def __init__(self, server: Any, connection: _Connection, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.connection = connection
        self.reader, self.writer = reader, writer
        self.label = f"channel {connection.channel.name}: connection {connection.number}"
        self.lines = framing.LineBuffer(MAX_LINE_BYTES)
        self._ready: list[framing.Line | framing.Overlong] = []  # framed, not yet handed over
        self._eof = False
        self._pending: set[Any] = set()  # ids of requests read but not yet answered
        self._answered = asyncio.Event()  # set (and replaced) at each answer that goes out

    async def run(self) -> None:
        token = _CURRENT_CONNECTION.set(self.connection)
        try:
            await self.server.run(_Incoming(self), _Outgoing(self), self.server.create_initialization_options())
        finally:
            _CURRENT_CONNECTION.reset(token)

    # --- in ---

    async def next_message(self) -> Any:
        """The next message for the server; raises anyio.EndOfStream at the end of input."""
        import anyio
        import mcp.types as types
        from mcp.shared.message import SessionMessage

        while True:
            while not self._ready:
                if self._eof or not await self._read_more():
                    raise anyio.EndOfStream
            item = self._ready.pop(0)
            if isinstance(item, framing.Overlong):
                logger.warning("%s: a line of %d bytes is over the %d-byte bound; dropping the connection",
                               self.label, item.size, MAX_LINE_BYTES)
                self._eof = True
                raise anyio.EndOfStream
            try:
                message = types.jsonrpc_message_adapter.validate_json(item.raw, by_name=False)
            except Exception as exc:
                await self._reject(item.raw, exc)
                continue
            if isinstance(message, types.JSONRPCRequest):
                self._pending.add(message.id)
            return SessionMessage(message)

    async def _read_more(self) -> bool:
        """Frame one more chunk: False when there is no more input (after the drain)."""
        try:
            chunk = await self.reader.read(self.READ_CHUNK)
        except (ConnectionError, OSError) as exc:
            logger.debug("%s: read failed (%r)", self.label, exc)
            self._eof = True
            return False
        self._ready.extend(self.lines.feed(chunk) if chunk else self.lines.finish())
        if not chunk:
            self._eof = True
            if not self._ready:
                await self._drain()
            return bool(self._ready)
        return True

    async def _reject(self, line: bytes, exc: Exception) -> None:
        """Answer a line that is no JSON-RPC message as JSON-RPC 2.0 says; never judge it."""
        logger.warning("%s: not a JSON-RPC message (%s): %.200r", self.label, type(exc).__name__, line)
        try:
            value = json.loads(line)
        except ValueError:
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
        else:
            req_id = value.get("id") if isinstance(value, dict) else None
            if not isinstance(req_id, str | int) or isinstance(req_id, bool):
                return  # a malformed notification or response: nothing to answer
            error = {"jsonrpc": "2.0", "id": req_id, "error": {"code": -32600, "message": "Invalid Request"}}
        await self._send((json.dumps(error) + "\n").encode())

    async def _drain(self) -> None:
        """The peer half-closed: let what it asked for be answered first, for a bounded time."""
        deadline = asyncio.get_running_loop().time() + DRAIN_SECONDS
        while self._pending:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return
            try:
                await asyncio.wait_for(self._answered.wait(), left)
            except asyncio.TimeoutError:
                return

    # --- out ---

    async def put_message(self, session_message: Any) -> None:
        import mcp.types as types

        message = session_message.message
        data = message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        # A failed send is not retried, and never raised: the server must not stop on our account.
        await self._send(data.encode())
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._pending.discard(message.id)
            self._answered.set()
            self._answered = asyncio.Event()

    async def _send(self, data: bytes) -> bool:
        try:
            self.writer.write(data)
            await self.writer.drain()
            return True
        except (ConnectionError, OSError, RuntimeError) as exc:
            logger.debug("%s: the peer stopped reading (%r)", self.label, exc)
            return False


class _Incoming:
    """The session's input as the `mcp` server reads it (its ReadStream protocol)."""

    def __init__(self, session: _SocketSession) -> None:
        self.session = session

    async def receive(self) -> Any:
        return await self.session.next_message()

    async def aclose(self) -> None:
        self.session._eof = True

    def __aiter__(self) -> "_Incoming":
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.session.next_message()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> "_Incoming":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Outgoing:
    """The session's output as the `mcp` server writes it (its WriteStream protocol)."""

    def __init__(self, session: _SocketSession) -> None:
        self.session = session

    async def send(self, item: Any, /) -> None:
        await self.session.put_message(item)

    async def aclose(self) -> None:
        pass  # the socket is closed by whoever accepted it, after the session

    async def __aenter__(self) -> "_Outgoing":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


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
