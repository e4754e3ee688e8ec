"""The protocol tier's probe: the few requests that the journeys never send, on one agent process.

Run like a journey (its own sandbox and agent process, the same launch mode), after or beside the
journeys, only with `run --tier protocol`. It drives and records, in this order, each step with
its bound: a session/new with a relative cwd; the session; a session/cancel while it is idle and a
prompt after it; an unknown notification and an unknown method; a prompt for an unknown session
id (and session/load of it, if loadSession is advertised); a turn cancelled while its command runs
and a prompt after it; then what sessionCapabilities advertises, and only that: session/list,
session/resume, session/close and a prompt to the closed session. The judge of the tier
(rules/protocol_tier.py) reads what came back; this module decides nothing.

Rules of this module: every wait has a bound (`Bounds.request()` for a step, Rondar's cancel bound
after session/cancel); the process is closed and its leftovers killed by the runner's cleanup, as
for a journey.
"""

from __future__ import annotations

import asyncio
from typing import Any

from acp_journeys.editor.journeys.common import text
from acp_journeys.editor.session import AgentSession, JourneyContext, marker
from acp_journeys.rules import prompts
from acp_journeys.rules import protocol_catalog as pc

POLL_S = 0.1


async def run(ctx: JourneyContext, sent: dict[str, float]) -> None:
    """Drive the probe; `sent` gets the time of each notification that it sends."""
    agent = await ctx.start()
    if not await agent.initialize():
        return
    bound = ctx.bounds.request()
    await agent._call("session/new", {"cwd": pc.RELATIVE_CWD, "mcpServers": []}, bound)
    if not agent.usable or not await agent.new_session():
        return
    session_id = agent.session_id

    sent["idle-cancel"] = ctx.clock.now()
    await agent.conn.notify("session/cancel", {"sessionId": session_id})
    if not await _reply_turn(ctx, agent, "after-idle-cancel"):
        return

    sent["unknown-notification"] = ctx.clock.now()
    await agent.conn.notify(pc.UNKNOWN_NOTIFICATION, {})
    await agent._call(pc.UNKNOWN_METHOD, {}, bound)
    if not agent.usable:
        return

    agent.session_id = pc.UNKNOWN_SESSION_ID
    try:
        await _reply_turn(ctx, agent, "unknown-session")
    finally:
        agent.session_id = session_id
    caps = agent.evidence.agent_capabilities or {}
    if caps.get("loadSession") is True and agent.usable:
        await agent._call("session/load", {"sessionId": pc.UNKNOWN_SESSION_ID, "cwd": ctx.sandbox.workspace,
                                           "mcpServers": []}, bound)
    if not agent.usable:
        return

    if not await _cancelled_turn(ctx, agent):
        return
    await _reply_turn(ctx, agent, "after-cancel")

    session_caps = caps.get("sessionCapabilities") if isinstance(caps.get("sessionCapabilities"), dict) else {}
    if isinstance(session_caps.get("list"), dict) and agent.usable:
        await agent._call("session/list", {"cwd": ctx.sandbox.workspace}, bound)
    if isinstance(session_caps.get("resume"), dict) and agent.usable:
        await agent._call("session/resume", {"sessionId": session_id, "cwd": ctx.sandbox.workspace,
                                             "mcpServers": ctx.mcp_servers()}, bound)
    if isinstance(session_caps.get("close"), dict) and agent.usable:
        await agent._call("session/close", {"sessionId": session_id}, bound)
        if agent.usable:
            await _reply_turn(ctx, agent, "after-close")


async def _reply_turn(ctx: JourneyContext, agent: AgentSession, name: str) -> bool:
    """One short prompt ("Reply with exactly ..."); True when the agent can still be spoken to."""
    word = ctx.evidence.markers[name] = marker("PROBE")
    await agent.prompt(name, text(prompts.reply_exactly(word)), timeout=ctx.bounds.request())
    return agent.usable


async def _cancelled_turn(ctx: JourneyContext, agent: AgentSession) -> bool:
    """A turn running `sleep 120`, cancelled once the command runs (or a bound passes)."""
    blocks = text(prompts.run_sleep())
    turn = agent.begin_turn("to-cancel", blocks, "default")
    running = asyncio.Event()

    def on_update(kind: str, update: dict[str, Any]) -> None:
        if kind in ("tool_call", "tool_call_update") and update.get("status") == "in_progress":
            running.set()

    agent.on_update = on_update
    sending = asyncio.create_task(agent.send_prompt(blocks, ctx.bounds.request() + ctx.bounds.cancel_s))

    async def watch() -> None:
        while not running.is_set():
            if any("sleep 120" in p.command for p in await ctx.sandbox.agent_processes()):
                running.set()
            await asyncio.sleep(POLL_S)

    watcher = asyncio.create_task(watch())
    waiting = asyncio.create_task(running.wait())
    try:
        await asyncio.wait({sending, waiting}, timeout=ctx.bounds.request(), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        waiting.cancel()
        agent.on_update = None
    if not sending.done():
        turn.cancel_trigger = "tool_call" if running.is_set() else "bound"
        await agent.cancel()
    answer = await sending  # bounded by its own timeout
    agent.end_turn(turn, answer)
    agent.policy = "allow-all"  # the cancel's policy ends with its turn
    return agent.usable
