"""Killing every process of a container but its holder, and knowing when that is over.

Rules of this module: the kill is the holder's (SIGUSR1 to PID 1, its kill(-1) rounds need no
exec, so they work in a fork bomb too); it is over when the holder's log says so
("acp-journeys-killed N", holder.c), not when a listing first comes back empty. Under load the
listing is empty sooner, and an agent process started then (the restart journey's second one)
was killed by a round still to come. With no log to read (another log driver) the listing alone
decides, as before. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import Any, Awaitable, Callable

from acp_journeys.launch.docker.engine import short_error

log = logging.getLogger("acp_journeys.launch.docker")

KILL_ALL_WAIT_S = 30.0  # the holder's rounds end by themselves (500 at most)
KILLED_MARK = re.compile(rb"acp-journeys-killed (\d+)\n")
LOG_TAIL = 64  # lines: an agent may write to PID 1's stderr; only the newest are read


async def kills_done(call: Callable[..., Awaitable[Any]], api: Any, container_id: str) -> int | None:
    """How many kill-all rounds the holder has ended, or None when the engine gives no log."""
    try:
        raw = await call(api.logs, container_id, stdout=False, stderr=True, tail=LOG_TAIL)
    except Exception as exc:
        log.debug("no log of %s: %s", container_id[:12], short_error(exc))
        return None
    marks = KILLED_MARK.findall(raw if isinstance(raw, bytes) else b"")
    return int(marks[-1]) if marks else 0


async def kill_all_but_holder(call: Callable[..., Awaitable[Any]], api: Any, container_id: str,
                              top: Callable[[], Awaitable[list | None]], signal_holder: Callable[[], Awaitable[None]],
                              name: str) -> None:
    before = await kills_done(call, api, container_id)
    await signal_holder()
    deadline = time.monotonic() + KILL_ALL_WAIT_S
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        if before is not None and (await kills_done(call, api, container_id) or 0) <= before:
            continue  # the holder's rounds go on (or its log did not answer this time)
        if not await top():
            return
        if before is not None:
            break  # its rounds are over, and something outlived them
    log.warning("processes survived the kill in %s", name)
