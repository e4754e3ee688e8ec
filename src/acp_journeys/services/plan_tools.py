"""The `rondar` MCP server's two tools, `create_plan` and `get_plan`: pure functions over a channel's plans.

Rules of this module: no I/O and no `mcp` import (the hub turns results into MCP answers). A tool
error (an unknown plan id, a missing argument, an unknown tool) is a `ToolFailure` whose message is
what the agent's model reads, so that it can correct itself. Plans are bounded in number and size.
"""

from __future__ import annotations

import secrets
from typing import Any

MAX_PLANS = 256  # per channel: a journey saves one or two; beyond this create_plan answers an error
MAX_PLAN_CHARS = 8 * 1024 * 1024  # titles and descriptions of a channel's plans, together

_PLAN_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

CREATE_PLAN_DESCRIPTION = (
    "Save a plan. Give it a short title and a description that holds the whole plan. "
    "Returns the id of the saved plan (PLAN-XXXXXXXX); get_plan reads it back."
)
GET_PLAN_DESCRIPTION = (
    "Read a saved plan by its id, as create_plan returned it. "
    "Returns the plan's id, title and description; an unknown id is an error."
)

TOOL_SPECS: list[dict[str, Any]] = [
    {
        "name": "create_plan",
        "title": "Save a plan",
        "description": CREATE_PLAN_DESCRIPTION,
        "input_schema": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "The title of the plan."},
                "description": {"type": "string", "description": "The plan itself, in full."},
            },
            "required": ["title", "description"],
        },
        "output_schema": {
            "type": "object",
            "properties": {"id": {"type": "string", "description": "The id of the saved plan."}},
            "required": ["id"],
        },
    },
    {
        "name": "get_plan",
        "title": "Read a saved plan",
        "description": GET_PLAN_DESCRIPTION,
        "input_schema": {
            "type": "object",
            "properties": {
                "plan_id": {"type": "string", "description": "The id that create_plan returned."},
            },
            "required": ["plan_id"],
        },
        "output_schema": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "title": {"type": "string"},
                "description": {"type": "string"},
            },
            "required": ["id", "title", "description"],
        },
    },
]


def new_plan_id() -> str:
    return "PLAN-" + "".join(secrets.choice(_PLAN_ID_ALPHABET) for _ in range(8))


class ToolFailure(Exception):
    """A tool error to answer with isError true; the message is what the agent reads."""


def _string_argument(tool: str, arguments: dict[str, Any], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str):
        given = ", ".join(sorted(arguments)) or "none"
        what = "is missing" if value is None else f"must be a string, not {type(value).__name__}"
        raise ToolFailure(f"{tool}: the argument {name!r} {what} (arguments given: {given}).")
    return value


def call_tool(plans: dict[str, dict], tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run one tool; returns its structured result or raises `ToolFailure`."""
    if tool == "create_plan":
        title = _string_argument(tool, arguments, "title")
        description = _string_argument(tool, arguments, "description")
        held = sum(len(p["title"]) + len(p["description"]) for p in plans.values())
        if len(plans) >= MAX_PLANS or held + len(title) + len(description) > MAX_PLAN_CHARS:
            raise ToolFailure(f"create_plan: this server keeps at most {MAX_PLANS} plans and "
                               f"{MAX_PLAN_CHARS} characters of them; the plan was not saved.")
        plan_id = new_plan_id()
        while plan_id in plans:
            plan_id = new_plan_id()
        plans[plan_id] = {"id": plan_id, "title": title, "description": description}
        return {"id": plan_id}
    if tool == "get_plan":
        plan_id = _string_argument(tool, arguments, "plan_id")
        plan = plans.get(plan_id)
        if plan is None:
            raise ToolFailure(f"Unknown plan id {plan_id!r}: no plan with this id was saved.")
        return dict(plan)
    known = ", ".join(spec["name"] for spec in TOOL_SPECS)
    raise ToolFailure(f"Unknown tool {tool!r}. This server has the tools: {known}.")
