"""Where an agent offers Plan mode: Rondar's rule, read from its session/new (or session/load) answer.

Rules of this module: pure; it reads the answer and says how to switch (a mode or a config option)
and what was offered, never whether that is right (the judge does).
"""

from __future__ import annotations

from typing import Any

from acp_journeys.editor.clipping import NAME_LIMIT, clip_text
from acp_journeys.rules.evidence import PlanSwitchEvidence

MODES_KEPT = 100
"""Modes (and mode config values) of session/new that the evidence lists."""


def find_plan_switch(answer: dict[str, Any] | None) -> PlanSwitchEvidence:
    """Rondar's rule: a mode whose id or name is "plan" or "planning"; else a "plan" value of a
    configOptions entry of the category "mode"."""
    answer = answer or {}
    switch = PlanSwitchEvidence()
    modes = answer.get("modes") if isinstance(answer.get("modes"), dict) else {}
    for mode in modes.get("availableModes") or []:
        if not isinstance(mode, dict):
            continue
        mode_id, name = str(mode.get("id", "")), str(mode.get("name", ""))
        if len(switch.offered_modes) < MODES_KEPT:  # what a failure shows; every mode is still looked at
            switch.offered_modes.append(clip_text(mode_id, NAME_LIMIT))
        if switch.how is None and (mode_id.lower() in ("plan", "planning") or name.lower() in ("plan", "planning")):
            switch.how, switch.plan_value = "mode", mode_id
            switch.initial_value = modes.get("currentModeId")
    if switch.how:
        return switch
    for option in answer.get("configOptions") or []:
        if not isinstance(option, dict) or option.get("category") != "mode":
            continue
        values = _option_values(option.get("options"))
        room = MODES_KEPT - len(switch.offered_config_values)
        switch.offered_config_values += [clip_text(v, NAME_LIMIT) for v in values[:max(room, 0)]]
        plan = next((v for v in values if v.lower() == "plan"), None)
        if plan is not None:
            switch.how, switch.plan_value = "config-option", plan
            switch.config_id = str(option.get("id"))
            switch.initial_value = option.get("currentValue")
            break
    return switch


def _option_values(options: Any) -> list[str]:
    values: list[str] = []
    for item in options or []:
        if not isinstance(item, dict):
            continue
        if "options" in item:  # a group of options
            values += _option_values(item["options"])
        elif "value" in item:
            values.append(str(item["value"]))
    return values
