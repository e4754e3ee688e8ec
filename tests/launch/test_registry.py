"""Pulling from a registry: a real one, Debian's docker-registry, on loopback.

The registry runs for this module on 127.0.0.1 (a free port), storing under the test's temp
folder; the engine pushes to it (loopback registries need no TLS). The images pushed are an agent
image built here (the reference agent, labelled uniquely, so that removing it locally removes
its own layer and a pull must bring it back) and the runner image under a tag of its own.

- `run --image REF --pull missing` by tag and by digest; a missing image gives a clear error
  (exit 2), also with `--pull never`.
- The action's steps: `image:` (build step) and `runner-image:` (runner step) pulled from it, a
  missing one failing the step with a message.
- The release workflow's push, as a dry run of the same commands against loopback: its
  "Version tags" step, run as written with the registry swapped for this one, then a build with
  its labels and a push of every tag it computed; each tag then pulls to one digest.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
STEPS = ROOT / "action" / "steps.sh"
RUNNER_IMAGE = os.environ.get("ACP_JOURNEYS_RUNNER_IMAGE", "acp-journeys/runner:dev")
BASE_IMAGE = os.environ.get("ACP_JOURNEYS_LOCAL_BASE", "acp-journeys/base:bookworm")


def _docker(*args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert proc.returncode == 0, f"docker {' '.join(args)}: {proc.stderr}"
    return proc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = shutil.which("docker-registry")
    if binary is None:
        pytest.skip("no docker-registry (scripts/setup/install-registry.sh installs Debian's package)")
    if subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode != 0:
        pytest.skip("no Docker engine answers")
    for image in (RUNNER_IMAGE, BASE_IMAGE):
        if _docker("image", "inspect", image, check=False).returncode != 0:
            pytest.skip(f"no {image} (scripts/test.sh builds it)")
    folder = tmp_path_factory.mktemp("registry")
    port = _free_port()
    config = folder / "config.yml"
    config.write_text(json.dumps({  # JSON is YAML
        "version": 0.1, "log": {"level": "warn", "accesslog": {"disabled": True}},
        "storage": {"filesystem": {"rootdirectory": str(folder / "data")}, "delete": {"enabled": True}},
        "http": {"addr": f"127.0.0.1:{port}"},
    }))
    log = open(folder / "registry.log", "w")
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://{address}/v2/", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None, (folder / "registry.log").read_text()
            assert time.monotonic() < deadline, "the registry did not answer in 30 s"
            time.sleep(0.1)
        yield address
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


@pytest.fixture(scope="module")
def agent_image(registry: str) -> Iterator[tuple[str, str]]:
    """(tag ref, digest ref) of an agent image that is in the registry and NOT on the engine."""
    ref = f"{registry}/acme/agent:v1"
    _docker("build", "-q", "-f", str(ROOT / "examples" / "reference-agent" / "Dockerfile"),
            "--build-arg", f"BASE_IMAGE={BASE_IMAGE}", "--label", f"acp-journeys.test={uuid.uuid4().hex}",
            "-t", ref, str(ROOT))
    _docker("push", "-q", ref)
    digest_ref = _docker("image", "inspect", "--format", "{{index .RepoDigests 0}}", ref).stdout.strip()
    assert digest_ref.startswith(f"{registry}/acme/agent@sha256:")
    _docker("image", "rm", ref)
    try:
        yield ref, digest_ref
    finally:
        _docker("image", "rm", "-f", ref, digest_ref, check=False)


def _forget(*refs: str) -> None:
    _docker("image", "rm", "-f", *refs, check=False)
    for ref in refs:
        assert _docker("image", "inspect", ref, check=False).returncode != 0, f"{ref} is still here"


def _run(tmp_path: Path, image: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acp_journeys", "run", "-q", "--timeout-scale", "0.05",
                           "-o", str(tmp_path / "result.json"), "--image", image, "--journey", "turn-to-end",
                           *extra, "--", "python3", "/agent/reference_agent.py"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)


@pytest.mark.parametrize("by", ["tag", "digest"])
def test_run_pulls_a_missing_image_by_tag_and_by_digest(agent_image: tuple[str, str], tmp_path: Path,
                                                        by: str) -> None:
    tag_ref, digest_ref = agent_image
    ref = tag_ref if by == "tag" else digest_ref
    _forget(tag_ref, digest_ref)
    proc = _run(tmp_path, ref, "--pull", "missing")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["verdict"] == "pass" and result["subject"]["image"] == ref
    # What ran is what the registry holds under that digest.
    digests = _docker("image", "inspect", "--format", "{{json .RepoDigests}}", ref).stdout
    assert digest_ref in json.loads(digests)
    assert result["launch"]["image_id"] == _docker("image", "inspect", "--format", "{{.Id}}", ref).stdout.strip()


def test_a_missing_image_is_a_clear_error(registry: str, tmp_path: Path) -> None:
    missing = f"{registry}/acme/agent:no-such-tag"
    proc = _run(tmp_path, missing, "--pull", "missing")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"cannot pull image {missing}" in proc.stderr and "not found" in proc.stderr.lower(), proc.stderr
    proc = _run(tmp_path, missing)  # --pull never
    assert proc.returncode == 2 and f"image {missing} is not on this engine (--pull never)" in proc.stderr


def _step(step: str, tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    output = tmp_path / f"output-{step}"
    output.write_text("")
    proc = subprocess.run(["bash", str(STEPS), step], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GITHUB_OUTPUT": str(output),
                               **({"DOCKER_HOST": os.environ["DOCKER_HOST"]} if "DOCKER_HOST" in os.environ else {}),
                               "ACPJ_ACTION_PATH": str(ROOT), "ACPJ_AGENT_IMAGE": env.pop("ACPJ_IMAGE", "x"),
                               "ACPJ_WORK": str(tmp_path), **env})  # a work folder with no build.args: a given image
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return proc, outputs


def test_the_action_pulls_its_image_and_runner_image(agent_image: tuple[str, str], registry: str,
                                                     tmp_path: Path) -> None:
    tag_ref, digest_ref = agent_image
    _forget(tag_ref, digest_ref)
    proc, _ = _step("build", tmp_path, ACPJ_IMAGE=digest_ref)
    assert proc.returncode == 0 and f"pulling the agent image {digest_ref}" in proc.stdout, proc.stdout + proc.stderr
    assert _docker("image", "inspect", digest_ref, check=False).returncode == 0

    runner_ref = f"{registry}/rondar/acp-journeys:test-{uuid.uuid4().hex[:8]}"
    _docker("tag", RUNNER_IMAGE, runner_ref)
    try:
        _docker("push", "-q", runner_ref)
        _docker("image", "rm", runner_ref)  # only the tag: RUNNER_IMAGE keeps the layers
        proc, outputs = _step("runner", tmp_path, ACPJ_RUNNER_IMAGE=runner_ref)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"pulling the runner image {runner_ref}" in proc.stdout and outputs["runner-image"] == runner_ref
    finally:
        _docker("image", "rm", runner_ref, check=False)

    missing = f"{registry}/acme/agent:no-such-tag"
    proc, _ = _step("build", tmp_path, ACPJ_IMAGE=missing)
    assert proc.returncode == 2 and f"::error::cannot pull the image {missing}" in proc.stdout, proc.stdout


def test_the_release_push_steps_as_a_dry_run(registry: str, tmp_path: Path) -> None:
    workflow = YAML(typ="safe").load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    steps = workflow["jobs"]["runner-image"]["steps"]
    [tags_step] = [s for s in steps if s.get("id") == "tags"]
    [push_step] = [s for s in steps if str(s.get("uses", "")).startswith("docker/build-push-action@")]
    assert tags_step["env"]["REGISTRY"] != registry  # the real one is in the workflow; loopback here
    output = tmp_path / "output"
    output.write_text("")
    sha = "0123456789abcdef0123456789abcdef01234567"
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", tags_step["run"]],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "GITHUB_OUTPUT": str(output), "GITHUB_SHA": sha,
                               "TAG": "v1.2.3", "REPOSITORY": "Rondar/ACP-Journeys", "REGISTRY": registry})
    assert proc.returncode == 0, proc.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    tags = outputs["tags"].split(",")
    image = f"{registry}/rondar/acp-journeys"
    assert tags == [f"{image}:v1.2.3", f"{image}:sha-{sha}", f"{image}:v1.2", f"{image}:v1"]
    assert outputs["major"] == "v1" and outputs["version"] == "1.2.3"

    # build-push-action with push: true is a build with these tags and labels, then a push of each.
    labels = [line.replace("${{ github.server_url }}", "https://github.example.test")
              .replace("${{ github.repository }}", "rondar/acp-journeys").replace("${{ github.sha }}", sha)
              .replace("${{ steps.tags.outputs.version }}", outputs["version"])
              for line in push_step["with"]["labels"].splitlines() if line.strip()]
    assert all("${{" not in label for label in labels)
    assert push_step["with"]["push"] is True and push_step["with"]["tags"] == "${{ steps.tags.outputs.tags }}"
    dockerfile = f"FROM {RUNNER_IMAGE}\n"  # the image as built; its build is tested elsewhere
    build = ["build", "-q", *(a for t in tags for a in ("-t", t)), *(a for lab in labels for a in ("--label", lab)), "-"]
    built = subprocess.run(["docker", *build], input=dockerfile, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    try:
        for tag in tags:
            _docker("push", "-q", tag)
        digests = set()
        for tag in tags:
            with urllib.request.urlopen(urllib.request.Request(
                    f"http://{registry}/v2/rondar/acp-journeys/manifests/{tag.rsplit(':', 1)[1]}", method="HEAD",
                    headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"}), timeout=10) as answer:
                digests.add(answer.headers["Docker-Content-Digest"])
        assert len(digests) == 1  # one image under every tag
        _forget(*tags)
        _docker("pull", "-q", tags[-1])
        got = json.loads(_docker("image", "inspect", "--format", "{{json .Config.Labels}}", tags[-1]).stdout)
        assert got["org.opencontainers.image.revision"] == sha and got["org.opencontainers.image.version"] == "1.2.3"
    finally:
        _docker("image", "rm", "-f", *tags, check=False)
