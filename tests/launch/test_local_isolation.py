"""Local mode: each journey a world of its own, and the agent's environment.

Real runs of the CLI against the reference agent behind a one-line shell that writes the
environment it got into a folder named with `--setting` (a non-secret setting, shown as it is),
then becomes the agent.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import live_processes_below, reference_agent, run_journeys

DUMP = 'env -0 > "$ACPJ_DUMP/$$.env"; exec "$0" "$@"'
JOURNEY_FOLDERS = ("TMPDIR", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "XDG_STATE_HOME")


def dumping_agent() -> list[str]:
    return ["sh", "-c", DUMP, *reference_agent()]


def dumped(folder: Path) -> list[dict[str, str]]:
    out = []
    for path in sorted(folder.glob("*.env")):
        entries = [e for e in path.read_bytes().decode().split("\0") if e]
        out.append(dict(e.split("=", 1) for e in entries))
    return out


def run_dumping(tmp_path: Path, *options: str, runner_env: dict[str, str] | None = None):
    folder = tmp_path / "dumps"
    folder.mkdir()
    outcome = run_journeys(dumping_agent(), tmp_path, "--setting", f"ACPJ_DUMP={folder}", *options,
                           env={"ACPJ_RUNNER_ONLY": "runner-private-value", "LC_TIME": "C.UTF-8",
                                **(runner_env or {})})
    return outcome, dumped(folder)


def test_each_journey_has_its_own_folders_and_a_minimal_environment(tmp_path: Path) -> None:
    outcome, envs = run_dumping(tmp_path, "--journey", "turn-to-end", "--journey", "follow-up-after-restart",
                                "--env", "ACPJ_SECRET=secret-value-0123", "--setting", "ACPJ_PLAIN=/opt/kernel/bin/python")
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    assert len(envs) == 3  # turn-to-end, and the two processes of the restart
    for env in envs:
        # Only PATH, HOME, the locale (LC_*), ... of the runner's own: no token or setting of it.
        assert "ACPJ_RUNNER_ONLY" not in env and "PYTEST_CURRENT_TEST" not in env
        assert env["PATH"] == os.environ["PATH"] and env["HOME"] == os.environ["HOME"]
        assert env["LC_TIME"] == "C.UTF-8"
        assert env["ACPJ_SECRET"] == "secret-value-0123" and env["ACPJ_PLAIN"] == "/opt/kernel/bin/python"
        for name in JOURNEY_FOLDERS:
            assert env[name].startswith(tempfile_root()), (name, env[name])
            assert not os.path.exists(env[name]), f"{name} outlived its journey"
    # The two processes of one journey share its folders; the other journey has its own.
    by_tmp = {}
    for env in envs:
        by_tmp.setdefault(env["TMPDIR"], []).append(env)
    assert sorted(len(v) for v in by_tmp.values()) == [1, 2]
    assert len({env["XDG_RUNTIME_DIR"] for env in envs}) == 2
    # A setting is shown as it is; a value given with --env is a secret.
    result = outcome.result
    assert result["launch"]["settings"]["ACPJ_PLAIN"] == "/opt/kernel/bin/python"
    assert result["launch"]["env"] == ["ACPJ_SECRET"] and result["launch"]["environment"] == "minimal"
    text = outcome.path.read_text()
    assert "secret-value-0123" not in text and "/opt/kernel/bin/python" in text


def tempfile_root() -> str:
    import tempfile

    return os.path.join(tempfile.gettempdir(), "acp-journeys-")


# Before it becomes the agent: every ancestor's environment that /proc shows this user, searched
# for the runner's variable (the line that local mode does not draw: docs/security.md).
PEEK = r"""
import os, sys
pid, found = os.getppid(), []
while pid > 1:
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        break
    found += [e.decode() for e in env if e.startswith(b"ACPJ_RUNNER_ONLY=")]
    pid = int(stat.rsplit(")", 1)[1].split()[1])
with open(os.path.join(os.environ["ACPJ_DUMP"], f"{os.getpid()}.peek"), "w") as f:
    f.write("\n".join(found))
os.execvp(sys.argv[1], sys.argv[1:])
"""


def test_the_minimal_environment_is_no_secret_boundary(tmp_path: Path) -> None:
    """Local mode leaves the runner's environment out of the agent's, yet an agent of the same
    user reads it from /proc/<its parent>/environ: a secret of the runner is the agent's to take
    (docker mode keeps it out: another pid namespace). Documented, not hidden."""
    folder = tmp_path / "dumps"
    folder.mkdir()
    outcome = run_journeys([sys.executable, "-c", PEEK, *reference_agent()], tmp_path, "--journey", "turn-to-end",
                           "--setting", f"ACPJ_DUMP={folder}", env={"ACPJ_RUNNER_ONLY": "runner-private-value"})
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    [peek] = sorted(folder.glob("*.peek"))
    assert "ACPJ_RUNNER_ONLY=runner-private-value" in peek.read_text().splitlines()


def test_inherit_env_passes_the_whole_environment(tmp_path: Path) -> None:
    outcome, [env] = run_dumping(tmp_path, "--journey", "turn-to-end", "--inherit-env")
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    assert env["ACPJ_RUNNER_ONLY"] == "runner-private-value"
    assert env["TMPDIR"].startswith(tempfile_root())  # the journey's own folders still win
    assert outcome.result["launch"]["environment"] == "inherited"


@pytest.mark.parametrize("option", ["--isolate-home", "--model-stub"])
def test_a_home_of_the_journeys_own(tmp_path: Path, option: str) -> None:
    extra = ["--setting", "ACPJ_MODEL={model_url}/v1"] if option == "--model-stub" else []
    outcome, [env] = run_dumping(tmp_path, "--journey", "turn-to-end", option, *extra,
                                 runner_env={"XDG_CONFIG_HOME": os.path.expanduser("~/.config")})
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    home = env["HOME"]
    assert home != os.environ["HOME"] and home.startswith(tempfile_root()) and not os.path.exists(home)
    assert env["XDG_CONFIG_HOME"].startswith(home + "/")
    if option == "--model-stub":
        assert env["ACPJ_MODEL"].startswith("http://127.0.0.1:") and env["ACPJ_MODEL"].endswith("/t/turn-to-end/v1")


def test_setting_checks_its_form_and_never_doubles_a_secret(tmp_path: Path) -> None:
    bad = run_journeys(reference_agent(), tmp_path, "--setting", "NOT A NAME=1")
    assert bad.code == 2 and "--setting 'NOT A NAME': not an environment variable name" in bad.stderr
    assert "=1" not in bad.stderr  # the refusal names the name, never the value
    both = run_journeys(reference_agent(), tmp_path, "--env", "X_KEY=1234", "--setting", "X_KEY=5678")
    assert both.code == 2 and "X_KEY is given with --env and --setting" in both.stderr
    docker = run_journeys(reference_agent(), tmp_path, "--image", "none:none", "--inherit-env")
    assert docker.code == 2 and "--inherit-env is for local mode" in docker.stderr


def test_a_setting_is_never_masked_in_a_failure(tmp_path: Path) -> None:
    """The issue's case: a path given as a setting stays readable where a leftover shows it."""
    kernel = tmp_path / "kernel-python"
    kernel.symlink_to(sys.executable)
    outcome = run_journeys(reference_agent("leave-daemon"), tmp_path, "--journey", "turn-to-end",
                           "--setting", f"KERNEL_PYTHON={kernel}", "--env", "API_TOKEN=tok-0123456789")
    assert outcome.code == 1
    assert outcome.result["launch"]["settings"] == {"KERNEL_PYTHON": str(kernel)}
    assert "***" not in json.dumps(outcome.result["launch"])


def test_a_stopped_run_removes_every_journey_folder(tmp_path: Path) -> None:
    runner_tmp = tmp_path / "runner-tmp"
    runner_tmp.mkdir()
    out = tmp_path / "result.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "acp_journeys", "run", "-q", "-o", str(out), "--",
         "sh", "-c", 'touch "$TMPDIR/kept"; chmod 500 "$TMPDIR"; exec "$0" "$@"', *reference_agent("hang-turn")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(runner_tmp)})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if len(live_processes_below(proc.pid, "hang-turn.py")) >= 7:
            break
        time.sleep(0.2)
    time.sleep(0.5)
    journeys = [p for p in runner_tmp.iterdir() if p.name.startswith("acp-journeys-")]
    assert len(journeys) == 7 and all((p / "tmp").is_dir() for p in journeys)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    # Also the TMPDIR that the agent made read-only with a file in it (which stops a plain rm -rf
    # of a user that is not root).
    assert list(runner_tmp.iterdir()) == []


def test_the_sandbox_shares_the_session_files_folder_that_the_prompts_name() -> None:
    # Two constants because launch/ and rules/ may not import each other: this holds them equal.
    from acp_journeys.launch import SESSION_FILES_DIR
    from acp_journeys.rules import prompts

    assert SESSION_FILES_DIR == prompts.SESSION_FILES_DIR
    assert prompts.NOTE_PATH.startswith(SESSION_FILES_DIR + "/")
