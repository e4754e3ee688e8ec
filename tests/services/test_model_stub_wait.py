"""The stub's wait for a command it started in the background, run by a real /bin/sh: it lasts
while the command runs, also when the command shows up only after the wait began, and ends once
it is gone; with pgrep and, as in a slim image, without."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from acp_journeys.services.model_stub.shell_wait import wait_for

BOUND_S = 30  # a wait of the test; the loop itself polls each second
APPEAR_S = 3


def _path_without_procps(folder: Path) -> str:
    """A PATH of links to what the loop may use when pgrep is missing, and nothing else."""
    folder.mkdir()
    for tool in ("tr", "grep", "sleep"):
        found = shutil.which(tool)
        assert found, tool
        (folder / tool).symlink_to(found)
    return str(folder)


def _stop(*processes: subprocess.Popen) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait(BOUND_S)


@pytest.mark.parametrize("late", [False, True], ids=["running", "starts-late"])
@pytest.mark.parametrize("procps", [True, False], ids=["pgrep", "no-procps"])
def test_the_wait_lasts_while_the_command_runs(tmp_path: Path, procps: bool, late: bool) -> None:
    if procps and shutil.which("pgrep") is None:
        pytest.skip("no pgrep on this machine")
    env = {**os.environ, "PATH": os.environ["PATH"] if procps else _path_without_procps(tmp_path / "bin")}
    loop = wait_for("sleep 47", APPEAR_S)  # a number no other process of the machine sleeps
    background = None if late else subprocess.Popen(["sleep", "47"], start_new_session=True)
    wait = subprocess.Popen(["/bin/sh", "-c", loop], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        if late:  # the agent's shell is slow to start it: the wait's first looks find nothing
            time.sleep(1.2)
            assert wait.poll() is None
            background = subprocess.Popen(["sleep", "47"], start_new_session=True)
        with pytest.raises(subprocess.TimeoutExpired):
            wait.wait(APPEAR_S + 1.5)  # past the first wait: the command runs, so it waits on
        background.kill()
        background.wait(BOUND_S)
        assert wait.wait(BOUND_S) == 0
        assert wait.stdout is not None and wait.stdout.read() == b""  # no "pgrep: not found"
    finally:
        _stop(*(p for p in (background, wait) if p is not None))


def test_a_command_that_never_shows_up_is_waited_for_a_bounded_time(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": _path_without_procps(tmp_path / "bin")}
    started = time.monotonic()
    assert subprocess.run(["/bin/sh", "-c", wait_for("sleep 47", APPEAR_S)], env=env, timeout=BOUND_S).returncode == 0
    assert time.monotonic() - started >= APPEAR_S  # it gave it its time, then gave up
