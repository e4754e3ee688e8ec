"""Masking a whole result: our own fields stay as they are, everything else is masked.

Rules of this module: `OURS` names, per model of result.json, the string fields whose values we
produce (ids, enumerations, times, catalog texts); they are never masked, so the file stays valid
and the judge reads them as they were (fields typed as a `Literal` are ours too). Every other
string is masked: the agent's text, its JSON (keys too) and the user's command. Raw JSON lines of
the agent are masked inside their string tokens only, so the judge still parses them. Markers are
masked like the replies that hold them, so "the reply holds the marker" reads the same.

It must not know how the evidence was gathered: the result's models in, a masked copy out.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel

from acp_journeys.output.redact import Redactor
from acp_journeys.rules import evidence as ev

OURS: dict[type[BaseModel], frozenset[str]] = {
    ev.RunResult: frozenset({"schema_", "tool_version", "started_at", "ended_at", "docs_url", "subject"}),
    ev.JourneyResult: frozenset({"id", "title", "doc"}),
    ev.Failure: frozenset({"id", "message", "doc"}),
    ev.JourneyEvidence: frozenset({"journey"}),
    ev.RequestEvidence: frozenset({"method"}),
    ev.TurnEvidence: frozenset({"name"}),
}
JSON_TEXT: dict[type[BaseModel], frozenset[str]] = {
    ev.ProcessEvidence: frozenset({"initialize_raw"}),
}
"""Raw JSON lines of the agent: masked inside string tokens only."""
OWN_KEYS: dict[type[BaseModel], frozenset[str]] = {
    ev.JourneyEvidence: frozenset({"markers", "model_requests"}),
}
"""Dicts whose keys we chose (the values are still masked)."""


def _is_literal(annotation: Any) -> bool:
    if typing.get_origin(annotation) is typing.Literal:
        return True
    return any(_is_literal(a) for a in typing.get_args(annotation))


def mask_model(model: BaseModel, redactor: Redactor) -> BaseModel:
    cls = type(model)
    update: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        value = getattr(model, name)
        if value is None or isinstance(value, (bool, int, float)) or name in OURS.get(cls, ()) \
                or _is_literal(field.annotation):
            continue
        if isinstance(value, BaseModel):
            update[name] = mask_model(value, redactor)
        elif isinstance(value, list) and value and all(isinstance(v, BaseModel) for v in value):
            update[name] = [mask_model(v, redactor) for v in value]
        elif name in JSON_TEXT.get(cls, ()) or (cls is ev.Frame and name == "text"
                                                 and model.direction in ("to-agent", "from-agent")):
            update[name] = redactor.redact_json_text(value)
        else:
            update[name] = redactor.redact_data(value, mask_keys=name not in OWN_KEYS.get(cls, ()))
    return model.model_copy(update=update)


def mask_result(result: ev.RunResult, redactor: Redactor) -> ev.RunResult:
    """The result as it may leave the run; with no secret, the very same object."""
    if not redactor:
        return result
    masked = mask_model(result, redactor)
    assert isinstance(masked, ev.RunResult)
    return masked
