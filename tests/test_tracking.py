"""Process tracking by descent (proctrack.py), with real processes: the fallback where no cgroup
can be made. A tracking that failed to set up is never claimed."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from acp_journeys.launch import proctrack
from acp_journeys.launch.proctrack import DescentTracker, TrackerFactory

# The "agent": starts a helper with a whitelisted environment (no token) and a daemon that
# leaves its session (setsid) but keeps the token, then waits to be killed.
AGENT = """
import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env={"PATH": os.environ["PATH"]})
subprocess.Popen(["/bin/sh", "-c", "sleep 61 </dev/null >/dev/null 2>&1 &"], start_new_session=True).wait()
print("ready", flush=True)
time.sleep(60)
"""


def started(tracker: proctrack.Tracker) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", AGENT], env={**os.environ, **tracker.env()},
                            stdout=subprocess.PIPE, start_new_session=True, text=True)
    tracker.root_pid = proc.pid
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


@pytest.mark.parametrize("subreaper", [True, False])
def test_descent_finds_a_helper_without_the_token_and_a_daemon_out_of_the_session(subreaper: bool) -> None:
    if subreaper:
        assert proctrack.become_subreaper()
    tracker = DescentTracker("t", subreaper)
    proc = started(tracker)
    try:
        # The daemon's shell has exited once the agent says ready, but its forked child may not
        # have exec'd `sleep` yet (it still shows the shell's command line): wait for the exec.
        deadline = time.monotonic() + 10
        commands = {" ".join(p.cmdline) for p in tracker.processes()}
        while not any(c.startswith("sleep 61") for c in commands) and time.monotonic() < deadline:
            time.sleep(0.02)
            commands = {" ".join(p.cmdline) for p in tracker.processes()}
        assert any("time.sleep(60)" in c and "-c" in c for c in commands), commands  # the helper
        assert any(c.startswith("sleep 61") for c in commands), commands  # the daemon
        proc.kill()
        proc.wait()
        time.sleep(0.2)
        # The agent is gone: what it left is still found (orphans are remembered or in its session).
        left = {" ".join(p.cmdline) for p in tracker.processes()}
        assert any("time.sleep(60)" in c for c in left) and any(c.startswith("sleep 61") for c in left), left
    finally:
        proc.kill()
        tracker.kill_all()
    assert tracker.processes() == []


def test_a_subreaper_that_cannot_be_set_up_is_never_claimed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proctrack, "become_subreaper", lambda: False)
    factory = TrackerFactory("test-run", prefer="subreaper")
    assert factory.method == "descent"
    assert factory.make("j").method == "descent"


def test_cgroup_tracking_asked_for_where_none_can_be_made_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proctrack, "_cgroup_candidates", lambda: [])
    with pytest.raises(proctrack.TrackingError):
        TrackerFactory("test-run", prefer="cgroup")


def test_the_launch_says_so_before_any_journey(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from acp_journeys.launch.local import LocalLauncher
    from acp_journeys.launch.seam import LaunchError

    monkeypatch.setattr(proctrack, "_cgroup_candidates", lambda: [])
    launcher = LocalLauncher("test-run", tracking="cgroup")
    try:
        with pytest.raises(LaunchError, match="--tracking cgroup"):
            asyncio.run(launcher.check([sys.executable]))
    finally:
        asyncio.run(launcher.close())
