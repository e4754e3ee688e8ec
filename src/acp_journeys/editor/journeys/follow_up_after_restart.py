"""#step-5 A follow-up after a restart: remember a word, restart, session/load, ask for it."""

from acp_journeys.editor.journeys.common import open_session, text
from acp_journeys.editor.session import JourneyContext, marker
from acp_journeys.rules import prompts


async def run(ctx: JourneyContext) -> None:
    ctx.evidence.markers["word"] = word = marker("WORD")
    first = await open_session(ctx)
    if first is None:
        return
    await first.prompt("remember", text(prompts.remember_word(word)))
    session_id = first.session_id
    await first.close()
    if ctx.evidence.stopped_early is not None or session_id is None:
        return
    second = await ctx.start()
    if not await second.initialize():
        return
    caps = second.evidence.agent_capabilities or {}
    if caps.get("loadSession") is not True:
        ctx.stop_early("the agent does not advertise loadSession")
        return  # an editor does not call session/load on an agent that does not offer it
    if await second.load_session(session_id):
        await second.prompt("ask", text(prompts.ask_word()))
