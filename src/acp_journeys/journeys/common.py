"""Steps that several journeys share."""

from __future__ import annotations

from typing import Any

from acp_journeys.journeys.driver import AgentSession, JourneyContext


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
