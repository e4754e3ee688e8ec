"""The 7 journeys of Rondar's page, one small module each: steps only, no verdicts."""

from __future__ import annotations

from typing import Awaitable, Callable

from acp_journeys.editor.journeys import (
    follow_up_after_restart,
    follow_up_same_session,
    image_and_file,
    plan_regular_plan,
    plan_turn_saved_plan,
    stop_running_turn,
    turn_to_end,
)
from acp_journeys.editor.session import JourneyContext

Script = Callable[[JourneyContext], Awaitable[None]]

SCRIPTS: dict[str, Script] = {
    "turn-to-end": turn_to_end.run,
    "follow-up-same-session": follow_up_same_session.run,
    "follow-up-after-restart": follow_up_after_restart.run,
    "image-and-file": image_and_file.run,
    "stop-running-turn": stop_running_turn.run,
    "plan-turn-saved-plan": plan_turn_saved_plan.run,
    "plan-regular-plan": plan_regular_plan.run,
}
