"""The model stub's HTTP server: loopback only, every dialect under any path prefix.

Rules of this module:
- It binds 127.0.0.1 (port 0 by default) and, on request, extra Unix sockets (the docker
  mode's relay reaches us through one). `start` returns once it accepts connections, well under
  100 ms: no name lookups, no imports of heavy packages.
- Routes go by the END of the path, so any base URL works (`/v1/chat/completions`,
  `/openai/v1/chat/completions`, `/api/anthropic/v1/messages`); a leading `/t/<tag>` is a
  route tag that lands in the records (`url_for`), so that one server serves many journeys.
- It decides nothing itself: the dialect parses, the script decides (`decide` is injectable for
  tests), the dialect renders; every request becomes one `RequestRecord`, with the text of each
  message masked by `mask` (the run's redactor) and clipped.
- `stop` is bounded: the accept loops end within their poll interval, and open connections
  (keep-alive, a stream mid-way) are shut down rather than waited for.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import socketserver
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import acp_journeys.services.model_stub.script as script
from acp_journeys.rules.model_requests import RequestRecord, clip
from acp_journeys.services.model_stub.conversation import Conversation, Decision
from acp_journeys.services.model_stub.dialects import AnthropicMessages, BadRequest, Dialect, all_dialects
from acp_journeys.services.model_stub.records import RecordLog

logger = logging.getLogger("acp_journeys.model_stub")

MAX_BODY_BYTES = 64 * 1024 * 1024  # also the bound of a body once inflated
MAX_LINE_BYTES = 4096  # a chunk-size or trailer line
MODEL_ID = "acp-journeys-stub"
TAG_NAME = re.compile(r"[A-Za-z0-9_.-]+")
# Token counts (Anthropic's and Gemini's): answered with an estimate, recorded, never a turn.
COUNT_TOKENS = ("/messages/count_tokens", ":countTokens")
TAG = re.compile(r"^/t/(?P<tag>[A-Za-z0-9_.-]+)(?P<rest>/.*)?$")
POLL_SECONDS = 0.05
IDLE_SECONDS = 120  # a keep-alive connection with no request for this long is closed
MAX_CONNECTIONS = 64
"""Connections open at once (each is a thread); one more is closed at once, and counted."""

Decide = Callable[[Conversation], Decision]
Mask = Callable[[str], str]


SENT_HEAD, SENT_TAIL = 8, 32
"""Messages of a request kept in its record: the first and the last ones (the prompt is late)."""
PARTS_KEPT = 8
"""Tool calls and tool results of one message kept in its record."""
TOOLS_KEPT = 200
"""Names of the tools offered kept in a record."""


def sent_messages(conversation: Conversation, mask: Mask) -> list[dict[str, Any]]:
    """Each message as it reached the model, for the record: role, masked and clipped text; of
    a long conversation the first SENT_HEAD and the last SENT_TAIL messages."""
    sent: list[dict[str, Any]] = []
    messages = conversation.messages
    if len(messages) > SENT_HEAD + SENT_TAIL:
        left_out = len(messages) - SENT_HEAD - SENT_TAIL
        messages = messages[:SENT_HEAD] + messages[-SENT_TAIL:]
    else:
        left_out = 0
    for index, message in enumerate(messages):
        if left_out and index == SENT_HEAD:
            sent.append({"role": "…", "text": f"[{left_out} messages not kept]"})
        entry: dict[str, Any] = {"role": message.role, "text": clip(mask(message.text))}
        if message.images:
            entry["images"] = len(message.images)
        if message.tool_calls:
            entry["tool_calls"] = [clip(call.name, 128) for call in message.tool_calls[:PARTS_KEPT]]
        if message.tool_results:
            entry["tool_results"] = [clip(mask(r.text)) for r in message.tool_results[:PARTS_KEPT]]
        sent.append(entry)
    return sent


def _inflate(data: bytes, wbits: int) -> bytes:
    """gzip (each member) or zlib data inflated, at most MAX_BODY_BYTES, else BadRequest."""
    out = bytearray()
    while data:
        inflater = zlib.decompressobj(wbits)
        try:
            out += inflater.decompress(data, MAX_BODY_BYTES + 1 - len(out))
        except zlib.error as exc:
            raise BadRequest(f"the body cannot be decompressed: {exc}") from None
        if len(out) > MAX_BODY_BYTES or inflater.unconsumed_tail:
            raise BadRequest("the request body is too large once decompressed")
        if not inflater.eof:
            raise BadRequest("the compressed body is cut short")
        data = inflater.unused_data if wbits > zlib.MAX_WBITS else b""
    return bytes(out)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs expect; streams are chunked
    server_version = "acp-journeys-model-stub"
    timeout = IDLE_SECONDS
    stub: ModelStub  # set on the subclass that each ModelStub makes
    _seq = 0

    def setup(self) -> None:
        super().setup()
        self.stub._opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.stub._closed(self.connection)

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:
            pass  # the agent hung up, or stop() shut the connection: nobody to answer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the records are the log; stderr belongs to the runner's console

    # ---- plumbing ----------------------------------------------------------------------------

    def _route(self) -> tuple[str | None, str]:
        path = self.path.split("?", 1)[0]
        match = TAG.match(path)
        if match:
            return match.group("tag"), (match.group("rest") or "/")
        return None, path

    def _body(self) -> bytes:
        """The request body, decoded, never more than MAX_BODY_BYTES (read or inflated): sizes
        are checked before anything is read, since the agent declares them."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = bytearray()
            while True:
                line = self.rfile.readline(MAX_LINE_BYTES + 1)
                try:
                    size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                except ValueError:
                    raise self._refuse("a chunk size is not a hexadecimal number") from None
                if size < 0 or len(data) + size > MAX_BODY_BYTES:
                    raise self._refuse("the request body is too large")
                if size == 0:
                    while self.rfile.readline(MAX_LINE_BYTES + 1) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                chunk = self.rfile.read(size)
                if len(chunk) < size:
                    raise ConnectionAbortedError("the body ended early")  # the client is gone
                data += chunk
                self.rfile.readline(MAX_LINE_BYTES + 1)
        else:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                raise self._refuse("Content-Length is not a number") from None
            if length < 0 or length > MAX_BODY_BYTES:
                raise self._refuse("the request body is too large")
            data = bytearray(self.rfile.read(length))
            if len(data) < length:
                raise ConnectionAbortedError("the body ended early")  # the client is gone
        encoding = (self.headers.get("Content-Encoding") or "").lower()
        if encoding == "gzip":
            return _inflate(bytes(data), 16 + zlib.MAX_WBITS)
        if encoding == "deflate":
            return _inflate(bytes(data), zlib.MAX_WBITS)
        return bytes(data)

    def _refuse(self, why: str) -> BadRequest:
        """A body we will not read: answer 400, then close (the rest of it is still unread)."""
        self.close_connection = True
        return BadRequest(why)

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_{self._seq}")
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: Iterator[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in events:
            self.wfile.write(f"{len(event):X}\r\n".encode() + event + b"\r\n")
            self.wfile.flush()  # one event a write: a client sees each as it comes
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _arrived(self) -> float:
        self._seq = self.stub.records.next_seq()  # in order of arrival, not of completion
        return time.monotonic()

    def _record(self, started: float, tag: str | None, **fields: Any) -> None:
        self.stub.records.add(RequestRecord(
            seq=self._seq, at=started, tag=tag, method=self.command, path=self.path,
            seconds=round(time.monotonic() - started, 4), **fields))

    # ---- methods -----------------------------------------------------------------------------

    def do_GET(self) -> None:
        started = self._arrived()
        tag, path = self._route()
        path = path.rstrip("/") or "/"
        if "websocket" in (self.headers.get("Upgrade") or "").lower():
            # The Responses API's WebSocket mode: clients fall back to HTTP on a refusal.
            self._record(started, tag, dialect=None, status=404, error="websocket mode not served")
            self._json(404, {"error": {"message": "WebSocket mode is not served: use HTTP",
                                       "type": "not_found_error"}})
            return
        if path.endswith("/models") or path == "/models":
            self._record(started, tag, dialect="models", status=200)
            self._json(200, models_list())
            return
        match = re.search(r"/models/(?P<id>[^/]+)$", path)
        if match:
            self._record(started, tag, dialect="models", status=200)
            self._json(200, model_entry(match.group("id")))
            return
        if path in ("/", "/health", "/healthz", "/v1"):
            self._record(started, tag, dialect=None, status=200)
            self._json(200, {"ok": True, "server": self.server_version})
            return
        self._record(started, tag, dialect=None, status=404, error="no route")
        self._json(404, {"error": {"message": f"no route for GET {path}", "type": "not_found_error"}})

    def do_POST(self) -> None:
        started = self._arrived()
        tag, path = self._route()
        path = path.rstrip("/")
        dialect = self.stub.dialect_for(path)
        if dialect is None:
            try:
                self._body()  # read it, so that the connection stays usable
            except BadRequest:
                pass  # too large: the connection closes after the answer
            self._record(started, tag, dialect=None, status=404, error="no route")
            self._json(404, {"error": {"message": f"no route for POST {path}", "type": "not_found_error"}})
            return
        fields: dict[str, Any] = {"dialect": dialect.name}
        try:
            try:
                body = json.loads(self._body() or b"null")
            except ValueError as exc:
                raise BadRequest(f"the body is not JSON: {exc}") from None
            if not isinstance(body, dict):
                raise BadRequest("the body must be a JSON object")
            if path.endswith(COUNT_TOKENS):
                counted = dialect.count_tokens(body)  # type: ignore[attr-defined]
                self._record(started, tag, status=200, why="count_tokens", **fields)
                self._json(200, counted)
                return
            conversation = dialect.parse(body)
            images = [img for m in conversation.messages for img in m.all_images()]
            fields.update(model=clip(conversation.model, 128),
                          tools_offered=[clip(n, 128) for n in conversation.tool_names()[:TOOLS_KEPT]],
                          messages=len(conversation.messages), stream=dialect.wants_stream(body),
                          image_present=bool(images), image_decoded=any(i.data is not None for i in images),
                          sent=sent_messages(conversation, self.stub.mask))
            decision = self.stub.decide(conversation)
            fields.update(intent=decision.intent, decision=decision.summary(), why=decision.why,
                          side_request=decision.side, retried=decision.retried)
        except BadRequest as exc:
            self._record(started, tag, status=400, error=str(exc), **fields)
            self._json(400, dialect.error(400, str(exc)))
            return
        except Exception as exc:  # a bug of ours: the agent gets a 500 and the record says why
            message = f"{type(exc).__name__}: {exc}"
            self._record(started, tag, status=500, error=message, **fields)
            self._json(500, dialect.error(500, message))
            return
        # Recorded before the answer goes out: whoever reads the records once the agent has
        # the answer (the runner, a test) finds this request among them.
        self._record(started, tag, status=200, **fields)
        try:
            if fields["stream"]:
                self._stream(dialect.stream(body, conversation, decision))
            else:
                self._json(200, dialect.render(body, conversation, decision))
        except OSError as exc:  # the agent hung up mid-answer (a cancel)
            self.stub.records.amend(self._seq, error=f"client gone: {type(exc).__name__}")
            self.close_connection = True


def models_list() -> dict[str, Any]:
    """One list that both the OpenAI and the Anthropic clients read."""
    entry = model_entry(MODEL_ID)
    return {"object": "list", "data": [entry], "has_more": False, "first_id": MODEL_ID, "last_id": MODEL_ID}


def model_entry(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "acp-journeys",
            "type": "model", "display_name": model_id, "created_at": "2025-01-01T00:00:00Z"}


class _Quiet:
    """Errors go to the debug log; at most MAX_CONNECTIONS connections are served at once."""

    stub: ModelStub

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("model stub: error in a request", exc_info=True)  # never on the console

    def verify_request(self, request: Any, client_address: Any) -> bool:
        # In the accept thread, before a thread is started for it: a flood of connections
        # costs a close each, never a thread each.
        return self.stub._admit(request)

    def shutdown_request(self, request: Any) -> None:
        self.stub._release(request)
        super().shutdown_request(request)  # type: ignore[misc]


class _TcpServer(_Quiet, socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default 5 makes a burst of connects wait for SYN retries
    block_on_close = False  # stop() shuts connections down itself, with a bound

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls getfqdn(), a reverse lookup that can take seconds.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class _UnixServer(_Quiet, socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    request_queue_size = 128
    block_on_close = False


class ModelStub:
    """The scripted model endpoint of one run.

    >>> stub = ModelStub().start()
    >>> stub.url          # http://127.0.0.1:PORT ; agents get f"{stub.url}/v1"
    >>> stub.url_for("turn-to-end")   # the same server; records carry tag "turn-to-end"
    >>> stub.records.as_dicts(tag="turn-to-end")
    >>> stub.stop()
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, decide: Decide = script.decide,
                 mask: Mask = str) -> None:
        self.host, self.port = host, port
        self.decide = decide
        self.mask = mask  # the run's redactor: secrets never reach a record
        self.records = RecordLog()
        self._dialects = all_dialects()
        self._servers: list[socketserver.BaseServer] = []
        self._threads: list[threading.Thread] = []
        self._connections: set[socket.socket] = set()
        self._lock = threading.Condition()
        self._handler = type("Handler", (_Handler,), {"stub": self})
        self._admitted: set[Any] = set()  # accepted and not yet shut down
        self.refused_connections = 0
        """Connections closed at once because MAX_CONNECTIONS were open (recorded in result.json)."""
        self.address: tuple[str, int] | None = None

    # ---- lifetime ----------------------------------------------------------------------------

    def start(self) -> ModelStub:
        server = _TcpServer((self.host, self.port), self._handler)
        server.stub = self
        self.address = server.server_address[:2]
        self._serve(server, "model-stub-tcp")
        return self

    def add_unix_listener(self, path: str) -> None:
        """Serve on a Unix socket too (an absolute path that does not exist yet)."""
        server = _UnixServer(path, self._handler)
        server.stub = self
        # The relay in an agent's container may run as another user than the runner.
        os.chmod(path, 0o666)
        self._serve(server, f"model-stub-unix-{len(self._servers)}")

    def _serve(self, server: socketserver.BaseServer, name: str) -> None:
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_SECONDS},
                                  name=name, daemon=True)
        thread.start()
        self._servers.append(server)
        self._threads.append(thread)

    def stop(self, timeout: float = 2.0) -> None:
        """Stop accepting, close every open connection, and wait at most `timeout` seconds."""
        deadline = time.monotonic() + timeout
        for server in self._servers:
            # shutdown() blocks until serve_forever returns, within one poll interval.
            server.shutdown()
            server.server_close()
        with self._lock:
            for conn in list(self._connections):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            while self._connections and time.monotonic() < deadline:
                self._lock.wait(max(0.0, min(POLL_SECONDS, deadline - time.monotonic())))
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._servers.clear()
        self._threads.clear()

    def __enter__(self) -> ModelStub:
        return self.start() if self.address is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- addresses ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self.address is None:
            raise RuntimeError("the model stub is not started")
        return f"http://{self.address[0]}:{self.address[1]}"

    def url_for(self, tag: str) -> str:
        """The base URL whose requests are recorded with `tag` (letters, digits, `_.-`)."""
        if not TAG_NAME.fullmatch(tag):
            raise ValueError(f"a route tag is letters, digits and _.- only: {tag!r}")
        return f"{self.url}/t/{tag}"

    # ---- for the handler ---------------------------------------------------------------------

    def dialect_for(self, path: str) -> Dialect | None:
        if path.endswith("/messages/count_tokens"):
            return next(d for d in self._dialects if isinstance(d, AnthropicMessages))
        if path.endswith(":countTokens"):
            return next(d for d in self._dialects if d.name == "gemini-generate")
        return next((d for d in self._dialects if path.endswith(d.suffix)), None)

    def _admit(self, request: Any) -> bool:
        with self._lock:
            if len(self._admitted) >= MAX_CONNECTIONS:
                self.refused_connections += 1
                return False
            self._admitted.add(request)
            return True

    def _release(self, request: Any) -> None:
        with self._lock:
            self._admitted.discard(request)

    def _opened(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)

    def _closed(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)
            self._lock.notify_all()
