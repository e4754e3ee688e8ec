"""#step-4 A follow-up in the same session: remember a word, then ask for it."""

from acp_journeys.editor.journeys.common import open_session, text
from acp_journeys.editor.session import JourneyContext, marker
from acp_journeys.rules import prompts


async def run(ctx: JourneyContext) -> None:
    ctx.evidence.markers["word"] = word = marker("WORD")
    agent = await open_session(ctx)
    if agent is None:
        return
    await agent.prompt("remember", text(prompts.remember_word(word)))
    if agent.usable and ctx.evidence.stopped_early is None:
        await agent.prompt("ask", text(prompts.ask_word()))
