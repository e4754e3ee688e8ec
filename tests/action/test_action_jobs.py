"""`acp-journeys action JOB`: the action's steps that run in the runner image, tested in-process
(no bash, no docker, no harness): how each input is checked (the run's by plan_run, with one
message), what prepare leaves for the shell (the outputs, build.args, run.args, run.cli), and
the command lines and words of the report and the gate.
"""

from __future__ import annotations

import io
import json
import os
import contextlib
import shlex
import shutil
from pathlib import Path

import pytest
from conftest import reference_agent, run_journeys

from acp_journeys.cli import action as action_cli
from acp_journeys.cli.action import cleanup, merge, prepare, report, run_step
from acp_journeys.cli.action.inputs import Inputs, keep_inputs, read_args
from acp_journeys.cli.common import UsageError

SHA = "0123456789abcdef0123456789abcdef01234567"
TWO = ("--journey", "turn-to-end", "--journey", "image-and-file")


class Step:
    """A GitHub-like step environment: a workspace with a Dockerfile, a temp folder, a home."""

    def __init__(self, root: Path) -> None:
        self.workspace, self.temp, self.home = root / "ws", root / "temp", root / "home"
        for folder in (self.workspace, self.temp, self.home):
            folder.mkdir()
        (self.workspace / "Dockerfile").write_text("FROM scratch\n")
        self.output = root / "output"
        self.output.write_text("")
        self.base = {"GITHUB_WORKSPACE": str(self.workspace), "ACPJ_TEMP": str(self.temp), "HOME": str(self.home),
                     "GITHUB_SHA": SHA, "GITHUB_OUTPUT": str(self.output), "ACPJ_AGENT_COMMAND": "agent --acp"}

    def env(self, **extra: str) -> dict[str, str]:
        return {**self.base, **extra}

    def prepare(self, **extra: str) -> tuple[int, str, dict[str, str]]:
        """`action prepare` as the command line runs it: its exit code, what it printed, its outputs."""
        self.output.write_text("")
        out = io.StringIO()
        with contextlib.redirect_stdout(out), _environ(self.env(**extra)):
            code = action_cli.run(action_cli_args("prepare"))
        outputs = dict(line.split("=", 1) for line in self.output.read_text().splitlines())
        return code, out.getvalue(), outputs


def action_cli_args(job: str, work: str | None = None):  # type: ignore[no-untyped-def]
    from acp_journeys.cli import parser

    return parser().parse_args(["action", job, *([work] if work else [])])


@contextlib.contextmanager
def _environ(env: dict[str, str]):  # type: ignore[no-untyped-def]
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update({k: v for k, v in saved.items() if k in ("PATH", "LANG")}, **env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def step(tmp_path: Path) -> Step:
    return Step(tmp_path)


# --- prepare ---------------------------------------------------------------------------------------

def test_prepare_makes_the_work_folder_and_the_agent_image_name(step: Step) -> None:
    code, log, outputs = step.prepare()
    assert code == 0, log
    work = Path(outputs["work"])
    assert work.is_dir() and work.parent == step.temp and oct(work.stat().st_mode & 0o777) == "0o755"
    assert outputs["result-path"] == str(work / "result.json") and outputs["html-path"] == str(work / "result.html")
    suffix = work.name.rsplit(".", 1)[1].lower()
    assert outputs["agent-image"] == f"acp-journeys-agent:{SHA[:12]}-{suffix}"
    assert outputs["runner-name"] == f"acp-journeys-runner-{suffix}" and outputs["report-network"] == "bridge"
    assert f"work folder {work}" in log
    code, log, custom = step.prepare(ACPJ_RESULT_PATH="out/result.json", ACPJ_IMAGE="mine:1")
    assert code == 0, log
    assert custom["result-path"] == str(step.workspace / "out" / "result.json")
    assert custom["html-path"] == str(step.workspace / "out" / "result.html")
    assert (step.workspace / "out").is_dir() and custom["agent-image"] == "mine:1"
    assert not (Path(custom["work"]) / "build.args").exists()  # a prebuilt image: nothing to build


@pytest.mark.parametrize("env,message", [
    ({"ACPJ_AGENT_COMMAND": "  "}, "input agent-command is empty"),
    ({"ACPJ_AGENT_COMMAND": "agent 'unclosed"}, "input agent-command: cannot be split into words: unmatched single quote"),
    ({"ACPJ_ENV": "not a name=1"}, "input env: a line is not NAME or NAME=VALUE"),
    ({"ACPJ_ENV": "PATH=/agent/bin"}, "input env: PATH cannot be passed"),
    ({"ACPJ_ENV": "ACP_JOURNEYS_SHARED_DIR=/x"}, "ACP_JOURNEYS_SHARED_DIR cannot be passed"),
    ({"ACPJ_ENV": "UNSET_IN_STEP"}, "input env: UNSET_IN_STEP is not set in the step's environment"),
    ({"ACPJ_LOGIN": "missing.json"}, "missing.json does not exist"),
    ({"ACPJ_JOURNEYS": "turn-to-end;rm"}, "input journeys: 'turn-to-end;rm' is not a journey id"),
    ({"ACPJ_JOURNEYS": "turn-to-end no-such-journey"}, "input journeys: unknown journey no-such-journey"),
    ({"ACPJ_NETWORK": "maybe"}, "input network: expected true or false, got 'maybe'"),
    ({"ACPJ_MODEL_STUB": "perhaps"}, "input model-stub: expected true or false, got 'perhaps'"),
    ({"ACPJ_FAIL_ON_FAILURE": "sometimes"}, "input fail-on-failure: expected true or false"),
    ({"ACPJ_POST_CHECK": "later"}, "input post-check: expected true or false, got 'later'"),
    ({"ACPJ_BUILD_ARGS": "=x"}, "input build-args: a line is not NAME=VALUE"),
    ({"ACPJ_BUILD_NETWORK": "host"}, "input build-network: expected default or none, got 'host'"),
    ({"ACPJ_CONTEXT": "nowhere"}, "input context: "),
    ({"ACPJ_DOCKERFILE": "agent/Dockerfile"}, "no Dockerfile at"),
    ({"ACPJ_RESULT_PATH": "a\nb"}, "input result-path: must be one line"),
    ({"ACPJ_TIMEOUT_SCALE": "fast"}, "input timeout-scale: expected a number above 0 (like 2 or 1.5), got 'fast'"),
    # The rules of the command line's options: plan_run's own words, under the input's name.
    ({"ACPJ_TIMEOUT_SCALE": "0"}, "input timeout-scale: --timeout-scale takes a number above 0"),
    ({"ACPJ_TIMEOUT_SCALE": "-2"}, "input timeout-scale: expected a number above 0"),
    ({"ACPJ_PARALLEL": "0"}, "input parallel: --parallel takes a whole number of 1 or more"),
    ({"ACPJ_PARALLEL": "2.5"}, "input parallel: expected a whole number of 1 or more, got '2.5'"),
    ({"ACPJ_STRICT": "very"}, "input strict: expected true or false, got 'very'"),
    ({"ACPJ_TIER": "rondar"}, "input tier: expected protocol or nothing, got 'rondar'"),
    ({"ACPJ_SETTINGS": "not a name=1"}, "input settings: --setting 'not a name': not an environment variable name"),
    ({"ACPJ_SETTINGS": "UNSET_IN_STEP"}, "input settings: --setting UNSET_IN_STEP: not set in this environment"),
    ({"ACPJ_SETTINGS": "API_KEY=x", "ACPJ_ENV": "API_KEY=y"},
     "input settings: API_KEY is given with --env and --setting: one or the other"),
    ({"ACPJ_BASELINE": "no-such-baseline.yml"}, "input baseline: "),
    ({"ACPJ_BASELINE": "/etc/hostname"}, "input baseline: /etc/hostname is not in the workspace"),
    ({"ACPJ_MODEL_STUB": "true", "ACPJ_CONFIG_TEMPLATES": "Dockerfile"},
     "input model-stub-config-templates: --model-stub-config-template wants SRC:DEST"),
    ({"ACPJ_MODEL_STUB": "true", "ACPJ_CONFIG_TEMPLATES": "Dockerfile:/etc/agent.toml"},
     "must be a path inside the agent's home"),
    ({"ACPJ_MODEL_STUB": "true", "ACPJ_CONFIG_TEMPLATES": "Dockerfile:.config/../../x"},
     "must be a path inside the agent's home"),
    ({"ACPJ_MODEL_STUB": "true", "ACPJ_CONFIG_TEMPLATES": "missing.toml:.config/a.toml"}, "is not a file"),
    ({"ACPJ_MODEL_STUB": "true", "ACPJ_CONFIG_TEMPLATES": "../outside.toml:.config/a.toml"}, "is not in the workspace"),
    ({"ACPJ_CONFIG_TEMPLATES": "Dockerfile:.config/a.toml"},
     "input model-stub-config-templates: --model-stub-config-template goes with --model-stub"),
])
def test_prepare_rejects_bad_inputs_before_any_build(step: Step, env: dict[str, str], message: str) -> None:
    code, log, outputs = step.prepare(**env)
    assert code == 2, log
    [line] = [line for line in log.splitlines() if line.startswith("::error::")]
    assert message in line, log
    assert outputs == {} and list(step.temp.iterdir()) == []  # no work folder, no output


def test_a_bad_input_never_shows_a_value_of_the_env_input(step: Step) -> None:
    code, log, _ = step.prepare(ACPJ_ENV="API_KEY=s3cr3t-value\nPATH=s3cr3t-path", ACPJ_SETTINGS="API_KEY=x")
    assert code == 2 and "s3cr3t" not in log, log
    code, log, _ = step.prepare(ACPJ_ENV="bad name=s3cr3t-value")
    assert code == 2 and "s3cr3t" not in log, log


def test_prepare_writes_the_run_for_the_shell(step: Step) -> None:
    (step.workspace / "auth.json").write_text("{}")
    (step.home / ".agentrc").write_text("x")
    code, log, outputs = step.prepare(
        ACPJ_AGENT_COMMAND="""node "/agent/my dir/cli.js" --acp --name 'a b' --glob '*' x\\ y""",
        ACPJ_JOURNEYS="turn-to-end, image-and-file\nstop-running-turn", ACPJ_NETWORK="true", ACPJ_MODEL_STUB="true",
        ACPJ_DOCS_URL="https://example.test/doc", ACPJ_ENV="API_KEY=s3cr3t value=with=equals\n# no\nFROM_STEP",
        ACPJ_LOGIN="auth.json:/root/.config/agent/auth.json\n~/.agentrc", FROM_STEP="from the step")
    assert code == 0, log
    work = outputs["work"]
    cli = read_args(f"{work}/run.cli")
    assert cli[cli.index("--") + 1:] == ["node", "/agent/my dir/cli.js", "--acp", "--name", "a b", "--glob", "*", "x y"]
    head = cli[:cli.index("--")]
    assert head[:7] == ["run", "--image", outputs["agent-image"], "--output", f"{work}/result.json",
                        "--html", f"{work}/result.html"]
    assert [head[i + 1] for i, a in enumerate(head) if a == "--journey"] == [
        "turn-to-end", "image-and-file", "stop-running-turn"]
    assert "--network" in head and "--model-stub" in head and head[head.index("--subject-sha") + 1] == SHA
    assert head[head.index("--docs-url") + 1] == "https://example.test/doc"
    assert [head[i + 1] for i, a in enumerate(head) if a == "--env"] == ["API_KEY", "FROM_STEP"]
    assert [head[i + 1] for i, a in enumerate(head) if a == "--login"] == [
        f"{step.workspace}/auth.json:/root/.config/agent/auth.json", f"{step.home}/.agentrc"]
    options = read_args(f"{work}/run.args")
    name = outputs["runner-name"]
    assert options[options.index("--name") + 1] == name
    assert f"acp-journeys.owner=container:{name}" in options and f"ACP_JOURNEYS_OWNER=container:{name}" in options
    assert f"{step.workspace}/auth.json:{step.workspace}/auth.json:ro" in options
    assert f"{step.home}/.agentrc:{step.home}/.agentrc:ro" in options
    volume = read_args(f"{work}/volume.args")
    assert volume[-1] in options[options.index("-v") + 1] and f"acp-journeys.owner=container:{name}" in volume
    assert volume[-1 - len(prepare.SOCKETS_VOLUME_OPTIONS):-1] == list(prepare.SOCKETS_VOLUME_OPTIONS)
    # Values never in a file: NAME alone is passed by the docker client, NAME=VALUE through ACPJ_ENV.
    assert [options[i + 1] for i, a in enumerate(options) if a == "-e"][-2:] == ["ACPJ_ENV", "FROM_STEP"]
    for path in Path(work).rglob("*"):
        assert b"s3cr3t" not in path.read_bytes() and b"from the step" not in path.read_bytes(), path
    assert "s3cr3t" not in log and "s3cr3t" not in step.output.read_text()


def test_run_sh_makes_the_sockets_volume_as_the_action_does() -> None:
    """One rule for the MCP sockets' tmpfs, though run.sh spells it in bash."""
    script = (Path(__file__).resolve().parents[2] / "run.sh").read_text().replace("\\\n", " ")
    [line] = [line for line in script.splitlines() if line.startswith("docker volume create ")]
    words = shlex.split(line)
    assert words[words.index("--driver"):words.index('$volume')] == list(prepare.SOCKETS_VOLUME_OPTIONS), line


def test_prepare_writes_the_new_inputs_as_options(step: Step) -> None:
    (step.workspace / "acp").mkdir()
    (step.workspace / "acp" / "baseline.yml").write_text("- stop-running-turn\n")
    (step.workspace / "acp" / "config.toml").write_text('url = "{model_url}/v1"\n')
    (step.workspace / "acp" / "models.json").write_text("{}")
    code, log, outputs = step.prepare(
        ACPJ_BASELINE="acp/baseline.yml", ACPJ_TIMEOUT_SCALE="2.5", ACPJ_STRICT="true", ACPJ_PARALLEL="3",
        ACPJ_TIER="protocol", ACPJ_MODEL_STUB="true", ACPJ_SETTINGS="AGENT_MODEL=stub model\n# no\nKERNEL_PYTHON\n",
        KERNEL_PYTHON="/opt/kernel/bin/python",
        ACPJ_CONFIG_TEMPLATES="acp/config.toml:.config/agent/config.toml\nacp/models.json:.prime/agent/models.json")
    assert code == 0, log
    work = Path(outputs["work"])
    # Copied into the work folder, which every runner container mounts (the workspace is not).
    assert (work / "baseline" / "baseline.yml").read_text() == "- stop-running-turn\n"
    assert (work / "templates" / "1" / "config.toml").exists() and (work / "templates" / "2" / "models.json").exists()
    head = read_args(f"{work}/run.cli")
    head = head[:head.index("--")]
    assert head[head.index("--timeout-scale") + 1] == "2.5" and head[head.index("--parallel") + 1] == "3"
    assert "--strict" in head and "--model-stub" in head
    assert head[head.index("--tier") + 1] == "protocol"  # the protocol tier, with its own verdict
    assert [head[i + 1] for i, a in enumerate(head) if a == "--setting"] == [
        "AGENT_MODEL=stub model", "KERNEL_PYTHON=/opt/kernel/bin/python"]
    assert [head[i + 1] for i, a in enumerate(head) if a == "--model-stub-config-template"] == [
        f"{work}/templates/1/config.toml:.config/agent/config.toml",
        f"{work}/templates/2/models.json:.prime/agent/models.json"]
    assert head[head.index("--baseline") + 1] == f"{work}/baseline/baseline.yml"
    # The report and the gate judge under the same baseline.
    assert report.report_cli(step.env(), str(work))[-2:] == ["--baseline", f"{work}/baseline/baseline.yml"]
    assert report.gate_cli(step.env(), str(work))[-2:] == ["--baseline", f"{work}/baseline/baseline.yml"]
    # Without them: none of these options.
    code, log, plain = step.prepare()
    head = read_args(f"{plain['work']}/run.cli")
    assert not {"--timeout-scale", "--parallel", "--strict", "--setting", "--baseline",
                "--model-stub-config-template", "--tier"} & set(head)


def test_prepare_writes_the_build(step: Step) -> None:
    (step.workspace / "agent").mkdir()
    (step.workspace / "agent" / "Dockerfile.acp").write_text("FROM scratch\n")
    code, log, outputs = step.prepare(ACPJ_CONTEXT="agent", ACPJ_DOCKERFILE="agent/Dockerfile.acp",
                                      ACPJ_BUILD_ARGS="BASE=python:3.12\nTOKEN")
    assert code == 0, log
    assert read_args(f"{outputs['work']}/build.args") == [
        "--build-arg", "BASE=python:3.12", "--build-arg", "TOKEN", "--label",
        f"org.opencontainers.image.revision={SHA}", "-f", f"{step.workspace}/agent/Dockerfile.acp", "-t",
        outputs["agent-image"], f"{step.workspace}/agent"]
    assert "network default" in log


@pytest.mark.parametrize("value,options", [("", []), ("default", []), ("none", ["--network", "none"])])
def test_build_network_goes_to_the_build_only(step: Step, value: str, options: list[str]) -> None:
    code, log, outputs = step.prepare(ACPJ_BUILD_NETWORK=value)
    assert code == 0, log
    build = read_args(f"{outputs['work']}/build.args")
    assert build[:len(options)] == options and ("--network" in build) == bool(options)
    assert f"network {value or 'default'}" in log


@pytest.mark.parametrize("config,dockerignore,warned", [
    ('[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3M=\n', None, True),
    ('[remote "origin"]\n\turl = https://x-access-token:ghs_abc@github.com/o/r\n', None, True),
    ('[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3M=\n', "node_modules\n.git\n", False),
    ('[remote "origin"]\n\turl = https://github.com/o/r\n', None, False),
])
def test_prepare_warns_of_a_token_in_the_build_context(step: Step, config: str, dockerignore: str | None,
                                                       warned: bool) -> None:
    (step.workspace / ".git").mkdir()
    (step.workspace / ".git" / "config").write_text(config)
    if dockerignore is not None:
        (step.workspace / ".dockerignore").write_text(dockerignore)
    code, log, _ = step.prepare()
    assert code == 0, log
    assert ("::warning::the build context's .git/config holds a token" in log) == warned, log
    assert "eC1hY2Nlc3M" not in log and "ghs_abc" not in log


@pytest.mark.parametrize("url,network", [("http://127.0.0.1:1", "host"), ("http://localhost:8080/api", "host"),
                                         ("http://[::1]:9/", "host"), ("https://api.github.com", "bridge"),
                                         ("https://u:p@127.0.0.1.example.test", "bridge")])
def test_the_report_gets_the_hosts_network_only_for_a_loopback_api(step: Step, url: str, network: str) -> None:
    code, log, outputs = step.prepare(GITHUB_API_URL=url)
    assert code == 0 and outputs["report-network"] == network, (url, log)


def test_no_output_holds_a_line_break(step: Step) -> None:
    (step.temp / "a\nb").mkdir()
    code, log, outputs = step.prepare(ACPJ_TEMP=str(step.temp / "a\nb"))
    assert code == 2 and "internal: output work holds a line break" in log and outputs == {}


# --- run ---------------------------------------------------------------------------------------------

def test_run_sets_the_env_values_in_its_own_environment(step: Step, tmp_path: Path) -> None:
    """`action run` runs prepare's command line; --env NAME reads the value that ACPJ_ENV gave."""
    code, log, outputs = step.prepare(ACPJ_IMAGE="agent:test", ACPJ_ENV="API_KEY=s3cr3t value=x\nFROM_STEP",
                                      FROM_STEP="from the step")
    assert code == 0, log
    work = outputs["work"]
    environ = step.env(ACPJ_ENV="API_KEY=s3cr3t value=x\nFROM_STEP", FROM_STEP="from the step")
    assert run_step.environment(environ) == {"API_KEY": "s3cr3t value=x"}
    # A bad env input is caught here too, with prepare's message.
    with pytest.raises(UsageError, match="input env: FROM_STEP is not set"):
        run_step.environment(step.env(ACPJ_ENV="FROM_STEP"))
    assert read_args(f"{work}/run.cli")[-3:] == ["--", "agent", "--acp"]


# --- report and gate ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Path]:
    """Real runs of two journeys of the reference agent (of commit SHA), and of an agent that fails one."""
    out = {}
    for name, agent in (("pass", reference_agent()), ("fail", reference_agent("cancel-end-turn"))):
        tmp = tmp_path_factory.mktemp(name)
        outcome = run_journeys(agent, tmp, "--journey", "turn-to-end", "--journey", "stop-running-turn",
                               "--subject-sha", SHA)
        assert outcome.code == (0 if name == "pass" else 1), outcome.stderr
        out[name] = outcome.path
    return out


def _work(tmp_path: Path, result: Path) -> str:
    work = tmp_path / "acp-journeys.x1"
    work.mkdir()
    (work / "result.json").write_text(result.read_text())
    return str(work)


def _kept(work: str, env: dict[str, str]) -> dict[str, str]:
    """env, with its inputs kept in WORK/inputs.json as prepare keeps them (the later steps read them there)."""
    keep_inputs(Inputs(env), work)
    return env


def test_report_command_line(tmp_path: Path) -> None:
    work = str(tmp_path)
    env = {"GITHUB_SHA": SHA, "ACPJ_CHECK_NAME": "My check",
           "ACPJ_ARTIFACT_URL": "https://github.example.test/o/r/actions/runs/1/artifacts/2"}
    assert report.report_cli(_kept(work, env), work) == [
        "report", f"{work}/result.json", "--github", "--check-name", "My check", "--expect-sha", SHA,
        "--artifact-url", "https://github.example.test/o/r/actions/runs/1/artifacts/2"]
    # The journeys that ran, as the gate names them: a file without one is reported PARTIAL.
    assert report.report_cli(_kept(work, {"ACPJ_POST_CHECK": "false", "ACPJ_JOURNEYS": "turn-to-end"}), work) == [
        "report", f"{work}/result.json", "--github", "--check-name", "ACP journeys", "--journey", "turn-to-end",
        "--no-check-run"]
    with pytest.raises(UsageError, match="input post-check: expected true or false"):
        report.report_cli(_kept(work, {"ACPJ_POST_CHECK": "later"}), work)


def test_gate_command_line(tmp_path: Path) -> None:
    work = str(tmp_path)
    assert report.gate_cli(_kept(work, {"GITHUB_SHA": SHA}), work) == ["verify", f"{work}/result.json", "--expect-sha", SHA]
    # verify calls a file without some journeys partial, unless it is told which ones ran.
    assert report.gate_cli(_kept(work, {"ACPJ_JOURNEYS": "turn-to-end, image-and-file", "GITHUB_SHA": SHA}), work) == [
        "verify", f"{work}/result.json", "--journey", "turn-to-end", "--journey", "image-and-file",
        "--expect-sha", SHA]


def _gate(work: str, prepared: bool = False, **env: str) -> tuple[int, str, str]:
    """The gate in WORK; its inputs from env, kept as prepare keeps them unless prepare made WORK."""
    messages = Path(work) / "messages"
    messages.write_text("")
    env = {"ACPJ_MESSAGES": str(messages), **env}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = report.gate(env if prepared else _kept(work, env), work)
    return code, out.getvalue(), messages.read_text()


TWO_RAN = {"ACPJ_JOURNEYS": "turn-to-end stop-running-turn", "GITHUB_SHA": SHA}


@pytest.mark.parametrize("which,fail_on_failure,code,message", [
    ("pass", "true", 0, ""),
    ("fail", "true", 1, "error ACP journeys failed (1 failed, 1 passed): see the job summary"),
    ("fail", "false", 0, "warning ACP journeys failed (1 failed); fail-on-failure is false, so the job goes on"),
])
def test_gate_follows_fail_on_failure(results: dict[str, Path], tmp_path: Path, which: str, fail_on_failure: str,
                                      code: int, message: str) -> None:
    work = _work(tmp_path, results[which])
    got, log, messages = _gate(work, ACPJ_FAIL_ON_FAILURE=fail_on_failure, ACPJ_FAILED="1", ACPJ_PASSED="1",
                               ACPJ_VERDICT=which, **TWO_RAN)
    assert got == code, log
    assert messages == (f"{message}\n" if message else "")
    if which == "pass":
        assert log == "acp-journeys: verdict: pass (reported: pass)\n"
    else:
        assert "verdict: FAIL" in log  # verify's lines, printed under the shell's pause


@pytest.mark.parametrize("word,env", [("REFUSED", {"GITHUB_SHA": "deadbeef"}),
                                      ("PARTIAL", {"ACPJ_JOURNEYS": "all", "GITHUB_SHA": SHA})])
def test_gate_says_the_word_of_a_refused_or_partial_result(results: dict[str, Path], tmp_path: Path, word: str,
                                                           env: dict[str, str]) -> None:
    """Not "0 failed, 2 passed": a refused or partial result fails the job with the gate's word."""
    work = _work(tmp_path, results["pass"])
    code, log, messages = _gate(work, ACPJ_FAILED="0", ACPJ_PASSED="2", **env)
    assert code == 1 and f"verdict: {word}: 2 of 2 journeys passed" in log, log
    assert messages == f"error ACP journeys: the gate says {word} (see verify's verdict line above): the job fails\n"
    code, log, messages = _gate(work, ACPJ_FAIL_ON_FAILURE="false", **env)
    assert code == 0 and messages.startswith(f"warning ACP journeys: the gate says {word}; fail-on-failure is false")


def test_the_steps_after_prepare_judge_with_the_inputs_it_kept(step: Step, results: dict[str, Path]) -> None:
    """The inputs reach the later steps once, through prepare: a job-level env: of the same name
    (every step of the job sees it) never changes what prepare checked, nor does its absence."""
    code, log, outputs = step.prepare(ACPJ_FAIL_ON_FAILURE="false", ACPJ_CHECK_NAME="Kept check",
                                      ACPJ_JOURNEYS="turn-to-end stop-running-turn", ACPJ_POST_CHECK="no")
    assert code == 0, log
    work = outputs["work"]
    shutil.copyfile(results["fail"], f"{work}/result.json")
    later = {"ACPJ_FAIL_ON_FAILURE": "true", "ACPJ_CHECK_NAME": "Job env", "ACPJ_JOURNEYS": "all", "GITHUB_SHA": SHA}
    got, log, messages = _gate(work, prepared=True, **later)
    assert got == 0 and messages.startswith("warning ACP journeys failed"), (log, messages)
    cli = report.report_cli(later, work)
    assert cli[cli.index("--check-name") + 1] == "Kept check" and cli[-1] == "--no-check-run"
    assert [cli[i + 1] for i, a in enumerate(cli) if a == "--journey"] == ["turn-to-end", "stop-running-turn"]
    assert report.gate_cli({}, work) == ["verify", f"{work}/result.json", "--journey", "turn-to-end",
                                         "--journey", "stop-running-turn"]
    # An input left empty is kept empty: the default, whatever the job's env: says.
    code, log, outputs = step.prepare()
    assert code == 0, log
    assert report.gate_cli({"ACPJ_JOURNEYS": "turn-to-end"}, outputs["work"]) == [
        "verify", f"{outputs['work']}/result.json"]


def test_a_broken_kept_inputs_file_is_an_error_not_a_default(tmp_path: Path) -> None:
    # None at all: not a folder that prepare made, so not the step's own variables instead.
    with pytest.raises(UsageError, match="inputs.json is missing"):
        report.gate_cli({"ACPJ_JOURNEYS": "turn-to-end"}, str(tmp_path))
    (tmp_path / "inputs.json").write_text('{"ACPJ_FAIL_ON_FAILURE": false}')
    with pytest.raises(UsageError, match="inputs.json is not what prepare writes"):
        report.gate_cli({}, str(tmp_path))
    (tmp_path / "inputs.json").write_text("{cut sho")
    with pytest.raises(UsageError, match="inputs.json cannot be read"):
        report.report_cli({}, str(tmp_path))


def test_gate_of_a_result_that_cannot_be_judged(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    (work / "result.json").write_text("{not json")
    code, log, messages = _gate(str(work), ACPJ_FAIL_ON_FAILURE="false")
    assert code == 2 and messages == "error result.json could not be judged (exit 2)\n" and "error" in log


# --- the merge action -------------------------------------------------------------------------------

@pytest.mark.parametrize("env,message", [
    ({"ACPJ_PATTERN": ""}, "input pattern is empty"),
    ({"ACPJ_PATTERN": "a\nb"}, "input pattern: must be one line"),
    ({"ACPJ_JOURNEYS": "turn-to-end;rm"}, "input journeys: 'turn-to-end;rm' is not a journey id"),
    ({"ACPJ_FAIL_ON_FAILURE": "maybe"}, "input fail-on-failure: expected true or false, got 'maybe'"),
    ({"ACPJ_POST_CHECK": "later"}, "input post-check: expected true or false"),
    ({"ACPJ_CHECK_NAME": "a\nb"}, "input check-name: must be one line"),
])
def test_merge_prepare_rejects_bad_inputs(tmp_path: Path, env: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        merge.prepare({"ACPJ_PATTERN": "acp-journeys-result.*", "ACPJ_TEMP": str(tmp_path), **env})
    assert list(tmp_path.iterdir()) == []


def test_merge_prepare_makes_the_work_folder(tmp_path: Path) -> None:
    output = tmp_path / "output"
    output.write_text("")
    (tmp_path / "temp").mkdir()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert merge.prepare({"ACPJ_PATTERN": "acp-journeys-result.*", "ACPJ_TEMP": str(tmp_path / "temp"),
                              "GITHUB_OUTPUT": str(output)}) == 0
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    work = Path(outputs["work"])
    assert work.parent == tmp_path / "temp" and (work / "parts").is_dir()
    assert outputs["download-path"] == str(work / "parts") and outputs["result-path"] == str(work / "result.json")
    assert outputs["html-path"] == str(work / "result.html") and outputs["report-network"] == "bridge"
    assert merge.expect_args(merge.Inputs({"ACPJ_JOURNEYS": "turn-to-end, image-and-file"})) == [
        "--expect", "turn-to-end", "--expect", "image-and-file"]
    assert merge.expect_args(merge.Inputs({})) == ["--expect", "all"]


def test_merge_without_a_part_says_so(tmp_path: Path) -> None:
    (tmp_path / "parts").mkdir()
    messages = tmp_path / "messages"
    messages.write_text("")
    assert merge.merge(_kept(str(tmp_path), {"ACPJ_PATTERN": "acp-*", "ACPJ_MESSAGES": str(messages)}), str(tmp_path)) == 2
    assert messages.read_text().startswith("error no result.json in the artifacts matching 'acp-*'")


def test_every_job_but_prepare_needs_the_work_folder(tmp_path: Path) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), _environ({}):
        assert action_cli.run(action_cli_args("gate")) == 2
    assert "::error::action gate WORK: give the work folder that prepare made" in out.getvalue()


def test_the_result_of_a_real_run_is_json(results: dict[str, Path]) -> None:
    assert json.loads(results["pass"].read_text())["verdict"] == "pass"


def test_cleanup_without_a_runner_name_touches_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no.sock")  # asked, this engine would warn
    assert cleanup.cleanup({}) == 0
    assert capsys.readouterr().out == ""


def test_cleanup_warns_and_passes_when_the_engine_is_away(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    env = {"ACPJ_RUNNER_NAME": "acp-journeys-runner-x", "DOCKER_HOST": f"unix://{tmp_path}/no.sock"}
    old = os.environ.copy()
    os.environ.update(env)  # docker's from_env reads the process's own environment
    try:
        assert cleanup.cleanup(env) == 0
    finally:
        os.environ.clear()
        os.environ.update(old)
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith("::warning::cannot reach the Docker engine: "), line

