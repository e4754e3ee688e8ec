"""The reference agent's process groups (the shell commands it started): it signals a group only
while the number is still that group. Under load pids wrap within minutes, and a number once
one of its groups may be another program's by then (a journey's agent in a container is a
group leader too), which a stale kill at the agent's exit would end."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import types

from acp_journeys.demo import reference_agent as ra


def _group(command: str) -> subprocess.Popen:
    return subprocess.Popen(["/bin/sh", "-c", command], start_new_session=True)


def test_a_group_whose_number_is_another_process_now_is_not_signalled() -> None:
    proc = _group("exec sleep 300")
    try:
        groups = ra.ProcessGroups()
        groups.add(proc.pid, turn=None)  # type: ignore[arg-type]
        # As if our group had ended and its number been taken by this newer process.
        groups._turns[proc.pid] = (None, b"1")  # started 1 tick after boot: not this process
        groups.signal([proc.pid], signal.SIGKILL)
        time.sleep(0.2)
        assert proc.poll() is None, "another program's group was killed"
        groups.release(proc.pid)
        assert groups.of() == [], "a number that is no longer ours is forgotten"
    finally:
        proc.kill()
        proc.wait()


def test_our_group_is_signalled_also_after_its_shell_ended() -> None:
    shell = subprocess.Popen(["/bin/sh", "-c", "sleep 301 & echo $!"], start_new_session=True,
                             stdout=subprocess.PIPE, text=True)
    groups = ra.ProcessGroups()
    groups.add(shell.pid, turn=None)  # type: ignore[arg-type]
    assert shell.stdout is not None
    member = int(shell.stdout.readline())
    shell.wait()  # the shell is gone (and reaped); its sleep keeps the group and its number
    try:
        groups.release(shell.pid)
        assert groups.of() == [shell.pid], "a group with members stays ours"
        groups.signal([shell.pid], signal.SIGKILL)
        assert _group_ends(shell.pid, member), "our group outlived the kill"
        groups.release(shell.pid)
        assert groups.of() == []
    finally:
        try:
            os.killpg(shell.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _group_ends(pgid: int, member: int, bound_s: float = 10.0) -> bool:
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        try:
            os.waitpid(member, os.WNOHANG)  # ours to reap when this process is a subreaper
        except ChildProcessError:
            pass  # init's
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


class _CancelWhileStarting(ra.Agent):
    """The cancel arrives while the command starts (after the first look at the flag, before
    the group is known): the window that the docker table's soak once hit."""

    def make_wire(self):  # nothing goes out: the test drives `execute` itself
        class Quiet:
            def notify(self, *args, **kwargs): ...
        return Quiet()

    def start_command(self, turn, command):
        process = super().start_command(turn, command)
        turn.cancelled.set()
        return process


class _FlagOnly(_CancelWhileStarting):
    def stop_commands(self, turn) -> None:
        pass  # as cancel-flag-only: a running command runs on


class _Turn:
    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.session = types.SimpleNamespace(cwd="/tmp")


def test_a_cancel_while_the_command_starts_goes_through_the_stop_commands_hook() -> None:
    """The conforming agent kills the command it just started; a fixture whose cancel never kills
    (cancel-flag-only) must not have it killed behind its back, or its defect passes unseen."""
    code, _ = _CancelWhileStarting().execute(_Turn(), "sleep 30")
    assert code == -signal.SIGTERM  # killed at once by the conforming agent
    started = time.monotonic()
    code, _ = _FlagOnly().execute(_Turn(), "sleep 2")
    assert code == 0, "the flag-only agent's command was killed"
    assert time.monotonic() - started >= 1.5  # it ran its course (a lower bound: load cannot break it)
