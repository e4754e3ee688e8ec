"""#step-8 A Plan turn to a saved plan: cat a file, create_plan, get_plan, reply with the id.

The workspace is hashed at the start of the Plan turn and again once the agent's process has
ended (the session stays in Plan mode until then, so a write just after the answer counts too);
the Plan policy allows reads, the two Plan tools and `cat`, and refuses every other permission
request.
"""

from __future__ import annotations

from acp_journeys.editor.journeys.common import open_plan_session, text
from acp_journeys.editor.session import JourneyContext
from acp_journeys.rules import prompts


async def run(ctx: JourneyContext) -> None:
    plan = await open_plan_session(ctx)
    if plan is None or not await plan.agent.set_mode(plan.switch, plan.switch.plan_value):
        return
    plan.agent.policy = "plan"
    before = await ctx.sandbox.snapshot(ctx.sandbox.workspace)
    turn = await plan.agent.prompt(
        "plan", text(prompts.plan_turn(plan.input_path, prompts.PLAN_TITLE_SAVED_PLAN)), mode="plan")
    turn.workspace_before = before
    await ctx.close_all()  # no other mode comes: Plan mode lasts until the process ends
    turn.workspace_after = await ctx.sandbox.snapshot(ctx.sandbox.workspace)
