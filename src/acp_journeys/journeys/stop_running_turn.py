"""#step-7 Stop a running turn: ask for `sleep 120`, cancel once it runs, time the stop.

"It runs" is the first of: a tool_call/tool_call_update about it that is under way (not
`pending`), a permission request for it
(allowed, then cancelled), or a `sleep 120` process among the agent's processes. If none shows up
within the turn's bound, it cancels then (and the judge says so); it never waits out the sleep.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from acp_journeys import prompts
from acp_journeys.connection import Answer
from acp_journeys.evidence import Leftover
from acp_journeys.journeys.common import open_session, text
from acp_journeys.journeys.driver import JourneyContext

POLL_S = 0.25
RUNNING = ("in_progress", "completed", "failed")


def about_sleep(tool_call: dict[str, Any]) -> bool:
    if tool_call.get("kind") == "execute":
        return True
    try:
        return "sleep" in json.dumps(tool_call)
    except (TypeError, ValueError):
        return False


def is_sleep(command: str) -> bool:
    """The command this journey asked for (also behind `sh -c`), not any other sleep."""
    words = command.split()
    return "sleep 120" in command or (len(words) >= 2 and words[0].rsplit("/", 1)[-1] == "sleep"
                                      and words[1] == "120")


async def run(ctx: JourneyContext) -> None:
    agent = await open_session(ctx)
    if agent is None:
        return
    blocks = text(prompts.run_sleep())
    turn = agent.begin_turn("sleep", blocks, "default")
    running = asyncio.Event()

    def seen(trigger: str) -> None:
        if not running.is_set():
            turn.cancel_trigger = trigger  # type: ignore[assignment]
            turn.command_seen_at = ctx.clock.now()
            running.set()

    # A `pending` tool call is not running yet (it may wait for permission): cancelling then
    # would test nothing of the kill path, so only a call under way counts.
    agent.on_update = lambda kind, update: seen("tool_call") if (
        kind in ("tool_call", "tool_call_update") and update.get("status") in RUNNING
        and about_sleep(update)) else None
    agent.on_permission = lambda record: seen("permission") if about_sleep(record.tool_call) else None

    async def watch_processes() -> None:
        while not running.is_set():
            if any(is_sleep(p.command) for p in await ctx.sandbox.agent_processes()):
                seen("process")
            await asyncio.sleep(POLL_S)

    bounds = ctx.bounds
    answer_task = asyncio.create_task(agent.send_prompt(blocks, bounds.turn() + bounds.cancel_s + bounds.grace_s))
    watcher = asyncio.create_task(watch_processes())
    started = asyncio.create_task(running.wait())
    try:
        await asyncio.wait({answer_task, started}, timeout=bounds.turn(), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        started.cancel()
    if answer_task.done() and not running.is_set():
        agent.end_turn(turn, answer_task.result())  # the turn ended before anything ran
        return
    if not running.is_set():
        turn.cancel_trigger = "bound"
    await asyncio.sleep(0)  # let the answer to a permission request go out before the cancel
    await agent.cancel()
    done, _ = await asyncio.wait({answer_task}, timeout=bounds.cancel_s + bounds.grace_s)
    if done:
        answer = answer_task.result()
    else:
        answer_task.cancel()
        answer = Answer(timed_out=True)
    agent.end_turn(turn, answer)
    if answer.raw is not None:
        turn.sleep_left = await _sleeps_after(ctx, bounds.grace_s)


async def _sleeps_after(ctx: JourneyContext, grace_s: float) -> list[Leftover]:
    """The sleep processes there at the end of a short grace (an agent may kill it just after
    answering). The whole grace, also when no sleep is seen at first: a cancel sent on the
    permission request can be answered before an agent that ignores it starts the command."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    while True:
        sleeps = [p for p in await ctx.sandbox.agent_processes() if is_sleep(p.command)]
        if loop.time() >= deadline:
            return [Leftover(pid=p.pid, command=p.command, argv=list(p.cmdline)) for p in sleeps]
        await asyncio.sleep(POLL_S)
