"""Shared helpers: run the real CLI against real agent processes."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# The tests sit in a folder per wing (tests/rules/, tests/launch/, ...); the helpers beside this
# file (conftest, sample_results, fake_github, ...) and a few tables of other test modules
# (`from test_fixture_verdicts import ALL`) are imported by module name, as pytest's default
# (prepend) import mode names test modules. So this folder and every test folder are on sys.path
# before any test module loads, also when one file runs alone. Test basenames are unique across
# folders (tests/project/test_architecture.py holds it; pytest refuses duplicates anyway).
TESTS = Path(__file__).resolve().parent
for _folder in [*sorted(p for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py"))), TESTS]:
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_AGENT = ROOT / "src" / "acp_journeys" / "demo" / "reference_agent.py"
AGENTS = Path(__file__).resolve().parent / "agents"
# One file a defect: a subclass of the reference agent that declares its verdict (see _reference.py).
FIXTURE_AGENTS = Path(__file__).resolve().parent / "fixtures" / "agents"

# Small bounds keep the hung-agent fixtures short; Rondar's own 10 s / 30 s rules are not scaled.
# Not smaller: a bound is a verdict only for an agent that never answers, and at 0.05 (3 s for
# initialize) a correct agent under 4 suites at once on 2 cores missed it. 0.2 gives 12 s for
# initialize and each request and 36 s for a turn; only the hung-agent fixtures wait that long.
FAST_SCALE = "0.2"


@dataclass
class RunOutcome:
    code: int
    stdout: str
    stderr: str
    result: dict | None
    path: Path

    def failures(self) -> dict[str, list[str]]:
        """journey id -> failure ids, for the journeys that did not pass."""
        assert self.result is not None, self.stderr
        return {j["id"]: sorted(f["id"] for f in j["failures"]) for j in self.result["journeys"]
                if j["verdict"] != "pass"}


def run_cli(args: list[str], tmp_path: Path, *, env: dict[str, str] | None = None, timeout: float = 300,
            output: str = "result.json") -> RunOutcome:
    path = tmp_path / output
    full_env = {**os.environ, "ACP_REFERENCE_AGENT_STATE": str(tmp_path / "agent-state"), **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "acp_journeys", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=tmp_path)
    result = json.loads(path.read_text()) if path.exists() else None
    return RunOutcome(proc.returncode, proc.stdout, proc.stderr, result, path)


def run_journeys(agent: list[str], tmp_path: Path, *extra: str, **kw) -> RunOutcome:
    return run_cli(["run", "--timeout-scale", FAST_SCALE, "-q", "-o", str(tmp_path / "result.json"),
                    *extra, "--", *agent], tmp_path, **kw)


def reference_agent(*defects: str) -> list[str]:
    """The conforming reference agent, or with defects the fixture agent that has them all
    (tests/fixtures/agents/<a>+<b>.py)."""
    if not defects:
        return [sys.executable, str(REFERENCE_AGENT)]
    path = FIXTURE_AGENTS / f"{'+'.join(defects)}.py"
    assert path.exists(), f"no fixture agent {path.name}"
    return [sys.executable, str(path)]


def live_processes_below(pid: int, marker: str) -> list["psutil.Process"]:
    """The live (not zombie) processes below pid whose command line holds marker. A process may
    end between listing and reading it (the run reaps its holders as they go): such a one is
    not live, never an error of the test."""
    import psutil

    found = []
    for proc in psutil.Process(pid).children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and marker in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def fixture_names() -> list[str]:
    """Every fixture agent, by its defect's name ("a+b" for a combination)."""
    return sorted(p.stem for p in FIXTURE_AGENTS.glob("*.py") if not p.name.startswith("_"))


def fixture_constant(name: str, constant: str, default=None):
    """A literal of a fixture agent's module (VERDICT, STRICT_VERDICT...), read without running it:
    the table's process need not import the agent."""
    tree = ast.parse((FIXTURE_AGENTS / f"{name}.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [constant]:
            return ast.literal_eval(node.value)
    return default


def fixture_verdicts(constant: str = "VERDICT") -> dict[str, dict[str, list[str]]]:
    """name -> {journey: failure ids} of the fixtures that declare one (None: not in the table)."""
    verdicts = {name: fixture_constant(name, constant) for name in fixture_names()}
    return {name: verdict for name, verdict in verdicts.items() if verdict is not None}


def process_gone(pid: int) -> bool:
    """Ended, or a zombie not yet reaped. A process reaped between two looks (pid_exists, then
    its status) is gone too, never an error of the test: the run reaps as it goes."""
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def docker_engine_or_skip():
    """A docker client whose engine answers, else the test is skipped (every docker test needs one)."""
    import docker

    try:
        client = docker.from_env(timeout=30)
        client.ping()
        return client
    except Exception as exc:
        pytest.skip(f"no Docker engine answers ({exc.__class__.__name__}); scripts/docker-up.sh starts one")


def agent_image_or_skip(engine, base_will_do: bool = True) -> str:
    """ACP_JOURNEYS_TEST_IMAGE, else the runner image (else, when `base_will_do`, the Debian base
    that scripts/setup/build-base-image.sh makes), present on the engine; else the test is skipped."""
    import docker

    wanted = os.environ.get("ACP_JOURNEYS_TEST_IMAGE")
    if wanted:
        names = [wanted]
    else:
        names = ["acp-journeys/runner:dev", "acp-journeys/base:bookworm"] if base_will_do else ["acp-journeys/runner:dev"]
    for name in names:
        try:
            engine.images.get(name)
            return name
        except docker.errors.ImageNotFound:
            continue
    pytest.skip(f"no agent image {' or '.join(names)}: run scripts/setup/build-runner-image.sh")


EMPTY_IMAGE = "acp-journeys/test-empty:latest"


def make_empty_image(engine) -> str:
    """An image with no shell, no Python, nothing: one empty folder (made again each time: cheap)."""
    import io
    import tarfile

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("etc/")
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        tar.addfile(info)
    engine.api.import_image_from_data(out.getvalue(), repository=EMPTY_IMAGE.split(":")[0], tag="latest")
    return EMPTY_IMAGE


USER_IMAGE = "acp-journeys/test-user:latest"


def build_user_image(engine, base: str) -> str:
    """`base` with a non-root user (uid 4321) whose home exists, built with no network."""
    import io
    import tarfile

    import docker

    dockerfile = f"FROM {base}\nRUN useradd -m -u 4321 agent\nUSER agent\n".encode()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
    context.seek(0)
    try:
        engine.images.build(fileobj=context, custom_context=True, tag=USER_IMAGE, network_mode="none", rm=True)
    except docker.errors.BuildError as exc:
        pytest.skip(f"cannot add a user to {base}: {exc}")
    return USER_IMAGE


def fixture_agent_dir(folder: Path) -> Path:
    """A folder for --agent-dir (mounted at /agent): the fixture agents and, beside them, the
    tree's reference agent, which they import before the image's installed one."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)  # as the tree's folders: the agent's user in the container may be another
    for path in FIXTURE_AGENTS.glob("*.py"):
        shutil.copy(path, folder / path.name)
    shutil.copy(REFERENCE_AGENT, folder / "reference_agent.py")
    return folder


@pytest.fixture
def stub():
    """The scripted model endpoint on loopback, for one test (it starts in milliseconds)."""
    from acp_journeys.services.model_stub import ModelStub

    server = ModelStub().start()
    try:
        yield server
    finally:
        server.stop()
