"""What one agent process can make us keep of its transcript is bounded (a real agent process)."""

from __future__ import annotations

import asyncio
import sys

from acp_journeys.editor import connection
from acp_journeys.editor.connection import AgentConnection, Clock
from acp_journeys.launch.local import LocalLauncher
from acp_journeys.rules.evidence import Frame, ProtocolWarning

FLOOD = 30_000  # tiny notifications, each a frame of its own


async def _flood() -> tuple[list[Frame], list[ProtocolWarning], int]:
    code = ("import sys\nline = '{\"jsonrpc\": \"2.0\", \"method\": \"x/ping\", \"params\": {}}\\n'\n"
            f"sys.stdout.write(line * {FLOOD})\nsys.stdout.flush()\n")
    launcher = LocalLauncher(run_id="test-transcript-bounds")
    transcript: list[Frame] = []
    warnings: list[ProtocolWarning] = []
    seen = 0

    def on_notification(_message: object) -> None:
        nonlocal seen
        seen += 1

    async def on_request(_request: object) -> tuple[object, None]:
        return None, None

    try:
        sandbox = await launcher.open_sandbox("bounds")
        process = await sandbox.start_agent([sys.executable, "-c", code])
        conn = AgentConnection(process, 1, Clock(), transcript, warnings, on_notification, on_request)
        conn.start()
        await asyncio.wait_for(conn.stdout_closed.wait(), 60)
        await conn.stop()
        await process.wait(10)
        await sandbox.close()
    finally:
        await launcher.close()
    return transcript, warnings, seen


def test_a_flood_of_frames_keeps_the_first_ones_and_a_note() -> None:
    transcript, _, seen = asyncio.run(_flood())
    assert seen == FLOOD  # every frame was still read and handled
    assert len(transcript) == connection.TRANSCRIPT_FRAMES_LIMIT + 1
    assert all(f.direction == "from-agent" for f in transcript[:-1])
    assert transcript[-1].direction == "note" and "stops here" in transcript[-1].text
