"""#step-3 A turn to its end: one prompt; the reply holds the marker and ends with end_turn."""

from acp_journeys.editor.journeys.common import open_session, text
from acp_journeys.editor.session import JourneyContext, marker
from acp_journeys.rules import prompts


async def run(ctx: JourneyContext) -> None:
    ctx.evidence.markers["reply"] = word = marker("REPLY")
    agent = await open_session(ctx)
    if agent is not None:
        await agent.prompt("reply", text(prompts.reply_exactly(word)))
