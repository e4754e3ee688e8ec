"""The holder of one local agent process: a child subreaper of its own, so its orphans are its.

Rules of this file: standard library only, started as a script (`python -I -S subreaper.py FD
ARGV...`), importing nothing of ours; it never judges and never kills. It becomes a child
subreaper, starts ARGV as its only child (in a session of its own, with our stdin, stdout and
stderr, which it then lets go of), and reaps every process that ends below it: every orphan of
the agent is re-parented here and to no other agent's holder, so "a descendant of this holder"
is exactly "a process of this agent". It reports on FD, one line each:

    pid N        the agent started, with pid N
    exit CODE    the agent itself ended (CODE as asyncio gives it: negative for a signal)
    error TEXT   ARGV could not be started (then it exits 127)

and it exits once nothing is left below it, so its own end is the end of the agent's last process.
"""

import ctypes
import os
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36


def main() -> int:
    status_fd = int(sys.argv[1])
    argv = sys.argv[2:]
    os.set_inheritable(status_fd, False)  # the agent must not hold our report open

    def say(line: str) -> None:
        try:
            os.write(status_fd, (line + "\n").encode("utf-8", "replace"))
        except OSError:
            pass  # the runner is gone: still reap, so nothing becomes a zombie of init's

    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        say("error cannot become a child subreaper: " + os.strerror(ctypes.get_errno()))
        return 127
    try:
        # Its own session, as the agent had without a holder: a kill of its process group never
        # reaches us.
        # Python ignores these at its start; the agent gets them back, as subprocess would do.
        agent = os.posix_spawnp(argv[0], argv, os.environ, setsid=True,
                                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
    except (OSError, IndexError) as exc:
        say(f"error cannot run {argv[0] if argv else '(nothing)'!r}: {exc}")
        return 127
    say(f"pid {agent}")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the pipes are the agent's alone: their end is the agent's
        os.dup2(null, fd)
    os.close(null)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0  # nothing below us is left
        if pid == agent:
            say(f"exit {os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    sys.exit(main())
