"""One agent process started with `docker exec`: its attach stream, demultiplexed by hand.

Rules of this module:
- The attach connection is a raw socket carrying Docker's multiplexed frames (an 8-byte header:
  stream 1 = stdout, 2 = stderr, then a big-endian length). We read it on the event loop with
  non-blocking `sock_recv`, never in a thread, and split it into two byte buffers.
- Closing stdin is `shutdown(SHUT_WR)` on that socket: Docker passes end of file on to the
  process only on a half-close (closing the socket would also cut stdout).
- Every call of the (blocking) `docker` package runs in `executor`, so the event loop never
  blocks. `wait` polls `exec_inspect` with a bound, sooner once the stream has ended.
- The agent's pid, as the container sees it, is the first line the holder's `run` writes on
  stderr just before it execs the agent (`PID_LINE_PREFIX`, then the pid). That line is taken
  off the stream, so the agent's stderr is exactly what the agent wrote; anything else first
  on stderr is left as it is, and then the pid comes from the pid file that `run` also writes.
  The line costs no engine call; reading the file costs one per try.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from concurrent.futures import Executor
from typing import Any, Awaitable, Callable

from acp_journeys.launch.agent_side import PID_LINE_PREFIX
from acp_journeys.launch.seam import AgentProcess

HEADER = struct.Struct(">BxxxL")
RECV_CHUNK = 1 << 16
POLL_MIN_S = 0.05
POLL_MAX_S = 0.5
PID_LINE_MAX = len(PID_LINE_PREFIX) + 24
PID_LINE_WAIT_S = 1.0  # then the pid file too: the same pid, from the same holder, one call a try


class PidLine:
    """Takes the holder's pid line off the front of stderr (pure: bytes in, bytes out)."""

    def __init__(self) -> None:
        self.buf: bytearray | None = bytearray()
        self.pid: int | None = None

    @property
    def settled(self) -> bool:
        return self.buf is None

    def feed(self, data: bytes) -> bytes:
        """The bytes that are the agent's stderr (all of them, once the line is settled)."""
        if self.buf is None:
            return data
        self.buf += data
        head = bytes(self.buf[:len(PID_LINE_PREFIX)])
        if not PID_LINE_PREFIX.startswith(head):
            return self.end()
        newline = self.buf.find(b"\n", len(PID_LINE_PREFIX))
        if newline < 0:
            return self.end() if len(self.buf) > PID_LINE_MAX else b""
        digits = bytes(self.buf[len(PID_LINE_PREFIX):newline])
        if not digits.isdigit():
            return self.end()
        self.pid = int(digits)
        rest = bytes(self.buf[newline + 1:])
        self.buf = None
        return rest

    def end(self) -> bytes:
        """No (whole) pid line: what was held back is the agent's."""
        held = bytes(self.buf or b"")
        self.buf = None
        return held


class _Stream:
    """A byte buffer filled by the demultiplexer and drained by `read(n)`."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.eof = False
        self.changed = asyncio.Event()

    def feed(self, data: bytes) -> None:
        self.buf += data
        self.changed.set()

    def end(self) -> None:
        self.eof = True
        self.changed.set()

    async def read(self, n: int) -> bytes:
        while not self.buf and not self.eof:
            self.changed.clear()
            await self.changed.wait()
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data


class DockerAgentProcess(AgentProcess):
    """An agent started by `docker exec` with stdin, stdout and stderr attached."""

    def __init__(
        self,
        api: Any,
        executor: Executor,
        exec_id: str,
        response: Any,
        sock: socket.socket,
        pending: bytes,
        read_pid: Callable[[], Awaitable[int | None]],
        kill_pid: Callable[["DockerAgentProcess"], Awaitable[None]],
    ) -> None:
        self._api = api
        self._executor = executor
        self.exec_id = exec_id
        self._response = response  # keeps the HTTP connection (and so the socket) alive
        self._sock = sock
        self._stdout = _Stream()
        self._stderr = _Stream()
        self._stdin_closed = False
        self._stream_ended = asyncio.Event()
        self._exit_code: int | None = None
        self._read_pid = read_pid
        self._kill_pid = kill_pid
        self._pid_line = PidLine()
        self._pid_said = asyncio.Event()
        self._pid_task: asyncio.Task[int | None] = asyncio.ensure_future(self._learn_pid())
        self._reader = asyncio.ensure_future(self._pump(pending))
        self.pid = None
        self.host_pid: int | None = None  # as the engine's host sees it (exec_inspect)

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def known_pid(self, timeout: float) -> int | None:
        """The agent's pid in the container, waiting up to `timeout` for the holder's pid file."""
        try:
            return await asyncio.wait_for(asyncio.shield(self._pid_task), timeout)
        except Exception:  # not known in time (or the container went): the pid stays None
            return self.pid

    async def _learn_pid(self) -> int | None:
        try:
            await asyncio.wait_for(self._pid_said.wait(), PID_LINE_WAIT_S)
        except asyncio.TimeoutError:
            pass
        self.pid = self._pid_line.pid
        if self.pid is None:
            self.pid = await self._read_pid()
        return self.pid

    def _take_stderr(self, data: bytes) -> None:
        if not self._pid_line.settled:
            data = self._pid_line.feed(data)
            if self._pid_line.settled:
                self._pid_said.set()
        if data:
            self._stderr.feed(data)

    async def _pump(self, pending: bytes) -> None:
        """Split the attach stream into stdout and stderr until the daemon closes it."""
        loop = asyncio.get_running_loop()
        buf = bytearray(pending)
        try:
            while True:
                while len(buf) >= HEADER.size:
                    kind, size = HEADER.unpack_from(buf)
                    if len(buf) < HEADER.size + size:
                        break
                    payload = bytes(buf[HEADER.size:HEADER.size + size])
                    del buf[:HEADER.size + size]
                    if kind == 2:
                        self._take_stderr(payload)
                    else:
                        self._stdout.feed(payload)
                try:
                    data = await loop.sock_recv(self._sock, RECV_CHUNK)
                except (ConnectionError, OSError):
                    data = b""
                if not data:
                    break
                buf += data
        finally:
            if not self._pid_line.settled:
                self._take_stderr(self._pid_line.end())
                self._pid_said.set()
            self._stdout.end()
            self._stderr.end()
            self._stream_ended.set()
            try:
                self._sock.close()
            except OSError:
                pass
            self._response.close()

    async def write(self, data: bytes) -> None:
        if self._stdin_closed or self._stream_ended.is_set() or self._exit_code is not None:
            raise BrokenPipeError("the agent's stdin is closed")
        try:
            await asyncio.get_running_loop().sock_sendall(self._sock, data)
        except (ConnectionError, OSError) as exc:
            raise BrokenPipeError(f"the agent's stdin is gone: {exc}") from exc

    async def close_stdin(self) -> None:
        if self._stdin_closed:
            return
        self._stdin_closed = True
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the stream is already gone: the agent has its EOF

    async def read_stdout(self, n: int) -> bytes:
        return await self._stdout.read(n)

    async def read_stderr(self, n: int) -> bytes:
        return await self._stderr.read(n)

    async def _poll(self) -> int | None:
        info = await self._call(self._api.exec_inspect, self.exec_id)
        self.host_pid = self.host_pid or info.get("Pid") or None
        if info.get("Running"):
            return None
        code = info.get("ExitCode")
        self._exit_code = int(code) if code is not None else -1
        return self._exit_code

    async def wait(self, timeout: float) -> int | None:
        if self._exit_code is not None:
            return self._exit_code
        deadline = time.monotonic() + max(0.0, timeout)
        delay = POLL_MIN_S
        while True:
            code = await self._poll()
            if code is not None:
                return code
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            # The stream's end is the usual sign of the exit: poll at once when it comes.
            try:
                await asyncio.wait_for(self._stream_ended.wait(), min(delay, left))
            except asyncio.TimeoutError:
                pass
            if self._stream_ended.is_set():
                delay = POLL_MIN_S
            else:
                delay = min(delay * 2, POLL_MAX_S)

    async def kill(self) -> None:
        if self._exit_code is not None or await self._poll() is not None:
            return
        await self.known_pid(2.0)
        await self._kill_pid(self)
        await self.wait(5.0)

    async def aclose(self) -> None:
        """Drop the connection (after the exit, or when the sandbox goes)."""
        self._stdin_closed = True
        if not self._reader.done():
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                await asyncio.wait_for(self._reader, 2.0)
            except (asyncio.TimeoutError, Exception):
                self._reader.cancel()
        if not self._pid_task.done():
            self._pid_task.cancel()
