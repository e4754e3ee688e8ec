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
from conftest import process_gone

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


# The "agent" of the holder tests: an orphan with a whitelisted environment in a session of its
# own (its argv names the agent), then it prints it and waits for its input to close.
ORPHANING_AGENT = """
import os, subprocess, sys
child = subprocess.Popen(["/bin/sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 &"],
                         env={"PATH": os.environ["PATH"]}, start_new_session=True)
child.wait()
print("ready", flush=True)
sys.stdin.read()
"""


def test_each_agent_process_has_a_subreaper_of_its_own_so_orphans_never_mix() -> None:
    """Issue 23: with the runner alone as subreaper, an orphan that left the agent's session and
    environment comes back to the runner, and with 7 agents at once nobody can say whose it is.
    Under a holder of its own each orphan is re-parented to its agent's holder: exact."""
    import asyncio

    import psutil

    from acp_journeys.launch.local import LocalLauncher

    async def main() -> None:
        launcher = LocalLauncher(f"test-{os.getpid()}", tracking="subreaper")
        try:
            assert launcher.describe()["tracking"] == "subreaper"
            sandboxes = [await launcher.open_sandbox(f"j{i}") for i in range(3)]
            agents = [await s.start_agent([sys.executable, "-c", ORPHANING_AGENT]) for s in sandboxes]
            for agent in agents:
                assert (await asyncio.wait_for(agent.read_stdout(6), 30)).strip() == b"ready"
            assert all(s.sees_every_process for s in sandboxes)
            seen = []
            for sandbox, agent in zip(sandboxes, agents):
                # The orphan's shell has exited: it is no child of the agent, in no session of
                # its, without its token; only its ancestry through the holder names it.
                deadline = time.monotonic() + 10
                while True:
                    mine = [p for p in await sandbox.agent_processes() if p.pid != agent.pid]
                    if any(p.cmdline[:2] == ("sleep", "300") for p in mine) or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.05)
                [orphan] = mine
                assert orphan.cmdline == ("sleep", "300")
                assert psutil.Process(orphan.pid).ppid() != agent.pid  # re-parented: to its holder
                seen.append(orphan.pid)
                await agent.close_stdin()
                assert await agent.wait(10) == 0
                [left] = await sandbox.collect_leftovers()
                assert left.pid == orphan.pid
                assert process_gone(orphan.pid)
            assert len(set(seen)) == 3
            for sandbox in sandboxes:
                assert await sandbox.agent_processes() == []
        finally:
            await launcher.close()

    asyncio.run(main())


def test_an_agent_that_kills_its_holder_is_still_tracked_by_descent() -> None:
    """The holder is the agent's parent, so the agent can kill it: what it held comes to the
    runner (a child subreaper too), and tracking goes on by descent, no longer exact."""
    import asyncio

    from acp_journeys.launch.local import LocalLauncher

    agent_code = ("import os, signal, subprocess, sys\n"
                  "child = subprocess.Popen(['sleep', '301'])\n"
                  "os.kill(os.getppid(), signal.SIGKILL)\n"
                  "print('ready', flush=True)\nsys.stdin.read()\n")

    async def main() -> None:
        launcher = LocalLauncher(f"test-{os.getpid()}", tracking="subreaper")
        try:
            sandbox = await launcher.open_sandbox("j")
            agent = await sandbox.start_agent([sys.executable, "-c", agent_code])
            assert (await asyncio.wait_for(agent.read_stdout(6), 30)).strip() == b"ready"
            deadline = time.monotonic() + 10
            while sandbox.sees_every_process and time.monotonic() < deadline:
                await asyncio.sleep(0.05)  # the holder's end, as asyncio collects it
            assert not sandbox.sees_every_process
            commands = {p.cmdline[:2] for p in await sandbox.agent_processes()}
            assert ("sleep", "301") in commands
            assert await agent.wait(0.5) is None  # alive: the holder's end is not the agent's
            await agent.kill()
            assert await agent.wait(10) is not None
            left = await sandbox.collect_leftovers()
            assert [p.cmdline[:2] for p in left] == [("sleep", "301")]
            assert await sandbox.agent_processes() == []
        finally:
            await launcher.close()

    asyncio.run(main())


@pytest.mark.parametrize("same_start", [True, False])
def test_a_pid_once_the_agents_is_ours_only_with_its_start_time(same_start: bool) -> None:
    """Under load pids wrap in minutes: a number once seen as the agent's (a shell that ended)
    can be any process now, a container's shim with its journeys below it. Its children are the
    agent's only when the number is still that process (same start time), never by number."""
    child = subprocess.Popen(["sleep", "300"])  # below this process, which stands for the reused number
    try:
        tracker = DescentTracker("t", subreaper=False)
        me = proctrack.psutil.Process()
        tracker._seen = {(me.pid, me.create_time() + (0.0 if same_start else 5.0))}
        found = child.pid in tracker.pids()
        assert found is same_start
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("same_start", [True, False])
def test_the_agents_session_is_ours_only_while_its_number_is_the_agent(same_start: bool) -> None:
    """A session id outlives its leader only while a member lives; once the number is a new
    process (another start time), the session of that number is that process's, not the agent's."""
    leader = subprocess.Popen([sys.executable, "-c", "import subprocess, time\n"
                               "subprocess.Popen(['sleep', '300'])\nprint('ready', flush=True)\ntime.sleep(300)"],
                              start_new_session=True, stdout=subprocess.PIPE, text=True)
    try:
        assert leader.stdout is not None and leader.stdout.readline().strip() == "ready"
        tracker = DescentTracker("t", subreaper=False)
        tracker.root_pid = leader.pid
        if not same_start:
            tracker._root_started = (tracker._root_started or 0.0) - 5.0  # the agent was another process
        members = [p for p in proctrack.psutil.process_iter() if p.pid != leader.pid
                   and os.getsid(p.pid) == leader.pid]
        assert members, "the leader's sleep is in its session"
        ours = set(tracker.pids())
        assert (members[0].pid in ours) is same_start and (leader.pid in ours) is same_start
    finally:
        os.killpg(leader.pid, 9)
        leader.wait()
