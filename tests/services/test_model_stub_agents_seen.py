"""The stub against what released agents send, over real HTTP (issue "the scripted model plays the
model for the agents people use").

tests/data/model-requests/ holds requests that Claude Code (through claude-agent-acp) sent to the
stub, cut down (system prompt and tool list shortened, paths of the machine replaced): a title
request, the turn of stop-running-turn (its `messages` end with a `system` environment entry),
and a prompt-suggestion request; that turn again after its Bash tool refused the foreground
`sleep 120` (claude-code-sleep-refused.json: the refusal's text as Claude Code 2.1.318 gave it to
the stub on 2026-12-03); the same turn as gptme 0.35.1 sends it (tools in Markdown);
and Hermes 0.19.0's image-and-file requests (a vision side call, then the turn), cut down the
same way. The other agents' shapes are written here from what they send: Hermes'
image description, tools in Markdown, a Python cell as the only tool.

prime-agent-image.json and prime-agent-plan.json are the last requests of prime-agent 0.8.0 (built
from its source) in image-and-file and in a Plan prompt, cut down the same way.

gemini-cli-*.json are what Gemini CLI 0.61.0 (`--acp`, GOOGLE_GEMINI_BASE_URL at the stub) sent on
2026-12-03, cut down the same way (its system prompt shortened, the descriptions of tools other
than run_shell_command and read_file shortened, paths of the machine replaced, the markers
swapped for ones of the journeys' shape): a turn, the `sleep 120` turn, the countTokens it asks
before a turn with an image, the image-and-file turn, and its last request, after read_file
refused a path outside its workspace and `cat` ran instead (the output wrapped in
`<untrusted_context>`). It sent them to `:streamGenerateContent?alt=sse`; here they go to
`:generateContent` (the same request, answered as JSON) and the sleep one also to the stream.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from acp_journeys.rules import prompts
from acp_journeys.rules.evidence import JourneyEvidence
from acp_journeys.rules.judge import judge_journey
from acp_journeys.rules.model_requests import RequestRecord, clip
from acp_journeys.services.model_stub import ModelStub, hints
from acp_journeys.services.model_stub.conversation import Conversation, Decision, Message, ToolCall, ToolResult, ToolSpec
from acp_journeys.services.model_stub.script import decide
from acp_journeys.services.model_stub.shell_wait import wait_for

DATA = Path(__file__).parents[1] / "data" / "model-requests"


def recording(name: str) -> dict[str, Any]:
    body = json.loads((DATA / name).read_text())
    body["stream"] = False  # the same request, answered as plain JSON to read it here
    return body


def post_to(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def post(stub: ModelStub, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return post_to(stub.url_for("t1") + path, body)


def test_claude_code_turn_with_a_system_entry_gets_its_bash_call(stub: ModelStub) -> None:
    """Point 1: `messages` = [reminder, prompt], then a `system` environment entry: no 400."""
    body = recording("claude-code-sleep.json")
    assert [m["role"] for m in body["messages"]] == ["user", "system"]
    status, answer = post(stub, "/v1/messages", body)
    assert status == 200, answer
    assert answer["content"][0] == {**answer["content"][0], "type": "tool_use", "name": "Bash",
                                    "input": {**answer["content"][0]["input"], "command": "sleep 120"}}
    [record] = stub.records.snapshot(tag="t1")
    assert record.side_request is None and record.intent == "shell"


def test_claude_code_side_requests_are_no_turns_and_give_no_hints(stub: ModelStub) -> None:
    """Point 2: the title request quotes the prompt with no tools; the suggestion request comes
    after the turn. Both are answered briefly, marked as side requests, and the hint "no shell
    tool" (which the title request used to cause) is gone."""
    for name, word in (("claude-code-title.json", "title"), ("claude-code-suggestion.json", "suggest")):
        status, answer = post(stub, "/v1/messages", recording(name))
        assert status == 200 and answer["content"][0]["type"] == "text", answer
        assert answer["content"][0]["text"] == "OK."
        record = stub.records.snapshot(tag="t1")[-1]
        assert record.side_request is not None and word in record.side_request, record
    post(stub, "/v1/messages", recording("claude-code-sleep.json"))
    records = stub.records.snapshot(tag="t1")
    assert [r.side_request is None for r in records] == [False, False, True]
    assert records[0].intent == "other" and records[0].why.startswith("not about a journey")
    assert hints(records) == []
    # A turn with no shell tool still gets its hint: only side requests are left out.
    turn = RequestRecord.from_dict({**records[2].to_dict(), "why": "no shell tool offered: tools were []"})
    assert hints([records[0], turn]) == ["the agent offered no shell tool to the model"]


def test_a_trailing_system_block_that_says_suggest_is_not_a_side_request() -> None:
    """Point 2: only the newest user message can ask for a title or a suggestion."""
    conv = Conversation((Message("system", ("You are an agent.",)), Message("user", (prompts.run_sleep(),)),
                         Message("system", ("Do not suggest edits. Keep a summary of your work.",))),
                        (ToolSpec("bash", {"properties": {"command": {"type": "string"}}}),))
    decision = decide(conv)
    assert decision.side is None and decision.call is not None and decision.call.arguments == {"command": "sleep 120"}


def test_hermes_image_description_from_a_vision_side_call(stub: ModelStub) -> None:
    """Point 3: the side call with the image (no tools) is answered with its colour; the turn
    then carries only that description, and the colour is read from it."""
    import base64
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), (230, 10, 10)).save(buffer, format="PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    side = {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "Describe everything visible in this image."}, {"type": "image_url", "image_url": {"url": url}}]}]}
    status, answer = post(stub, "/v1/chat/completions", side)
    description = answer["choices"][0]["message"]["content"]
    assert status == 200 and description == "The image is mostly red."
    read = {"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}
    prompt = (prompts.image_and_file() + "\n\n[The user attached an image. Here's what it contains: "
              f"{description}]")
    turn = {"model": "m", "tools": [read], "messages": [
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "read_file", "arguments": json.dumps({"path": prompts.NOTE_PATH})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "FILE-ABCD1234\n"}]}
    status, answer = post(stub, "/v1/chat/completions", turn)
    assert status == 200 and answer["choices"][0]["message"]["content"] == "FILE-ABCD1234 red"
    side_record, turn_record = stub.records.snapshot(tag="t1")
    assert side_record.side_request and "describe" in side_record.side_request
    assert "describes it" in turn_record.why
    # The image reached the model in the side call: no hint says that it never did.
    assert hints([side_record, turn_record]) == []


def test_hermes_recorded_image_turn_gets_the_colour_from_the_description(stub: ModelStub) -> None:
    """Point 3 through what Hermes 0.19.0 sent in image-and-file: its vision side call (its own
    "Describe everything visible..." prompt with the journey's PNG, no tools, not streamed), then
    the turn whose user message starts with the description and has no image (the recording keeps
    3 of its 25 tools and the start of its system prompt; the description is the stub's answer)."""
    recorded = json.loads((DATA / "hermes-image.json").read_text())
    status, answer = post(stub, "/v1/chat/completions", recorded["vision"])
    assert status == 200 and answer["choices"][0]["message"]["content"] == "The image is mostly red."
    turn = {**recorded["turn"], "stream": False}
    assert turn["messages"][1]["content"].startswith("[The user attached an image.")
    status, answer = post(stub, "/v1/chat/completions", turn)
    assert status == 200, answer
    [call] = answer["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "read_file"
    assert json.loads(call["function"]["arguments"])["path"] == prompts.NOTE_PATH
    after = {**turn, "messages": turn["messages"] + [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"content": "1|FILE-ABCD1234\n2|"})}]}
    status, answer = post(stub, "/v1/chat/completions", after)
    assert status == 200 and answer["choices"][0]["message"]["content"] == "FILE-ABCD1234 red"
    side_record, first, last = stub.records.snapshot(tag="t1")
    assert side_record.side_request and side_record.image_present and not side_record.tools_offered
    assert first.side_request is None and last.side_request is None and not last.image_present
    assert "describes it" in last.why
    assert hints([side_record, first, last]) == []


GPTME_SYSTEM = ("You are gptme. You can run commands by writing them in code blocks.\n"
                "```shell\nls\n```\nThe output comes back in the next message.\n"
                "```ipython\nprint(1)\n```")


def test_tools_in_markdown_get_a_fenced_block_and_its_output_is_the_result() -> None:
    """Point 4: no `tools`, a system prompt that shows ```shell blocks: the command comes as a
    block; the message after it is the block's output; the turn then ends."""
    conv = Conversation((Message("system", (GPTME_SYSTEM,)), Message("user", (prompts.run_sleep(),))))
    first = decide(conv)
    assert first.call is None and first.text == "```shell\nsleep 120\n```" and first.side is None
    ran = Conversation(conv.messages + (Message("assistant", (first.text,)),
                                        Message("system", ("Ran command: `sleep 120`\nNo output",))))
    assert decide(ran).text == "Done: `sleep 120` finished."
    note = Conversation((Message("system", (GPTME_SYSTEM,)), Message("user", (prompts.image_and_file(),))))
    cat = decide(note)
    assert cat.text == f"```shell\ncat {prompts.NOTE_PATH}\n```"
    # With no such block in the system prompt, there is still no tool to run it.
    bare = decide(Conversation((Message("system", ("You are helpful.",)), Message("user", (prompts.run_sleep(),)))))
    assert "no shell tool" in bare.text.lower() or "no shell tool" in bare.why


def test_gptme_turn_with_tools_in_markdown_gets_a_shell_block(stub: ModelStub) -> None:
    """Point 4 through what gptme 0.35.1 sends (its ACP agent uses the Markdown tool format): no
    `tools`, system entries in list-of-parts form, the shell section of its system prompt with its
    ```shell examples, an environment system entry before the prompt. The answer is the block,
    which gptme runs; the request is the turn, not a side request."""
    body = recording("gptme-sleep.json")
    assert "tools" not in body and [m["role"] for m in body["messages"]] == ["system", "system", "system", "user"]
    status, answer = post(stub, "/v1/chat/completions", body)
    assert status == 200, answer
    assert answer["choices"][0]["message"]["content"] == "```shell\nsleep 120\n```"
    assert not answer["choices"][0]["message"].get("tool_calls")
    [record] = stub.records.snapshot(tag="t1")
    assert record.side_request is None and record.intent == "shell" and record.tools_offered == []
    assert [m["role"] for m in record.sent] == ["system", "system", "system", "user"]


IPYTHON = ToolSpec("ipython", {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
                   "Execute Python scratchpad code and `%%bash` shell cells in a persistent IPython kernel.")
PRIME_SYSTEM = ("# Generic MCP Connections\nFor `rondar`, first discover its tools with "
                "`await mcp.list_tools(\"rondar\")`, then call one with `await mcp.call_tool(\"rondar\", \"<tool>\", arguments)`.")


def cell(conv: Conversation, call_id: str, code: str, output: str) -> Conversation:
    return Conversation(conv.messages + (Message("assistant", tool_calls=(ToolCall(call_id, "ipython", {"code": code}),)),
                                         Message("tool", tool_results=(ToolResult(call_id, output),))), conv.tools)


def test_a_python_cell_as_the_only_tool() -> None:
    """Point 5: prime-agent's `ipython {code}`: `!sleep 120`, `!cat`, and the MCP tools from the
    cell with `await mcp.call_tool(...)` since its system prompt says so."""
    sleep = decide(Conversation((Message("user", (prompts.run_sleep(),)),), (IPYTHON,)))
    assert sleep.call is not None and sleep.call.arguments == {"code": "!sleep 120"}
    plan = Conversation((Message("system", (PRIME_SYSTEM,)),
                         Message("user", (prompts.plan_turn("/w/plan-input.txt", "T"),))), (IPYTHON,))
    first = decide(plan)
    assert first.call is not None and first.call.arguments == {"code": "!cat /w/plan-input.txt"}
    plan = cell(plan, "c1", first.call.arguments["code"], "INPUT-ABCD1234\n")
    create = decide(plan)
    assert create.call is not None
    assert create.call.arguments["code"] == ('print(await mcp.call_tool("rondar", "create_plan", '
                                             '{"title": "T", "description": "INPUT-ABCD1234"}))')
    plan = cell(plan, "c2", create.call.arguments["code"], "{'id': 'PLAN-ABCD1234'}\n")
    get = decide(plan)
    assert get.call is not None and 'mcp.call_tool("rondar", "get_plan", {"plan_id": "PLAN-ABCD1234"})' in \
        get.call.arguments["code"]
    plan = cell(plan, "c3", get.call.arguments["code"], "{'id': 'PLAN-ABCD1234', 'title': 'T'}\n")
    assert decide(plan).text == "PLAN-ABCD1234"
    # A cell whose agent says nothing of mcp.call_tool: no guessing, the plan cannot be saved.
    silent = Conversation((Message("user", (prompts.plan_turn("/w/p.txt", "T"),)),), (IPYTHON,))
    silent = cell(silent, "c1", "!cat /w/p.txt", "INPUT-ABCD1234\n")
    assert decide(silent).text == "I cannot save the plan: no create_plan tool."


def test_prime_agent_recording_reads_the_file_in_its_cell_and_sees_the_image(stub: ModelStub) -> None:
    """What prime-agent 0.8.0 (built from its source, run by hand) sent in image-and-file: its
    only tool is `ipython`, the image comes as an `image_url` data URL, and with no MCP server
    its system prompt says nothing of `mcp.call_tool`. The stub reads the file with `!cat` in the
    cell, then answers with the word from the cell's output and the colour of the image."""
    body = recording("prime-agent-image.json")
    assert [t["function"]["name"] for t in body["tools"]] == ["ipython"]
    status, answer = post(stub, "/v1/chat/completions", {**body, "messages": body["messages"][:2]})
    assert status == 200, answer
    [call] = answer["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "ipython"
    assert json.loads(call["function"]["arguments"]) == {"code": f"!cat {prompts.NOTE_PATH}"}
    status, answer = post(stub, "/v1/chat/completions", body)
    assert status == 200 and answer["choices"][0]["message"]["content"] == "FILE-K7Q2M9XD red", answer
    records = stub.records.snapshot(tag="t1")
    assert [(r.intent, r.side_request, r.image_decoded) for r in records] == [("read_and_look", None, True)] * 2


def test_prime_agent_recording_saves_the_plan_with_mcp_calls_from_its_cell(stub: ModelStub) -> None:
    """What prime-agent 0.8.0 sent in a Plan prompt with a `rondar` MCP server (run by hand: its
    journeys stop before the prompt, it has no Plan mode). Its system prompt says that MCP tools
    are reached with `await mcp.call_tool(...)` in the cell; `!cat` output ends in CRLF (the
    kernel's pty), MCP results come back as printed JSON. Each step, answered from the recording
    cut where the agent sent it, is what prime-agent then ran, and the reply is the plan ID."""
    body = recording("prime-agent-plan.json")
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["system", "user"] + ["assistant", "tool"] * 3

    def next_step(count: int) -> dict[str, Any]:
        status, answer = post(stub, "/v1/chat/completions", {**body, "messages": messages[:count]})
        assert status == 200, answer
        return answer["choices"][0]["message"]

    for count in (2, 4, 6):
        [call] = next_step(count)["tool_calls"]
        [sent] = messages[count]["tool_calls"]
        assert call["function"]["name"] == "ipython"
        assert json.loads(call["function"]["arguments"]) == json.loads(sent["function"]["arguments"])
    assert json.loads(messages[4]["tool_calls"][0]["function"]["arguments"])["code"] == (
        'print(await mcp.call_tool("rondar", "create_plan", '
        '{"title": "Journey plan", "description": "INPUT-PQ4R7S2T"}))')
    assert next_step(8)["content"] == "PLAN-00000001"


def test_records_keep_roles_and_a_clipped_masked_text(stub: ModelStub) -> None:
    """Point 6: per request, each message's role and text (masked before it is clipped, so a
    secret cut by the clip is still masked) and the decision."""
    secret = "sk-SECRET-" + "x" * 30
    long_system = "a" * 190 + secret + "b" * 600
    masked = ModelStub(mask=lambda text: text.replace(secret, "***")).start()
    try:
        body = {"model": "m", "system": long_system, "max_tokens": 10,
                "messages": [{"role": "user", "content": prompts.reply_exactly("REPLY-ABCD1234")}]}
        status, _ = post_to(masked.url + "/v1/messages", body)
        assert status == 200
        [record] = masked.records.as_dicts()
    finally:
        masked.stop()
    assert [m["role"] for m in record["sent"]] == ["system", "user"]
    assert record["sent"][1]["text"] == prompts.reply_exactly("REPLY-ABCD1234")
    assert "sk-SECRET" not in json.dumps(record) and "***" in record["sent"][0]["text"]
    assert len(record["sent"][0]["text"]) < 500 and "characters)…" in record["sent"][0]["text"]
    assert record["decision"] == {"text": "REPLY-ABCD1234"}
    assert clip("x" * 1000).startswith("x" * 200) and clip("short") == "short"


def test_a_4xx_of_the_stub_is_our_error_not_the_agents_failure() -> None:
    """Point 6: a journey that failed after the stub refused a request is acp-journeys' error."""
    refused = {"seq": 1, "at": 0.1, "tag": "turn-to-end", "method": "POST", "path": "/t/turn-to-end/v1/messages",
               "dialect": "anthropic-messages", "status": 400, "error": "messages: not a user message"}
    evidence = JourneyEvidence(journey="turn-to-end", model_stub_used=True, model_requests=[refused],
                               stopped_early="the turn did not end")
    judgement = judge_journey(evidence)
    assert judgement.verdict == "error" and judgement.failure_ids == ["runner-error"]
    detail = judgement.failures[0].detail
    assert "model stub" in detail and "400" in detail and "timeout" in detail
    assert not any("model request(s) failed" in w for w in judgement.warnings)


@pytest.mark.parametrize("status", [200, 404])
def test_served_requests_and_a_refused_websocket_are_no_error_of_ours(status: int) -> None:
    served = {"seq": 1, "at": 0.1, "tag": "turn-to-end", "method": "GET" if status == 404 else "POST",
              "path": "/x", "dialect": None if status == 404 else "openai-chat", "status": status}
    evidence = JourneyEvidence(journey="turn-to-end", model_stub_used=True, model_requests=[served],
                               stopped_early="the turn did not end")
    assert judge_journey(evidence).verdict == "fail"


@pytest.mark.parametrize(("system", "user", "tools", "side"), [
    # A title request of the common shape: a short system prompt, the exchange quoted, no tools.
    ("Generate a concise title (max 6 words) for this conversation. Return only the title.",
     f"User: {prompts.run_sleep()}\nAssistant: [response]", (), True),
    # The same words in the user message itself.
    ("", f"Write a short title for this session:\n{prompts.run_sleep()}", (), True),
    # A coding agent's turn: a long system prompt that mentions summaries, and tools.
    ("Keep a summary of your work. Suggest tests. " + "Be careful. " * 300, prompts.run_sleep(),
     (ToolSpec("bash", {"properties": {"command": {"type": "string"}}}),), False),
    # A Markdown agent's turn: a long system prompt, no tools, the prompt as it is.
    (GPTME_SYSTEM + " Summarise at the end. " + "Be careful. " * 300, prompts.run_sleep(), (), False),
])
def test_side_requests_of_other_shapes(system: str, user: str, tools: tuple[ToolSpec, ...], side: bool) -> None:
    messages = ((Message("system", (system,)),) if system else ()) + (Message("user", (user,)),)
    decision = decide(Conversation(messages, tools))
    assert (decision.side is not None) == side, decision
    if side:
        assert decision.call is None and decision.text == "OK."


def test_claude_code_refusal_of_a_foreground_sleep_is_retried_once_in_the_background(stub: ModelStub) -> None:
    """Issue 23 point 5: Claude Code's Bash refuses `sleep 120` in the foreground and says to use
    run_in_background: true (its Bash schema has that argument). The stub retries once with it,
    the record says so, and the command started in the background is then waited for."""
    body = recording("claude-code-sleep-refused.json")
    assert body["messages"][-1]["content"][0]["is_error"] is True
    status, answer = post(stub, "/v1/messages", body)
    assert status == 200, answer
    [call] = answer["content"]
    assert (call["type"], call["name"], call["input"]) == ("tool_use", "Bash", {"command": "sleep 120",
                                                                                "run_in_background": True})
    [record] = stub.records.as_dicts(tag="t1")
    assert record["retried"] == {"tool": "Bash", "argument": "run_in_background", "value": True,
                                 "refusal": record["retried"]["refusal"]}
    assert "Blocked: standalone sleep 120" in record["retried"]["refusal"]
    assert "retry once with run_in_background: true" in record["why"]
    # Its answer: running in the background. "Wait for it": a foreground wait, never a long sleep.
    started = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
                                            "content": "Command running in background with ID: bq1w2e3r4."}]}
    body["messages"] += [{"role": "assistant", "content": [call]}, started]
    status, answer = post(stub, "/v1/messages", body)
    [wait] = answer["content"]
    assert wait["name"] == "Bash" and wait["input"]["command"] == wait_for("sleep 120")
    assert "runs in the background (run_in_background: true)" in stub.records.snapshot(tag="t1")[-1].why
    # A second refusal is not retried again: once.
    refused_again = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "is_error": True,
                                                  "content": "Blocked: use run_in_background: true"}]}
    body["messages"][-1] = refused_again
    status, answer = post(stub, "/v1/messages", body)
    assert answer["content"][0]["type"] == "text" and "did not finish" in answer["content"][0]["text"]
    assert stub.records.snapshot(tag="t1")[-1].retried is None


def test_qwen_code_refusal_names_is_background_and_it_is_set() -> None:
    """Qwen Code 0.24.4's run_shell_command refuses a blocking command: "Run blocking commands in
    the background with is_background: true"; a refusal that names no argument of the schema
    (or one the call already had) is not retried."""
    shell = ToolSpec("run_shell_command", {"type": "object", "required": ["command"], "properties": {
        "command": {"type": "string"}, "description": {"type": "string"}, "is_background": {"type": "boolean"}}})
    prompt = Message("user", (prompts.run_sleep(),))

    def after(result: str, arguments: dict) -> Decision:
        call = ToolCall("c1", "run_shell_command", arguments)
        return decide(Conversation((prompt, Message("assistant", tool_calls=(call,)),
                                    Message("tool", tool_results=(ToolResult("c1", result, is_error=True),))),
                                   (shell,)))

    refusal = "Error: sleep 120 would block. Run blocking commands in the background with is_background: true."
    retry = after(refusal, {"command": "sleep 120", "is_background": False})
    assert retry.call is not None and retry.call.arguments == {"command": "sleep 120", "is_background": True}
    assert retry.retried is not None and retry.retried["argument"] == "is_background"
    for result, arguments in (("Error: exit code 1, see the description", {"command": "sleep 120"}),
                              (refusal, {"command": "sleep 120", "is_background": True})):
        plain = after(result, arguments)
        assert plain.call is None and plain.retried is None and "did not finish" in plain.text


GEMINI = "/v1beta/models/gemini-2.5-flash"


def gemini_part(stub: ModelStub, name: str) -> dict[str, Any]:
    status, answer = post(stub, f"{GEMINI}:generateContent", json.loads((DATA / name).read_text()))
    assert status == 200, answer
    [candidate] = answer["candidates"]
    assert candidate["finishReason"] == "STOP"
    [part] = candidate["content"]["parts"]
    return part


def test_gemini_cli_turn_and_sleep_as_it_sent_them(stub: ModelStub) -> None:
    body = json.loads((DATA / "gemini-cli-turn.json").read_text())
    assert [c["role"] for c in body["contents"]] == ["user"] and "parametersJsonSchema" in json.dumps(body["tools"])
    assert gemini_part(stub, "gemini-cli-turn.json") == {"text": "OK-7Q2M4K9X"}
    part = gemini_part(stub, "gemini-cli-sleep.json")
    assert part["functionCall"]["name"] == "run_shell_command"
    assert part["functionCall"]["args"]["command"] == "sleep 120", part
    turn, sleep = stub.records.snapshot(tag="t1")
    assert (turn.dialect, turn.intent, sleep.intent) == ("gemini-generate", "reply", "shell")
    assert "run_shell_command" in sleep.tools_offered and "read_file" in sleep.tools_offered
    # The route it used: SSE events, each a whole response; the call comes whole in one.
    request = urllib.request.Request(stub.url_for("t2") + f"{GEMINI}:streamGenerateContent?alt=sse",
                                     (DATA / "gemini-cli-sleep.json").read_bytes(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        events = [json.loads(line[6:]) for line in response.read().decode().splitlines() if line.startswith("data: ")]
    calls = [p["functionCall"] for e in events for p in e["candidates"][0]["content"]["parts"] if "functionCall" in p]
    assert [c["args"]["command"] for c in calls] == ["sleep 120"]
    assert events[-1]["candidates"][0]["finishReason"] == "STOP" and "usageMetadata" in events[-1]


def test_gemini_cli_image_turn_count_tokens_then_read_then_the_answer(stub: ModelStub) -> None:
    """countTokens (a 404 once) is answered with a count and is no turn; the image turn gets a
    read_file call of the note; its last request (read_file refused the path, cat ran, its output
    framed by <untrusted_context>) gets the marker and the colour of the inline image."""
    status, counted = post(stub, f"{GEMINI}:countTokens", json.loads((DATA / "gemini-cli-count-tokens.json").read_text()))
    assert status == 200 and isinstance(counted["totalTokens"], int) and counted["totalTokens"] > 0, counted
    part = gemini_part(stub, "gemini-cli-image.json")
    assert part["functionCall"] == {"name": "read_file", "args": {"file_path": prompts.NOTE_PATH}}, part
    assert gemini_part(stub, "gemini-cli-image-read.json") == {"text": "FILE-3RW8D2QT red"}
    count, first, last = stub.records.snapshot(tag="t1")
    assert (count.why, count.intent, count.status) == ("count_tokens", None, 200)
    assert first.intent == last.intent == "read_and_look"
    assert first.image_present and first.image_decoded and last.image_decoded
    # A countTokens with no contents is refused as a turn would be.
    status, refused = post(stub, f"{GEMINI}:countTokens", {"contents": []})
    assert status == 400 and refused["error"]["status"] == "INVALID_ARGUMENT", refused


def test_qwen_code_refusal_that_offers_a_foreground_comment_keeps_the_sleep_in_the_foreground() -> None:
    """Qwen Code 0.24.4's whole refusal of a standalone sleep also offers to keep it in the
    foreground with a trailing `# intentional-sleep: <reason>` comment. The prompt says to wait
    for it, so the retry takes that way (its background job would outlive the turn's cancel,
    which is not what was asked): once, and not again when the comment is already there."""
    shell = ToolSpec("run_shell_command", {"type": "object", "required": ["command"], "properties": {
        "command": {"type": "string"}, "description": {"type": "string"}, "is_background": {"type": "boolean"}}})
    prompt = Message("user", (prompts.run_sleep(),))
    refusal = ("Blocked: standalone sleep 120. Run blocking commands in the background with is_background: true. "
               "For streaming events (watching logs, polling APIs), use the Monitor tool. If you genuinely need a "
               "standalone delay (rate limiting, deliberate pacing), add a trailing comment like "
               "`# intentional-sleep: wait for MCP rate limit reset` (up to 10 minutes).")

    def after(*steps: tuple[dict, str, bool]) -> Decision:
        messages = [prompt]
        for i, (arguments, result, error) in enumerate(steps):
            call = ToolCall(f"c{i}", "run_shell_command", arguments)
            messages += [Message("assistant", tool_calls=(call,)),
                         Message("tool", tool_results=(ToolResult(f"c{i}", result, is_error=error),))]
        return decide(Conversation(tuple(messages), (shell,)))

    retry = after(({"command": "sleep 120", "is_background": False}, refusal, True))
    assert retry.call is not None
    assert retry.call.arguments == {"command": "sleep 120 # intentional-sleep: the user asked to run it and wait for it",
                                    "is_background": False}, retry.call.arguments
    assert retry.retried is not None and retry.retried["argument"] == "command"
    assert "keeps it in the foreground" in retry.why
    done = after(({"command": "sleep 120"}, refusal, True), (retry.call.arguments, "", False))
    assert done.call is None and done.text == "Done: `sleep 120` finished."
    again = after(({"command": "sleep 120"}, refusal, True), (retry.call.arguments, refusal, True))
    assert again.call is None and "did not finish" in again.text


def test_qwen_code_defers_mcp_tools_behind_tool_search_and_the_stub_searches_then_calls_through_tool_call() -> None:
    """Qwen Code 0.24.4 offers the model no mcp__rondar__* tool but tool_search (a `query`, e.g.
    `select:<name>`) and tool_call (`name`, `arguments`), and lists the deferred names in a
    reminder. The stub does as a model would: search for create_plan, call what the search
    declared through tool_call, then the same for get_plan, then reply with the plan id."""
    shell = ToolSpec("run_shell_command", {"type": "object", "required": ["command"],
                                           "properties": {"command": {"type": "string"}}})
    search = ToolSpec("tool_search", {"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string"}, "max_results": {"type": "integer"}}})
    bridge = ToolSpec("tool_call", {"type": "object", "required": ["name", "arguments"], "properties": {
        "name": {"type": "string"}, "arguments": {"type": "object"}}})
    title = prompts.PLAN_TITLE_SAVED_PLAN
    reminder = Message("user", ("Deferred tools: mcp__rondar__create_plan, mcp__rondar__get_plan.",))
    prompt = Message("user", (prompts.plan_turn("/w/plan-input.txt", title),))

    def declared(name: str, props: dict) -> str:
        return "<functions><function>" + json.dumps({"name": name, "description": "d", "parametersJsonSchema": {
            "type": "object", "required": sorted(props), "properties": props}}) + "</function></functions>"

    def after(*steps: tuple[str, dict, str]) -> Decision:
        messages = [reminder, prompt]
        for i, (name, arguments, result) in enumerate(steps):
            messages += [Message("assistant", tool_calls=(ToolCall(f"c{i}", name, arguments),)),
                         Message("tool", tool_results=(ToolResult(f"c{i}", result),))]
        return decide(Conversation(tuple(messages), (shell, search, bridge)))

    cat = ("run_shell_command", {"command": "cat /w/plan-input.txt"}, "INPUT-7HQ2M4KX")
    first = after(cat)
    assert first.call is not None and (first.call.name, first.call.arguments) == (
        "tool_search", {"query": "select:mcp__rondar__create_plan"}), first
    found = ("tool_search", first.call.arguments,
             declared("mcp__rondar__create_plan", {"title": {"type": "string"}, "description": {"type": "string"}}))
    create = after(cat, found)
    assert create.call is not None and create.call.name == "tool_call", create
    assert create.call.arguments == {"name": "mcp__rondar__create_plan",
                                     "arguments": {"title": title, "description": "INPUT-7HQ2M4KX"}}
    created = ("tool_call", create.call.arguments, '{"id": "PLAN-4K8Q2W7Z"}')
    search_get = after(cat, found, created)
    assert search_get.call is not None and search_get.call.arguments == {"query": "select:mcp__rondar__get_plan"}
    found_get = ("tool_search", search_get.call.arguments, declared("mcp__rondar__get_plan", {"plan_id": {"type": "string"}}))
    get = after(cat, found, created, found_get)
    assert get.call is not None and get.call.arguments == {"name": "mcp__rondar__get_plan",
                                                           "arguments": {"plan_id": "PLAN-4K8Q2W7Z"}}
    done = after(cat, found, created, found_get, ("tool_call", get.call.arguments, '{"id": "PLAN-4K8Q2W7Z"}'))
    assert done.call is None and done.text == "PLAN-4K8Q2W7Z"
    # A search that finds nothing is not repeated: the turn ends saying why.
    missing = after(cat, ("tool_search", first.call.arguments, "No tools found matching 'x'."))
    assert missing.call is None and "no create_plan tool" in missing.text
