"""#step-9 Plan, then regular, then Plan again, in one session.

Before each turn it sets that turn's mode; the regular turn runs in the mode the session started
in, with every permission allowed, and asks for a file made with `touch`.
"""

from __future__ import annotations

import posixpath

from acp_journeys import prompts
from acp_journeys.journeys.common import open_session, text
from acp_journeys.journeys.driver import JourneyContext, find_plan_switch, marker

TITLE = prompts.PLAN_TITLE_PLAN_REGULAR_PLAN


async def run(ctx: JourneyContext) -> None:
    ctx.evidence.markers["input"] = word = marker("INPUT")
    ctx.evidence.markers["regular"] = regular_word = marker("TOUCH")
    agent = await open_session(ctx)
    if agent is None:
        return
    switch = ctx.evidence.plan_switch = find_plan_switch(agent.session_answer)
    if switch.how is None or switch.plan_value is None:
        ctx.stop_early("no Plan mode")
        return
    input_path = posixpath.join(ctx.sandbox.workspace, "plan-input.txt")
    await ctx.sandbox.write_file(input_path, f"{word}\n".encode())
    plan_prompt = text(prompts.plan_turn(input_path, TITLE))
    initial = switch.initial_value or "default"

    if not await agent.set_mode(switch, switch.plan_value):
        return
    agent.policy = "plan"
    await agent.prompt("plan", plan_prompt, mode="plan")
    if ctx.evidence.stopped_early or not await agent.set_mode(switch, initial):
        return
    agent.policy = "allow-all"
    target = posixpath.join(ctx.sandbox.workspace, f"regular-{regular_word}.txt")
    turn = await agent.prompt("regular", text(prompts.regular_touch(target)), mode="regular")
    turn.target_file = target
    turn.target_file_exists = await ctx.sandbox.file_exists(target)
    if ctx.evidence.stopped_early or not await agent.set_mode(switch, switch.plan_value):
        return
    agent.policy = "plan"
    await agent.prompt("plan-again", plan_prompt, mode="plan")
