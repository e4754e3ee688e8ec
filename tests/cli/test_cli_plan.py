"""`run`'s options as a plan: `plan_run` is pure, so every usage error and every choice it makes
is checked here with the real parser and no process, no file and no environment of this machine."""

from __future__ import annotations

import pytest

from acp_journeys.cli import parser
from acp_journeys.cli.common import UsageError
from acp_journeys.cli.run import DOCKER_DEMO_ARGV, DOCKER_DEMO_STATE, plan_run
from acp_journeys.rules import catalog

PYTHON = "/opt/python/bin/python3"
AGENT = "/pkg/acp_journeys/demo/reference_agent.py"


def plan(*words: str, environ: dict[str, str] | None = None):
    args = parser().parse_args(["run", *words])
    return plan_run(args, environ or {}, python=PYTHON, reference_agent=AGENT)


def usage_error(*words: str, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(UsageError) as caught:
        plan(*words, environ=environ)
    return str(caught.value)


def test_a_command_after_the_double_dash_is_the_agent_as_given_for_all_seven_journeys() -> None:
    made = plan("--", "./agent.py", "--flag")
    assert made.argv == ["./agent.py", "--flag"]  # made absolute only when the run starts (a file fact)
    assert made.journeys == list(catalog.JOURNEY_IDS)
    assert made.image is None and not made.local_demo_state


def test_demo_runs_the_reference_agent_with_the_given_python_and_a_state_folder_of_its_own() -> None:
    made = plan("--demo")
    assert made.argv == [PYTHON, AGENT]
    assert made.local_demo_state and "ACP_REFERENCE_AGENT_STATE" not in made.env


def test_demo_in_docker_mode_runs_the_copy_in_the_runner_image() -> None:
    made = plan("--demo", "--image", "acp-journeys/runner:dev")
    assert made.argv == DOCKER_DEMO_ARGV
    assert made.env == {"ACP_REFERENCE_AGENT_STATE": DOCKER_DEMO_STATE}
    assert not made.local_demo_state
    assert made.subject == {"image": "acp-journeys/runner:dev"}


@pytest.mark.parametrize("words, message", [
    ((), "no agent command"),
    (("--demo", "--", "agent"), "--demo runs the bundled reference agent"),
    (("--journey", "no-such-journey", "--", "a"), "unknown journey no-such-journey"),
    (("--parallel", "0", "--", "a"), "--parallel takes a whole number of 1 or more"),
    (("--timeout-scale", "0", "--", "a"), "--timeout-scale takes a number above 0"),
    (("--login", "token.json", "--", "a"), "need docker mode"),
    (("--network", "--", "a"), "need docker mode"),
    (("--agent-dir", "agent", "--", "a"), "need docker mode"),
    (("--image", "img", "--inherit-env", "--", "a"), "--inherit-env is for local mode"),
    (("--model-stub-config-template", "a.toml:.config/a.toml", "--", "a"), "goes with --model-stub"),
    (("--model-stub", "--model-stub-config-template", "a.toml:/etc/a.toml", "--", "a"), "inside the agent's home"),
    (("--env", "KEY=1", "--setting", "KEY=2", "--", "a"), "KEY is given with --env and --setting"),
    (("--env", "not a name", "--", "a"), "expected NAME or NAME=VALUE"),
])
def test_each_usage_error_is_found_before_anything_starts(words: tuple[str, ...], message: str) -> None:
    assert message in usage_error(*words)


@pytest.mark.parametrize("flag", ["--env", "--setting"])
@pytest.mark.parametrize("option", ["1KEY=sk-secret-value", "KÉY=sk-secret-value", "A-B=sk-secret-value",
                                    "=sk-secret-value", "A B=sk-secret-value", "KEY\x1b[31m=sk-secret-value",
                                    "٣KEY=sk-secret-value", "A.B"])
def test_a_name_that_is_no_variable_name_is_refused_and_the_value_never_shown(flag: str, option: str) -> None:
    message = usage_error(flag, option, "--", "a", environ={"A.B": "x"})
    assert f"{flag} " in message and "not an environment variable name" in message
    assert "sk-secret-value" not in message and "\x1b" not in message


@pytest.mark.parametrize("flag", ["--env", "--setting"])
def test_variable_names_of_letters_digits_and_underscores_are_taken(flag: str) -> None:
    made = plan(flag, "_A1=x", flag, "lower_case=y", "--", "a")
    assert {**made.env, **made.settings} == {"_A1": "x", "lower_case": "y"}


def test_journeys_keep_their_order_once_each() -> None:
    made = plan("--journey", "stop-running-turn", "--journey", "turn-to-end", "--journey", "stop-running-turn",
                "--", "a")
    assert made.journeys == ["stop-running-turn", "turn-to-end"]


def test_env_values_are_secrets_and_a_bare_name_takes_the_given_environment() -> None:
    made = plan("--env", "API_KEY=sk-0123456789", "--env", "FROM_HOST", "--setting", "MODEL=small", "--", "a",
                environ={"FROM_HOST": "host-secret-value"})
    assert made.env == {"API_KEY": "sk-0123456789", "FROM_HOST": "host-secret-value"}
    assert made.secrets == ["sk-0123456789", "host-secret-value"]
    assert made.settings == {"MODEL": "small"}  # a setting is no secret
    assert "not set in this environment" in usage_error("--env", "MISSING", "--", "a", environ={})


def test_under_the_model_stub_an_address_template_is_filled_per_journey_and_is_no_secret() -> None:
    made = plan("--model-stub", "--env", "BASE={model_url}/v1", "--setting", "OTHER={model_url}",
                "--model-stub-config-template", "conf.toml:.config/agent/conf.toml", "--", "a")
    assert made.stub_env == {"BASE": "{model_url}/v1", "OTHER": "{model_url}"}
    assert made.env == {} and made.secrets == [] and made.warnings == []
    assert made.stub_templates == [("conf.toml", ".config/agent/conf.toml")]
    # Without --model-stub the same text is an ordinary (secret) value.
    assert plan("--env", "BASE={model_url}/v1", "--", "a").secrets == ["{model_url}/v1"]


def test_a_model_stub_that_nothing_points_the_agent_at_is_a_warning() -> None:
    made = plan("--model-stub", "--env", "KEY=value", "--", "a")
    assert len(made.warnings) == 1 and "{model_url}" in made.warnings[0]


def test_logins_keep_their_source_and_dest_as_given_in_docker_mode() -> None:
    made = plan("--image", "img", "--login", "~/.agent/token.json", "--login", "cred:/root/.cred", "--", "a")
    assert made.logins == [("~/.agent/token.json", ""), ("cred", "/root/.cred")]


def test_the_subject_is_the_given_sha_else_the_environment_s() -> None:
    assert plan("--", "a", environ={"GITHUB_SHA": "abc1234"}).subject == {"sha": "abc1234"}
    assert plan("--subject-sha", "def5678", "--", "a", environ={"GITHUB_SHA": "abc1234"}).subject == {"sha": "def5678"}
    assert plan("--", "a").subject == {}


def test_the_protocol_tier_is_opt_in_and_named_once() -> None:
    assert plan("--", "agent").tiers == []
    assert plan("--tier", "protocol", "--tier", "protocol", "--", "agent").tiers == ["protocol"]
    with pytest.raises(SystemExit):  # argparse's own usage error (exit 2) for a tier it does not know
        plan("--tier", "rondar", "--", "agent")
