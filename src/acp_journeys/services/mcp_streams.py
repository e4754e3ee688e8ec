"""One accepted socket as one MCP session: the `mcp` server's read and write streams over asyncio.

Rules of this module: it frames and forwards, and never judges what it reads; a connection that
sends garbage or goes away abruptly ends its own session and nothing else (trouble goes to the
logger `acp_journeys.mcp`). `mcp` and `anyio` load only inside its methods, so importing it stays
cheap. It knows no channel and no plan: the hub hands it the server and a label.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from acp_journeys.protocol import framing

logger = logging.getLogger("acp_journeys.mcp")

MAX_LINE_BYTES = 32 * 1024 * 1024
"""One JSON-RPC message; beyond this the connection is dropped (ACP frames have their own, smaller
bound in protocol.framing)."""
DRAIN_SECONDS = 1.0  # after a client half-closes, in-flight requests get this long to answer


class SocketSession:
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

    def __init__(self, server: Any, label: str, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.reader, self.writer = reader, writer
        self.label = label
        self.lines = framing.LineBuffer(MAX_LINE_BYTES)
        self._ready: list[framing.Line | framing.Overlong] = []  # framed, not yet handed over
        self._eof = False
        self._pending: set[Any] = set()  # ids of requests read but not yet answered
        self._answered = asyncio.Event()  # set (and replaced) at each answer that goes out

    async def run(self) -> None:
        await self.server.run(_Incoming(self), _Outgoing(self), self.server.create_initialization_options())

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

    def __init__(self, session: SocketSession) -> None:
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

    def __init__(self, session: SocketSession) -> None:
        self.session = session

    async def send(self, item: Any, /) -> None:
        await self.session.put_message(item)

    async def aclose(self) -> None:
        pass  # the socket is closed by whoever accepted it, after the session

    async def __aenter__(self) -> "_Outgoing":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
