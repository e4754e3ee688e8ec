"""JSON-RPC 2.0 messages, sans-IO (protocol/jsonrpc.py): classification, refusal of bad shapes, encoding."""

from __future__ import annotations

import json

import pytest

from acp_journeys.protocol.jsonrpc import Invalid, Notification, Outbox, Request, Response, encode, parse

# --- classification ---------------------------------------------------------------------------


def test_a_request_has_its_id_method_params_and_raw_text() -> None:
    raw = '{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s"}}'
    assert parse(raw) == Request(7, "session/request_permission", {"sessionId": "s"}, raw)


def test_a_request_with_a_string_id() -> None:
    message = parse('{"jsonrpc":"2.0","id":"abc","method":"fs/read_text_file"}')
    assert isinstance(message, Request) and message.id == "abc" and message.params is None


def test_a_message_with_a_method_and_no_id_is_a_notification() -> None:
    raw = '{"jsonrpc":"2.0","method":"session/update","params":{"update":{}}}'
    assert parse(raw) == Notification("session/update", {"update": {}}, raw)


def test_a_response_with_a_result() -> None:
    raw = '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}'
    assert parse(raw) == Response(1, {"protocolVersion": 1}, None, raw)


def test_a_response_with_a_null_result_is_still_a_response() -> None:
    message = parse('{"jsonrpc":"2.0","id":3,"result":null}')
    assert isinstance(message, Response) and message.result is None and message.error is None


def test_an_error_response() -> None:
    raw = '{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no such method"}}'
    assert parse(raw) == Response(2, None, {"code": -32601, "message": "no such method"}, raw)


def test_the_raw_text_is_kept_exactly() -> None:
    raw = '{ "jsonrpc" : "2.0", "id" : 1, "result" : { "protocolVersion" : 1.0 } }'
    assert parse(raw).raw == raw  # the judge reads protocolVersion's own token from it


# --- what is not JSON-RPC is Invalid, with a reason --------------------------------------------


@pytest.mark.parametrize("raw", ["not json at all", '{"jsonrpc":"2.0",', "", "[1, 2"])
def test_text_that_is_not_json_is_invalid_of_kind_not_json(raw: str) -> None:
    message = parse(raw)
    assert isinstance(message, Invalid)
    assert message.kind == "not-json" and message.raw == raw and message.reason.startswith("not JSON")


@pytest.mark.parametrize("raw", ["[1,2]", '"2.0"', "42", "null", "true"])
def test_json_that_is_not_an_object_is_invalid_of_kind_not_jsonrpc(raw: str) -> None:
    message = parse(raw)
    assert isinstance(message, Invalid) and message.kind == "not-jsonrpc"
    assert "not an object" in message.reason


@pytest.mark.parametrize("raw", [
    '{"id":1,"result":{}}',
    '{"jsonrpc":"1.0","id":1,"result":{}}',
    '{"jsonrpc":2.0,"id":1,"result":{}}',
    '{"jsonrpc":null,"method":"session/update"}',
], ids=["missing", "1.0", "number", "null"])
def test_a_message_without_jsonrpc_2_0_is_invalid(raw: str) -> None:
    message = parse(raw)
    assert isinstance(message, Invalid) and message.kind == "not-jsonrpc"
    assert "jsonrpc" in message.reason


def test_a_response_with_both_result_and_error_is_invalid() -> None:
    message = parse('{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}')
    assert isinstance(message, Invalid) and "both result and error" in message.reason


@pytest.mark.parametrize("error", [
    '{"message":"no code"}',
    '{"code":"-32600","message":"string code"}',
    '{"code":1.5,"message":"float code"}',
    '{"code":-32600}',
    '"just a string"',
    "null",
], ids=["no-code", "string-code", "float-code", "no-message", "string", "null"])
def test_an_error_without_an_integer_code_and_a_message_is_invalid(error: str) -> None:
    message = parse(f'{{"jsonrpc":"2.0","id":1,"error":{error}}}')
    assert isinstance(message, Invalid) and message.kind == "not-jsonrpc"
    assert "integer code" in message.reason


def test_an_error_whose_code_is_a_boolean_is_invalid() -> None:
    assert isinstance(parse('{"jsonrpc":"2.0","id":1,"error":{"code":true,"message":"x"}}'), Invalid)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_message_with_nan_or_infinity_is_not_json(constant: str) -> None:
    message = parse(f'{{"jsonrpc":"2.0","id":1,"result":{{"x":{constant}}}}}')
    assert isinstance(message, Invalid) and message.kind == "not-json"


def test_a_method_that_is_not_a_string_is_invalid() -> None:
    message = parse('{"jsonrpc":"2.0","id":1,"method":5}')
    assert isinstance(message, Invalid) and "method" in message.reason


@pytest.mark.parametrize("raw", [
    '{"jsonrpc":"2.0"}',
    '{"jsonrpc":"2.0","id":1}',
    '{"jsonrpc":"2.0","result":{}}',
], ids=["empty", "id-only", "result-without-id"])
def test_an_object_of_no_known_shape_is_invalid(raw: str) -> None:
    message = parse(raw)
    assert isinstance(message, Invalid) and message.kind == "not-jsonrpc"
    assert message.reason == "neither a request, a notification nor a response"


# --- Outbox: our ids --------------------------------------------------------------------------


def test_outbox_request_ids_start_at_1_and_increase_by_one() -> None:
    outbox = Outbox()
    ids = [outbox.request("session/prompt", {})[0] for _ in range(5)]
    assert ids == [1, 2, 3, 4, 5]


def test_outbox_ids_never_repeat_across_many_requests() -> None:
    outbox = Outbox()
    ids = [outbox.request("m", None)[0] for _ in range(10_000)]
    assert len(set(ids)) == len(ids) and ids == sorted(ids)


def test_notifications_and_answers_take_no_id_from_the_sequence() -> None:
    outbox = Outbox()
    assert outbox.request("initialize", {})[0] == 1
    outbox.notification("session/cancel", {"sessionId": "s"})
    outbox.result(99, {})
    outbox.error(98, -32601, "no")
    assert outbox.request("session/new", {})[0] == 2


def test_outbox_request_bytes_carry_the_same_id_it_returns() -> None:
    request_id, data = Outbox().request("session/new", {"cwd": "/w"})
    message = parse(data.decode())
    assert message == Request(request_id, "session/new", {"cwd": "/w"}, data.decode())


def test_outbox_messages_parse_back_to_their_kinds() -> None:
    assert isinstance(parse(Outbox.notification("session/cancel", {"sessionId": "s"}).decode()), Notification)
    assert parse(Outbox.result(4, {"outcome": {"outcome": "cancelled"}}).decode()).result == {
        "outcome": {"outcome": "cancelled"}}
    error = parse(Outbox.error(5, -32601, "fs/read_text_file is not offered").decode())
    assert isinstance(error, Response) and error.id == 5
    assert error.error == {"code": -32601, "message": "fs/read_text_file is not offered"}


# --- encode: one NDJSON line ------------------------------------------------------------------


def test_encode_is_one_line_ending_in_a_newline() -> None:
    data = encode({"jsonrpc": "2.0", "method": "m", "params": {"text": "line one\nline two\r\n"}})
    assert data.endswith(b"\n") and data.count(b"\n") == 1 and b"\r" not in data


def test_encode_keeps_non_ascii_as_utf8() -> None:
    data = encode({"text": "café — 日本語 🟥"})
    assert "café — 日本語 🟥".encode() in data and b"\\u" not in data
    assert json.loads(data) == {"text": "café — 日本語 🟥"}


def test_encode_is_compact() -> None:
    assert encode({"a": 1, "b": [1, 2]}) == b'{"a":1,"b":[1,2]}\n'
