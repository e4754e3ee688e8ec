"""The stub's Gemini dialect over real HTTP (`…/v1beta/models/<model>:generateContent` and
`:streamGenerateContent?alt=sse`, the routes Gemini CLI calls under GOOGLE_GEMINI_BASE_URL), in
the request shape of Gemini's API: a reply, the image-and-file turn with `read_file` and an
inline image, the shell command with `run_shell_command`, the Plan turn with MCP tools, a
`NONE` tool mode; and the hint that names the routes an agent asked for when the stub serves
none of them (it used to say that the agent sent no request at all)."""

from __future__ import annotations

import base64
import io
import json
import urllib.error
import urllib.request
from typing import Any

from PIL import Image

from acp_journeys.rules import prompts
from acp_journeys.rules.model_requests import NO_REQUEST, RequestRecord, hints
from acp_journeys.services.model_stub import ModelStub

MODEL = "gemini-2.5-flash"
TOOLS = [{"functionDeclarations": [
    {"name": "run_shell_command", "description": "Runs a shell command",
     "parametersJsonSchema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
    {"name": "read_file", "description": "Reads a file",
     "parameters": {"type": "OBJECT", "properties": {"absolute_path": {"type": "STRING"}}, "required": ["absolute_path"]}},
    {"name": "mcp_rondar_create_plan", "description": "Saves a plan",
     "parametersJsonSchema": {"type": "object", "properties": {"title": {"type": "string"}, "description": {"type": "string"}},
                              "required": ["title", "description"]}},
    {"name": "mcp_rondar_get_plan", "description": "Reads a plan",
     "parametersJsonSchema": {"type": "object", "properties": {"plan_id": {"type": "string"}}, "required": ["plan_id"]}},
]}]


def post(stub: ModelStub, route: str, body: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(f"{stub.url_for('t1')}/v1beta/models/{MODEL}:{route}", json.dumps(body).encode(),
                                     {"Content-Type": "application/json", "x-goog-api-key": "k"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def generate(stub: ModelStub, contents: list[dict], **extra: Any) -> dict[str, Any]:
    status, data = post(stub, "generateContent", {"contents": contents, "tools": TOOLS,
                                                  "systemInstruction": {"parts": [{"text": "You are an agent."}]}, **extra})
    assert status == 200, data
    answer = json.loads(data)
    [candidate] = answer["candidates"]
    assert candidate["finishReason"] == "STOP" and candidate["content"]["role"] == "model"
    assert answer["usageMetadata"]["totalTokenCount"] > 0
    [part] = candidate["content"]["parts"]
    return part


def user(*parts: dict) -> dict:
    return {"role": "user", "parts": list(parts)}


def called(part: dict) -> tuple[str, dict]:
    return part["functionCall"]["name"], part["functionCall"]["args"]


def test_reply_and_stream() -> None:
    with ModelStub() as stub:
        part = generate(stub, [user({"text": prompts.reply_exactly("REPLY-GEM1")})])
        assert part == {"text": "REPLY-GEM1"}
        status, data = post(stub, "streamGenerateContent?alt=sse",
                            {"contents": [user({"text": prompts.reply_exactly("REPLY-GEM2")})]})
        assert status == 200
        events = [json.loads(line[len("data: "):]) for line in data.decode().splitlines() if line.startswith("data: ")]
        assert len(events) > 1  # in pieces, as a real stream comes
        text = "".join(p.get("text", "") for e in events for c in e["candidates"] for p in c["content"]["parts"])
        assert text == "REPLY-GEM2"
        assert events[-1]["candidates"][0]["finishReason"] == "STOP" and "usageMetadata" in events[-1]
        records = stub.records.snapshot()
        assert [(r.dialect, r.stream, r.status) for r in records] == [("gemini-generate", False, 200),
                                                                      ("gemini-stream", True, 200)]


def test_the_image_and_file_turn() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), (255, 0, 0)).save(buffer, format="PNG")
    image = {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(buffer.getvalue()).decode()}}
    turn = [user({"text": prompts.image_and_file("/w/note.txt")}, image)]
    with ModelStub() as stub:
        first = generate(stub, turn)
        name, args = called(first)
        assert name == "read_file" and args == {"absolute_path": "/w/note.txt"}
        turn += [{"role": "model", "parts": [first]},
                 user({"functionResponse": {"name": "read_file", "response": {"output": "FILE-GEM3\n"}}})]
        assert generate(stub, turn) == {"text": "FILE-GEM3 red"}
        assert stub.records.snapshot()[0].image_decoded is True


def test_the_shell_command_and_the_plan_turn() -> None:
    with ModelStub() as stub:
        name, args = called(generate(stub, [user({"text": prompts.run_sleep()})]))
        assert (name, args) == ("run_shell_command", {"command": "sleep 120"})
        turn = [user({"text": prompts.plan_turn("/w/plan-input.txt", prompts.PLAN_TITLE_SAVED_PLAN)})]
        names = []
        outputs = {"run_shell_command": {"output": "INPUT-GEM4\n"}, "mcp_rondar_create_plan": {"output": '{"id": "PLAN-GEM5"}'},
                   "mcp_rondar_get_plan": {"output": '{"id": "PLAN-GEM5"}'}}
        for _ in range(4):
            part = generate(stub, turn)
            if "text" in part:
                break
            name, args = called(part)
            names.append(name)
            # With ids this time: a call and its response pair by id.
            part["functionCall"]["id"] = f"id-{len(names)}"
            turn += [{"role": "model", "parts": [part]},
                     user({"functionResponse": {"id": f"id-{len(names)}", "name": name, "response": outputs[name]}})]
        assert names == ["run_shell_command", "mcp_rondar_create_plan", "mcp_rondar_get_plan"]
        assert part == {"text": "PLAN-GEM5"}


def test_no_tools_when_the_mode_is_none_and_a_bad_request() -> None:
    with ModelStub() as stub:
        part = generate(stub, [user({"text": prompts.run_sleep()})],
                        toolConfig={"functionCallingConfig": {"mode": "NONE"}})
        assert "functionCall" not in part
        status, data = post(stub, "generateContent", {"contents": []})
        assert status == 400 and json.loads(data)["error"]["status"] == "INVALID_ARGUMENT"


def record(path: str, dialect: str | None, status: int) -> RequestRecord:
    return RequestRecord(seq=1, at=0.0, tag="turn-to-end", method="POST", path=path, dialect=dialect, status=status)


def test_the_hint_names_the_routes_the_agent_asked_for() -> None:
    assert hints([]) == [NO_REQUEST]
    asked = [record("/t/turn-to-end/v1beta/models/gemini-2.5-flash:countTokens", None, 404),
             record("/t/turn-to-end/v1beta/models/gemini-2.5-flash:countTokens", None, 404),
             record("/t/turn-to-end/api/generate", None, 404)]
    assert hints(asked) == ["the agent sent no request that the model endpoint serves: it asked for "
                            "POST /v1beta/models/gemini-2.5-flash:countTokens, POST /api/generate, which the stub "
                            "does not serve (404)"]
    # Once a served request came, the hints are about what it held, as before.
    assert hints(asked + [record("/t/turn-to-end/v1/chat/completions", "openai-chat", 200)]) == []
