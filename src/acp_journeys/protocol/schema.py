"""Per-method validation against the vendored ACP v1 JSON Schema.

Rules of this module: a frame is checked against the one `$defs` type its method and direction
name (never the top-level unions, which admit anything through their extension branch).
Violations are returned as text; deciding what they mean is the judge's job.
Most frames are valid, so each is first run through a plain-Python check compiled here from the
same `$defs` (the subset of keywords the schema uses, nothing looser); jsonschema, whose messages
are the ones reported, walks only a frame that check rejects.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Callable


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


# --- the fast check: a predicate per $defs type, true exactly when jsonschema finds no error ---

Check = Callable[[Any], bool]


class _Unsupported(Exception):
    """A keyword the compiler does not model: that type is left to jsonschema alone."""


# Keywords that assert nothing under Draft 2020-12 as jsonschema runs it here (no format checker;
# unknown keywords such as x-* and `discriminator` are ignored by jsonschema too).
_ANNOTATIONS = {"title", "description", "default", "examples", "format", "$comment", "deprecated",
                "readOnly", "writeOnly", "discriminator", "$schema"}
_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    # jsonschema counts 1.0 as an integer
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
}


def _equal(one: Any, two: Any) -> bool:
    """JSON equality as jsonschema's const/enum see it: true is not 1, 1 is 1.0."""
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(_equal(one[k], two[k]) for k in one)
    if isinstance(one, (list, dict)) or isinstance(two, (list, dict)):
        return False
    return one == two


def _every(checks: list[Check]) -> Check:
    """All of `checks`, in order, stopping at the first false (a loop: cheaper than all() over a
    generator, and the fast check runs for every frame)."""
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)

    def check(v: Any) -> bool:
        for each in checks:
            if not each(v):
                return False
        return True
    return check


class _Compiler:
    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.done: dict[str, Check] = {}

    def ref(self, ref: str) -> Check:
        if not ref.startswith("#/$defs/") or ref[8:] not in self.defs:
            raise _Unsupported(ref)
        name = ref[8:]
        if name not in self.done:
            slot: list[Check] = []
            self.done[name] = lambda v: slot[0](v)  # a recursive type reaches itself through this
            slot.append(self.node(self.defs[name]))
            self.done[name] = slot[0]
        return self.done[name]

    def node(self, schema: Any) -> Check:
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if not isinstance(schema, dict):
            raise _Unsupported(repr(schema))
        checks: list[Check] = []
        for key, value in schema.items():
            if key in _ANNOTATIONS or key.startswith("x-") or key in ("properties", "required"):
                continue
            checks.append(self.keyword(key, value, schema))
        if "properties" in schema or "required" in schema:
            checks.append(self.object(schema))
        if not checks:
            return lambda v: True
        if len(checks) == 1:
            return checks[0]
        return _every(checks)

    def object(self, schema: dict[str, Any]) -> Check:
        properties = [(name, self.node(sub)) for name, sub in schema.get("properties", {}).items()]
        required = list(schema.get("required", []))

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for name in required:
                if name not in v:
                    return False
            for name, sub in properties:
                if name in v and not sub(v[name]):
                    return False
            return True
        return check

    @staticmethod
    def tagged(key: str, variants: list[Any], subs: list[Check]) -> Check | None:
        """anyOf/oneOf over variants that each require one property with a string `const` of
        its own (ACP's unions: `sessionUpdate`, `type`...): only the variants whose const equals
        the value's tag are checked. Exact, not looser: on an object, every other variant fails
        on that property (missing, or another value), so it can be neither the one match of a
        oneOf nor a match of an anyOf; a value that is no object is checked against them all."""
        tag = None
        for name in (variants[0].get("required", []) if variants and isinstance(variants[0], dict) else []):
            if all(isinstance(variant, dict) and name in variant.get("required", [])
                   and isinstance(variant.get("properties", {}).get(name), dict)
                   and isinstance(variant["properties"][name].get("const"), str) for variant in variants):
                tag = name
                break
        if tag is None:
            return None
        by_tag: dict[str, list[Check]] = {}
        for variant, sub in zip(variants, subs):
            by_tag.setdefault(variant["properties"][tag]["const"], []).append(sub)
        none: list[Check] = []

        def candidates(v: Any) -> list[Check]:
            if not isinstance(v, dict):
                return subs
            value = v.get(tag)
            return by_tag.get(value, none) if isinstance(value, str) else none

        if key == "anyOf":
            return lambda v: any(sub(v) for sub in candidates(v))
        return lambda v: sum(1 for sub in candidates(v) if sub(v)) == 1

    def keyword(self, key: str, value: Any, schema: dict[str, Any]) -> Check:
        if key == "type":
            names = value if isinstance(value, list) else [value]
            if not all(isinstance(t, str) and t in _TYPES for t in names):
                raise _Unsupported(f"type {value!r}")
            types = [_TYPES[t] for t in names]
            return types[0] if len(types) == 1 else (lambda v: any(t(v) for t in types))
        if key == "$ref":
            return self.ref(value)
        if key in ("allOf", "anyOf", "oneOf"):
            subs = [self.node(sub) for sub in value]
            if key == "allOf":
                return subs[0] if len(subs) == 1 else _every(subs)
            tagged = self.tagged(key, value, subs)
            if tagged is not None:
                return tagged
            if key == "anyOf":
                return lambda v: any(sub(v) for sub in subs)
            return lambda v: sum(1 for sub in subs if sub(v)) == 1
        if key == "not":
            sub = self.node(value)
            return lambda v: not sub(v)
        if key == "const":
            return lambda v: _equal(v, value)
        if key == "enum":
            return lambda v: any(_equal(v, each) for each in value)
        if key == "additionalProperties":
            if "patternProperties" in schema:
                raise _Unsupported(key)
            known = set(schema.get("properties", {}))
            if value is False:
                return lambda v: not isinstance(v, dict) or all(k in known for k in v)
            sub = self.node(value)
            return lambda v: not isinstance(v, dict) or all(sub(x) for k, x in v.items() if k not in known)
        if key == "items" and "prefixItems" not in schema:
            sub = self.node(value)
            return lambda v: not isinstance(v, list) or all(sub(x) for x in v)
        if key in ("minimum", "maximum"):
            number = _TYPES["number"]
            if key == "minimum":
                return lambda v: not number(v) or v >= value
            return lambda v: not number(v) or v <= value
        if key == "minLength":
            return lambda v: not isinstance(v, str) or len(v) >= value
        if key == "unevaluatedProperties" and value is True:
            return lambda v: True
        raise _Unsupported(key)


@lru_cache(maxsize=64)
def _fast_check(def_name: str) -> Check | None:
    try:
        return _Compiler(_schema()["$defs"]).ref(f"#/$defs/{def_name}")
    except _Unsupported:
        return None


def definition_for(role: str, method: str) -> str | None:
    return _routes().get((role, method))


def violations(role: str, method: str, payload: Any, limit: int = 5) -> list[str]:
    """What is wrong with `payload` (a result, or params) for `method` in `role`; [] when valid."""
    name = definition_for(role, method)
    if name is None:
        return []
    fast = _fast_check(name)
    if fast is not None and fast(payload):
        return []
    problems = []
    for error in _validator(name).iter_errors(payload):
        where = "/".join(str(p) for p in error.absolute_path) or "(top)"
        problems.append(f"{method} {name} at {where}: {error.message[:300]}")
        if len(problems) >= limit:
            break
    return problems
