"""Names and labels of what a docker run makes, and whose it is.

Rules of this module: no engine calls, pure functions over strings (and, for an owner on this
machine, psutil). Every object a run makes carries LABEL_RUN, LABEL_CREATED and LABEL_OWNER; a
later run removes a killed run's objects when their owner is gone (see `pid_owner_alive`).
"""

from __future__ import annotations

import os
import socket

LABEL = "acp-journeys"
LABEL_RUN = "acp-journeys.run"
LABEL_CREATED = "acp-journeys.created"
LABEL_OWNER = "acp-journeys.owner"

# When an owner cannot be checked from here (another machine, another pid namespace), its
# objects count as live for this long after they were made.
UNKNOWN_OWNER_TTL_S = 24 * 3600.0


def own_owner(in_container: bool) -> str:
    """Who owns what this run makes: a container name/id, or a pid on the engine's host.

    `in_container`: this runner does not share the engine's file system (it runs in a container
    whose hostname is its container id, unless ACP_JOURNEYS_OWNER names it).
    """
    explicit = os.environ.get("ACP_JOURNEYS_OWNER")
    if explicit:
        return explicit
    if in_container:
        return "container:" + socket.gethostname()
    return f"pid:{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid()):.0f}"


def _start_time(pid: int) -> float:
    try:
        import psutil

        return psutil.Process(pid).create_time()
    except Exception:
        return 0.0


def pid_owner_alive(owner: str, now: float, created: float) -> bool:
    """A "pid:HOST:PID:START" owner is alive while that process runs (checkable on HOST only)."""
    try:
        _, host, pid_s, start_s = owner.split(":", 3)
        pid, start = int(pid_s), float(start_s)
    except ValueError:
        return now - created < UNKNOWN_OWNER_TTL_S
    if host != socket.gethostname():
        return now - created < UNKNOWN_OWNER_TTL_S
    if pid == os.getpid():
        return True
    try:
        import psutil

        proc = psutil.Process(pid)
        return abs(proc.create_time() - start) < 2 or start == 0
    except Exception:
        return False


def run_labels(run_id: str, owner: str, created: float, **more: str) -> dict[str, str]:
    labels = {LABEL: "1", LABEL_RUN: run_id, LABEL_CREATED: f"{created:.3f}", LABEL_OWNER: owner}
    labels.update({f"{LABEL}.{k}": v for k, v in more.items()})
    return labels


def safe_name(text: str, limit: int = 40) -> str:
    """A piece of a container name: [a-zA-Z0-9_.-] only."""
    cleaned = "".join(c if c.isalnum() or c in "_.-" else "-" for c in text).strip("-.")
    return cleaned[:limit] or "x"
