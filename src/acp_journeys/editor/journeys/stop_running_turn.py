"""#step-7 Stop a running turn: ask for `sleep 120`, cancel once it runs, time the stop.

Rondar: "When your agent runs the command, it sends `session/cancel`." So the trigger is the
`sleep 120` process among the agent's processes. Where tracking sees every process of the agent
(a cgroup, a container, a holder of its own: `Sandbox.sees_every_process`) the sleep shows up
when it runs, also when the agent's tool takes seconds to start it (an IPython kernel still
starting): a tool call about the sleep reported as under way (`in_progress`) waits up to
`PROCESS_WAIT_S` for its process. Only where tracking cannot see every process does it wait the
short `FALLBACK_S`. If no such process shows up within that wait, the cancel goes out on the
report (trigger `tool_call`: the judge warns that the process was not seen); the turn's evidence
keeps which wait applied (`sees_every_process`, `process_wait_s`). A permission request is never a trigger (it is
answered, and the wait goes on), nor is a `pending`, `failed` or `completed` tool call: none of
them is a running command. A turn that ends before the command ever runs is recorded without a
cancel (the judge: `sleep-never-started`). If nothing runs within the turn's bound, it cancels
then (trigger `bound`); it never waits out the sleep.
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

from acp_journeys.editor.connection import Answer
from acp_journeys.editor.journeys.common import open_session, text
from acp_journeys.editor.session import JourneyContext
from acp_journeys.rules import prompts
from acp_journeys.rules.evidence import Leftover

POLL_S = 0.1
PROCESS_WAIT_S = 30.0
"""How long an `in_progress` report about the sleep waits for its process before it is the trigger,
where tracking sees every process of the agent (not scaled: it is the tool's start, not a model's)."""
FALLBACK_S = 3.0
"""The same where tracking cannot see every process (the sleep may run where no scan finds it)."""


def about_sleep(tool_call: dict[str, Any]) -> bool:
    """A tool call of the command this journey asked for (a `pwd` before it is not)."""
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
    loop = asyncio.get_running_loop()
    running = asyncio.Event()
    reported: dict[str, float] = {}  # tool call id -> when it was reported in_progress

    def seen(trigger: str) -> None:
        if not running.is_set():
            turn.cancel_trigger = trigger  # type: ignore[assignment]
            turn.command_seen_at = ctx.clock.now()
            running.set()

    def on_update(kind: str, update: dict[str, Any]) -> None:
        if kind not in ("tool_call", "tool_call_update"):
            return
        call_id = str(update.get("toolCallId"))
        status = update.get("status")
        if status == "in_progress" and (about_sleep(update) or call_id in about):
            reported.setdefault(call_id, loop.time())
        elif status in ("completed", "failed"):
            reported.pop(call_id, None)  # it ended: no longer a running command
        if about_sleep(update):
            about.add(call_id)  # a later update of this call may carry only its status

    about: set[str] = set()
    agent.on_update = on_update

    async def watch() -> None:
        while not running.is_set():
            # Asked each time: a holder that the agent killed leaves tracking by descent alone.
            turn.sees_every_process = ctx.sandbox.sees_every_process
            wait_s = turn.process_wait_s = PROCESS_WAIT_S if turn.sees_every_process else FALLBACK_S
            if any(is_sleep(p.command) for p in await ctx.sandbox.agent_processes()):
                seen("process")
            elif reported and loop.time() - min(reported.values()) >= wait_s:
                seen("tool_call")
            else:
                await asyncio.sleep(POLL_S)

    bounds = ctx.bounds
    answer_task = asyncio.create_task(agent.send_prompt(blocks, bounds.turn() + bounds.cancel_s + bounds.grace_s))
    watcher = asyncio.create_task(watch())
    started = asyncio.create_task(running.wait())
    try:
        await asyncio.wait({answer_task, started}, timeout=bounds.turn(), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        started.cancel()
    if answer_task.done() and not running.is_set():
        agent.end_turn(turn, answer_task.result())  # the turn ended before the command ran
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
        turn.sleep_left = await _sleeps_after(ctx, bounds.grace_s, seen_running=turn.cancel_trigger == "process")


async def _sleeps_after(ctx: JourneyContext, grace_s: float, *, seen_running: bool) -> list[Leftover]:
    """The sleep processes there at the end of a short grace (an agent may kill it just after
    answering). When the sleep was seen running, its absence is final: the scan ends as soon as
    none is left, so a correct agent costs no grace. Otherwise (cancelled on an `in_progress`
    report or at the bound) the command may start only now, so the whole grace is waited."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    while True:
        sleeps = [p for p in await ctx.sandbox.agent_processes() if is_sleep(p.command)]
        if loop.time() >= deadline or (seen_running and not sleeps):
            return [Leftover(pid=p.pid, command=p.command, argv=list(p.cmdline)) for p in sleeps]
        await asyncio.sleep(POLL_S)
