"""Masking a whole result: our own fields stay as they are, everything else is masked.

Rules of this module: `OURS` names, per model of result.json, the string fields whose values we
produce (ids, enumerations, times, catalog texts); they are never masked, so the file stays valid
and the judge reads them as they were (fields typed as a `Literal` are ours too). Every other
string is masked: the agent's text, its JSON (keys too) and the user's command. Raw JSON lines of
the agent are masked inside their string tokens only, so the judge still parses them. Markers are
masked like the replies that hold them, so "the reply holds the marker" reads the same. In a kept
transcript, the text chunks of one stream (a process's session and update kind, such as its
agent_message_chunk updates) are masked as one text, each piece of a secret that spans chunks
where it stands (the joined reply is masked whole in the evidence already).

It must not know how the evidence was gathered: the result's models in, a masked copy out.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any

from pydantic import BaseModel

from acp_journeys.output.redact import Redactor, replace_string_token
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
    ev.JourneyEvidence: frozenset({"markers"}),
}
"""Dicts whose keys we chose (the values are still masked)."""


def _is_literal(annotation: Any) -> bool:
    if typing.get_origin(annotation) is typing.Literal:
        return True
    return any(_is_literal(a) for a in typing.get_args(annotation))


CHUNK_UPDATES = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})
"""The session/update kinds whose text content is one text sent in parts."""


def _chunk_text(frame: ev.Frame) -> tuple[tuple[int, object, str], str] | None:
    """(its stream, its text) when the frame is a text chunk of the agent's, else None."""
    if frame.direction != "from-agent" or "session/update" not in frame.text:
        return None
    try:
        message = json.loads(frame.text)
    except (ValueError, RecursionError):
        return None  # a line clipped in the transcript, or no JSON: masked as it stands
    params = message.get("params") if isinstance(message, dict) and message.get("method") == "session/update" else None
    update = params.get("update") if isinstance(params, dict) else None
    content = update.get("content") if isinstance(update, dict) else None
    if not isinstance(content, dict) or update.get("sessionUpdate") not in CHUNK_UPDATES \
            or not isinstance(content.get("text"), str):
        return None
    session = params.get("sessionId")
    return (frame.process, session if isinstance(session, (str, int)) else None, update["sessionUpdate"]), \
        content["text"]


def mask_chunk_streams(transcript: list[ev.Frame], redactor: Redactor) -> list[ev.Frame]:
    """The transcript with each stream of text chunks masked across its chunks (see the module)."""
    streams: dict[tuple[int, object, str], list[tuple[int, str]]] = {}
    for index, frame in enumerate(transcript):
        found = _chunk_text(frame)
        if found is not None:
            streams.setdefault(found[0], []).append((index, found[1]))
    out = list(transcript)
    for chunks in streams.values():
        masked = redactor.redact_pieces([text for _, text in chunks])
        for (index, text), new in zip(chunks, masked):
            if new != text:
                out[index] = out[index].model_copy(update={"text": replace_string_token(out[index].text, text, new)})
    return out


def mask_model(model: BaseModel, redactor: Redactor) -> BaseModel:
    cls = type(model)
    if isinstance(model, ev.JourneyResult) and model.transcript:
        model = model.model_copy(update={"transcript": mask_chunk_streams(model.transcript, redactor)})
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
        elif isinstance(value, list) and value and all(dataclasses.is_dataclass(v) for v in value):
            # Records of ours (the model stub's): their field names are ours, their strings masked.
            update[name] = [type(v)(**redactor.redact_data(dataclasses.asdict(v), mask_keys=False))  # type: ignore[arg-type]
                            for v in value]
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
