"""The stub's wait for a command it started in the background, run by a real /bin/sh: it lasts
while the command runs and ends once it is gone, with pgrep and, as in a slim image, without."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from acp_journeys.services.model_stub.script import wait_for

BOUND_S = 30  # a wait of the test; the loop itself polls each second


def _path_without_procps(folder: Path) -> str:
    """A PATH of links to what the loop may use when pgrep is missing, and nothing else."""
    folder.mkdir()
    for tool in ("tr", "grep", "sleep"):
        found = shutil.which(tool)
        assert found, tool
        (folder / tool).symlink_to(found)
    return str(folder)


@pytest.mark.parametrize("procps", [True, False], ids=["pgrep", "no-procps"])
def test_the_wait_lasts_while_the_command_runs(tmp_path: Path, procps: bool) -> None:
    if procps and shutil.which("pgrep") is None:
        pytest.skip("no pgrep on this machine")
    env = {**os.environ, "PATH": os.environ["PATH"] if procps else _path_without_procps(tmp_path / "bin")}
    command = "sleep 47"  # a number no other process of the machine sleeps
    background = subprocess.Popen(["sleep", "47"], start_new_session=True)
    wait = subprocess.Popen(["/bin/sh", "-c", wait_for(command)], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            wait.wait(2.5)  # two polls at least: the command still runs, so it waits
        background.kill()
        background.wait(BOUND_S)
        assert wait.wait(BOUND_S) == 0
        assert wait.stdout is not None and wait.stdout.read() == b""  # no "pgrep: not found"
    finally:
        for process in (background, wait):
            if process.poll() is None:
                process.kill()
                process.wait(BOUND_S)
    # Nothing of that name running: it ends at once.
    assert subprocess.run(["/bin/sh", "-c", wait_for(command)], env=env, timeout=BOUND_S).returncode == 0
