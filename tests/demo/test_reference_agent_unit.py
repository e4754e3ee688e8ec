"""Fast tests of the bundled reference agent, driven over pipes with hand-written JSON-RPC.

Every frame that the agent writes is checked against the ACP v1 schema. Each agent process gets
a marker in its environment, so that the tests can find every process that it left behind
(commands and MCP servers inherit the environment).
"""

from __future__ import annotations

import base64
import json
import os
import queue
import re
import struct
import subprocess
import sys
import textwrap
import threading
import time
import uuid
import zlib
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "src/acp_journeys/demo/reference_agent.py"
SCHEMA = json.loads((ROOT / "src/acp_journeys/schemas/acp-schema-v1.json").read_text())

RESPONSE_TYPES = {
    "initialize": "InitializeResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/prompt": "PromptResponse",
}
REQUEST_TYPES = {
    "session/request_permission": "RequestPermissionRequest",
    "session/update": "SessionNotification",
}

SLEEP_PROMPT = "Run the shell command `sleep 120` and wait for it."

pytestmark = pytest.mark.timeout(30)


def validate(type_name: str, value) -> None:
    schema = {"$defs": SCHEMA["$defs"], "$ref": f"#/$defs/{type_name}"}
    jsonschema.Draft202012Validator(schema).validate(value)


def marked_pids(marker: str) -> set[int]:
    """The live processes whose environment holds the marker."""
    found = set()
    needle = f"REFAGENT_TEST_MARKER={marker}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.add(int(entry.name))
            except OSError:
                pass
    return found


class AgentProcess:
    """The client side of one agent process."""

    def __init__(self, state_dir: Path):
        self.marker = uuid.uuid4().hex
        env = {**os.environ, "ACP_REFERENCE_AGENT_STATE": str(state_dir),
               "REFAGENT_TEST_MARKER": self.marker}
        self.stderr = open(state_dir / f"stderr-{self.marker}.log", "wb")
        self.proc = subprocess.Popen([sys.executable, str(AGENT)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, env=env)
        self.lines: queue.Queue = queue.Queue()
        self.methods: dict[int, str] = {}
        self.next_id = 0
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        for raw in self.proc.stdout:
            self.lines.put(raw.decode())
        self.lines.put(None)

    def send(self, message: dict) -> None:
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> int:
        self.next_id += 1
        self.methods[self.next_id] = method
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def next_line(self, timeout: float) -> str:
        line = self.lines.get(timeout=timeout)
        assert line is not None, "the agent closed its stdout"
        return line

    def next_message(self, timeout: float = 5.0) -> dict:
        message = json.loads(self.next_line(timeout))
        if "method" in message:
            validate(REQUEST_TYPES[message["method"]], message["params"])
        elif "result" in message:
            validate(RESPONSE_TYPES[self.methods[message["id"]]], message["result"])
        return message

    def until(self, predicate, timeout: float = 5.0) -> tuple[dict, list[dict]]:
        """Read until a message matches; returns it and the messages before it."""
        before, deadline = [], time.monotonic() + timeout
        while True:
            message = self.next_message(max(0.01, deadline - time.monotonic()))
            if predicate(message):
                return message, before
            before.append(message)

    def call(self, method: str, params: dict, timeout: float = 5.0) -> tuple[dict, list[dict]]:
        request_id = self.request(method, params)
        return self.until(lambda m: m.get("id") == request_id and "method" not in m, timeout)

    def start(self, cwd: Path, mcp_servers: list | None = None) -> str:
        self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        answer, _ = self.call("session/new", {"cwd": str(cwd), "mcpServers": mcp_servers or []})
        return answer["result"]["sessionId"]

    def prompt(self, session_id: str, text: str, *extra_blocks: dict) -> int:
        blocks = [{"type": "text", "text": text}, *extra_blocks]
        return self.request("session/prompt", {"sessionId": session_id, "prompt": blocks})

    def run_turn(self, session_id: str, text: str, *extra_blocks: dict,
                 allow: bool = True) -> tuple[str, str]:
        """A whole turn, answering each permission request. Returns (reply text, stop reason)."""
        request_id = self.prompt(session_id, text, *extra_blocks)
        chunks = []
        while True:
            message = self.next_message()
            if message.get("method") == "session/request_permission":
                option = "allow" if allow else "reject"
                self.send({"jsonrpc": "2.0", "id": message["id"],
                           "result": {"outcome": {"outcome": "selected", "optionId": option}}})
            elif message.get("method") == "session/update":
                update = message["params"]["update"]
                if update["sessionUpdate"] == "agent_message_chunk":
                    chunks.append(update["content"]["text"])
            elif message.get("id") == request_id:
                return "".join(chunks), message["result"]["stopReason"]

    def close(self, timeout: float = 2.0) -> int:
        """Close the agent's stdin, as the journeys do, and wait for its exit code."""
        self.proc.stdin.close()
        return self.proc.wait(timeout=timeout)

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pid in marked_pids(self.marker):
            os.kill(pid, 9)
        self.pump.join(timeout=2)
        for stream in (self.proc.stdin, self.proc.stdout, self.stderr):
            stream.close()


@pytest.fixture
def agents(tmp_path):
    started = []

    def start() -> AgentProcess:
        agent = AgentProcess(tmp_path)
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.cleanup()


@pytest.fixture
def workspace(tmp_path):
    path = tmp_path / "workspace"
    path.mkdir()
    return path


def test_initialize_answer_has_the_integer_version_and_the_capabilities(agents):
    agent = agents()
    agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    line = agent.next_line(5)
    assert re.search(r'"protocolVersion":\s*1[,}]', line), line  # the raw token, not 1.0 or "1"
    result = json.loads(line)["result"]
    validate("InitializeResponse", result)
    capabilities = result["agentCapabilities"]
    assert capabilities["loadSession"] is True
    assert capabilities["promptCapabilities"]["image"] is True
    assert result["agentInfo"]["name"] == "acp-journeys-reference-agent"


def test_reply_turn_streams_the_marker_and_ends_the_turn(agents, workspace):
    agent = agents()
    session_id = agent.start(workspace)
    prompt = "Reply with exactly REPLY-1A2B3C4D and nothing else."
    reply, stop_reason = agent.run_turn(session_id, prompt)
    assert reply == "REPLY-1A2B3C4D"
    assert stop_reason == "end_turn"
    assert list(workspace.iterdir()) == []  # nothing written in the workspace


def test_stdin_eof_ends_the_agent_well_within_rondars_bound(agents, workspace):
    agent = agents()
    agent.start(workspace)
    assert agent.close(timeout=5.0) == 0  # Rondar gives 10 s; it ends at once (room for load)
    assert marked_pids(agent.marker) == set()


def test_session_load_after_a_restart_replays_the_history(agents, workspace):
    first = agents()
    session_id = first.start(workspace)
    remember = "Remember this word: WORD-5E6F7A8B. Reply with exactly ACK and nothing else."
    assert first.run_turn(session_id, remember) == ("ACK", "end_turn")
    assert first.close() == 0

    second = agents()
    second.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    load = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    answer, replay = second.call("session/load", load)
    assert "error" not in answer
    assert answer["result"]["modes"]["currentModeId"] == "default"
    replayed = [m["params"]["update"] for m in replay]
    updates = [(u["sessionUpdate"], u["content"]["text"]) for u in replayed]
    assert updates == [("user_message_chunk", remember), ("agent_message_chunk", "ACK")]
    ask = "What is the word that I asked you to remember? Reply with the word and nothing else."
    assert second.run_turn(session_id, ask) == ("WORD-5E6F7A8B", "end_turn")


def test_session_load_of_an_unknown_session_is_an_error(agents, workspace):
    agent = agents()
    agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    load = {"sessionId": "nosuchsession", "cwd": str(workspace), "mcpServers": []}
    answer, _ = agent.call("session/load", load)
    assert answer["error"]["code"] in (-32002, -32602)


def test_cancel_stops_the_sleep_and_answers_cancelled_at_once(agents, workspace):
    agent = agents()
    session_id = agent.start(workspace)
    prompt_id = agent.prompt(session_id, SLEEP_PROMPT)
    tool_call, _ = agent.until(lambda m: m.get("method") == "session/update"
                               and m["params"]["update"]["sessionUpdate"] == "tool_call")
    assert tool_call["params"]["update"]["kind"] == "execute"
    permission, _ = agent.until(lambda m: m.get("method") == "session/request_permission")
    agent.send({"jsonrpc": "2.0", "id": permission["id"],
                "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
    agent.until(lambda m: m.get("method") == "session/update"
                and m["params"]["update"].get("status") == "in_progress")
    deadline = time.monotonic() + 3
    while len(marked_pids(agent.marker)) < 2:  # the agent and its sleep
        assert time.monotonic() < deadline, "the sleep did not start"
        time.sleep(0.02)

    agent.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}})
    answer, _ = agent.until(lambda m: m.get("id") == prompt_id and "method" not in m, timeout=5.0)
    assert answer["result"]["stopReason"] == "cancelled"  # at once: the sleep (120 s) did not end it
    deadline = time.monotonic() + 5.0
    while marked_pids(agent.marker) - {agent.proc.pid}:
        assert time.monotonic() < deadline, "the sleep is still running"
        time.sleep(0.02)
    assert agent.close() == 0


def red_png(size: int = 64) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * size for _ in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + body


def test_file_and_image_turn_names_the_word_and_the_colour(agents, workspace, tmp_path):
    note = tmp_path / "note.txt"
    note.write_text("FILE-AB12CD34\n")
    agent = agents()
    session_id = agent.start(workspace)
    image = {"type": "image", "mimeType": "image/png", "data": base64.b64encode(red_png()).decode()}
    prompt = (f"Read the file {note} and look at the attached image. "
              "Reply with the word that the file holds and the colour of the image, and nothing else.")
    assert agent.run_turn(session_id, prompt, image) == ("FILE-AB12CD34 red", "end_turn")


FAKE_MCP_SERVER = textwrap.dedent('''
    import json, sys
    log = open(sys.argv[1], "a")
    def send(m): sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        m = json.loads(line); log.write(line); log.flush()
        if "id" not in m: continue
        if m["method"] == "initialize":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-06-18",
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "rondar", "version": "0"}}})
        elif m["method"] == "tools/list":
            get_plan = {"type": "object", "properties": {"plan_id": {}}}
            tools = [{"name": "create_plan", "inputSchema": {"type": "object"}},
                     {"name": "get_plan", "inputSchema": get_plan}]
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": tools}})
        else:
            text = "Saved the plan PLAN-77AA" if m["params"]["name"] == "create_plan" else "a plan"
            content = [{"type": "text", "text": text}]
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": content}})
''')


def test_plan_turn_saves_the_plan_on_the_mcp_server_and_replies_its_id(agents, workspace, tmp_path):
    server, calls = tmp_path / "fake_mcp.py", tmp_path / "mcp.log"
    server.write_text(FAKE_MCP_SERVER)
    (tmp_path / "input.txt").write_text("step one\n")
    agent = agents()
    session_id = agent.start(workspace, [{"name": "rondar", "command": sys.executable,
                                          "args": [str(server), str(calls)], "env": []}])
    agent.call("session/set_mode", {"sessionId": session_id, "modeId": "plan"})
    prompt = (f"Run the shell command `cat {tmp_path / 'input.txt'}`. "
              'Then call the tool create_plan of the rondar tool server with the title "T1" '
              "and a description that holds the output of cat. "
              "Then call the tool get_plan of the rondar tool server "
              "with the plan ID that create_plan returned. "
              "Reply with the plan ID and nothing else.")
    assert agent.run_turn(session_id, prompt) == ("PLAN-77AA", "end_turn")
    assert agent.close() == 0
    received = map(json.loads, calls.read_text().splitlines())
    tool_calls = [m["params"] for m in received if m.get("method") == "tools/call"]
    assert tool_calls == [
        {"name": "create_plan", "arguments": {"title": "T1", "description": "step one\n"}},
        {"name": "get_plan", "arguments": {"plan_id": "PLAN-77AA"}},
    ]
    assert list(workspace.iterdir()) == []
    assert marked_pids(agent.marker) == set()  # the MCP server ended with the agent
