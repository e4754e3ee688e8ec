"""Async I/O over one agent process: frames out, frames in, nothing judged.

Rules of this module: it moves bytes between an `AgentProcess` and the sans-IO protocol core,
keeps the transcript and the stderr tail, validates every frame from the agent against the schema
(violations become warnings), and hands notifications and the agent's requests to callbacks.
A broken agent (garbage, huge lines, a crash) is recorded, never raised.

It must not know which launcher made the process (it sees `launch.AgentProcess`) nor any journey.
"""

from __future__ import annotations

import asyncio
import collections
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from acp_journeys.launch import AgentProcess
from acp_journeys.protocol import framing, jsonrpc, schema
from acp_journeys.rules.evidence import Frame, ProtocolWarning

STDERR_TAIL_BYTES = 20_000
FRAME_TEXT_LIMIT = 16_384
# What one agent process can make us keep of its transcript: the first frames, up to a count and
# a total size (an agent may send millions of tiny notifications); a last note says what went.
TRANSCRIPT_FRAMES_LIMIT = 5_000
TRANSCRIPT_CHARS_LIMIT = 4_000_000
READ_CHUNK = 256 * 1024
WARNINGS_LIMIT = 200
"""Protocol warnings kept per journey. Once they are full, frames are no longer checked against
the schema: a wrong frame's full check costs about a millisecond, and its warning would be dropped."""


class Clock:
    """Seconds since a journey started."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 4)

    def since(self, monotonic: float) -> float:
        return round(monotonic - self.t0, 4)


@dataclass
class Answer:
    """What came back for one of our requests."""

    result: Any = None
    error: dict[str, Any] | None = None
    raw: str | None = None
    answered_at: float | None = None
    timed_out: bool = False
    agent_gone: bool = False

    @property
    def ok(self) -> bool:
        return self.raw is not None and self.error is None


RequestHandler = Callable[[jsonrpc.Request], Awaitable[tuple[Any, dict[str, Any] | None]]]
"""Answers a request of the agent: (result, None) or (None, {"code", "message"})."""


class AgentConnection:
    def __init__(self, process: AgentProcess, index: int, clock: Clock, transcript: list[Frame],
                 warnings: list[ProtocolWarning], on_notification: Callable[[jsonrpc.Notification], None],
                 on_request: RequestHandler, *, max_line: int = framing.DEFAULT_MAX_LINE,
                 on_response: Callable[[str, Answer], None] | None = None) -> None:
        self.process = process
        self.index = index
        self.clock = clock
        self.transcript = transcript
        self.warnings = warnings
        self.on_notification = on_notification
        self.on_request = on_request
        self.on_response = on_response
        self.outbox = jsonrpc.Outbox()
        self.lines = framing.LineBuffer(max_line)
        self.pending: dict[Any, tuple[str, asyncio.Future[Answer]]] = {}
        self.answered: dict[Any, str] = {}
        """id -> method of our requests answered so far (bounded): a second answer is told apart."""
        self.answered_twice: list[str] = []
        self.null_id_responses: list[float] = []
        self.waits: dict[Any, tuple[str, float, float]] = {}
        """The requests awaited now: id -> (method, since (monotonic), bound), for the heartbeat."""
        self.stdout_closed = asyncio.Event()
        self.stderr_tail: collections.deque[bytes] = collections.deque()
        self.stderr_size = 0
        self.stderr_bytes = 0
        self._tasks: list[asyncio.Task] = []
        self._write_lock = asyncio.Lock()
        self._frames = 0  # frames of this process kept in the transcript
        self._chars = 0
        self._dropped = 0

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._read_stdout()), asyncio.create_task(self._read_stderr())]

    async def stop(self, timeout: float = 2.0) -> None:
        """Let the readers reach end of file (bounded), then stop them."""
        if self._tasks:
            _, still = await asyncio.wait(self._tasks, timeout=timeout)
            for task in still:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._tasks = []

    def stderr_text(self) -> str:
        return b"".join(self.stderr_tail).decode("utf-8", "replace")[-STDERR_TAIL_BYTES:]

    # --- sending -----------------------------------------------------------------------------

    async def request(self, method: str, params: Any, timeout: float) -> Answer:
        request_id, data = self.outbox.request(method, params)
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = (method, future)
        if not await self._send(data):
            self.pending.pop(request_id, None)
            return Answer(agent_gone=True)
        gone = asyncio.create_task(self.stdout_closed.wait())
        self.waits[request_id] = (method, time.monotonic(), timeout)
        try:
            done, _ = await asyncio.wait({future, gone}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            self.waits.pop(request_id, None)
        if future.done():
            return future.result()
        self.pending.pop(request_id, None)
        if self.stdout_closed.is_set():
            return Answer(agent_gone=True)
        return Answer(timed_out=True)

    async def notify(self, method: str, params: Any) -> bool:
        return await self._send(self.outbox.notification(method, params))

    async def _send(self, data: bytes) -> bool:
        self._record("to-agent", data.decode().rstrip("\n"))
        async with self._write_lock:
            try:
                await self.process.write(data)
                return True
            except (BrokenPipeError, ConnectionError, OSError):
                return False

    # --- receiving ---------------------------------------------------------------------------

    async def _read_stdout(self) -> None:
        try:
            while True:
                data = await self.process.read_stdout(READ_CHUNK)
                if not data:
                    break
                for item in self.lines.feed(data):
                    self._take(item)
            for item in self.lines.finish():
                self._take(item)
        finally:
            self.stdout_closed.set()
            for method, future in list(self.pending.values()):
                if not future.done():
                    future.set_result(Answer(agent_gone=True))

    async def _read_stderr(self) -> None:
        # Drained all the time: an agent that writes megabytes to stderr must never stall on it.
        while True:
            data = await self.process.read_stderr(READ_CHUNK)
            if not data:
                return
            self.stderr_bytes += len(data)
            self.stderr_tail.append(data)
            self.stderr_size += len(data)
            while self.stderr_size - len(self.stderr_tail[0]) >= STDERR_TAIL_BYTES:
                self.stderr_size -= len(self.stderr_tail.popleft())

    def _take(self, item: framing.Line | framing.Overlong) -> None:
        if isinstance(item, framing.Overlong):
            self._warn("too-long", f"a stdout line of {item.size} bytes is over the "
                                   f"{self.lines.max_line}-byte bound and was dropped")
            self._record("note", f"[dropped a stdout line of {item.size} bytes]")
            return
        try:
            text = item.raw.decode("utf-8")
        except UnicodeDecodeError:
            text = item.raw.decode("utf-8", "replace")
            self._warn("not-json", "a stdout line is not valid UTF-8")
        self._record("from-agent", text)
        message = jsonrpc.parse(text)
        if isinstance(message, jsonrpc.Invalid):
            self._warn(message.kind, f"{message.reason}: {_clip(text, 120)!r}")
        elif isinstance(message, jsonrpc.Response):
            self._take_response(message)
        elif isinstance(message, jsonrpc.Notification):
            self._check("agent-notification", message.method, message.params)
            self.on_notification(message)
        else:
            self._check("agent-request", message.method, message.params)
            asyncio.create_task(self._answer(message))

    def _take_response(self, message: jsonrpc.Response) -> None:
        entry = self.pending.pop(message.id, None) if _hashable(message.id) else None
        if message.id is None and len(self.null_id_responses) < ANSWERED_TWICE_LIMIT:
            self.null_id_responses.append(self.clock.now())
        if entry is None and _hashable(message.id) and message.id in self.answered:
            if len(self.answered_twice) < ANSWERED_TWICE_LIMIT:
                self.answered_twice.append(self.answered[message.id])
        if entry is None:
            self._warn("unknown-response", f"a response to an id we did not send: {_clip(message.raw, 120)!r}")
            return
        method, future = entry
        if len(self.answered) < ANSWERED_LIMIT:
            self.answered[message.id] = method
        if message.error is None:
            self._check("agent-response", method, message.result)
        answer = Answer(message.result, message.error, message.raw, self.clock.now())
        if self.on_response is not None:
            # At once, before the next line of the same read: an update that comes after this
            # answer must never be taken for part of it.
            self.on_response(method, answer)
        if not future.done():
            future.set_result(answer)

    async def _answer(self, request: jsonrpc.Request) -> None:
        try:
            result, error = await self.on_request(request)
        except Exception as exc:  # our policy failed: answer the agent anyway, never hang it
            result, error = None, {"code": -32603, "message": f"client error: {exc}"}
        if error is not None:
            await self._send(jsonrpc.Outbox.error(request.id, error["code"], error["message"]))
        else:
            await self._send(jsonrpc.Outbox.result(request.id, result))

    def _check(self, role: str, method: str, payload: Any) -> None:
        if len(self.warnings) >= WARNINGS_LIMIT:
            return
        for problem in schema.violations(role, method, payload):
            self._warn("schema", problem)

    def _warn(self, kind: str, message: str) -> None:
        if len(self.warnings) < WARNINGS_LIMIT:
            self.warnings.append(ProtocolWarning(at=self.clock.now(), process=self.index, kind=kind,
                                                 message=message))

    def _record(self, direction: str, text: str) -> None:
        if len(text) > FRAME_TEXT_LIMIT:
            text = text[:FRAME_TEXT_LIMIT] + f"…[{len(text)} characters in all]"
        if self._frames >= TRANSCRIPT_FRAMES_LIMIT or self._chars + len(text) > TRANSCRIPT_CHARS_LIMIT:
            if not self._dropped:
                self.transcript.append(Frame(at=self.clock.now(), process=self.index, direction="note",
                                             text=f"[the transcript of process {self.index + 1} stops here: over "
                                                  f"{TRANSCRIPT_FRAMES_LIMIT} frames or {TRANSCRIPT_CHARS_LIMIT} "
                                                  "characters]"))
            self._dropped += 1
            return
        self._frames += 1
        self._chars += len(text)
        self.transcript.append(Frame(at=self.clock.now(), process=self.index, direction=direction, text=text))


ANSWERED_LIMIT = 4096
ANSWERED_TWICE_LIMIT = 32


def _hashable(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
