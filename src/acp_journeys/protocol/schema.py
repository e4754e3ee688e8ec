"""Per-method validation against the vendored ACP v1 JSON Schema.

Rules of this module: a frame is checked against the one `$defs` type its method and direction
name (never the top-level unions, which admit anything through their extension branch).
Violations are returned as text; deciding what they mean is the judge's job.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    text = resources.files("acp_journeys").joinpath("schemas/acp-schema-v1.json").read_text()
    return json.loads(text)


@lru_cache(maxsize=1)
def _routes() -> dict[tuple[str, str], str]:
    """(role, method) -> $defs name. Roles: what the agent sends (response/request/notification)."""
    routes: dict[tuple[str, str], str] = {}
    for name, definition in _schema()["$defs"].items():
        method, side = definition.get("x-method"), definition.get("x-side")
        if not method:
            continue
        if side == "agent" and name.endswith("Response"):
            routes[("agent-response", method)] = name
        elif side == "agent" and (name.endswith("Request") or name.endswith("Notification")):
            routes[("client-message", method)] = name
        elif side == "client" and name.endswith("Request"):
            routes[("agent-request", method)] = name
        elif side == "client" and name.endswith("Notification"):
            routes[("agent-notification", method)] = name
        elif side == "client" and name.endswith("Response"):
            routes[("client-response", method)] = name
    return routes


@lru_cache(maxsize=64)
def _validator(def_name: str):
    import jsonschema  # loaded on first use: ~0.2 s

    schema = {"$defs": _schema()["$defs"], "$ref": f"#/$defs/{def_name}"}
    return jsonschema.Draft202012Validator(schema)


def definition_for(role: str, method: str) -> str | None:
    return _routes().get((role, method))


def violations(role: str, method: str, payload: Any, limit: int = 5) -> list[str]:
    """What is wrong with `payload` (a result, or params) for `method` in `role`; [] when valid."""
    name = definition_for(role, method)
    if name is None:
        return []
    problems = []
    for error in _validator(name).iter_errors(payload):
        where = "/".join(str(p) for p in error.absolute_path) or "(top)"
        problems.append(f"{method} {name} at {where}: {error.message[:300]}")
        if len(problems) >= limit:
            break
    return problems
