"""#step-9 Plan, then regular, then Plan again, in one session.

Before each turn it sets that turn's mode; the regular turn runs in the mode the session started
in, with every permission allowed, and asks for a file made with `touch`.
"""

from __future__ import annotations

import posixpath

from acp_journeys.editor.journeys.common import open_plan_session, text
from acp_journeys.editor.session import JourneyContext, marker
from acp_journeys.rules import prompts


async def run(ctx: JourneyContext) -> None:
    ctx.evidence.markers["regular"] = regular_word = marker("TOUCH")
    plan = await open_plan_session(ctx)
    if plan is None:
        return
    agent, switch = plan.agent, plan.switch
    plan_prompt = text(prompts.plan_turn(plan.input_path, prompts.PLAN_TITLE_PLAN_REGULAR_PLAN))
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
