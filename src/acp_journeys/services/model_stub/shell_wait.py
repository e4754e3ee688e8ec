"""The shell loop that the stub asks an agent to run to wait for a command it started in the
background ("run it and wait for it", once the agent refused to run it in the foreground).

Rules of this module: a pure function of the command; the loop needs nothing but a POSIX shell,
`sleep`, and `pgrep` or else `tr` and `grep` (a slim image has no procps); no `sleep` of its own
is long enough for an agent to refuse; its only unbounded wait is the command's own run.
"""

from __future__ import annotations

import shlex

APPEAR_S = 10
"""How long the wait gives a command started in the background to show up: the agent may still
be starting it (under load, its shell's fork and exec can come after the wait's first look)."""


def wait_for(command: str, appear_s: int = APPEAR_S) -> str:
    """A foreground command that waits while `command`, started in the background, runs: first
    until it shows up (at most `appear_s`), then while it runs, looking each second. A wait that
    ended at once would end the turn before the journey's cancel."""
    cmdline = shlex.quote(command + " ")  # a /proc cmdline with its NULs turned to spaces
    scan = f"for p in /proc/[0-9]*/cmdline; do tr '\\0' ' ' <\"$p\"; echo; done 2>/dev/null | grep -qxF -- {cmdline}"
    look = (f"look() {{ if command -v pgrep >/dev/null; then pgrep -x -f {shlex.quote(command)} >/dev/null; "
            f"else {scan}; fi; }}")
    return (f"{look}; n=0; while ! look && [ $n -lt {int(appear_s)} ]; do n=$((n+1)); sleep 1; done; "
            "while look; do sleep 1; done")
