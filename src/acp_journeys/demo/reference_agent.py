#!/usr/bin/env python3
"""The reference ACP agent of acp-journeys: a deterministic stand-in for a real agent.

It speaks Agent Client Protocol v1 (JSON-RPC 2.0, one JSON object a line on stdin/stdout) and
passes the 7 journeys of acp-journeys. It has no model: it recognises the exact prompt sentences
that the journeys send (see acp_journeys/rules/prompts.py) with regular expressions. It uses the Python
standard library only, so it runs as ``python3 reference_agent.py`` anywhere.

What it does, in short:
- sessions with the modes "default" and "plan", kept on disk in
  ``${ACP_REFERENCE_AGENT_STATE:-${XDG_STATE_HOME:-$HOME/.local/state}/acp-reference-agent}/sessions/<id>.json``
  so that ``session/load`` in a new process replays them;
- shell commands as ``execute`` tool calls, each behind ``session/request_permission``, run in
  their own process group so that ``session/cancel`` and stdin EOF can stop them;
- the stdio MCP servers of ``mcpServers``, started with a minimal MCP client, for the Plan turns
  (``create_plan`` then ``get_plan``);
- the colour of a PNG image block, decoded with zlib and struct.

Rules of this module: it is the conforming agent only, and knows no defect. The broken agents of
the test suite are subclasses of `Agent` (one file each, beside their verdict), so every step that
one of them changes is a method of its own here (the "hooks" below), and `main` takes the class to
run. A change here must keep all 7 journeys passing (`acp-journeys run --demo`).
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import os
import queue
import re
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback
import uuid
import zlib
from pathlib import Path

AGENT_NAME = "acp-journeys-reference-agent"
MCP_PROTOCOL_VERSION = "2025-06-18"
# JSON-RPC error codes (the ErrorCode values of the ACP schema).
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002

MODES = [{"id": "default", "name": "Default"}, {"id": "plan", "name": "Plan"}]
PERMISSION_OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]

# The prompt sentences that the agent understands, tried in this order. The Plan prompt starts
# with a shell command too, so it comes before the plain shell prompts.
INTENTS = [
    ("remember", re.compile(r"Remember this word: (?P<word>\S+)\.")),
    ("recall", re.compile(r"What is the word that I asked you to remember\?")),
    ("reply", re.compile(r"Reply with exactly (?P<token>\S+) and nothing else\.")),
    ("read_and_look", re.compile(r"Read the file (?P<path>\S+) and look at the attached image\.")),
    ("plan", re.compile(r"Run the shell command `(?P<command>[^`]+)`\. Then call the tool create_plan "
                        r"of the (?P<server>\S+) tool server with the title \"(?P<title>[^\"]*)\"")),
    ("touch", re.compile(r"Create the file (?P<path>\S+) with the shell command `(?P<command>[^`]+)`")),
    ("shell", re.compile(r"shell command `(?P<command>[^`]+)`")),
]
REMEMBER = INTENTS[0][1]


def log(message: str) -> None:
    """Diagnostics go to stderr only: stdout belongs to the protocol."""
    try:
        sys.stderr.write(f"[reference-agent {os.getpid()}] {message}\n")
        sys.stderr.flush()
    except Exception:  # also a reentrant write from the SIGTERM handler: never fail for a log line
        pass


# ---- JSON-RPC over one NDJSON stream (used both for our stdout and for each MCP server's stdin) ----


class RpcPeer:
    """Writes messages one a line under a lock, and pairs our own requests with their answers."""

    def __init__(self, stream):
        self._stream = stream
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._waiting: dict[int, queue.Queue] = {}
        self._closed = False  # the other side has gone: no answer will come

    def write_line(self, line: str) -> None:
        data = line.encode("utf-8") + b"\n"
        with self._lock:
            try:
                self._stream.write(data)
                self._stream.flush()
            except (OSError, ValueError):
                pass  # the other side is gone; EOF handling will end us

    def send(self, message: dict) -> None:
        self.write_line(json.dumps(message))  # ASCII: a lone surrogate cannot break the line

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def respond_line(self, line: str) -> None:
        """Every answer goes out here (a hook: a subclass may write something before it)."""
        self.write_line(line)

    def respond(self, request_id, result: dict) -> None:
        self.respond_line(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}))

    def error(self, request_id, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        self.respond_line(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}))

    def request(self, method: str, params: dict, timeout: float | None = None,
                cancelled: threading.Event | None = None) -> dict | None:
        """Send a request and wait for its answer; None on timeout, cancel or a closed peer."""
        if self._closed:
            return None
        request_id = next(self._ids)
        answer: queue.Queue = queue.Queue(maxsize=1)
        self._waiting[request_id] = answer
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            # Poll in short steps so that a cancel makes the answer moot at once.
            while True:
                if cancelled is not None and cancelled.is_set():
                    return None
                if self._closed and answer.empty():
                    return None
                if deadline is not None and time.monotonic() > deadline:
                    return None
                try:
                    return answer.get(timeout=0.05)
                except queue.Empty:
                    continue
        finally:
            self._waiting.pop(request_id, None)

    def deliver(self, message: dict) -> None:
        """Hand an answer to the request that waits for it; late answers are dropped."""
        waiter = self._waiting.get(message.get("id"))
        if waiter is not None:
            waiter.put(message)

    def close_all(self) -> None:
        self._closed = True
        for waiter in list(self._waiting.values()):
            waiter.put(None)


# ---- A minimal stdio MCP client ------------------------------------------------------------------


class McpClient:
    """One stdio MCP server: a child process that we talk to with NDJSON JSON-RPC."""

    def __init__(self, spec: dict):
        self.name = spec.get("name") or "server"
        self.tools: dict[str, dict] = {}  # tool name -> input schema
        env = dict(os.environ)
        env.update({e["name"]: e["value"] for e in spec.get("env") or []})
        # Its own session, so that a forced stop can take the whole group with it.
        self.proc = subprocess.Popen(
            [spec["command"], *(spec.get("args") or [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, start_new_session=True,
        )
        self.peer = RpcPeer(self.proc.stdin)
        threading.Thread(target=self._read, name=f"mcp-{self.name}", daemon=True).start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            try:
                message = json.loads(raw)
            except ValueError:
                message = None
            if not isinstance(message, dict):
                log(f"MCP {self.name}: not a JSON-RPC message: {raw[:200]!r}")
                continue
            if "method" in message and "id" in message:
                # A request of the server (ping, roots/list...): we offer nothing but ping.
                if message["method"] == "ping":
                    self.peer.respond(message["id"], {})
                else:
                    self.peer.error(message["id"], METHOD_NOT_FOUND, "not supported")
            elif "id" in message:
                self.peer.deliver(message)
        self.peer.close_all()

    def handshake(self, timeout: float = 5.0) -> None:
        client_info = {"name": AGENT_NAME, "version": "1"}
        init = {"protocolVersion": MCP_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": client_info}
        if not self._result(self.peer.request("initialize", init, timeout=timeout)):
            raise RuntimeError("no answer to initialize")
        self.peer.notify("notifications/initialized", {})
        listing = self._result(self.peer.request("tools/list", {}, timeout=timeout)) or {}
        self.tools = {t["name"]: t.get("inputSchema") or {} for t in listing.get("tools", [])}
        log(f"MCP {self.name}: tools {sorted(self.tools)}")

    @staticmethod
    def _result(answer: dict | None) -> dict | None:
        return answer.get("result") if answer else None

    def call(self, tool: str, arguments: dict, cancelled: threading.Event) -> dict | None:
        answer = self.peer.request("tools/call", {"name": tool, "arguments": arguments},
                                   timeout=30, cancelled=cancelled)
        if answer and "error" in answer:
            text = str(answer["error"].get("message", ""))
            return {"isError": True, "content": [{"type": "text", "text": text}]}
        return self._result(answer)

    def id_parameter(self, tool: str) -> str:
        """The argument name that a tool declares for a plan ID (plan_id, planId or id)."""
        schema = self.tools.get(tool) or {}
        properties = schema.get("properties") or {}
        for name in ("plan_id", "planId", "id"):
            if name in properties:
                return name
        required = schema.get("required") or []
        return required[0] if required else next(iter(properties), "plan_id")


def close_mcp_servers(clients: list[McpClient], grace: float = 1.5) -> None:
    """Close their stdin (the polite MCP shutdown), then terminate and kill the late ones."""
    for client in clients:
        try:
            client.proc.stdin.close()
        except (OSError, ValueError):
            pass
    deadline = time.monotonic() + grace
    for client in clients:
        try:
            client.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            signal_group(client.proc.pid, signal.SIGTERM)
            try:
                client.proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                signal_group(client.proc.pid, signal.SIGKILL)


def started(pid: int) -> bytes:
    """When process `pid` started (its /proc stat's field 22); b"" when no process has that pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19]  # after the name, which may hold spaces
    except (OSError, IndexError):
        return b""


def signal_group(pgid: int, signum: int) -> bool:
    try:
        os.killpg(pgid, signum)
        return True
    except (ProcessLookupError, PermissionError):
        return False


# ---- Images: the average colour of a PNG ---------------------------------------------------------

COLOUR_NAMES = [
    ("red", (255, 0, 0)), ("green", (0, 160, 0)), ("blue", (0, 0, 255)), ("white", (255, 255, 255)),
    ("black", (0, 0, 0)), ("gray", (128, 128, 128)), ("yellow", (255, 255, 0)), ("cyan", (0, 255, 255)),
    ("magenta", (255, 0, 255)), ("orange", (255, 140, 0)), ("purple", (128, 0, 128)),
    ("brown", (139, 69, 19)), ("pink", (255, 170, 200)),
]
PNG_CHANNELS = {2: 3, 6: 4}  # colour type (RGB, RGBA) -> samples a pixel


def png_average_rgb(data: bytes) -> tuple[float, float, float] | None:
    """Average RGB of an 8-bit, non-interlaced RGB or RGBA PNG; None for anything else."""
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    pos, idat, header = 8, [], None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length  # length, type, body, CRC
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None:
        return None
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or interlace or colour_type not in PNG_CHANNELS or width * height == 0:
        return None
    bpp = PNG_CHANNELS[colour_type]
    raw = zlib.decompress(b"".join(idat))
    totals, stride, prev = [0, 0, 0], width * bpp, bytearray(width * bpp)
    for y in range(height):
        start = y * (stride + 1)
        row = unfilter(raw[start], bytearray(raw[start + 1:start + 1 + stride]), prev, bpp)
        for channel in range(3):
            totals[channel] += sum(row[channel::bpp])
        prev = row
    n = width * height
    return totals[0] / n, totals[1] / n, totals[2] / n


def unfilter(kind: int, row: bytearray, prev: bytearray, bpp: int) -> bytearray:
    """Undo the PNG filter of one scanline (types 0-4)."""
    for i in range(len(row)):
        left = row[i - bpp] if i >= bpp else 0
        up = prev[i]
        if kind == 1:
            row[i] = (row[i] + left) & 0xFF
        elif kind == 2:
            row[i] = (row[i] + up) & 0xFF
        elif kind == 3:
            row[i] = (row[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            upper_left = prev[i - bpp] if i >= bpp else 0
            row[i] = (row[i] + paeth(left, up, upper_left)) & 0xFF
    return row


def paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def colour_name(rgb: tuple[float, float, float]) -> str:
    """The nearest named colour."""
    def distance(ref):
        return sum((a - b) ** 2 for a, b in zip(rgb, ref))
    return min(COLOUR_NAMES, key=lambda item: distance(item[1]))[0]


def image_colour(block: dict) -> str | None:
    try:
        rgb = png_average_rgb(base64.b64decode(block.get("data") or ""))
    except (ValueError, zlib.error, struct.error, IndexError):
        return None
    return colour_name(rgb) if rgb else None


# ---- Plan IDs in MCP tool results ----------------------------------------------------------------

PLAN_ID_KEYS = ("id", "plan_id", "planId")


def find_plan_id(result: dict):
    """The plan ID of a create_plan result, read liberally: structured content, JSON text, a
    PLAN-XXXX token, an "id: X" phrase, or a text that is one token."""
    found = id_in(result.get("structuredContent"))
    if found is not None:
        return found
    texts = text_contents(result)
    for text in texts:
        try:
            found = id_in(json.loads(text))
        except ValueError:
            found = None
        if found is not None:
            return found
    for pattern in (r"\bPLAN-[A-Za-z0-9_-]+", r"(?i)\b(?:plan[ _-]?)?id\b\W+([A-Za-z0-9_-]+)"):
        for text in texts:
            match = re.search(pattern, text)
            if match:
                return match.group(match.lastindex or 0)
    if texts and len(texts[0].split()) == 1:
        return texts[0].strip()
    return None


def text_contents(result: dict) -> list[str]:
    return [c.get("text", "") for c in result.get("content") or [] if c.get("type") == "text"]


def id_in(value, depth: int = 0):
    if depth > 4:
        return None
    if isinstance(value, dict):
        for key in PLAN_ID_KEYS:
            if isinstance(value.get(key), (str, int)) and not isinstance(value.get(key), bool):
                return value[key]
        children = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return None
    for child in children:
        found = id_in(child, depth + 1)
        if found is not None:
            return found
    return None


# ---- Sessions on disk ----------------------------------------------------------------------------


def sessions_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    root = os.environ.get("ACP_REFERENCE_AGENT_STATE") or os.path.join(state, "acp-reference-agent")
    return Path(root) / "sessions"


def session_path(session_id: str) -> Path | None:
    # The ID names a file: accept only what session/new hands out, never a path.
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,128}", session_id or ""):
        return None
    return sessions_dir() / f"{session_id}.json"


class Session:
    def __init__(self, session_id: str, cwd: str, history: list[dict] | None = None):
        self.id = session_id
        self.cwd = cwd
        self.mode = "default"
        self.history = history or []  # [{"role": "user" | "agent", "text": ...}]
        self.mcp: dict[str, McpClient] = {}
        self.turn: Turn | None = None
        self._save_lock = threading.Lock()

    def save(self) -> None:
        path = session_path(self.id)
        record = {"sessionId": self.id, "cwd": self.cwd, "history": self.history}
        with self._save_lock:  # a cancelled turn may still save while the next one runs
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                temporary = path.with_suffix(".tmp")
                temporary.write_text(json.dumps(record))
                temporary.replace(path)  # atomic: a crash never leaves half a file
            except OSError as exc:  # only session/load suffers; the rest goes on
                log(f"cannot save session {self.id}: {exc}")


def stored_history(session_id: str) -> list[dict] | None:
    path = session_path(session_id)
    try:
        return json.loads(path.read_text())["history"] if path else None
    except (OSError, ValueError, KeyError):
        return None


# ---- A prompt turn -------------------------------------------------------------------------------


class Turn:
    """One session/prompt: its cancel flag, its running commands, and its single answer."""

    def __init__(self, agent: Agent, session: Session, request_id):
        self.agent, self.session, self.request_id = agent, session, request_id
        self.cancelled = threading.Event()
        self._lock = threading.Lock()
        self._answered = False

    def update(self, update: dict) -> None:
        # Nothing of a turn after its answer: the client has moved on.
        if not self._answered:
            self.agent.wire.notify("session/update", {"sessionId": self.session.id, "update": update})

    def answer(self, stop_reason: str) -> None:
        if self._end():
            self.agent.wire.respond(self.request_id, {"stopReason": stop_reason})

    def fail(self, message: str) -> None:
        if self._end():
            self.agent.wire.error(self.request_id, INTERNAL_ERROR, message)

    def _end(self) -> bool:
        """True for the one caller that may answer. The session is free again before the
        answer goes out, since the client may send the next prompt as soon as it reads it."""
        with self._lock:
            if self._answered:
                return False
            self._answered = True
        if self.session.turn is self:
            self.session.turn = None
        return True


class ProcessGroups:
    """The process groups of the shell commands that we started, each with its turn.

    A group can outlive its shell (a child that ignores SIGTERM), so it stays here until it is
    empty, and the exit kills whatever is left. Its number is a pid, free once it is empty and
    soon another program's (pids wrap within minutes under load): signalled only while ours."""

    def __init__(self):
        self._lock = threading.Lock()
        self._turns: dict[int, tuple[Turn, bytes]] = {}  # pgid: (turn, its leader's start)

    def add(self, pgid: int, turn: Turn) -> None:
        with self._lock:  # the leader is our child, not waited for yet: it is there
            self._turns[pgid] = (turn, started(pgid))

    def release(self, pgid: int) -> None:
        if not self._still_ours(pgid):
            with self._lock:
                self._turns.pop(pgid, None)

    def _still_ours(self, pgid: int) -> bool:
        now, then = started(pgid), self._turns.get(pgid, (None, b""))[1]
        if now:  # our leader, or a newer process with our number
            return now == then or not then
        return signal_group(pgid, 0)  # our leader is gone: its members keep the number ours

    def signal(self, pgids: list[int], signum: int) -> None:
        for pgid in (g for g in pgids if self._still_ours(g)):
            signal_group(pgid, signum)

    def of(self, turn: Turn | None = None) -> list[int]:
        with self._lock:
            return [g for g, (t, _) in self._turns.items() if turn is None or t is turn]

    def forget(self, turn: Turn) -> None:
        with self._lock:
            self._turns = {g: e for g, e in self._turns.items() if e[0] is not turn}

    def kill(self, pgids: list[int], grace: float = 1.0) -> None:
        """SIGTERM now, SIGKILL after grace for the groups that are still ours by then."""
        self.signal(pgids, signal.SIGTERM)
        timer = threading.Timer(grace, lambda: self.signal([g for g in pgids if g in self.of()], signal.SIGKILL))
        timer.daemon = True
        timer.start()


# ---- The agent -----------------------------------------------------------------------------------


class Agent:
    """The conforming agent. Each step that a fixture agent breaks is a method of its own."""

    def __init__(self):
        self.wire = self.make_wire()
        self.sessions: dict[str, Session] = {}
        self.tool_call_ids = itertools.count(1)
        self.groups = ProcessGroups()
        self.prompts_seen = 0
        self.latency = 0.0
        self._stopping = threading.Lock()
        self.handlers = {
            "initialize": self.initialize,
            "session/new": self.new_session,
            "session/load": self.load_session,
            "session/set_mode": self.set_mode,
            "session/prompt": self.prompt,
            "session/list": self.list_sessions,
            "session/resume": self.resume_session,
            "session/close": self.close_session,
        }

    def make_wire(self) -> RpcPeer:
        return RpcPeer(sys.stdout.buffer)

    # ---- the read loop -----------------------------------------------------------------------

    def before_serving(self) -> None:
        """Called once before the first line is read."""

    def run(self) -> None:
        self.before_serving()
        for line in iter(sys.stdin.buffer.readline, b""):
            if line.strip():
                self.dispatch(line)
        log("stdin closed")
        self.stdin_closed()

    def stdin_closed(self) -> None:
        self.shutdown(0)  # the client has gone: nothing of ours may outlive it

    def dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self.wire.error(None, -32700, "Parse error")
            return
        if not isinstance(message, dict):
            self.wire.error(None, -32600, "Invalid request")
            return
        method, request_id = message.get("method"), message.get("id")
        if method is None:
            self.wire.deliver(message)  # the client answers one of our requests
        elif method == "session/cancel":
            self.cancel(message.get("params") or {})
        elif request_id is None:
            pass  # an unknown notification: ignore it
        elif method in self.handlers:
            self.handle(method, request_id, message.get("params") or {})
        else:
            self.wire.error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")

    def handle(self, method: str, request_id, params: dict) -> None:
        try:
            self.handlers[method](request_id, params)
        except Exception as exc:  # a bug of ours must not kill the connection
            log(traceback.format_exc())
            self.wire.error(request_id, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")

    # ---- setup -------------------------------------------------------------------------------

    def protocol_version(self) -> object:
        return 1

    def agent_capabilities(self) -> dict:
        return {"loadSession": True, "promptCapabilities": {"image": True, "embeddedContext": True},
                "mcpCapabilities": {}, "sessionCapabilities": {"list": {}, "resume": {}, "close": {}}}

    def initialize(self, request_id, params: dict) -> None:
        self.wire.respond(request_id, {
            "protocolVersion": self.protocol_version(),
            "agentCapabilities": self.agent_capabilities(),
            "agentInfo": {"name": AGENT_NAME, "version": "1"},
            "authMethods": [],
        })

    def mode_state(self, session: Session) -> dict:
        """The modes part of the session/new and session/load answers."""
        return {"modes": {"currentModeId": session.mode, "availableModes": MODES}}

    def new_session(self, request_id, params: dict) -> None:
        if not os.path.isabs(params.get("cwd") or ""):
            self.wire.error(request_id, INVALID_PARAMS, "cwd must be an absolute path")
            return
        session = Session(uuid.uuid4().hex, params["cwd"])
        self.sessions[session.id] = session
        self.session_started(session)
        self.start_mcp_servers(session, params.get("mcpServers") or [])
        session.save()
        self.wire.respond(request_id, {"sessionId": session.id, **self.mode_state(session)})

    def session_started(self, session: Session) -> None:
        """Called when session/new has made a session, before its MCP servers start."""

    def history_to_load(self, session_id: str) -> list[dict] | None:
        """The stored conversation that session/load replays; None for an unknown session."""
        return stored_history(session_id)

    def load_session(self, request_id, params: dict) -> None:
        self.reopen_session(request_id, params, replay=True)

    def list_sessions(self, request_id, params: dict) -> None:
        """session/list: the sessions of this process, those of `cwd` when it is given."""
        cwd = params.get("cwd")
        listed = [{"sessionId": s.id, "cwd": s.cwd} for s in self.sessions.values() if cwd in (None, s.cwd)]
        self.wire.respond(request_id, {"sessions": listed})

    def resume_session(self, request_id, params: dict) -> None:
        """session/resume: as session/load, but the history is not replayed."""
        self.reopen_session(request_id, params, replay=False)

    def reopen_session(self, request_id, params: dict, replay: bool) -> None:
        """A stored session, in place of this process's copy (whose turn a resume cancels)."""
        session_id = params.get("sessionId") or ""
        history = self.history_to_load(session_id)
        if history is None:
            self.wire.error(request_id, RESOURCE_NOT_FOUND, f"Unknown session: {session_id}")
            return
        old = self.sessions.pop(session_id, None)
        if old is not None:
            if old.turn is not None and not replay:
                self.cancel_turn(old.turn)
            close_mcp_servers(list(old.mcp.values()))
        session = Session(session_id, params.get("cwd") or os.getcwd(), history)
        self.sessions[session_id] = session
        # On a load the client rebuilds the conversation from this replay, before the answer.
        for entry in history if replay else []:
            kind = "user_message_chunk" if entry.get("role") == "user" else "agent_message_chunk"
            update = {"sessionUpdate": kind, "content": {"type": "text", "text": entry.get("text", "")}}
            self.wire.notify("session/update", {"sessionId": session_id, "update": update})
        self.start_mcp_servers(session, params.get("mcpServers") or [])
        self.wire.respond(request_id, self.mode_state(session))

    def close_session(self, request_id, params: dict) -> None:
        """session/close: its turn is cancelled, its MCP servers stop, and it is forgotten here."""
        session = self.session_of(request_id, params)
        if session is None:
            return
        self.sessions.pop(session.id, None)
        if session.turn is not None:
            self.cancel_turn(session.turn)
        close_mcp_servers(list(session.mcp.values()))
        self.wire.respond(request_id, {})

    def start_mcp_servers(self, session: Session, specs: list[dict]) -> None:
        for spec in specs:
            if spec.get("type", "stdio") != "stdio":
                log(f"MCP {spec.get('name')}: only stdio servers are supported")
                continue
            try:
                client = McpClient(spec)
            except (OSError, KeyError) as exc:
                log(f"MCP {spec.get('name')}: cannot start: {exc}")
                continue
            session.mcp[client.name] = client  # from now on, shutdown closes it
            try:
                client.handshake()
            except RuntimeError as exc:
                log(f"MCP {client.name}: {exc}")

    def session_of(self, request_id, params: dict) -> Session | None:
        session = self.sessions.get(params.get("sessionId"))
        if session is None:
            self.wire.error(request_id, INVALID_PARAMS, f"Unknown session: {params.get('sessionId')}")
        return session

    def set_mode(self, request_id, params: dict) -> None:
        session = self.session_of(request_id, params)
        if session is None:
            return
        if params.get("modeId") not in {m["id"] for m in MODES}:
            self.wire.error(request_id, INVALID_PARAMS, f"Unknown mode: {params.get('modeId')}")
            return
        session.mode = params["modeId"]
        update = {"sessionUpdate": "current_mode_update", "currentModeId": session.mode}
        self.wire.notify("session/update", {"sessionId": session.id, "update": update})
        self.wire.respond(request_id, {})

    # ---- turns -------------------------------------------------------------------------------

    def prompt(self, request_id, params: dict) -> None:
        session = self.session_of(request_id, params)
        if session is None:
            return
        if session.turn is not None:
            self.wire.error(request_id, INTERNAL_ERROR, "A turn is already running in this session")
            return
        self.prompts_seen += 1
        self.prompt_received(self.prompts_seen)
        blocks = params.get("prompt") or []
        text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        images = [b for b in blocks if b.get("type") == "image"]
        turn = session.turn = Turn(self, session, request_id)
        # The turn runs beside the read loop, which must go on reading cancels and answers.
        threading.Thread(target=self.run_turn, args=(turn, text, images), daemon=True).start()

    def prompt_received(self, number: int) -> None:
        """Called for each session/prompt of this process (1 for the first), before its turn."""

    def run_turn(self, turn: Turn, text: str, images: list[dict]) -> None:
        session = turn.session
        try:
            self.turn_started(turn)
            session.history.append({"role": "user", "text": text})
            if self.latency and turn.cancelled.wait(self.latency):
                return  # cancelled while "the model" thought; cancel() answers this turn
            reply = self.respond_to(turn, text, images)
            if turn.cancelled.is_set() and self.end_cancelled_turn(turn):
                return
            session.history.append({"role": "agent", "text": reply})
            session.save()  # before the answer: the client may restart us right after it
            self.send_reply(turn, reply)
        except Exception as exc:
            log(traceback.format_exc())
            turn.fail(f"{type(exc).__name__}: {exc}")

    def turn_started(self, turn: Turn) -> None:
        """Called as a turn begins, before its prompt is read."""

    def end_cancelled_turn(self, turn: Turn) -> bool:
        """A cancelled turn whose work has stopped. True: it ends here (cancel() has answered it);
        False: it goes on to answer as if it had not been cancelled."""
        turn.session.save()
        return True

    def send_reply(self, turn: Turn, reply: str) -> None:
        self.say(turn, reply)
        turn.answer(self.stop_reason())

    def stop_reason(self) -> str:
        return "end_turn"

    def say(self, turn: Turn, text: str) -> None:
        turn.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})

    def respond_to(self, turn: Turn, text: str, images: list[dict]) -> str:
        for name, pattern in INTENTS:
            match = pattern.search(text)
            if match:
                return getattr(self, f"do_{name}")(turn, match, images)
        return "I did not understand."

    def do_remember(self, turn: Turn, match, images) -> str:
        return "ACK"  # the word stays in the history, which recall searches

    def do_recall(self, turn: Turn, match, images) -> str:
        for entry in reversed(turn.session.history):
            found = REMEMBER.search(entry["text"]) if entry.get("role") == "user" else None
            if found:
                return found.group("word")
        return "I do not know the word."

    def do_reply(self, turn: Turn, match, images) -> str:
        return match.group("token")

    def do_read_and_look(self, turn: Turn, match, images) -> str:
        word = self.read_file(turn, match.group("path"))
        parts = [word if word is not None else "I could not read the file."]
        colour = self.colour_of(images[0]) if images else None
        if colour:
            parts.append(colour)
        return " ".join(parts)

    def colour_of(self, image: dict) -> str | None:
        return image_colour(image)

    def do_plan(self, turn: Turn, match, images) -> str:
        ok, output = self.run_shell(turn, match.group("command"))
        if not ok:
            return "I could not run the command."
        return self.save_plan(turn, match, output)

    def save_plan(self, turn: Turn, match, output: str) -> str:
        """The Plan turn after its command: create_plan, get_plan, and the plan ID as the reply."""
        servers = turn.session.mcp
        server = servers.get(match.group("server")) or next(iter(servers.values()), None)
        if server is None:
            return f"The {match.group('server')} tool server is not available."
        created = self.create_plan(turn, server, {"title": self.plan_title(match), "description": output})
        plan_id = find_plan_id(created) if created else None
        if plan_id is None:
            return "create_plan gave no plan ID."
        self.read_plan_back(turn, server, plan_id)
        return self.plan_reply(plan_id)

    def plan_title(self, match) -> str:
        return match.group("title")

    def create_plan(self, turn: Turn, server: McpClient, arguments: dict) -> dict | None:
        return self.call_tool(turn, server, "create_plan", arguments)

    def read_plan_back(self, turn: Turn, server: McpClient, plan_id) -> None:
        self.call_tool(turn, server, "get_plan", {server.id_parameter("get_plan"): plan_id})

    def plan_reply(self, plan_id) -> str:
        return str(plan_id)

    def do_touch(self, turn: Turn, match, images) -> str:
        ok, output = self.run_shell(turn, match.group("command"))
        if not ok:
            return f"I could not create the file. {output}".strip()
        return f"Created the file {match.group('path')}."

    def do_shell(self, turn: Turn, match, images) -> str:
        ok, output = self.run_shell(turn, match.group("command"))
        if not ok:
            return f"The command did not run to its end. {output}".strip()
        return output.strip() or "The command finished."

    # ---- tools -------------------------------------------------------------------------------

    def new_tool_call(self, turn: Turn, title: str, kind: str, raw_input: dict, status: str) -> dict:
        call = {"toolCallId": f"call-{next(self.tool_call_ids)}", "title": title, "kind": kind,
                "status": status, "rawInput": raw_input}
        turn.update({"sessionUpdate": "tool_call", **call})
        return call

    def finish_tool_call(self, turn: Turn, call: dict, status: str, text: str, **extra) -> None:
        content = [{"type": "content", "content": {"type": "text", "text": text}}]
        turn.update({"sessionUpdate": "tool_call_update", "toolCallId": call["toolCallId"],
                     "status": status, "content": content, **extra})

    def allowed(self, turn: Turn, call: dict) -> bool:
        params = {"sessionId": turn.session.id, "toolCall": call, "options": PERMISSION_OPTIONS}
        answer = self.wire.request("session/request_permission", params, cancelled=turn.cancelled)
        outcome = ((answer or {}).get("result") or {}).get("outcome") or {}
        return outcome.get("outcome") == "selected" and outcome.get("optionId") == "allow"

    def command_allowed(self, turn: Turn, call: dict) -> bool:
        """The permission for a shell command's tool call."""
        return self.allowed(turn, call)

    def read_file(self, turn: Turn, path: str) -> str | None:
        """A `read` tool call behind a permission; the word of the file, or None."""
        call = self.new_tool_call(turn, f"Read {path}", "read", {"path": path}, "pending")
        if not self.allowed(turn, call):
            self.finish_tool_call(turn, call, "failed", "Permission refused.")
            return None
        try:
            text = Path(path).read_text(errors="replace")
        except OSError as exc:
            self.finish_tool_call(turn, call, "failed", str(exc))
            return None
        self.finish_tool_call(turn, call, "completed", text)
        marker = re.search(r"\b[A-Z][A-Z0-9]*-[A-Za-z0-9]+\b", text)
        return marker.group(0) if marker and len(text.split()) > 1 else text.strip()

    def run_shell(self, turn: Turn, command: str) -> tuple[bool, str]:
        """An `execute` tool call behind a permission. Returns (ran to exit 0, output)."""
        call = self.new_tool_call(turn, command, "execute", {"command": command}, "pending")
        if not self.command_allowed(turn, call):
            self.finish_tool_call(turn, call, "failed", "Permission refused.")
            return False, "Permission refused."
        turn.update({"sessionUpdate": "tool_call_update", "toolCallId": call["toolCallId"],
                     "status": "in_progress"})
        code, output = self.execute(turn, command)
        status = "completed" if code == 0 and not turn.cancelled.is_set() else "failed"
        self.finish_tool_call(turn, call, status, output, rawOutput={"exitCode": code})
        return status == "completed", output

    def start_command(self, turn: Turn, command: str) -> subprocess.Popen:
        # Its own process group, so that a cancel stops the shell and all that it started.
        return subprocess.Popen(
            ["/bin/sh", "-c", command], cwd=turn.session.cwd, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def execute(self, turn: Turn, command: str) -> tuple[int | None, str]:
        if turn.cancelled.is_set():
            return None, "Cancelled."
        try:
            process = self.start_command(turn, command)
        except OSError as exc:
            return None, str(exc)
        self.groups.add(process.pid, turn)
        if turn.cancelled.is_set():
            self.stop_commands(turn)  # the cancel came while the command started (a hook: a fixture may not kill)
        try:
            output, _ = process.communicate()
        finally:
            self.groups.release(process.pid)
        return process.returncode, output.decode("utf-8", errors="replace")

    def open_mcp_call(self, turn: Turn, server: McpClient, tool: str, arguments: dict) -> dict | None:
        """The tool call that shows an MCP call to the client; None when it may not run."""
        return self.new_tool_call(turn, tool, "other", arguments, "in_progress")

    def call_tool(self, turn: Turn, server: McpClient, tool: str, arguments: dict) -> dict | None:
        """An MCP tool call, shown to the client as a tool call of kind `other`."""
        call = self.open_mcp_call(turn, server, tool, arguments)
        if call is None:
            return None
        result = server.call(tool, arguments, turn.cancelled)
        ok = result is not None and not result.get("isError")
        texts = text_contents(result or {})
        self.finish_tool_call(turn, call, "completed" if ok else "failed",
                              "\n".join(texts) or ("No answer." if result is None else ""),
                              rawOutput=result)
        return result if ok else None

    # ---- cancel and exit ---------------------------------------------------------------------

    def cancel(self, params: dict) -> None:
        session = self.sessions.get(params.get("sessionId"))
        turn = session.turn if session else None
        if turn is not None:
            self.cancel_turn(turn)

    def cancel_turn(self, turn: Turn) -> None:
        turn.cancelled.set()  # also makes a pending permission request moot
        self.stop_commands(turn)
        self.answer_cancel(turn)

    def stop_commands(self, turn: Turn) -> None:
        self.groups.kill(self.groups.of(turn))

    def answer_cancel(self, turn: Turn) -> None:
        turn.answer("cancelled")

    def before_shutdown(self) -> None:
        """Called once as the agent stops, before its commands and MCP servers are stopped."""

    def shutdown(self, code: int) -> None:
        """Stop every command and MCP server of ours, then exit."""
        if not self._stopping.acquire(blocking=False):
            return
        self.before_shutdown()
        for session in list(self.sessions.values()):
            if session.turn is not None:
                session.turn.cancelled.set()
        groups = self.groups.of()
        self.groups.signal(groups, signal.SIGTERM)
        if groups:
            time.sleep(0.1)
        self.groups.signal(groups, signal.SIGKILL)
        close_mcp_servers([c for s in self.sessions.values() for c in s.mcp.values()])
        log(f"exit {code}")
        os._exit(code)  # worker threads may still block on pipes; nothing of theirs matters now


def main(argv: list[str] | None = None, agent_class: type[Agent] = Agent) -> None:
    parser = argparse.ArgumentParser(description="The reference ACP agent of acp-journeys.")
    parser.add_argument("--latency", type=float, default=0.0, metavar="SECONDS",
                        help="wait this long before each reply, as a model would (for benchmarks)")
    args = parser.parse_args(argv)
    agent = agent_class()
    agent.latency = max(0.0, args.latency)
    signal.signal(signal.SIGTERM, lambda *_: agent.shutdown(0))
    agent.run()


if __name__ == "__main__":
    main()
