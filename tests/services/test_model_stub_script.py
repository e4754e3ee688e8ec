"""The honest model on hand-built conversations: no HTTP, no dialect."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from acp_journeys.rules import prompts
from acp_journeys.services.model_stub.conversation import Conversation, ImagePart, Message, ToolCall, ToolResult, ToolSpec
from acp_journeys.services.model_stub.instructions import newest_instruction
from acp_journeys.services.model_stub.script import decide, plan_id_of, word_of

BASH = ToolSpec("bash", {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]})
READ = ToolSpec("read_file", {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
CREATE = ToolSpec("mcp__rondar__create_plan", {"type": "object", "properties": {
    "title": {"type": "string"}, "description": {"type": "string"}}, "required": ["title", "description"]})
GET = ToolSpec("mcp__rondar__get_plan", {"type": "object", "properties": {"plan_id": {"type": "string"}},
                                         "required": ["plan_id"]})
ALL = (BASH, READ, CREATE, GET)


def user(*texts: str, images: tuple[ImagePart, ...] = ()) -> Message:
    return Message("user", texts, images)


def png(colour: tuple[int, int, int], fmt: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), colour).save(buffer, format=fmt)
    return buffer.getvalue()


def called(conv: Conversation, call_id: str, name: str, arguments: dict, result: str,
           is_error: bool = False) -> Conversation:
    """The conversation after the agent ran the call and sent its result back."""
    messages = conv.messages + (Message("assistant", tool_calls=(ToolCall(call_id, name, arguments),)),
                                Message("tool", tool_results=(ToolResult(call_id, result, is_error),)))
    return Conversation(messages, conv.tools)


def test_reply_marker_with_reminders_before_and_after() -> None:
    text = "<system-reminder>Be brief.</system-reminder>\n" + prompts.reply_exactly("REPLY-ABCD1234") \
        + "\n<system-reminder>todo list is empty</system-reminder>"
    decision = decide(Conversation((Message("system", ("You are an agent.",)), user(text)), ALL))
    assert decision.text == "REPLY-ABCD1234" and decision.call is None and decision.intent == "reply"


def test_remember_then_recall_in_the_same_conversation() -> None:
    first = user(prompts.remember_word("WORD-QWERTY12"))
    assert decide(Conversation((first,), ALL)).text == "ACK"
    conv = Conversation((first, Message("assistant", ("ACK",)), user(prompts.ask_word())), ALL)
    decision = decide(conv)
    assert decision.text == "WORD-QWERTY12"
    assert "message 1 of 3" in decision.why


def test_recall_without_the_earlier_message_does_not_know() -> None:
    decision = decide(Conversation((user(prompts.ask_word()),), ALL))
    assert decision.text == "I don't know."
    assert "holds no 'Remember this word'" in decision.why


def test_cancelled_turn_merged_into_the_next_message_takes_the_last_sentence() -> None:
    merged = prompts.run_sleep() + " " + prompts.reply_exactly("REPLY-ZZZZ9999")
    assert decide(Conversation((user(merged),), ALL)).text == "REPLY-ZZZZ9999"


def test_instruction_in_a_last_system_message() -> None:
    conv = Conversation((Message("system", ("rules",)), Message("system", (prompts.reply_exactly("REPLY-SYS00001"),))))
    assert decide(conv).text == "REPLY-SYS00001"


def test_side_requests_get_a_plain_answer_and_no_tool_call() -> None:
    conv = Conversation((user(prompts.run_sleep()), Message("assistant", ("...",)),
                         user("Generate a short title for this conversation.")), ALL)
    decision = decide(conv)
    assert decision.call is None and decision.intent == "other" and "title" in decision.why
    assert decide(Conversation((user("hello there"),), ALL)).intent == "other"


def test_a_request_with_no_tools_never_calls_a_tool() -> None:
    for prompt in (prompts.run_sleep(), prompts.image_and_file(),
                   prompts.plan_turn("/w/plan-input.txt", prompts.PLAN_TITLE_SAVED_PLAN)):
        decision = decide(Conversation((user(prompt),)))
        assert decision.call is None, prompt
        assert "no tools were offered" in decision.why


@pytest.mark.parametrize("name, schema, expected", [
    ("run_shell_command", {"command": {"type": "string"}, "description": {"type": "string"}},
     {"command": "sleep 120"}),
    ("Bash", {"command": {"type": "string"}, "timeout": {"type": "number"}}, {"command": "sleep 120"}),
    ("shell", {"command": {"type": "array", "items": {"type": "string"}}}, {"command": ["bash", "-lc", "sleep 120"]}),
    ("exec_command", {"cmd": {"type": "string"}}, {"cmd": "sleep 120"}),
    ("developer__shell", {"command": {"type": "string"}}, {"command": "sleep 120"}),
])
def test_shell_tool_found_by_name_and_schema(name: str, schema: dict, expected: dict) -> None:
    tool = ToolSpec(name, {"type": "object", "properties": schema, "required": list(expected)})
    editor = ToolSpec("str_replace_based_edit_tool", {"type": "object", "properties": {
        "command": {"type": "string", "enum": ["view", "create"]}, "path": {"type": "string"}}})
    decision = decide(Conversation((user(prompts.run_sleep()),), (editor, READ, tool)))
    assert decision.call is not None and decision.call.name == name
    assert decision.call.arguments == expected


def test_required_extra_arguments_are_filled() -> None:
    tool = ToolSpec("bash", {"type": "object", "properties": {
        "command": {"type": "string"}, "description": {"type": "string"}, "timeout": {"type": "integer"}},
        "required": ["command", "description", "timeout"]})
    call = decide(Conversation((user(prompts.run_sleep()),), (tool,))).call
    assert call is not None and call.arguments["description"] == "Run sleep 120"
    assert isinstance(call.arguments["timeout"], int)


def test_no_shell_tool_says_which_tools_were_offered() -> None:
    decision = decide(Conversation((user(prompts.run_sleep()),), (READ,)))
    assert decision.call is None
    assert decision.why == "no shell tool offered: tools were [read_file]"


def test_shell_turn_confirms_after_the_result() -> None:
    path = "/w/made.txt"
    conv = Conversation((user(prompts.regular_touch(path)),), ALL)
    first = decide(conv)
    assert first.call is not None and first.call.arguments == {"command": f"touch {path}"}
    done = decide(called(conv, "c1", "bash", first.call.arguments, ""))
    assert done.call is None and "finished" in done.text
    failed = decide(called(conv, "c1", "bash", first.call.arguments, "Permission refused.", is_error=True))
    assert failed.call is None and "did not finish" in failed.text


def test_image_and_file_reads_then_names_word_and_colour() -> None:
    image = ImagePart("image/png", png((255, 0, 0)), "base64")
    conv = Conversation((user(prompts.image_and_file(), images=(image,)),), ALL)
    first = decide(conv)
    assert first.call is not None and first.call.name == "read_file"
    assert first.call.arguments == {"path": prompts.NOTE_PATH}
    after = decide(called(conv, "r1", "read_file", first.call.arguments, "     1\tFILE-ABCD1234\n"))
    assert after.text == "FILE-ABCD1234 red"
    assert "average (255, 0, 0) is red" in after.why


def test_image_in_a_message_of_its_own_before_the_prompt_counts() -> None:
    image = ImagePart("image/jpeg", png((10, 20, 230), "JPEG"), "data-url")
    conv = Conversation((Message("user", (), (image,)), user(prompts.image_and_file())), ALL)
    after = decide(called(conv, "r1", "read_file", {"path": prompts.NOTE_PATH}, "FILE-ABCD1234"))
    assert after.text == "FILE-ABCD1234 blue"


def test_no_image_in_the_request_names_no_colour() -> None:
    conv = Conversation((user(prompts.image_and_file()),), ALL)
    after = decide(called(conv, "r1", "read_file", {"path": prompts.NOTE_PATH}, "FILE-ABCD1234"))
    assert after.text == "FILE-ABCD1234" and "image not in request" in after.why
    undecodable = Conversation((user(prompts.image_and_file(), images=(ImagePart("image/png", None, "url"),)),), ALL)
    after = decide(called(undecodable, "r1", "read_file", {"path": prompts.NOTE_PATH}, "FILE-ABCD1234"))
    assert after.text == "FILE-ABCD1234" and "not decodable" in after.why


def test_image_and_file_falls_back_to_cat_when_read_fails_or_is_missing() -> None:
    conv = Conversation((user(prompts.image_and_file()),), (BASH,))
    first = decide(conv)
    assert first.call is not None and first.call.arguments == {"command": f"cat {prompts.NOTE_PATH}"}
    with_read = Conversation((user(prompts.image_and_file()),), (READ, BASH))
    failed = called(with_read, "r1", "read_file", {"path": prompts.NOTE_PATH}, "ENOENT", is_error=True)
    retry = decide(failed)
    assert retry.call is not None and retry.call.name == "bash" and "the read tool failed" in retry.why


@pytest.mark.parametrize("prefix", ["mcp_rondar_", "mcp__rondar__", "rondar__", "rondar_", ""])
def test_plan_turn_cat_create_get_reply(prefix: str) -> None:
    create = ToolSpec(prefix + "create_plan", CREATE.parameters)
    get = ToolSpec(prefix + "get_plan", GET.parameters)
    conv = Conversation((user(prompts.plan_turn("/w/plan-input.txt", prompts.PLAN_TITLE_SAVED_PLAN)),),
                        (BASH, create, get))
    cat = decide(conv)
    assert cat.call == type(cat.call)("bash", {"command": "cat /w/plan-input.txt"})
    conv = called(conv, "c1", "bash", cat.call.arguments, "INPUT-AAAA1111\n")
    save = decide(conv)
    assert save.call is not None and save.call.name == prefix + "create_plan"
    assert save.call.arguments == {"title": prompts.PLAN_TITLE_SAVED_PLAN, "description": "INPUT-AAAA1111"}
    conv = called(conv, "c2", save.call.name, save.call.arguments, json.dumps({"id": "PLAN-ABCDEFGH"}))
    read = decide(conv)
    assert read.call is not None and read.call.name == prefix + "get_plan"
    assert read.call.arguments == {"plan_id": "PLAN-ABCDEFGH"}
    conv = called(conv, "c3", read.call.name, read.call.arguments, json.dumps({"id": "PLAN-ABCDEFGH"}))
    final = decide(conv)
    assert final.call is None and final.text == "PLAN-ABCDEFGH"


def test_plan_tool_of_another_server_comes_after_rondar() -> None:
    other = ToolSpec("mcp__notes__create_plan", CREATE.parameters)
    conv = Conversation((user(prompts.plan_turn("/w/in.txt", "T")),), (BASH, other, CREATE, GET))
    conv = called(conv, "c1", "bash", {"command": "cat /w/in.txt"}, "INPUT-AAAA1111")
    assert decide(conv).call.name == "mcp__rondar__create_plan"


def test_plan_turn_without_mcp_tools_says_so() -> None:
    conv = Conversation((user(prompts.plan_turn("/w/in.txt", "T")),), (BASH,))
    conv = called(conv, "c1", "bash", {"command": "cat /w/in.txt"}, "INPUT-AAAA1111")
    decision = decide(conv)
    assert decision.call is None and "no create_plan tool of the rondar server offered" in decision.why


def test_plan_turn_refused_cat_ends_the_turn() -> None:
    conv = Conversation((user(prompts.plan_turn("/w/in.txt", "T")),), ALL)
    conv = called(conv, "c1", "bash", {"command": "cat /w/in.txt"}, "Permission denied by user", is_error=False)
    decision = decide(conv)
    assert decision.call is None and "did not run" in decision.text


def test_second_plan_turn_starts_afresh() -> None:
    conv = Conversation((user(prompts.plan_turn("/w/in.txt", "T")),), ALL)
    for call_id, name, args, result in [("c1", "bash", {"command": "cat /w/in.txt"}, "INPUT-A"),
                                        ("c2", CREATE.name, {}, '{"id": "PLAN-AAAAAAAA"}'),
                                        ("c3", GET.name, {"plan_id": "PLAN-AAAAAAAA"}, "{}")]:
        conv = called(conv, call_id, name, args, result)
    messages = conv.messages + (Message("assistant", ("PLAN-AAAAAAAA",)), user(prompts.regular_touch("/w/f")),
                                Message("assistant", ("Done",)), user(prompts.plan_turn("/w/in.txt", "T")))
    decision = decide(Conversation(messages, ALL))
    assert decision.call is not None and decision.call.name == "bash"


def test_every_journey_prompt_is_recognised() -> None:
    expected = {
        prompts.reply_exactly("REPLY-A"): "reply", prompts.remember_word("WORD-A"): "remember",
        prompts.ask_word(): "recall", prompts.image_and_file(): "read_and_look", prompts.run_sleep(): "shell",
        prompts.plan_turn("/w/x", "T"): "plan", prompts.regular_touch("/w/f"): "shell",
    }
    for prompt, intent in expected.items():
        found = newest_instruction(Conversation((user(prompt),)))
        assert found is not None and found.intent == intent, prompt


def test_words_and_plan_ids_from_decorated_results() -> None:
    assert word_of("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nFILE-ABCD1234\n") == "FILE-ABCD1234"
    assert word_of("1: hello\n") == "hello"
    assert plan_id_of('Saved. {"id": "PLAN-Q1W2E3R4"}') == "PLAN-Q1W2E3R4"
    assert plan_id_of("The plan PLAN-Q1W2E3R4 is saved") == "PLAN-Q1W2E3R4"
    assert plan_id_of("nothing") is None


def test_tool_failures_said_in_words_count_as_failures() -> None:
    conv = Conversation((user(prompts.image_and_file()),), (READ, BASH))
    failed = called(conv, "r1", "read_file", {"path": prompts.NOTE_PATH},
                    f"Error: [Errno 2] No such file or directory: '{prompts.NOTE_PATH}'")
    retry = decide(failed)
    assert retry.call is not None and retry.call.name == "bash"
    shell_failed = called(failed, "s1", "bash", retry.call.arguments, "Exit code 1\ncat: no such file")
    final = decide(shell_failed)
    assert final.call is None and final.text == "I could not read the file."
    ok = called(conv, "r1", "read_file", {"path": prompts.NOTE_PATH}, "Exit code: 0\nOutput:\nFILE-ABCD1234")
    assert decide(ok).text == "FILE-ABCD1234"
    # Claude Code's refusals, where a dialect has no error flag (Chat Completions): failures too.
    sleep = Conversation((user(prompts.run_sleep()),), (BASH,))
    for refusal in ("<tool_use_error>Blocked: standalone sleep 120.</tool_use_error>", "Blocked: sleep 120"):
        said = decide(called(sleep, "s1", "bash", {"command": "sleep 120"}, refusal))
        assert said.call is None and "did not finish" in said.text, refusal


def test_placeholders() -> None:
    from acp_journeys.services.model_stub.placeholders import fill_env, parse_config_template

    assert fill_env({"A": "{model_url}/v1", "B": '{"x": 1}'}, "http://127.0.0.1:9/t/j/") == {
        "A": "http://127.0.0.1:9/t/j/v1", "B": '{"x": 1}'}
    assert parse_config_template("cfg/agent.toml:.config/agent/config.toml") == (
        "cfg/agent.toml", ".config/agent/config.toml")
    for bad in ("nocolon", "a:/etc/passwd", "a:../x", "a:~/x"):
        with pytest.raises(ValueError):
            parse_config_template(bad)


def test_hints_say_what_never_reached_the_model() -> None:
    from acp_journeys.rules.model_requests import RequestRecord, hints

    def record(**fields) -> RequestRecord:
        return RequestRecord(seq=1, at=0.0, tag=None, method="POST", path="/v1/chat/completions",
                             dialect="openai-chat", status=200, **fields)

    assert hints([]) == ["the agent sent no request to the model endpoint"]
    assert hints([record(intent="read_and_look", why="...; image not in request")]) == [
        "the image never reached the model"]
    assert hints([record(intent="shell", why="no shell tool offered: tools were [read_file]")]) == [
        "the agent offered no shell tool to the model"]
    assert hints([record(intent="recall", decision={"text": "I don't know."})]) == [
        "the conversation that reached the model did not hold the word to remember"]
    assert hints([record(intent="reply", decision={"text": "REPLY-A"})]) == []
