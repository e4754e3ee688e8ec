"""Secrets never leave the run (redact.py): every --env value and --login file is masked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_journeys.output.redact import MASK, MIN_SECRET, Redactor, parse_env_option
from acp_journeys.rules.evidence import JourneyEvidence


def redactor(*secrets: str) -> Redactor:
    r = Redactor()
    for secret in secrets:
        r.add(secret)
    return r


def test_a_secret_is_masked_everywhere_it_appears() -> None:
    r = redactor("sk-live-123456")
    assert r.redact("key=sk-live-123456 and again sk-live-123456.") == f"key={MASK} and again {MASK}."


def test_text_without_secrets_is_unchanged() -> None:
    assert redactor("sk-live-123456").redact("nothing to see") == "nothing to see"


def test_an_empty_redactor_is_false_and_changes_nothing() -> None:
    r = Redactor()
    assert not r and r.redact("sk-live-123456") == "sk-live-123456"


@pytest.mark.parametrize("value", ["1", "yes", "  ab  ", ""])
def test_values_shorter_than_the_minimum_are_not_secrets(value: str) -> None:
    r = redactor(value)
    assert not r and r.redact("1 yes ab") == "1 yes ab"


def test_a_value_of_exactly_the_minimum_length_is_a_secret() -> None:
    value = "x" * MIN_SECRET
    assert redactor(value).redact(f"[{value}]") == f"[{MASK}]"


def test_surrounding_whitespace_of_a_value_is_not_part_of_the_secret() -> None:
    assert redactor("  hunter22\n").redact("pw: hunter22!") == f"pw: {MASK}!"


def test_a_secret_is_masked_as_json_escapes_it() -> None:
    secret = 'pa"ss\\word'
    text = json.dumps({"stderr": f"login with {secret}"})
    assert redactor(secret).redact(text) == json.dumps({"stderr": f"login with {MASK}"})


def test_a_non_ascii_secret_is_masked_raw_and_as_ascii_escaped_json() -> None:
    r = redactor("pässwörd-42")
    assert r.redact("pässwörd-42") == MASK
    assert r.redact(json.dumps("pässwörd-42")) == f'"{MASK}"'


def test_each_long_line_of_a_multi_line_secret_is_masked_on_its_own() -> None:
    pem = "-----BEGIN KEY-----\nMIIEvQIBADANBgkq\nhkiG9w0BAQEFAASC\nab\n-----END KEY-----"
    out = redactor(pem).redact("the agent printed hkiG9w0BAQEFAASC and MIIEvQIBADANBgkq")
    assert out == f"the agent printed {MASK} and {MASK}"


def test_a_multi_line_secret_is_masked_whole_in_json_too() -> None:
    pem = "-----BEGIN KEY-----\nMIIEvQIBADANBgkq\n-----END KEY-----"
    assert redactor(pem).redact(json.dumps({"v": pem})) == json.dumps({"v": MASK})


def test_the_longest_secret_is_masked_first() -> None:
    out = redactor("abcd", "abcdefgh-long").redact("abcdefgh-long / abcd")
    assert out == f"{MASK} / {MASK}"


def test_the_serialized_result_of_a_run_is_masked() -> None:
    r = redactor("sk-live-123456")
    e = JourneyEvidence(journey="turn-to-end", stopped_early="auth failed for sk-live-123456")
    assert "sk-live-123456" not in r.redact(e.model_dump_json())


def test_a_secret_with_non_ascii_and_a_quote_is_masked_in_result_json() -> None:
    secret = 'pä"ss-word'
    e = JourneyEvidence(journey="turn-to-end", stopped_early=f"auth failed for {secret}")
    out = redactor(secret).redact(e.model_dump_json())
    assert "ss-word" not in out


# --- --login paths ---------------------------------------------------------------------------------


def test_a_login_file_is_masked_whole_and_line_by_line(tmp_path: Path) -> None:
    login = tmp_path / "token"
    login.write_text("ghp_abcdefghijklmnop\nsecond-line-token\n")
    r = Redactor()
    r.add_path(str(login))
    assert r.redact("using ghp_abcdefghijklmnop then second-line-token") == f"using {MASK} then {MASK}"


def test_every_file_under_a_login_folder_is_masked(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("first-secret-value")
    (tmp_path / "sub" / "b.txt").write_text("second-secret-value")
    r = Redactor()
    r.add_path(str(tmp_path))
    assert r.redact("first-secret-value second-secret-value") == f"{MASK} {MASK}"


def test_a_missing_login_path_adds_nothing(tmp_path: Path) -> None:
    r = Redactor()
    r.add_path(str(tmp_path / "nope"))
    assert not r


def test_a_binary_login_file_does_not_raise(tmp_path: Path) -> None:
    (tmp_path / "key.bin").write_bytes(bytes(range(256)) * 4)
    r = Redactor()
    r.add_path(str(tmp_path))
    assert r


def test_a_token_inside_a_json_login_file_is_masked_on_its_own(tmp_path: Path) -> None:
    login = tmp_path / ".credentials.json"
    login.write_text(json.dumps({"oauth": {"accessToken": "sk-ant-oat01-abcdefghijkl", "expiresAt": 1}}))
    r = Redactor()
    r.add_path(str(login))
    assert "sk-ant-oat01-abcdefghijkl" not in r.redact("Authorization: Bearer sk-ant-oat01-abcdefghijkl")


# --- --env NAME / NAME=VALUE ------------------------------------------------------------------------


def test_env_name_equals_value_sets_the_value() -> None:
    assert parse_env_option("API_KEY=abc=def", {}) == ("API_KEY", "abc=def")


def test_env_name_with_an_empty_value_is_allowed() -> None:
    assert parse_env_option("EMPTY=", {}) == ("EMPTY", "")


def test_env_name_alone_passes_the_hosts_value() -> None:
    assert parse_env_option("API_KEY", {"API_KEY": "from-host"}) == ("API_KEY", "from-host")


def test_env_name_alone_that_the_host_does_not_set_is_an_error() -> None:
    with pytest.raises(ValueError, match="API_KEY: not set in this environment"):
        parse_env_option("API_KEY", {})


@pytest.mark.parametrize("option", ["", "=value", "BAD-NAME=x", "A B=x", "$HOME=x"])
def test_env_with_a_bad_name_is_an_error(option: str) -> None:
    with pytest.raises(ValueError, match="expected NAME or NAME=VALUE"):
        parse_env_option(option, {})


def test_a_secret_that_reads_like_json_structure_cannot_break_result_json() -> None:
    from acp_journeys.output.redact import Redactor
    from acp_journeys.output.result_file import dump
    from acp_journeys.rules.evidence import RunResult

    r = Redactor()
    for secret in ("true", "verdict", "journeys", "schema"):
        r._secrets.add(secret)  # as if given with --env, short values included
    result = RunResult(tool_version="0", agent_command=["agent", "--key", "verdict"], started_at="t", docs_url="d")
    again = RunResult.model_validate_json(dump(result, r))
    assert again.agent_command == ["agent", "--key", "***"]


# --- masking keeps the shape of JSON ------------------------------------------------------------


INITIALIZE = ('{"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1, "agentCapabilities": '
              '{"loadSession": true, "promptCapabilities": {"image": true}}, "note": "flag true, %s"}}')


@pytest.mark.parametrize("secret", ["true", "false", "null", "json", "1234", "image", "plan"])
def test_a_raw_json_line_still_parses_to_the_same_structure(secret: str) -> None:
    raw = INITIALIZE % secret
    masked = redactor(secret).redact_json_text(raw)
    parsed, original = json.loads(masked), json.loads(raw)
    assert parsed["result"]["protocolVersion"] == 1 and parsed["result"]["agentCapabilities"] == \
        original["result"]["agentCapabilities"]


def test_a_raw_json_line_keeps_the_raw_number_token() -> None:
    raw = '{"result": {"protocolVersion": 1.0, "x": "sk-live-123456"}}'
    assert redactor("sk-live-123456").redact_json_text(raw) == '{"result": {"protocolVersion": 1.0, "x": "***"}}'


def test_a_secret_in_a_key_of_a_raw_json_line_is_masked() -> None:
    assert redactor("sk-live-123456").redact_json_text('{"sk-live-123456": 1}') == '{"***": 1}'


def test_a_raw_line_that_is_not_json_is_masked_as_text() -> None:
    assert redactor("sk-live-123456").redact_json_text("oops sk-live-123456 {") == "oops *** {"


def test_a_secret_across_string_tokens_masks_the_whole_line() -> None:
    out = redactor('a", "b').redact_json_text('{"x": ["a", "b"]}')
    assert 'a", "b' not in out


def test_a_string_with_an_escaped_quote_stays_valid_when_masked() -> None:
    raw = json.dumps({"a": 'say "sk-live-123456"'})
    assert json.loads(redactor("sk-live-123456").redact_json_text(raw)) == {"a": 'say "***"'}


def test_data_keys_are_masked_and_literals_are_not() -> None:
    out = redactor("true", "sk-live-123456").redact_data({"sk-live-123456": True, "a": ["true", None, 1]})
    assert out == {MASK: True, "a": [MASK, None, 1]}


def test_keys_that_mask_alike_stay_apart() -> None:
    out = redactor("sk-live-aaaaaa", "sk-live-bbbbbb").redact_data({"sk-live-aaaaaa": 1, "sk-live-bbbbbb": 2})
    assert sorted(out.values()) == [1, 2]


def test_words_of_the_public_protocol_and_our_titles_are_never_masked() -> None:
    from acp_journeys.rules import prompts

    r = redactor("plan", "loadSession", "end_turn")
    data = {"loadSession": True, "stopReason": "end_turn", "title": prompts.PLAN_TITLE_SAVED_PLAN}
    assert r.redact_data(data) == data
    assert r.redact("my plan") == f"my {MASK}"  # in free text they are masked


# --- the value side of --login config lines -------------------------------------------------------------


@pytest.mark.parametrize("name,content,secret", [
    ("config.toml", '[auth]\napi_key = "sk-toml-123456"\n', "sk-toml-123456"),
    ("config.yaml", "provider:\n  api-key: 'sk-yaml-123456'\n", "sk-yaml-123456"),
    ("creds.ini", "[default]\naws_secret_access_key=AKIAexample99\n", "AKIAexample99"),
    (".env", "export OPENAI_API_KEY=sk-env-123456 # the key\n", "sk-env-123456"),
    (".netrc", "machine api.example.test login bot password pw-netrc-9876\n", "pw-netrc-9876"),
])
def test_the_value_of_a_config_line_is_masked_on_its_own(tmp_path: Path, name: str, content: str,
                                                          secret: str) -> None:
    (tmp_path / name).write_text(content)
    r = Redactor()
    r.add_path(str(tmp_path / name))
    assert r.redact(f"the agent printed {secret}.") == f"the agent printed {MASK}."


def test_literals_of_a_config_file_are_no_secrets(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text("enabled = true\nport = 8080\nverbose: false\n")
    r = Redactor()
    r.add_path(str(tmp_path / "c.toml"))
    assert r.redact("true 8080 false") == "true 8080 false"


@pytest.mark.parametrize("name,content,secrets", [
    ("config.toml", 'creds = { token = "sk-inline-123456", user = "bot-user" }\n', ["sk-inline-123456"]),
    ("config.toml", '[auth]\nkeys = ["sk-array-123456", "sk-array-654321"]\n', ["sk-array-123456", "sk-array-654321"]),
    ("config.toml", 'servers = [{ name = "a", key = "sk-nested-123456" }]\n', ["sk-nested-123456"]),
    ("config.yaml", "tokens:\n  - sk-list-123456\n  - 'sk-list-654321'\n", ["sk-list-123456", "sk-list-654321"]),
    ("config.yml", "auth: {token: sk-flow-123456, user: bot-user}\n", ["sk-flow-123456"]),
    ("config.yaml", "keys: [sk-flowseq-123456, \"sk-flowseq-654321\"]\n", ["sk-flowseq-123456", "sk-flowseq-654321"]),
    ("config", "users:\n- name: me\n  user:\n    token: sk-kube-123456\n    args: [--key, sk-kube-654321]\n",
     ["sk-kube-123456", "sk-kube-654321"]),  # a kube config: YAML with no extension
])
def test_the_values_of_toml_and_yaml_structures_are_masked(tmp_path: Path, name: str, content: str,
                                                           secrets: list[str]) -> None:
    (tmp_path / name).write_text(content)
    r = Redactor()
    r.add_path(str(tmp_path / name))
    for secret in secrets:
        assert r.redact(f"the agent printed {secret}.") == f"the agent printed {MASK}.", secret


def test_parsed_config_files_add_no_literal_and_no_key(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("enabled: [true, false, 8080]\nmodel-name: {tier: 3}\n")
    r = Redactor()
    r.add_path(str(tmp_path / "c.yaml"))
    assert r.redact("true false 8080 model-name tier") == "true false 8080 model-name tier"


def test_a_yaml_bomb_in_a_login_file_is_read_within_a_bound(tmp_path: Path) -> None:
    lines = ["a0: &a0 [sk-bomb-123456]"] + [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 30)]
    (tmp_path / "bomb.yaml").write_text("\n".join(lines) + "\n")
    r = Redactor()
    r.add_path(str(tmp_path / "bomb.yaml"))  # 3**29 leaves if walked whole: a bound stops it
    assert r.redact("sk-bomb-123456") == MASK


# --- masking the decoded text, and across the parts of one text ------------------------------------------


def test_a_secret_written_with_json_escapes_is_masked_where_it_stands() -> None:
    r = redactor("sk-live-123456")
    raw = '{"text": "key \\u0073k-live-123456 and \\u0073\\u006b-live-123456\\n"}'
    masked = r.redact_json_text(raw)
    assert masked == '{"text": "key *** and ***\\n"}' and json.loads(masked) == {"text": "key *** and ***\n"}
    assert r.redact("stderr: \\u0073k-live-123456!") == "stderr: ***!"  # text that is not JSON too


def test_an_escaped_backslash_is_no_escape_and_a_surrogate_pair_is_one_character() -> None:
    assert redactor("sk-live-123456").redact("\\\\u0073k-live-123456") == "\\\\u0073k-live-123456"
    r = redactor("pw-\U0001F600-secret")
    assert r.redact_json_text(json.dumps({"t": "pw-\U0001F600-secret!"})) == '{"t": "***!"}'


def test_a_line_with_escapes_and_no_secret_is_left_byte_for_byte() -> None:
    raw = '{"text": "a\\nb \\u00e9 \\"q\\""}'
    assert redactor("sk-live-123456").redact_json_text(raw) == raw


def test_a_secret_split_over_pieces_is_masked_in_each_piece() -> None:
    r = redactor("sk-live-123456")
    assert r.redact_pieces(["reply; the key is sk-li", "ve-123", "456, as asked"]) == \
        ["reply; the key is ***", "***", "***, as asked"]
    assert r.redact_pieces(["sk-live-123456 and sk-", "live-123456"]) == ["*** and ***", "***"]
    assert r.redact_pieces(["no secret ", "here"]) == ["no secret ", "here"]
    assert Redactor().redact_pieces(["sk-li", "ve-123456"]) == ["sk-li", "ve-123456"]


def test_a_string_token_is_replaced_and_the_rest_of_the_line_kept() -> None:
    from acp_journeys.output.redact import replace_string_token

    line = '{"a":  "x\\u0079", "b": ["xy", 1], "c": "xyz"}'
    assert replace_string_token(line, "xy", "***") == '{"a":  "***", "b": ["***", 1], "c": "xyz"}'
