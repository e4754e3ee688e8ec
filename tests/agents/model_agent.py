#!/usr/bin/env python3
"""A small "agent with a model" for the tests: an ACP v1 agent that asks a model what to do.

Unlike the bundled reference agent it understands no prompt itself: every turn goes to an
OpenAI-compatible Chat Completions endpoint (OPENAI_BASE_URL, OPENAI_API_KEY, model
MODEL_AGENT_MODEL), streamed, with tools, and the agent only does what the model asks. So run
against acp-journeys' scripted model endpoint, it is judged on its plumbing alone, as a real
agent would be.

What it has (the standard library and the `openai` client only):
- the tools `bash` (run with /bin/sh in its own process group, after session/request_permission),
  `read_file`, and the tools of the stdio MCP servers of session/new and session/load, started
  with a minimal MCP client and offered to the model as `mcp__<server>__<tool>`;
- sessions kept on disk under $MODEL_AGENT_STATE (default: a folder in the temp dir) so that
  session/load in a new process goes on with the same conversation;
- modes default/plan, image prompts, session/cancel (the running command is killed and the turn
  answers `cancelled` at once), and exit on stdin EOF with every child and MCP server stopped.

How it offers tools to the model (`--tools`), each the way a real agent does, so that the
stub is tested against each (none of these is a defect):
  functions  (default) the tools above as function tools
  ipython    one tool, `ipython {code}` (prime-agent's; like it, with no permission request): a
             Python cell run here with top-level await, where a line `!command` runs a shell command and the MCP tools are reached
             with `await mcp.call_tool(server, tool, arguments)`, as the system prompt says
  markdown   no tools in the request (gptme's way): the system prompt shows a ```shell block,
             the agent runs each such block of the model's reply and sends its output back as
             a system message
  --vision-side-call   an image of a prompt goes to the model in a request of its own with no
             tools ("Describe this image."), and the turn carries only that description
             (Hermes' way)
  --background-tasks   `bash` has a `run_in_background` argument and refuses a foreground
             `sleep` of 25 s or more with Claude Code's words ("... use run_in_background:
             true ..."); a background command is its turn's, killed on session/cancel
  --no-procps  its commands find no procps tool (pgrep, ps, ...) on PATH, as in a slim image
             (Debian's and the runner image's have none)

Defects, one flag each, for the tests that check that the journeys catch them:
  --keep-background    with --background-tasks: a cancel leaves the background commands running
                       (stopped only at exit), as Claude Code does
  --drop-image         image blocks of a prompt never reach the model
  --forget-on-restart  session/load succeeds but the loaded conversation is empty
  --wrong-tool         a call of an MCP tool goes to the other tool of its server
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import io
import itertools
import re
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

MCP_PROTOCOL_VERSION = "2025-06-18"
MAX_STEPS = 12  # model calls in one turn
MODES = [{"id": "default", "name": "Default"}, {"id": "plan", "name": "Plan"}]
PERMISSION_OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]
SYSTEM_PROMPT = ("You are a coding agent. Use the tools to act; the user sees only your final reply. "
                 "In Plan mode, do not change any file.")
BUILTIN_TOOLS = [
    {"type": "function", "function": {
        "name": "bash", "description": "Run a shell command in the session folder and return its output.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}},
    {"type": "function", "function": {
        "name": "read_file", "description": "Read a text file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}},
]


IPYTHON_TOOL = {"type": "function", "function": {
    "name": "ipython", "description": "Execute Python code in a persistent IPython-like cell; `!command` runs a shell command.",
    "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}}
IPYTHON_PROMPT = ("Your only tool is `ipython`, a Python cell. A line `!command` runs a shell command. Your MCP "
                  "servers are reached from the cell: call a tool with "
                  "`await mcp.call_tool(\"<server>\", \"<tool>\", arguments)`.")
MARKDOWN_PROMPT = ("You have no function tools. To run a shell command, write it in a fenced block, and its output "
                   "comes back in the next message:\n```shell\nls -la\n```")
BACKGROUND_ARGUMENT = {"type": "boolean", "description": "Set to true to run this command in the background."}
LONG_SLEEP = re.compile(r"^\s*sleep\s+(?P<seconds>\d+)\s*$")
BLOCKED = ("<tool_use_error>Blocked: standalone {command}. To wait for a command you started, use "
           "run_in_background: true. Do not chain shorter sleeps to work around this block.</tool_use_error>")
SHELL_BLOCK = re.compile(r"^```(?:shell|bash|sh)[^\n]*\n(.*?)^```", re.S | re.M)


def log(message: str) -> None:
    try:
        sys.stderr.write(f"[model-agent {os.getpid()}] {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Peer:
    """JSON-RPC over NDJSON on one stream: one line a message, writes under a lock, our own
    requests paired with their answers."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.waiting: dict[int, queue.Queue] = {}
        self.closed = False

    def send(self, message: dict) -> None:
        data = (json.dumps(message) + "\n").encode()
        with self.lock:
            try:
                self.stream.write(data)
                self.stream.flush()
            except (OSError, ValueError):
                pass

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def respond(self, request_id: Any, result: dict) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def error(self, request_id: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def request(self, method: str, params: dict, timeout: float = 60,
                cancelled: threading.Event | None = None) -> dict | None:
        """The answer, or None on timeout, on cancel or when the other side is gone."""
        if self.closed:
            return None
        request_id = next(self.ids)
        box: queue.Queue = queue.Queue(maxsize=1)
        self.waiting[request_id] = box
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and not self.closed:
                if cancelled is not None and cancelled.is_set():
                    return None
                try:
                    return box.get(timeout=0.05)
                except queue.Empty:
                    continue
            return None
        finally:
            self.waiting.pop(request_id, None)

    def deliver(self, message: dict) -> None:
        box = self.waiting.get(message.get("id"))  # type: ignore[arg-type]
        if box is not None:
            box.put(message)

    def close(self) -> None:
        self.closed = True


PROCPS = {"pgrep", "pkill", "pidof", "pwait", "ps", "top", "watch"}


def path_without_procps(state: Path) -> str:
    """One folder of links to every command on PATH but procps's: a PATH as in a slim image."""
    folder = state / f"no-procps-{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        with contextlib.suppress(OSError):
            for entry in os.scandir(directory):
                link = folder / entry.name
                if entry.name not in PROCPS and not link.exists() and os.access(entry.path, os.X_OK):
                    link.symlink_to(entry.path)
    return str(folder)


def kill_group(pgid: int) -> None:
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, signum)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.05)


class McpServer:
    """One stdio MCP server, in a process group of its own."""

    def __init__(self, spec: dict) -> None:
        self.name = str(spec.get("name") or "server")
        env = {**os.environ, **{e["name"]: e["value"] for e in spec.get("env") or []}}
        self.proc = subprocess.Popen([spec["command"], *(spec.get("args") or [])], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, start_new_session=True)
        self.peer = Peer(self.proc.stdin)
        self.tools: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if "method" in message and "id" in message:  # the server's own requests: ping only
                if message["method"] == "ping":
                    self.peer.respond(message["id"], {})
                else:
                    self.peer.error(message["id"], -32601, "not supported")
            elif "id" in message:
                self.peer.deliver(message)
        self.peer.close()

    def handshake(self) -> None:
        init = {"protocolVersion": MCP_PROTOCOL_VERSION, "capabilities": {},
                "clientInfo": {"name": "model-agent", "version": "1"}}
        if not (self.peer.request("initialize", init, timeout=10) or {}).get("result"):
            raise RuntimeError("no answer to initialize")
        self.peer.notify("notifications/initialized", {})
        listing = (self.peer.request("tools/list", {}, timeout=10) or {}).get("result") or {}
        self.tools = [t for t in listing.get("tools") or [] if isinstance(t, dict) and t.get("name")]

    def call(self, tool: str, arguments: dict, cancelled: threading.Event) -> tuple[bool, str]:
        answer = self.peer.request("tools/call", {"name": tool, "arguments": arguments}, timeout=30,
                                   cancelled=cancelled)
        if answer is None:
            return False, "The tool server gave no answer."
        if "error" in answer:
            return False, str(answer["error"].get("message"))
        result = answer.get("result") or {}
        texts = [c.get("text", "") for c in result.get("content") or [] if c.get("type") == "text"]
        text = "\n".join(texts) or json.dumps(result.get("structuredContent") or {})
        return not result.get("isError"), text

    def close(self) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            kill_group(self.proc.pid)
            try:
                self.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass


class Session:
    def __init__(self, session_id: str, cwd: str, messages: list[dict], state: Path) -> None:
        self.id, self.cwd, self.messages = session_id, cwd, messages
        self.mode = "default"
        self.mcp: dict[str, McpServer] = {}
        self.turn: Turn | None = None
        self.path = state / "sessions" / f"{session_id}.json"

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"cwd": self.cwd, "messages": without_images(self.messages)}))
        tmp.replace(self.path)

    def tool_specs(self, style: str = "functions", background: bool = False) -> list[dict]:
        if style == "ipython":
            return [IPYTHON_TOOL]
        if style == "markdown":
            return []
        specs = json.loads(json.dumps(BUILTIN_TOOLS))
        if background:
            specs[0]["function"]["parameters"]["properties"]["run_in_background"] = BACKGROUND_ARGUMENT
        for server in self.mcp.values():
            for tool in server.tools:
                specs.append({"type": "function", "function": {
                    "name": f"mcp__{server.name}__{tool['name']}", "description": tool.get("description") or "",
                    "parameters": tool.get("inputSchema") or {"type": "object", "properties": {}}}})
        return specs


def without_images(messages: list[dict]) -> list[dict]:
    """Messages as stored: an image is kept as a note, not as its bytes."""
    kept = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = [p if p.get("type") != "image_url" else {"type": "text", "text": "[an image]"} for p in content]
            message = {**message, "content": content}
        kept.append(message)
    return kept


class Turn:
    def __init__(self, request_id: Any) -> None:
        self.request_id = request_id
        self.cancelled = threading.Event()
        self.answered = threading.Lock()
        self.done = False
        self.groups: set[int] = set()


class Agent:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.all_groups: set[int] = set()  # every command's process group, for the exit
        self.wire = Peer(sys.stdout.buffer)
        self.sessions: dict[str, Session] = {}
        default_state = Path(tempfile.gettempdir()) / "acp-journeys-model-agent"
        self.state = Path(os.environ.get("MODEL_AGENT_STATE") or default_state)
        self.call_ids = itertools.count(1)
        self.stopping = threading.Lock()
        self.command_env = {**os.environ, "PATH": path_without_procps(self.state)} if args.no_procps else None
        self._client = None

    # ---- the model ---------------------------------------------------------------------------

    def client(self) -> Any:
        if self._client is None:
            import openai  # loaded at the first turn: initialize answers at once

            self._client = openai.OpenAI(base_url=os.environ.get("OPENAI_BASE_URL"),
                                         api_key=os.environ.get("OPENAI_API_KEY") or "none",
                                         max_retries=1, timeout=60)
        return self._client

    # ---- the read loop -----------------------------------------------------------------------

    def run(self) -> None:
        for raw in sys.stdin.buffer:
            try:
                message = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if "method" not in message:
                self.wire.deliver(message)
                continue
            try:
                self.dispatch(message)
            except Exception as exc:  # one bad request never ends the agent
                log(f"{message.get('method')}: {type(exc).__name__}: {exc}")
                if "id" in message:
                    self.wire.error(message["id"], -32603, f"{type(exc).__name__}: {exc}")
        self.shutdown()

    def dispatch(self, message: dict) -> None:
        method, params, request_id = message["method"], message.get("params") or {}, message.get("id")
        if method == "initialize":
            self.wire.respond(request_id, {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": True,
                                      "promptCapabilities": {"image": True, "audio": False, "embeddedContext": False},
                                      "mcpCapabilities": {"http": False, "sse": False}},
                "agentInfo": {"name": "model-agent", "version": "1"}, "authMethods": []})
        elif method == "session/new":
            session = Session(uuid.uuid4().hex, params.get("cwd") or os.getcwd(), [], self.state)
            self.open(session, params)
            session.save()
            self.wire.respond(request_id, {"sessionId": session.id, "modes": self.modes(session)})
        elif method == "session/load":
            self.load(request_id, params)
        elif method == "session/set_mode":
            session = self.sessions[params["sessionId"]]
            if params.get("modeId") not in {m["id"] for m in MODES}:
                self.wire.error(request_id, -32602, f"unknown mode {params.get('modeId')}")
                return
            session.mode = params["modeId"]
            self.wire.notify("session/update", {"sessionId": session.id, "update": {
                "sessionUpdate": "current_mode_update", "currentModeId": session.mode}})
            self.wire.respond(request_id, {})
        elif method == "session/prompt":
            self.prompt(request_id, params)
        elif method == "session/cancel":
            self.cancel(params)
        elif request_id is not None:
            self.wire.error(request_id, -32601, f"Method not found: {method}")

    def modes(self, session: Session) -> dict:
        return {"currentModeId": session.mode, "availableModes": MODES}

    def open(self, session: Session, params: dict) -> None:
        self.sessions[session.id] = session
        for spec in params.get("mcpServers") or []:
            if "command" not in spec:
                continue  # http/sse servers: not advertised, not started
            try:
                server = McpServer(spec)
            except OSError as exc:
                log(f"MCP {spec.get('name')}: {exc}")
                continue
            session.mcp[server.name] = server
            try:
                server.handshake()
            except RuntimeError as exc:
                log(f"MCP {server.name}: {exc}")

    def load(self, request_id: Any, params: dict) -> None:
        path = self.state / "sessions" / f"{params.get('sessionId')}.json"
        try:
            stored = json.loads(path.read_text())
        except (OSError, ValueError):
            self.wire.error(request_id, -32002, f"Unknown session: {params.get('sessionId')}")
            return
        messages = [] if self.args.forget_on_restart else stored.get("messages") or []
        session = Session(params["sessionId"], params.get("cwd") or stored.get("cwd"), messages, self.state)
        self.open(session, params)
        for message in messages:  # the replay that ACP asks for
            text = message.get("content") if isinstance(message.get("content"), str) else None
            if message.get("role") == "user" and isinstance(message.get("content"), list):
                text = "\n".join(p.get("text", "") for p in message["content"] if p.get("type") == "text")
            kind = {"user": "user_message_chunk", "assistant": "agent_message_chunk"}.get(message.get("role"))
            if kind and text:
                self.wire.notify("session/update", {"sessionId": session.id, "update": {
                    "sessionUpdate": kind, "content": {"type": "text", "text": text}}})
        self.wire.respond(request_id, {"modes": self.modes(session)})

    # ---- turns -------------------------------------------------------------------------------

    def prompt(self, request_id: Any, params: dict) -> None:
        session = self.sessions.get(params.get("sessionId"))
        if session is None:
            self.wire.error(request_id, -32602, "Unknown session")
            return
        if session.turn is not None:
            self.wire.error(request_id, -32603, "A turn is already running")
            return
        parts: list[dict] = []
        for block in params.get("prompt") or []:
            if block.get("type") == "text":
                parts.append({"type": "text", "text": block.get("text", "")})
            elif block.get("type") == "image" and not self.args.drop_image:
                url = f"data:{block.get('mimeType', 'image/png')};base64,{block.get('data', '')}"
                parts.append({"type": "image_url", "image_url": {"url": url}})
        turn = session.turn = Turn(request_id)
        if self.args.vision_side_call:
            parts = self.describe_images(parts)
        threading.Thread(target=self.run_turn, args=(session, turn, parts), daemon=True).start()

    def update(self, session: Session, update: dict) -> None:
        self.wire.notify("session/update", {"sessionId": session.id, "update": update})

    def answer(self, session: Session, turn: Turn, stop_reason: str) -> None:
        with turn.answered:
            if turn.done:
                return
            turn.done = True
        if session.turn is turn:
            session.turn = None
        self.wire.respond(turn.request_id, {"stopReason": stop_reason})

    def describe_images(self, parts: list[dict]) -> list[dict]:
        """Each image replaced by what a side request with no tools says it contains."""
        described = []
        for part in parts:
            if part.get("type") != "image_url":
                described.append(part)
                continue
            try:
                answer = self.client().chat.completions.create(
                    model=os.environ.get("MODEL_AGENT_MODEL") or "stub-model",
                    messages=[{"role": "user", "content": [{"type": "text", "text": "Describe this image."}, part]}])
                text = answer.choices[0].message.content or ""
            except Exception as exc:
                text = f"(the image could not be described: {exc})"
            described.append({"type": "text", "text": f"[The user attached an image. Here's what it contains: {text}]"})
        return described

    def run_turn(self, session: Session, turn: Turn, parts: list[dict]) -> None:
        session.messages.append({"role": "user", "content": parts})
        try:
            for _ in range(MAX_STEPS):
                if turn.cancelled.is_set():
                    break
                text, calls = self.ask_model(session, turn)
                if turn.cancelled.is_set():
                    break
                message: dict[str, Any] = {"role": "assistant", "content": text or None}
                if calls:
                    message["tool_calls"] = calls
                session.messages.append(message)
                if self.args.tools == "markdown":
                    blocks = SHELL_BLOCK.findall(text or "")
                    if not blocks:
                        break
                    output = self.bash(session, turn, blocks[0].strip())
                    session.messages.append({"role": "system", "content": f"Ran the command; its output:\n{output}"})
                    continue
                if not calls:
                    break
                for call in calls:
                    output = self.run_tool(session, turn, call["function"]["name"], call["function"]["arguments"])
                    session.messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
        except Exception as exc:
            log(f"turn: {type(exc).__name__}: {exc}")
            if not turn.cancelled.is_set():
                self.update(session, {"sessionUpdate": "agent_message_chunk",
                                      "content": {"type": "text", "text": f"The model failed: {exc}"}})
        session.save()  # before the answer: the client may restart us right after it
        self.answer(session, turn, "cancelled" if turn.cancelled.is_set() else "end_turn")

    def ask_model(self, session: Session, turn: Turn) -> tuple[str, list[dict]]:
        """One streamed completion: the text (sent on as it comes) and the tool calls."""
        style = self.args.tools
        extra = {"ipython": IPYTHON_PROMPT, "markdown": MARKDOWN_PROMPT}.get(style, "")
        messages = [{"role": "system", "content": f"{SYSTEM_PROMPT} The mode is {session.mode}. {extra}".strip()},
                    *session.messages]
        tools = session.tool_specs(style, self.args.background_tasks)
        stream = self.client().chat.completions.create(
            model=os.environ.get("MODEL_AGENT_MODEL") or "stub-model", messages=messages,
            **({"tools": tools} if tools else {}), stream=True, stream_options={"include_usage": True})
        text = ""
        calls: dict[int, dict] = {}
        for chunk in stream:
            if turn.cancelled.is_set():
                stream.close()
                break
            for choice in chunk.choices:
                delta = choice.delta
                if delta.content:
                    text += delta.content
                    self.update(session, {"sessionUpdate": "agent_message_chunk",
                                          "content": {"type": "text", "text": delta.content}})
                for part in delta.tool_calls or []:
                    entry = calls.setdefault(part.index, {"id": "", "type": "function",
                                                          "function": {"name": "", "arguments": ""}})
                    entry["id"] = part.id or entry["id"]
                    if part.function is not None:
                        entry["function"]["name"] += part.function.name or ""
                        entry["function"]["arguments"] += part.function.arguments or ""
        return text, [calls[i] for i in sorted(calls)]

    # ---- tools -------------------------------------------------------------------------------

    def run_tool(self, session: Session, turn: Turn, name: str, raw_arguments: str) -> str:
        try:
            arguments = json.loads(raw_arguments or "{}")
        except ValueError:
            return "The arguments are not JSON."
        if name == "bash":
            return self.bash(session, turn, str(arguments.get("command") or ""),
                             background=self.args.background_tasks and arguments.get("run_in_background") is True)
        if name == "read_file":
            return self.read_file(session, turn, str(arguments.get("path") or ""))
        if name == "ipython" and self.args.tools == "ipython":
            return self.ipython(session, turn, str(arguments.get("code") or ""))
        if name.startswith("mcp__") and name.count("__") >= 2:
            server_name, tool = name[len("mcp__"):].split("__", 1)
            server = session.mcp.get(server_name)
            if server is not None:
                return self.mcp_call(session, turn, server, tool, arguments)
        return f"Unknown tool {name}."

    def tool_call(self, session: Session, title: str, kind: str, raw_input: dict) -> dict:
        call = {"toolCallId": f"call-{next(self.call_ids)}", "title": title, "kind": kind,
                "status": "pending", "rawInput": raw_input}
        self.update(session, {"sessionUpdate": "tool_call", **call})
        return call

    def finish(self, session: Session, call: dict, ok: bool, text: str) -> None:
        self.update(session, {"sessionUpdate": "tool_call_update", "toolCallId": call["toolCallId"],
                              "status": "completed" if ok else "failed",
                              "content": [{"type": "content", "content": {"type": "text", "text": text}}]})

    def permitted(self, session: Session, turn: Turn, call: dict) -> str | None:
        """None when the user allowed the call (and it is now in progress), else why not."""
        answer = self.wire.request("session/request_permission",
                                   {"sessionId": session.id, "toolCall": call, "options": PERMISSION_OPTIONS},
                                   timeout=600, cancelled=turn.cancelled)
        outcome = ((answer or {}).get("result") or {}).get("outcome") or {}
        if outcome.get("outcome") != "selected" or outcome.get("optionId") != "allow":
            self.finish(session, call, False, "Permission refused.")
            return "Permission refused by the user."
        self.update(session, {"sessionUpdate": "tool_call_update", "toolCallId": call["toolCallId"],
                              "status": "in_progress"})
        if turn.cancelled.is_set():
            self.finish(session, call, False, "Cancelled.")
            return "Cancelled."
        return None

    def bash(self, session: Session, turn: Turn, command: str, background: bool = False) -> str:
        raw = {"command": command, **({"run_in_background": True} if background else {})}
        call = self.tool_call(session, command, "execute", raw)
        long_sleep = LONG_SLEEP.match(command)
        if self.args.background_tasks and not background and long_sleep and int(long_sleep.group("seconds")) >= 25:
            text = BLOCKED.format(command=command.strip())  # before any permission, as Claude Code does
            self.finish(session, call, False, text)
            return text
        refused = self.permitted(session, turn, call)
        if refused is not None:
            return refused
        if background:
            process = subprocess.Popen(["/bin/sh", "-c", command], cwd=session.cwd, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                       env=self.command_env)
            self.all_groups.add(process.pid)
            if not self.args.keep_background:
                turn.groups.add(process.pid)
            text = f"Command running in background with ID: {process.pid}."
            self.finish(session, call, True, text)
            return text
        ok, text = self.run_command(session, turn, command)
        self.finish(session, call, ok, text)
        return text

    def ipython(self, session: Session, turn: Turn, code: str) -> str:
        """A Python cell: `!command` lines run in the shell, `mcp.call_tool` reaches the MCP servers."""
        # No permission request, as prime-agent's ACP mode sends none: Rondar's Plan mode
        # would refuse any cell, since a cell can do anything.
        call = self.tool_call(session, "IPython cell", "execute", {"code": code})
        agent = self

        class Mcp:
            async def call_tool(self, server: str, tool: str, arguments: dict | None = None) -> str:
                found = session.mcp.get(server)
                if found is None:
                    raise LookupError(f"no MCP server {server!r}")
                ok, text = agent.mcp_server_call(session, turn, found, tool, arguments or {})
                if not ok:
                    raise RuntimeError(text)
                return text

        def shell(command: str) -> None:
            ok, text = self.run_command(session, turn, command)
            print(text, end="")
            if not ok:
                raise RuntimeError(text)

        lines = []
        for line in code.splitlines():
            body = line.lstrip()
            lines.append(line[:len(line) - len(body)] + f"_shell({body[1:]!r})" if body.startswith("!") else line)
        out = io.StringIO()
        ok = True
        try:
            compiled = compile("\n".join(lines), "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            with contextlib.redirect_stdout(out):
                result = eval(compiled, {"mcp": Mcp(), "_shell": shell})
                if asyncio.iscoroutine(result):
                    asyncio.run(result)
        except Exception as exc:
            ok = False
            out.write(f"{type(exc).__name__}: {exc}\n")
        self.finish(session, call, ok, out.getvalue())
        return out.getvalue() if ok else f"Error\n{out.getvalue()}"

    def run_command(self, session: Session, turn: Turn, command: str) -> tuple[bool, str]:
        """Runs `command` with /bin/sh in its own process group; a cancel kills the group."""
        try:
            process = subprocess.Popen(["/bin/sh", "-c", command], cwd=session.cwd, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                       env=self.command_env)
        except OSError as exc:
            return False, f"The command did not start: {exc}"
        turn.groups.add(process.pid)
        self.all_groups.add(process.pid)
        if turn.cancelled.is_set():
            kill_group(process.pid)  # the cancel came while it started
        output, _ = process.communicate()
        turn.groups.discard(process.pid)
        text = output.decode("utf-8", errors="replace")
        ok = process.returncode == 0
        return ok, text if ok else f"Exit code {process.returncode}\n{text}"

    def read_file(self, session: Session, turn: Turn, path: str) -> str:
        call = self.tool_call(session, f"Read {path}", "read", {"path": path})
        try:
            text = Path(session.cwd, path).read_text(errors="replace")
        except OSError as exc:
            self.finish(session, call, False, str(exc))
            return f"Error: {exc}"
        self.finish(session, call, True, text)
        return text

    def mcp_call(self, session: Session, turn: Turn, server: McpServer, tool: str, arguments: dict) -> str:
        call = self.tool_call(session, tool, "other", arguments)
        ok, text = self.mcp_server_call(session, turn, server, tool, arguments)
        self.finish(session, call, ok, text)
        return text if ok else f"Error: {text}"

    def mcp_server_call(self, session: Session, turn: Turn, server: McpServer, tool: str,
                        arguments: dict) -> tuple[bool, str]:
        if self.args.wrong_tool:
            others = [t["name"] for t in server.tools if t["name"] != tool]
            tool = others[0] if others else tool
        return server.call(tool, arguments, turn.cancelled)

    # ---- cancel and exit ---------------------------------------------------------------------

    def cancel(self, params: dict) -> None:
        session = self.sessions.get(params.get("sessionId"))
        turn = session.turn if session else None
        if session is None or turn is None:
            return
        turn.cancelled.set()
        for pgid in list(turn.groups):
            kill_group(pgid)
        self.answer(session, turn, "cancelled")

    def shutdown(self) -> None:
        if not self.stopping.acquire(blocking=False):
            return
        self.wire.close()
        for session in self.sessions.values():
            if session.turn is not None:
                session.turn.cancelled.set()
                for pgid in list(session.turn.groups):
                    kill_group(pgid)
        for pgid in list(self.all_groups):  # also those of turns already answered
            kill_group(pgid)
        for session in self.sessions.values():
            for server in session.mcp.values():
                server.close()
        os._exit(0)  # the turn threads may block in the HTTP client: nothing of theirs matters now


def main() -> None:
    parser = argparse.ArgumentParser(description="An ACP agent that forwards prompts to a model endpoint.")
    parser.add_argument("--drop-image", action="store_true", help="image blocks never reach the model")
    parser.add_argument("--forget-on-restart", action="store_true", help="session/load loads an empty conversation")
    parser.add_argument("--wrong-tool", action="store_true", help="an MCP call goes to the other tool of its server")
    parser.add_argument("--tools", choices=["functions", "ipython", "markdown"], default="functions",
                        help="how tools are offered to the model")
    parser.add_argument("--background-tasks", action="store_true",
                        help="bash runs commands in the background on request and refuses a long foreground sleep")
    parser.add_argument("--keep-background", action="store_true",
                        help="with --background-tasks: a cancel leaves the background commands running")
    parser.add_argument("--no-procps", action="store_true",
                        help="its commands find no pgrep, ps or other procps tool on PATH")
    parser.add_argument("--vision-side-call", action="store_true",
                        help="images are described by a side request and the turn carries the description")
    agent = Agent(parser.parse_args())
    signal.signal(signal.SIGTERM, lambda *_: agent.shutdown())
    agent.run()


if __name__ == "__main__":
    main()
