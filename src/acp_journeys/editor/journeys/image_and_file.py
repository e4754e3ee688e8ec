"""#step-6 An image and a file: a note in the session-files folder and a red 64x64 PNG."""

from __future__ import annotations

import base64
import io

from acp_journeys.editor.journeys.common import open_session
from acp_journeys.editor.session import JourneyContext, marker
from acp_journeys.rules import prompts


def red_png(size: int = 64) -> bytes:
    from PIL import Image  # loaded here: only this journey needs it

    buffer = io.BytesIO()
    Image.new("RGB", (size, size), (255, 0, 0)).save(buffer, format="PNG")
    return buffer.getvalue()


async def run(ctx: JourneyContext) -> None:
    ctx.evidence.markers["file"] = word = marker("FILE")
    await ctx.sandbox.write_file(prompts.NOTE_PATH, f"{word}\n".encode())
    agent = await open_session(ctx)
    if agent is None:
        return
    caps = agent.evidence.agent_capabilities or {}
    if (caps.get("promptCapabilities") or {}).get("image") is not True:
        ctx.stop_early("the agent does not accept images")
        return  # an editor sends no image to an agent that does not take them
    blocks = [
        {"type": "text", "text": prompts.image_and_file()},
        {"type": "image", "mimeType": "image/png", "data": base64.b64encode(red_png()).decode()},
    ]
    await agent.prompt("image", blocks)
