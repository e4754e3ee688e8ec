"""How the editor answers session/request_permission (policy.py): pure tables, no I/O."""

from __future__ import annotations

from typing import Any

import pytest

from acp_journeys.editor.permissions import decide, is_plain_command, plan_allows
from acp_journeys.editor.plan_switch import find_plan_switch
from acp_journeys.protocol.schema import violations

ALLOW_ONCE = {"optionId": "a1", "name": "Allow once", "kind": "allow_once"}
ALLOW_ALWAYS = {"optionId": "a2", "name": "Always allow", "kind": "allow_always"}
REJECT_ONCE = {"optionId": "r1", "name": "Reject", "kind": "reject_once"}
REJECT_ALWAYS = {"optionId": "r2", "name": "Always reject", "kind": "reject_always"}
ALL_OPTIONS = [REJECT_ALWAYS, ALLOW_ALWAYS, REJECT_ONCE, ALLOW_ONCE]


def params(tool_call: dict[str, Any], options: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"sessionId": "s-1", "toolCall": {"toolCallId": "t-1", **tool_call},
            "options": ALL_OPTIONS if options is None else options}


def execute(command: str) -> dict[str, Any]:
    return {"title": command, "kind": "execute", "rawInput": {"command": command}}


def selected(option: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": "selected", "optionId": option["optionId"]}


# --- allow-all ------------------------------------------------------------------------------------


def test_allow_all_prefers_allow_once_whatever_the_order_of_the_options() -> None:
    answer = decide("allow-all", params(execute("rm -rf build")))
    assert answer.decision == "allow" and answer.outcome == selected(ALLOW_ONCE)


def test_allow_all_takes_allow_always_when_there_is_no_allow_once() -> None:
    answer = decide("allow-all", params(execute("touch x"), [REJECT_ONCE, ALLOW_ALWAYS]))
    assert answer.decision == "allow" and answer.outcome == selected(ALLOW_ALWAYS)


def test_allow_all_picks_by_kind_not_by_option_id_or_name() -> None:
    sneaky = {"optionId": "allow_once", "name": "Allow", "kind": "reject_once"}
    answer = decide("allow-all", params(execute("ls"), [sneaky, ALLOW_ALWAYS]))
    assert answer.outcome == selected(ALLOW_ALWAYS)


def test_allow_all_without_an_allow_option_answers_cancelled() -> None:
    answer = decide("allow-all", params(execute("ls"), [REJECT_ONCE, REJECT_ALWAYS]))
    assert answer.decision == "cancelled" and answer.outcome == {"outcome": "cancelled"}
    assert "no option of kind allow_once/allow_always" in answer.reason


def test_an_option_without_an_option_id_is_never_picked() -> None:
    answer = decide("allow-all", params(execute("ls"), [{"kind": "allow_once", "name": "?"}, ALLOW_ALWAYS]))
    assert answer.outcome == selected(ALLOW_ALWAYS)


@pytest.mark.parametrize("bad", [None, "text", [], {"toolCall": "x", "options": "y"}, {"options": [1, None, "z"]}])
def test_malformed_params_never_raise_and_answer_cancelled(bad: Any) -> None:
    for policy in ("allow-all", "plan"):
        assert decide(policy, bad).outcome == {"outcome": "cancelled"}  # type: ignore[arg-type]


# --- after session/cancel -----------------------------------------------------------------------


@pytest.mark.parametrize("tool_call", [execute("sleep 120"), {"title": "Read", "kind": "read"}])
def test_after_cancel_every_request_is_answered_cancelled(tool_call: dict[str, Any]) -> None:
    answer = decide("cancelled", params(tool_call))
    assert answer.decision == "cancelled" and answer.outcome == {"outcome": "cancelled"}


# --- Plan mode: what it allows -------------------------------------------------------------------


@pytest.mark.parametrize("tool_call", [
    {"title": "Read plan-input.txt", "kind": "read"},
    {"title": "mcp__rondar__create_plan", "kind": "other"},
    {"title": "get_plan (rondar MCP Server)"},
    {"title": "Tool call", "rawInput": {"name": "create_plan", "arguments": {"title": "t"}}},
    {"title": "Tool call", "rawInput": {"tool": "get_plan"}},
    {"title": "Tool call", "rawInput": {"toolName": "rondar.get_plan"}},
    execute("cat /workspace/plan-input.txt"),
    execute("cat plan-input.txt other.txt"),
    execute("/bin/cat '/workspace/a file.txt'"),
    {"title": "`cat /workspace/plan-input.txt`", "kind": "execute"},
    {"title": "Run", "kind": "execute", "rawInput": {"command": ["cat", "/workspace/plan-input.txt"]}},
    {"title": "Run", "rawInput": {"cmd": "cat notes.txt"}},
    {"title": "Find files", "kind": "search"},
    {"name": "mcp__rondar__create_plan", "title": "Save the plan", "kind": "other"},
    {"name": "rondar__get_plan", "title": "Read the plan back"},
    {"title": "mcp_rondar_create_plan", "kind": "other"},
    {"title": "Save", "kind": "other", "_meta": {"agent": {"toolName": "mcp__rondar__create_plan"}}},
    {"title": "cat /workspace/plan-input.txt (Read file)", "kind": "execute"},
    {"title": "Run `cat /workspace/plan-input.txt`", "kind": "execute"},
    {"title": "bash -lc 'cat /workspace/plan-input.txt' (Run shell command)", "kind": "execute"},
    {"title": "Shell", "kind": "execute", "rawInput": {"command": ["bash", "-lc", "cat /workspace/plan-input.txt"]}},
    {"title": "Shell", "kind": "execute", "rawInput": {"command": "/bin/bash -l -c 'cat plan-input.txt'"}},
], ids=["kind-read", "plan-tool-title", "plan-tool-title-2", "raw-input-name", "raw-input-tool", "raw-input-tool-name",
        "cat", "cat-two-files", "cat-by-path", "cat-in-title", "cat-argv", "cat-cmd-key", "kind-search",
        "name-mcp-prefixed", "name-server-prefixed", "title-mcp-single-underscore", "meta-tool-name",
        "cat-descriptive-title", "cat-quoted-in-title", "bash-lc-in-descriptive-title", "bash-lc-argv",
        "bash-l-c-string"])
def test_plan_mode_allows_reads_the_plan_tools_and_a_plain_cat(tool_call: dict[str, Any]) -> None:
    answer = decide("plan", params(tool_call))
    assert answer.decision == "allow" and answer.outcome == selected(ALLOW_ONCE), answer.reason


# --- Plan mode: what it refuses ----------------------------------------------------------------


@pytest.mark.parametrize("tool_call", [
    execute("cat x > y"),
    execute("cat a >> b"),
    execute("cat a; rm b"),
    execute("cat a && rm b"),
    execute("cat a | tee b"),
    execute("cat $(rm b)"),
    execute("cat `rm b`"),
    execute("cat a\nrm b"),
    execute("cat < a"),
    execute("cat 'unclosed"),
    execute("rm -rf /workspace"),
    execute("touch /workspace/new.txt"),
    execute("sleep 120"),
    execute("catalog x"),
    execute(""),
    {"title": "Edit README.md", "kind": "edit", "rawInput": {"path": "README.md"}},
    {"title": "Delete notes.md", "kind": "delete"},
    {"title": "Move a to b", "kind": "move"},
    {"title": "Something"},
    {"title": "cat a; rm b (Read file)", "kind": "execute"},
    {"title": "bash -lc 'cat a > b' (Run shell command)", "kind": "execute"},
    {"title": "Write notes", "kind": "other", "rawInput": {"content": "then call create_plan"}},
    {"name": "mcp__rondar__delete_plan", "title": "Delete", "kind": "other"},
], ids=["redirect", "append", "chain-semicolon", "chain-and", "pipe", "substitution", "backticks", "newline",
        "input-redirect", "unclosed-quote", "rm", "touch", "sleep", "not-cat", "empty", "edit", "delete", "move",
        "unknown", "chain-in-descriptive-title", "redirect-behind-bash-lc", "plan-tool-only-in-arguments",
        "other-mcp-tool"])
def test_plan_mode_refuses_everything_else(tool_call: dict[str, Any]) -> None:
    answer = decide("plan", params(tool_call))
    assert answer.decision == "refuse" and answer.outcome == selected(REJECT_ONCE), answer.reason


def test_plan_mode_refusal_takes_reject_always_when_there_is_no_reject_once() -> None:
    answer = decide("plan", params(execute("rm x"), [ALLOW_ONCE, REJECT_ALWAYS]))
    assert answer.decision == "refuse" and answer.outcome == selected(REJECT_ALWAYS)


def test_plan_mode_refusal_without_a_reject_option_answers_cancelled() -> None:
    answer = decide("plan", params(execute("rm x"), [ALLOW_ONCE, ALLOW_ALWAYS]))
    assert answer.decision == "cancelled" and answer.outcome == {"outcome": "cancelled"}
    assert "no option of kind reject_once/reject_always" in answer.reason


def test_plan_mode_allow_without_an_allow_option_answers_cancelled() -> None:
    answer = decide("plan", params({"title": "Read", "kind": "read"}, [REJECT_ONCE]))
    assert answer.decision == "cancelled" and answer.outcome == {"outcome": "cancelled"}


@pytest.mark.parametrize("tool_call", [
    {"title": "Write get_plan_notes.md", "kind": "edit", "rawInput": {"path": "get_plan_notes.md"}},
    execute("rm -rf /workspace/src # create_plan"),
], ids=["edit-naming-get_plan", "rm-naming-create_plan"])
def test_plan_mode_refuses_a_write_that_only_names_a_plan_tool(tool_call: dict[str, Any]) -> None:
    assert plan_allows({"toolCallId": "t-1", **tool_call})[0] is False


# --- the helpers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("command,plain", [
    ("cat a", True), ("  cat   a  ", True), ("/usr/bin/cat a", True), ("cat", True),
    ("cat a > b", False), ("echo a", False), ("", False), ("cat 'a", False), ("cat a & ", False),
])
def test_is_plain_command(command: str, plain: bool) -> None:
    assert is_plain_command(command, ("cat",)) is plain


@pytest.mark.parametrize("policy,tool_call", [
    ("allow-all", execute("touch x")),
    ("plan", execute("cat x")),
    ("plan", execute("rm x")),
    ("cancelled", execute("sleep 120")),
])
def test_every_answer_is_a_valid_request_permission_response(policy: str, tool_call: dict[str, Any]) -> None:
    for options in (ALL_OPTIONS, [ALLOW_ONCE], []):
        answer = decide(policy, params(tool_call, options))  # type: ignore[arg-type]
        assert violations("client-response", "session/request_permission", {"outcome": answer.outcome}) == []


# --- Rondar's rule for finding Plan mode in the session/new answer (driver.find_plan_switch) -----------


def modes(*available: tuple[str, str], current: str = "default") -> dict[str, Any]:
    return {"currentModeId": current, "availableModes": [{"id": i, "name": n} for i, n in available]}


def select(option_id: str, category: str | None, options: list[dict[str, Any]], current: str = "ask") -> dict:
    return {"id": option_id, "name": option_id.title(), "category": category, "type": "select",
            "currentValue": current, "options": options}


def values(*names: str) -> list[dict[str, str]]:
    return [{"value": v, "name": v.title()} for v in names]


@pytest.mark.parametrize("mode_id,name", [
    ("plan", "Whatever"), ("planning", "Whatever"), ("PLAN", "x"), ("Planning", "x"),
    ("architect", "plan"), ("architect", "Planning"), ("architect", "PLANNING"),
])
def test_a_mode_whose_id_or_name_is_plan_or_planning_in_any_case_is_plan_mode(mode_id: str, name: str) -> None:
    switch = find_plan_switch({"sessionId": "s", "modes": modes(("default", "Default"), (mode_id, name))})
    assert switch.how == "mode"
    assert switch.plan_value == mode_id  # set_mode takes the id, also when the name matched
    assert switch.initial_value == "default"
    assert switch.offered_modes == ["default", mode_id]


@pytest.mark.parametrize("mode_id,name", [("plan-mode", "Plan mode"), ("planner", "Planner"), ("code", "Code")])
def test_a_mode_that_only_resembles_plan_is_not_plan_mode(mode_id: str, name: str) -> None:
    switch = find_plan_switch({"sessionId": "s", "modes": modes(("default", "Default"), (mode_id, name))})
    assert switch.how is None and switch.offered_modes == ["default", mode_id]


def test_the_first_plan_mode_wins() -> None:
    switch = find_plan_switch({"modes": modes(("planning", "Planning"), ("plan", "Plan"))})
    assert switch.plan_value == "planning"


def test_a_config_option_of_category_mode_with_a_plan_value_is_plan_mode() -> None:
    answer = {"sessionId": "s", "configOptions": [select("model", "model", values("fast", "plan")),
                                                  select("mode", "mode", values("ask", "code", "plan"))]}
    switch = find_plan_switch(answer)
    assert (switch.how, switch.plan_value, switch.config_id, switch.initial_value) == (
        "config-option", "plan", "mode", "ask")
    assert switch.offered_config_values == ["ask", "code", "plan"]  # only options of the category mode


def test_a_plan_value_in_grouped_options_is_found() -> None:
    grouped = [{"group": "safe", "name": "Safe", "options": values("ask", "plan")},
               {"group": "bold", "name": "Bold", "options": values("auto")}]
    switch = find_plan_switch({"configOptions": [select("agent-mode", "mode", grouped)]})
    assert (switch.how, switch.config_id, switch.plan_value) == ("config-option", "agent-mode", "plan")


def test_a_plan_value_outside_the_category_mode_does_not_count() -> None:
    switch = find_plan_switch({"configOptions": [select("model", "model", values("plan")),
                                                 select("style", None, values("plan"))]})
    assert switch.how is None and switch.offered_config_values == []


def test_a_plan_mode_is_preferred_to_a_config_option() -> None:
    answer = {"modes": modes(("default", "Default"), ("plan", "Plan")),
              "configOptions": [select("mode", "mode", values("ask", "plan"))]}
    assert find_plan_switch(answer).how == "mode"


def test_modes_without_plan_fall_back_to_config_options() -> None:
    answer = {"modes": modes(("default", "Default")), "configOptions": [select("mode", "mode", values("plan"))]}
    switch = find_plan_switch(answer)
    assert switch.how == "config-option" and switch.offered_modes == ["default"]


@pytest.mark.parametrize("answer", [
    None, {}, {"sessionId": "s"}, {"modes": None, "configOptions": None}, {"modes": "plan", "configOptions": "plan"},
    {"modes": {"availableModes": ["plan", None]}, "configOptions": [None, "plan", {"category": "mode"}]},
], ids=["none", "empty", "session-only", "nulls", "strings", "junk-items"])
def test_no_plan_mode_anywhere_gives_how_none(answer: Any) -> None:
    switch = find_plan_switch(answer)
    assert switch.how is None and switch.plan_value is None and switch.config_id is None


def test_no_plan_mode_records_what_was_offered() -> None:
    answer = {"modes": modes(("default", "Default"), ("code", "Code")),
              "configOptions": [select("mode", "mode", values("ask", "auto"))]}
    switch = find_plan_switch(answer)
    assert switch.how is None
    assert switch.offered_modes == ["default", "code"] and switch.offered_config_values == ["ask", "auto"]


@pytest.mark.parametrize("command,allowed", [
    ("bash -lc 'cat /w/plan-input.txt'", True),
    ("sh -c 'cat /w/plan-input.txt'", True),
    ("bash -lc 'cat a > b'", False),
    ("bash -lc 'touch x'", False),
])
def test_plan_mode_judges_the_command_inside_a_shell_wrapper(command, allowed):
    from acp_journeys.editor.permissions import plan_allows

    assert plan_allows({"kind": "execute", "rawInput": {"command": command}})[0] is allowed
