"""JSON-RPC 2.0 messages, sans-IO.

Rules of this module: text in, typed messages out, and the reverse. It keeps the raw text of each
message (the judge reads protocolVersion's own token from it) and never repairs a message: what
is not valid JSON-RPC comes out as `Invalid`, with the reason.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any, Union

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


@dataclass(frozen=True)
class Request:
    id: Any
    method: str
    params: Any
    raw: str


@dataclass(frozen=True)
class Notification:
    method: str
    params: Any
    raw: str


@dataclass(frozen=True)
class Response:
    id: Any
    result: Any
    error: dict[str, Any] | None
    raw: str


@dataclass(frozen=True)
class Invalid:
    reason: str
    raw: str
    kind: str = "not-jsonrpc"
    """`not-json` when the text is no JSON at all; `not-jsonrpc` when it is JSON of another shape."""


Message = Union[Request, Notification, Response, Invalid]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)
"""json.loads with an argument builds a decoder (and its scanner) per call: half its cost on a
frame. This one is built once; `_loads` is json.loads for a str, its BOM check included."""


def _loads(raw: str) -> Any:
    if raw.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", raw, 0)
    return _DECODER.decode(raw)


def parse(raw: str) -> Message:
    try:
        obj = _loads(raw)
    except ValueError as exc:
        return Invalid(f"not JSON: {exc}", raw, kind="not-json")
    except RecursionError:
        return Invalid("not JSON we can read: nested too deep", raw, kind="not-json")
    if not isinstance(obj, dict):
        return Invalid("a JSON value that is not an object", raw)
    if obj.get("jsonrpc") != "2.0":
        return Invalid('no "jsonrpc": "2.0"', raw)
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str):
            return Invalid("method is not a string", raw)
        params = obj.get("params")
        if "id" in obj:
            return Request(obj["id"], method, params, raw)
        return Notification(method, params, raw)
    if "id" in obj and ("result" in obj or "error" in obj):
        if "result" in obj and "error" in obj:
            return Invalid("a response with both result and error", raw)
        error = obj.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        if "error" in obj and not (isinstance(code, int) and not isinstance(code, bool)
                                   and isinstance(error.get("message"), str)):
            return Invalid("an error without an integer code and a message", raw)
        return Response(obj["id"], obj.get("result"), error, raw)
    return Invalid("neither a request, a notification nor a response", raw)


def encode(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


class Outbox:
    """Makes our outgoing messages, with ids that never repeat within one connection."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def request(self, method: str, params: Any) -> tuple[int, bytes]:
        request_id = next(self._ids)
        return request_id, encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

    @staticmethod
    def notification(method: str, params: Any) -> bytes:
        return encode({"jsonrpc": "2.0", "method": method, "params": params})

    @staticmethod
    def result(request_id: Any, result: Any) -> bytes:
        return encode({"jsonrpc": "2.0", "id": request_id, "result": result})

    @staticmethod
    def error(request_id: Any, code: int, message: str) -> bytes:
        return encode({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})
