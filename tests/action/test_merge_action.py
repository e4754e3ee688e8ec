"""The matrix: `post-check: false` jobs, merge/action.yml (one check, one gate), `init --matrix`.

- Static: merge/action.yml against GitHub's action schema and, as a workflow, actionlint; its
  run: steps hold no expression (their checks: `action merge-prepare` in tests/action/test_action_jobs.py); the workflow of
  `init --matrix` lints and uses only declared inputs, and is examples/workflows/matrix-journeys.yml's.
- End to end on the real engine: the merge action's steps run as GitHub runs them
  (tests/action_harness.py), with the loopback GitHub API. The artifacts are result.json files of
  real runs of the reference agent split over `--journey` subsets, as matrix jobs make them; the
  download-artifact step is not run (the harness runs no `uses:` step): the test puts each
  artifact where download-artifact puts the artifacts of a pattern, `<path>/<artifact-name>/`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from action_harness import CompositeAction, job_env, workflow_commands
from conftest import FAST_SCALE, reference_agent
from fake_github import FakeGitHub, serve
from test_action import (RUNNER_IMAGE, SHA, TOKEN, _as_workflow, _cleanup_image, engine_images,  # noqa: F401
                         fixture_image, load_yaml, offline_env, tool)

from acp_journeys.rules import catalog

ROOT = Path(__file__).resolve().parents[2]
MERGE = ROOT / "merge"
STEPS = ROOT / "action" / "steps.sh"
DOWNLOAD = "actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c"  # v8.0.1
UPLOAD = "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f"  # v7.0.0


def test_merge_action_passes_the_schema_and_actionlint(tmp_path: Path) -> None:
    proc = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions",
                           str(MERGE / "action.yml")], capture_output=True, text=True, env=offline_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    synth = tmp_path / ".github" / "workflows" / "merge-as-workflow.yml"
    synth.parent.mkdir(parents=True)
    synth.write_text(json.dumps(_as_workflow(load_yaml(MERGE / "action.yml"))))
    env = offline_env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run([tool("actionlint"), "-no-color", str(synth)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run([tool("shellcheck"), "-x", str(STEPS)], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_merge_action_steps() -> None:
    meta = load_yaml(MERGE / "action.yml")
    steps = meta["runs"]["steps"]
    assert [s.get("id") or s.get("uses") for s in steps] == [
        "runner", "prepare", DOWNLOAD, "merge", "upload", "report", "gate"]  # prepare runs in the runner image
    by = {s.get("id"): s for s in steps}
    # The merged result and its HTML report in one artifact, uploaded before the report that links it.
    assert by["upload"]["uses"] == UPLOAD
    assert by["upload"]["with"]["path"].splitlines() == ["${{ steps.prepare.outputs.result-path }}",
                                                          "${{ steps.prepare.outputs.html-path }}"]
    assert by["report"]["env"]["ACPJ_ARTIFACT_URL"] == "${{ steps.upload.outputs.artifact-url }}"
    for step in steps:
        if "run" in step:
            assert "${{" not in step["run"]
            # GITHUB_ACTION_PATH is merge/: the script is its parent's (which it finds from its own path).
            assert step["run"].startswith('exec bash "$GITHUB_ACTION_PATH/../action/steps.sh" '), step["run"]
    download = steps[2]["with"]
    assert download == {"pattern": "${{ inputs.pattern }}", "path": "${{ steps.prepare.outputs.download-path }}"}
    assert meta["inputs"]["artifact-name"]["default"] == "acp-journeys-result"  # what the release gate reads
    assert set(meta["outputs"]) == set(load_yaml(ROOT / "action.yml")["outputs"])


@pytest.mark.parametrize("env,message", [
    ({"ACPJ_PATTERN": ""}, "input pattern is empty"),
    ({"ACPJ_PATTERN": "a\nb"}, "input pattern: must be one line"),
    ({"ACPJ_PATTERN": "x.*", "ACPJ_JOURNEYS": "all;rm"}, "input journeys: 'all;rm' is not a journey id"),
    ({"ACPJ_PATTERN": "x.*", "ACPJ_POST_CHECK": "later"}, "input post-check: expected true or false"),
    ({"ACPJ_PATTERN": "x.*", "ACPJ_FAIL_ON_FAILURE": "no way"}, "input fail-on-failure: expected true or false"),
])
def test_merge_prepare_rejects_bad_inputs(tmp_path: Path, env: dict[str, str], message: str) -> None:
    """`acp-journeys action merge-prepare`, in-process: one message, exit 2, no work folder."""
    import contextlib
    import io

    from acp_journeys.cli import main

    out = io.StringIO()
    saved = dict(os.environ)
    try:
        os.environ.update({"ACPJ_TEMP": str(tmp_path), **env})
        with contextlib.redirect_stdout(out):
            code = main(["action", "merge-prepare"])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    [line] = [line for line in out.getvalue().splitlines() if line.startswith("::error::")]
    assert code == 2 and message in line, out.getvalue()
    assert list(tmp_path.iterdir()) == []


# --- init --matrix ------------------------------------------------------------------------------------

def test_init_matrix_writes_the_example_workflow_and_it_lints(tmp_path: Path) -> None:
    from acp_journeys.cli.init.matrix import GROUPS
    from acp_journeys.cli.init.workflow import WORKFLOW_PATH

    assert sorted(j for g in GROUPS for j in g) == sorted(catalog.JOURNEY_IDS)  # each journey in one job
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")  # init checks that the image can be built
    proc = subprocess.run([sys.executable, "-m", "acp_journeys", "init", "--matrix", "--path", str(tmp_path),
                           "--agent-command", "my-agent --acp", "--dockerfile", "Dockerfile"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / WORKFLOW_PATH
    written = load_yaml(path)
    assert written["jobs"] == load_yaml(ROOT / "examples" / "workflows" / "matrix-journeys.yml")["jobs"]
    jobs = written["jobs"]
    [ours] = [s for s in jobs["journeys"]["steps"] if s.get("uses") == "rondar/acp-journeys@v1"]
    [merge] = [s for s in jobs["verdict"]["steps"] if s.get("uses") == "rondar/acp-journeys/merge@v1"]
    assert set(ours["with"]) <= set(load_yaml(ROOT / "action.yml")["inputs"])
    assert set(merge["with"]) <= set(load_yaml(MERGE / "action.yml")["inputs"])
    assert ours["with"]["post-check"] is False and jobs["verdict"]["needs"] == "journeys"
    for args in (["actionlint", "-no-color"], ["check-jsonschema", "--builtin-schema", "vendor.github-workflows"]):
        lint = subprocess.run([tool(args[0]), *args[1:], str(path)], capture_output=True, text=True,
                              env=offline_env(), timeout=120)
        assert lint.returncode == 0, lint.stdout + lint.stderr
    again = subprocess.run([sys.executable, "-m", "acp_journeys", "init", "--matrix", "--path", str(tmp_path),
                            "--agent-command", "other"], capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and "exists: --matrix writes a new workflow only" in again.stderr
    assert load_yaml(path) == written


# --- end to end --------------------------------------------------------------------------------------

@pytest.fixture
def github_api() -> Iterator[FakeGitHub]:
    with serve(FakeGitHub(check_id=3, check_url="https://github.example.test/o/agent/runs/3")) as fake:
        yield fake


def _matrix_artifacts(tmp_path: Path, defect: str | None, groups: list[list[str]]) -> list[Path]:
    """Real runs of the reference agent, one a matrix job, each result.json in its artifact."""
    artifacts = []
    for n, group in enumerate(groups):
        job = tmp_path / f"job{n}"
        job.mkdir()
        argv = reference_agent(defect) if defect else reference_agent()
        proc = subprocess.run([sys.executable, "-m", "acp_journeys", "run", "-q", "--timeout-scale", FAST_SCALE,
                               "--subject-sha", SHA, "-o", str(job / "result.json"),
                               *(a for j in group for a in ("--journey", j)), "--", *argv],
                              capture_output=True, text=True, timeout=300, cwd=job,
                              env={**os.environ, "ACP_REFERENCE_AGENT_STATE": str(job / "state")})
        assert proc.returncode in (0, 1), proc.stderr
        artifacts.append(job / "result.json")
    return artifacts


def _merge_action(tmp_path: Path, api: FakeGitHub, artifacts: dict[str, Path], inputs: dict[str, str]):  # type: ignore[no-untyped-def]
    workspace, temp = tmp_path / "workspace", tmp_path / "runner-temp"
    workspace.mkdir()
    temp.mkdir()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main", "after": SHA}))
    env = job_env(workspace, temp, GITHUB_SHA=SHA, GITHUB_REPOSITORY="o/agent", GITHUB_EVENT_NAME="push",
                  GITHUB_EVENT_PATH=str(event), GITHUB_API_URL=api.url,
                  GITHUB_SERVER_URL="https://github.example.test", GITHUB_RUN_ID="43", GITHUB_TOKEN=TOKEN,
                  NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    action = CompositeAction(MERGE, inputs={"runner-image": RUNNER_IMAGE, **inputs}, env=env,
                             github={"token": TOKEN, "sha": SHA, "action_ref": "", "action_repository": ""})
    before = action.run(only=["runner", "prepare"])
    assert not before.failed, before.log
    # Where actions/download-artifact@v4 puts the artifacts of a pattern: a folder each.
    download = Path(before.step("prepare").outputs["download-path"])
    for name, path in artifacts.items():
        (download / name).mkdir()
        (download / name / "result.json").write_bytes(path.read_bytes())
    rest = [s.get("id", f"__step{i}") for i, s in enumerate(action.meta["runs"]["steps"])
            if s.get("id") not in ("runner", "prepare")]
    after = action.run(only=rest, steps_before={s.id: s for s in before.steps})
    return before.steps + after.steps, after


GROUPS = [list(catalog.JOURNEY_IDS[:4]), list(catalog.JOURNEY_IDS[4:])]


@pytest.mark.parametrize("defect,expected", [(None, {})])  # a failing matrix: the test of the action's jobs below
def test_end_to_end_one_check_for_the_matrix(engine_images: None, tmp_path: Path, github_api: FakeGitHub,
                                             defect: str | None, expected: dict[str, list[str]]) -> None:
    parts = _matrix_artifacts(tmp_path, defect, GROUPS)
    steps, run = _merge_action(tmp_path, github_api, {f"acp-journeys-ref.{n}": p for n, p in enumerate(parts)},
                               {"pattern": "acp-journeys-ref.*", "check-name": "ACP journeys (ref)",
                                "artifact-name": "acp-journeys-ref"})
    outcomes = {s.id: s.outcome for s in steps}
    verdict = "fail" if expected else "pass"
    for step in ("prepare", "runner", "merge", "report"):
        assert outcomes[step] == "success", run.log
    assert outcomes["gate"] == ("failure" if expected else "success"), run.log
    # One check run, named after the agent, with the merged verdict of all 7 journeys.
    [request] = github_api.requests
    payload = json.loads(request["body"])
    assert payload["name"] == "ACP journeys (ref)" and payload["head_sha"] == SHA
    assert payload["conclusion"] == ("failure" if expected else "success")
    assert payload["output"]["title"].startswith(f"ACP journeys: {verdict} — {7 - len(expected)} of 7")
    # The merged result is what the upload step takes, and verify judges it alike.
    upload = next(s for s in steps if s.uses == UPLOAD)
    result_path, html_path = upload.with_["path"].splitlines()
    assert upload.ran and upload.with_["name"] == "acp-journeys-ref"
    merged = json.loads(Path(result_path).read_text())
    # Its HTML report, of the merged verdict, beside it in the same artifact.
    assert html_path == result_path.removesuffix(".json") + ".html"
    assert f"ACP journeys: {verdict.upper()}" in Path(html_path).read_text()
    assert [j["id"] for j in merged["journeys"]] == list(catalog.JOURNEY_IDS)
    assert {j["id"]: sorted(f["id"] for f in j["failures"]) for j in merged["journeys"]
            if j["verdict"] != "pass"} == expected
    assert run.outputs["verdict"] == verdict and run.outputs["check-url"].endswith("/runs/3")
    assert f"ACP journeys: {verdict}" in "".join(s.summary for s in steps)


def test_end_to_end_a_job_without_a_result_fails_the_merge(engine_images: None, tmp_path: Path,
                                                           github_api: FakeGitHub) -> None:
    [part] = _matrix_artifacts(tmp_path, None, GROUPS[:1])  # the other job never wrote its result
    steps, run = _merge_action(tmp_path, github_api, {"acp-journeys-result.0": part}, {})
    outcomes = {s.id: s.outcome for s in steps}
    assert outcomes["merge"] == "failure" and outcomes["gate"] == "failure", run.log
    assert outcomes["report"] == "skipped" and github_api.requests == []
    merge = next(s for s in steps if s.id == "merge")
    missing = ", ".join(catalog.JOURNEY_IDS[4:])
    assert f"no result for {missing}" in merge.log and merge.code == 2, merge.log


def test_end_to_end_the_merge_step_obeys_no_workflow_command_of_the_agent(engine_images: None, tmp_path: Path,
                                                                         github_api: FakeGitHub) -> None:
    """Parts of the workflow-command-reply fixture, whose reply (`nope ##[error]INJECTED ...`, then
    a `::error::` line) the merged table quotes: GitHub's runner obeys none of it in any step."""
    parts = _matrix_artifacts(tmp_path, "workflow-command-reply", GROUPS)
    steps, run = _merge_action(tmp_path, github_api, {f"acp-journeys-result.{n}": p for n, p in enumerate(parts)}, {})
    merge = next(s for s in steps if s.id == "merge")
    assert merge.outcome == "success" and "INJECTED" in merge.log, run.log
    assert {s.id: s.outcome for s in steps}["gate"] == "failure", run.log  # turn-to-end fails
    for step in steps:
        commands = workflow_commands(step.log)
        assert not [c for c in commands if "INJECTED" in c or "forged" in c or "add-mask" in c], (step.id, commands)
        pauses = [c for c in commands if c.startswith("::stop-commands::")]
        for pause in pauses:
            assert f"::{pause.removeprefix('::stop-commands::')}::" in commands, (step.id, commands)
    assert any(c.startswith("::stop-commands::") for c in workflow_commands(merge.log)), merge.log


def test_the_merge_action_finds_the_published_runner_image_of_its_version(tmp_path: Path) -> None:
    """Its folder is <repo>@<ref>/merge, and it runs <repo>@<ref>/action/steps.sh: the runner step,
    which finds the action's folder from its own path, names the same image as
    rondar/acp-journeys@<ref> (then builds the repository's Dockerfile when none can be pulled)."""
    from test_action import FakeSteps

    fake = FakeSteps(tmp_path)
    try:
        repo = tmp_path / "_actions" / "someone" / "acp-journeys" / "v1.2.0"
        (repo / "merge").mkdir(parents=True)
        (repo / "Dockerfile").write_text("FROM scratch\n")
        (repo / "action").mkdir()
        shutil.copy(ROOT / "action" / "steps.sh", repo / "action" / "steps.sh")
        out = fake("runner", script=Path(f"{repo / 'merge'}/../action/steps.sh"))
        assert out.code == 0, out.log
        registry = re.search(r'^RUNNER_REGISTRY="([^"]+)"', (ROOT / "action" / "steps.sh").read_text(), re.M)
        assert registry is not None
        assert [c["argv"][-1] for c in out.call("pull")] == [f"{registry.group(1)}/someone/acp-journeys:v1.2.0"]
        assert [c["argv"] for c in out.call("build")] == [["build", "-t", "acp-journeys/runner:action-build", str(repo)]]
    finally:
        fake.close()


def test_end_to_end_matrix_jobs_of_the_action_then_the_merge(engine_images: None, tmp_path: Path,
                                                             github_api: FakeGitHub) -> None:
    """The whole matrix: two jobs of the action itself (docker mode, `post-check: false`), each
    journeys subset, then the merge action on what their upload steps would upload."""
    # The runner image with the fixture agents, so that one job fails stop-running-turn.
    image = fixture_image(f"acp-journeys-merge-test:{os.getpid()}", tmp_path / "image")
    try:
        _matrix_then_merge(tmp_path, github_api, image)
    finally:
        _cleanup_image(image)


def _matrix_then_merge(tmp_path: Path, github_api: FakeGitHub, image: str) -> None:
    artifacts: dict[str, Path] = {}
    for n, group in enumerate(GROUPS):
        workspace, temp = tmp_path / f"job{n}" / "workspace", tmp_path / f"job{n}" / "temp"
        workspace.mkdir(parents=True)
        temp.mkdir()
        job = CompositeAction(ROOT, env=job_env(workspace, temp, GITHUB_SHA=SHA, GITHUB_REPOSITORY="o/agent",
                                                GITHUB_EVENT_NAME="push", GITHUB_API_URL=github_api.url,
                                                GITHUB_TOKEN=TOKEN, NO_PROXY="127.0.0.1", no_proxy="127.0.0.1"),
                              github={"token": TOKEN, "sha": SHA, "action_ref": "", "action_repository": ""},
                              inputs={"runner-image": RUNNER_IMAGE, "image": image,
                                      "agent-command": "python3 /agent/cancel-end-turn.py",
                                      "journeys": " ".join(group), "post-check": "false", "fail-on-failure": "false",
                                      "artifact-name": f"acp-journeys-result.{n}"})
        run = job.run()
        assert not run.failed, run.log
        assert run.outputs["check-url"] == "" and "ACP journeys:" in run.summary
        upload = next(s for s in run.steps if s.uses == UPLOAD)
        artifacts[upload.with_["name"]] = Path(upload.with_["path"].splitlines()[0])  # result.json, then the HTML report
    assert github_api.requests == []  # no job posted a check

    merge_root = tmp_path / "merge"
    merge_root.mkdir()
    steps, run = _merge_action(merge_root, github_api, artifacts, {})
    assert {s.id: s.outcome for s in steps}["gate"] == "failure", run.log
    [request] = github_api.requests
    payload = json.loads(request["body"])
    assert payload["name"] == "ACP journeys" and payload["conclusion"] == "failure"
    assert payload["output"]["title"].startswith("ACP journeys: fail — 6 of 7")
    merged = json.loads(Path(run.outputs["result-path"]).read_text())
    assert merged["subject"] == {"sha": SHA, "image": image}
    assert {j["id"]: [f["id"] for f in j["failures"]] for j in merged["journeys"] if j["verdict"] != "pass"} == \
        {"stop-running-turn": ["stop-reason"]}
