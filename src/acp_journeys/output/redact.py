"""Secrets never leave the run: every value given with --env or found under --login is masked.

Rules of this module: one `Redactor` per run; everything we print or write passes through it.
It masks each secret as written, as JSON would escape it, and wherever a text's JSON escapes
decode to it (`\u0073k-live-...` in a raw frame): the masking is done on the decoded text and
the raw characters that make up the secret are replaced. The pieces of a text that the agent
sent in consecutive parts (the chunks of one message) are masked together: a secret that spans
parts is masked in each part where its piece stands (`redact_pieces`). Masking never changes
the shape of JSON: in data it masks strings (keys too) and never the literals `true`, `false`,
`null` or a number; in a raw JSON line it masks inside string tokens only, so the line still
parses. A string that is exactly a word of the public protocol (an ACP field name or
enumeration value) or a text of our own prompts is left as it is: it carries no secret, and the
judge reads such words. The values of a --login file are read from its lines (`key = value`,
`key: value`, netrc) and, when it parses, from its TOML (inline tables and arrays) or YAML (list
items, flow maps) structure. Masking prevents accidents; it does not stop a hostile agent that
encodes a secret (base64, reversed, one character a message...).

It must not know the run or the launcher: strings and JSON in, masked strings and JSON out.
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import re
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path

MASK = "***"
MIN_SECRET = 4  # shorter values ("1", "yes") would mask half the output and protect nothing

# A JSON string token, or a literal/number token; what lies between them is punctuation in valid JSON.
_STRING_TOKEN = r'"(?:[^"\\\x00-\x1f]|\\.)*"'
_LITERAL_TOKEN = r"(?<![\w.+-])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])|\btrue\b|\bfalse\b|\bnull\b"
_TOKENS = re.compile(f"({_STRING_TOKEN})|({_LITERAL_TOKEN})")
_STRING_TOKENS = re.compile(_STRING_TOKEN)
# A JSON escape: a surrogate pair (one character), one \uXXXX, or a one-letter escape.
_ESCAPE = re.compile(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"
                     r"|\\u([0-9a-fA-F]{4})|\\([\"\\/bfnrt])")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_CONFIG_NODES = 20_000  # values read from one parsed --login file at most (YAML aliases can fan out)


def _unescaped(text: str) -> tuple[str, list[tuple[int, int, int]]]:
    """`text` with its JSON escapes decoded, and each escape as (its index in the decoded text,
    its start and end in `text`)."""
    pieces: list[str] = []
    marks: list[tuple[int, int, int]] = []
    last = decoded = 0
    for m in _ESCAPE.finditer(text):
        pieces.append(text[last:m.start()])
        decoded += m.start() - last
        if m.group(1):
            char = chr(0x10000 + ((int(m.group(1), 16) - 0xD800) << 10) + int(m.group(2), 16) - 0xDC00)
        elif m.group(3):
            char = chr(int(m.group(3), 16))
        else:
            char = _SIMPLE_ESCAPES[m.group(4)]
        pieces.append(char)
        marks.append((decoded, m.start(), m.end()))
        decoded += 1
        last = m.end()
    pieces.append(text[last:])
    return "".join(pieces), marks


def _raw_index(index: int, marks: list[tuple[int, int, int]], starts: list[int]) -> int:
    """Where the character `index` of the decoded text starts in the raw text."""
    i = bisect.bisect_right(starts, index) - 1
    if i < 0:
        return index
    at, start, end = marks[i]
    return start if at == index else end + (index - at - 1)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _masked_at(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each (merged) span replaced by the mask."""
    for start, end in reversed(spans):
        text = text[:start] + MASK + text[end:]
    return text


def replace_string_token(line: str, old: str, new: str) -> str:
    """A raw JSON line with every string token whose value is `old` written anew with value `new`
    (the rest of the line byte for byte as it was)."""
    def replace(match: re.Match[str]) -> str:
        try:
            value = json.loads(match.group(0))
        except ValueError:
            return match.group(0)
        return json.dumps(new, ensure_ascii=False) if value == old else match.group(0)

    return _STRING_TOKENS.sub(replace, line)


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
        self._longest_first: list[str] | None = None  # sorted again when a secret was added

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
            for value in config_values(text) + parsed_config_values(file.name, text):
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
        if not self._holds_secret(text):
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
        if self._holds_secret("".join(shown)):
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

    def _secrets_longest_first(self) -> list[str]:
        if self._longest_first is None or len(self._longest_first) != len(self._secrets):
            self._longest_first = sorted(self._secrets, key=len, reverse=True)
        return self._longest_first

    def _holds_secret(self, text: str) -> bool:
        """A secret shows in `text` as written or once its JSON escapes are decoded."""
        if not self._secrets:
            return False
        if any(s in text for s in self._secrets):
            return True
        return "\\" in text and any(s in _unescaped(text)[0] for s in self._secrets)

    def _spans(self, text: str) -> list[tuple[int, int]]:
        """Where a secret stands in `text`, every occurrence (overlapping ones joined)."""
        spans: list[tuple[int, int]] = []
        for secret in self._secrets_longest_first():
            at = text.find(secret)
            while at >= 0:
                spans.append((at, at + len(secret)))
                at = text.find(secret, at + 1)
        return _merged(spans)

    def redact(self, text: str) -> str:
        for secret in self._secrets_longest_first():
            if secret in text:
                text = text.replace(secret, MASK)
        if "\\" in text and self._secrets:
            text = self._redact_escaped(text)
        return text

    def _redact_escaped(self, text: str) -> str:
        """The raw characters (escapes whole) of every secret that shows once the JSON escapes of
        `text` are decoded, masked; what is between them stays as it was written."""
        decoded, marks = _unescaped(text)
        if not marks:
            return text
        spans = self._spans(decoded)
        if not spans:
            return text
        starts = [m[0] for m in marks]
        raw = [(_raw_index(a, marks, starts), _raw_index(b, marks, starts)) for a, b in spans]
        return _masked_at(text, _merged(raw))

    def redact_pieces(self, pieces: Sequence[str]) -> list[str]:
        """Consecutive parts of one text (the chunks of a message, in order), each masked: a
        secret that spans parts is masked in each part where its piece stands, so neither half
        of it is left; a secret within one part is masked there."""
        if not self._secrets:
            return list(pieces)
        spans = self._spans("".join(pieces))
        out: list[str] = []
        offset = 0
        for piece in pieces:
            end = offset + len(piece)
            mine = [(max(a, offset) - offset, min(b, end) - offset) for a, b in spans if a < end and b > offset]
            out.append(self.redact(_masked_at(piece, mine)) if mine else self.redact(piece))
            offset = end
        return out


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


def parsed_config_values(name: str, text: str) -> list[str]:
    """The string values of a TOML file (inline tables and arrays included), or of a YAML file
    (list items, flow maps), read by their parsers; literals are no secrets. TOML is tried on
    files named `*.toml` or with no extension, YAML on `*.yaml`, `*.yml` or no extension (then
    only a mapping or a list counts: any line of text is a YAML scalar)."""
    suffix = Path(name).suffix.lower()
    found: list[object] = []
    if suffix in ("", ".toml"):
        try:
            found.append(tomllib.loads(text))
        except (ValueError, RecursionError):
            pass
    if suffix in ("", ".yaml", ".yml"):
        try:
            from ruamel.yaml import YAML

            data = YAML(typ="safe", pure=True).load(text)
        except Exception:  # any parse error of any kind: the file is then read by its lines only
            data = None
        if isinstance(data, (dict, list)) or suffix != "":
            found.append(data)
    values: list[str] = []
    for value in _config_strings(found):
        value = value.strip()
        if value and not _NOT_SECRET.match(value):
            values.append(value)
    return values


def _config_strings(root: object) -> Iterator[str]:
    """The strings among the values (not the keys) of parsed data, up to a count of nodes."""
    stack, seen = [root], 0
    while stack and seen < _CONFIG_NODES:
        node = stack.pop()
        seen += 1
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)


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
