"""Steps that several journeys share."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from acp_journeys.editor.plan_switch import find_plan_switch
from acp_journeys.editor.session import AgentSession, JourneyContext, marker
from acp_journeys.rules.evidence import PlanSwitchEvidence


def text(prompt: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": prompt}]


async def open_session(ctx: JourneyContext) -> AgentSession | None:
    """Start a process, initialize it and open a session: None when that cannot be done."""
    agent = await ctx.start()
    if not await agent.initialize():
        return None
    if not await agent.new_session():
        return None
    return agent


@dataclass
class PlanSession:
    agent: AgentSession
    switch: PlanSwitchEvidence
    input_path: str
    """A file in the workspace holding the INPUT marker, for the Plan turn's `cat`."""


async def open_plan_session(ctx: JourneyContext) -> PlanSession | None:
    """Open a session, find Plan mode by Rondar's rule, write the Plan input: None when any fails."""
    ctx.evidence.markers["input"] = word = marker("INPUT")
    agent = await open_session(ctx)
    if agent is None:
        return None
    switch = ctx.evidence.plan_switch = find_plan_switch(agent.session_answer)
    if switch.how is None or switch.plan_value is None:
        ctx.stop_early("no Plan mode")
        return None
    input_path = posixpath.join(ctx.sandbox.workspace, "plan-input.txt")
    await ctx.sandbox.write_file(input_path, f"{word}\n".encode())
    return PlanSession(agent, switch, input_path)
