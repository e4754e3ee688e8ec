"""#step-8 A Plan turn to a saved plan: cat a file, create_plan, get_plan, reply with the id.

The workspace is hashed before and after the turn; the Plan policy allows reads, the two Plan
tools and `cat`, and refuses every other permission request.
"""

from __future__ import annotations

import posixpath

from acp_journeys import prompts
from acp_journeys.journeys.common import open_session, text
from acp_journeys.journeys.driver import JourneyContext, find_plan_switch, marker


async def run(ctx: JourneyContext) -> None:
    ctx.evidence.markers["input"] = word = marker("INPUT")
    agent = await open_session(ctx)
    if agent is None:
        return
    switch = ctx.evidence.plan_switch = find_plan_switch(agent.session_answer)
    if switch.how is None or switch.plan_value is None:
        ctx.stop_early("no Plan mode")
        return
    input_path = posixpath.join(ctx.sandbox.workspace, "plan-input.txt")
    await ctx.sandbox.write_file(input_path, f"{word}\n".encode())
    if not await agent.set_mode(switch, switch.plan_value):
        return
    agent.policy = "plan"
    before = await ctx.sandbox.snapshot(ctx.sandbox.workspace)
    turn = await agent.prompt("plan", text(prompts.plan_turn(input_path, prompts.PLAN_TITLE_SAVED_PLAN)),
                              mode="plan")
    turn.workspace_before = before
    turn.workspace_after = await ctx.sandbox.snapshot(ctx.sandbox.workspace)
