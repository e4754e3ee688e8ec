"""Secrets never leave the run: every value given with --env or found under --login is masked.

Rules of this module: one `Redactor` per run; everything we print or write passes through it.
It masks each secret as written and as JSON would escape it. Masking never changes the shape of
JSON: in data it masks strings (keys too) and never the literals `true`, `false`, `null` or a
number; in a raw JSON line it masks inside string tokens only, so the line still parses. A string
that is exactly a word of the public protocol (an ACP field name or enumeration value) or a text of
our own prompts is left as it is: it carries no secret, and the judge reads such words.
Masking prevents accidents; it does not stop a hostile agent that encodes a secret.

It must not know the run or the launcher: strings and JSON in, masked strings and JSON out.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

MASK = "***"
MIN_SECRET = 4  # shorter values ("1", "yes") would mask half the output and protect nothing

# A JSON string token, or a literal/number token; what lies between them is punctuation in valid JSON.
_STRING_TOKEN = r'"(?:[^"\\\x00-\x1f]|\\.)*"'
_LITERAL_TOKEN = r"(?<![\w.+-])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])|\btrue\b|\bfalse\b|\bnull\b"
_TOKENS = re.compile(f"({_STRING_TOKEN})|({_LITERAL_TOKEN})")


def _is_public_token(token: str) -> bool:
    try:
        return json.loads(token) in public_words()
    except ValueError:
        return False


@functools.lru_cache(maxsize=1)
def public_words() -> frozenset[str]:
    """ACP's field names and enumeration values, our MCP tools' words and our fixed prompt texts."""
    from importlib import resources

    from acp_journeys.rules import prompts

    words: set[str] = {prompts.PLAN_TITLE_SAVED_PLAN, prompts.PLAN_TITLE_PLAN_REGULAR_PLAN,
                       "create_plan", "get_plan", "plan_id", "rondar"}
    schema = json.loads(resources.files("acp_journeys").joinpath("schemas/acp-schema-v1.json").read_text())
    stack: list[object] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict):
                words.update(node["properties"])
            words.update(v for v in node.get("enum", []) if isinstance(v, str))
            if isinstance(node.get("const"), str):
                words.add(node["const"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(words)


class Redactor:
    def __init__(self) -> None:
        self._secrets: set[str] = set()

    def add(self, value: str) -> None:
        value = value.strip()
        if len(value) >= MIN_SECRET:
            self._secrets.add(value)
            self._secrets.add(json.dumps(value)[1:-1])
            self._secrets.add(json.dumps(value, ensure_ascii=False)[1:-1])  # pydantic's form
            for line in value.splitlines():
                if len(line.strip()) >= 8:
                    self._secrets.add(line.strip())

    def add_path(self, path: str, max_bytes: int = 1 << 20) -> None:
        """Every file under a --login path: its whole text and each of its lines."""
        root = Path(path)
        files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()] if root.is_dir() else []
        for file in files[:1000]:
            try:
                data = file.read_bytes()[:max_bytes]
            except OSError:
                continue
            text = data.decode("utf-8", "replace")
            self.add(text)
            try:  # a token inside a one-line JSON credentials file, printed on its own
                self._add_strings(json.loads(text))
            except (ValueError, RecursionError):
                pass
            for value in config_values(text):
                self.add(value)

    def _add_strings(self, value: object) -> None:
        if isinstance(value, str) and len(value) >= 8:
            self.add(value)
        elif isinstance(value, dict):
            for item in value.values():
                self._add_strings(item)
        elif isinstance(value, list):
            for item in value:
                self._add_strings(item)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def redact_data(self, value: object, *, mask_keys: bool = True) -> object:
        """Masks the strings inside JSON-like data (keys too, unless `mask_keys` is off), never
        its literals: a secret that reads "true" cannot turn a boolean into broken JSON."""
        if isinstance(value, str):
            return self._redact_word(value)
        if isinstance(value, dict):
            out: dict[object, object] = {}
            for key, item in value.items():
                if mask_keys and isinstance(key, str):
                    key = self._redact_word(key)
                    while key in out:  # two keys that differ only in a secret stay two keys
                        key = f"{key}{MASK}"
                out[key] = self.redact_data(item, mask_keys=mask_keys)
            return out
        if isinstance(value, list):
            return [self.redact_data(v, mask_keys=mask_keys) for v in value]
        return value

    def redact_json_text(self, text: str) -> str:
        """A raw JSON line, masked inside its string tokens only (literals and numbers stay),
        so that it parses as before. Text between tokens (not JSON) is masked as text. When a
        secret still shows across tokens, the whole line is masked as text: secrecy first."""
        if not self._secrets or not any(s in text for s in self._secrets):
            return text
        parts: list[str] = []
        shown: list[str] = []  # what is left to check: neither a literal nor a public word
        last = 0
        for match in _TOKENS.finditer(text):
            between = self.redact(text[last:match.start()])
            parts.append(between)
            shown.append(between)
            token = match.group(0)
            if match.group(1) is not None:
                masked = self._redact_string_token(token)
                parts.append(masked)
                shown.append(" " if masked == token and _is_public_token(token) else masked)
            else:
                parts.append(token)
                shown.append(" ")
            last = match.end()
        parts.append(self.redact(text[last:]))
        shown.append(parts[-1])
        if any(s in "".join(shown) for s in self._secrets):
            return self.redact(text)
        return "".join(parts)

    def _redact_string_token(self, token: str) -> str:
        try:
            value = json.loads(token)
        except ValueError:
            return self.redact(token)
        masked = self._redact_word(value)
        return token if masked == value else json.dumps(masked, ensure_ascii=False)

    def _redact_word(self, text: str) -> str:
        return text if text in public_words() else self.redact(text)

    def redact(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, MASK)
        return text


_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?[\w.\-\"' ]+?\s*[=:]\s*(?P<value>.+?)\s*$")
_NETRC = re.compile(r"\b(?:password|passwd|login|account)\s+(?P<value>\S+)")
_NOT_SECRET = re.compile(r"(?i)^(true|false|yes|no|on|off|null|none|~|-?\d+(\.\d+)?)$")


def config_values(text: str) -> list[str]:
    """The value side of the lines of a TOML, YAML, INI, dotenv or netrc file (`key = value`,
    `key: value`, `export KEY=value`, `password value`), unquoted; literals are no secrets."""
    values: list[str] = []
    for line in text.splitlines():
        if line.lstrip().startswith(("#", ";", "[")):
            continue
        found = [m.group("value") for m in _NETRC.finditer(line)]
        match = _ASSIGNMENT.match(line)
        if match:
            found.append(match.group("value"))
        for value in found:
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            elif " #" in value:  # an inline comment after an unquoted value
                value = value.split(" #", 1)[0].strip()
            if value and not _NOT_SECRET.match(value):
                values.append(value)
    return values


def parse_env_option(option: str, environ: dict[str, str] | None = None,
                     flag: str = "--env") -> tuple[str, str]:
    """`NAME=VALUE` sets a value; `NAME` passes the host's value (an error when it has none)."""
    environ = os.environ if environ is None else environ
    name, sep, value = option.partition("=")
    if not name or not name.replace("_", "a").isalnum():
        raise ValueError(f"{flag} {option!r}: expected NAME or NAME=VALUE")
    if not sep:
        if name not in environ:
            raise ValueError(f"{flag} {name}: not set in this environment")
        value = environ[name]
    return name, value
