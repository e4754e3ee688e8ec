"""Secrets never leave the run: every value given with --env or found under --login is masked.

Rules of this module: one `Redactor` per run; everything we print or write passes through it.
It masks each secret as written and as JSON would escape it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

MASK = "***"
KEEP_KEYS = frozenset({"schema", "verdict", "id", "kind", "direction", "decision", "mode", "cancel_trigger",
                       "how", "journey"})
"""Our own enumerations and ids in result.json: never masked, so the file always stays valid."""
MIN_SECRET = 4  # shorter values ("1", "yes") would mask half the output and protect nothing


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
            except ValueError:
                pass

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

    def redact_data(self, value: object) -> object:
        """Masks the string values inside JSON-like data, never its structure or keys: a secret
        that happens to read "true" or "verdict" cannot break the file it is masked in."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {k: v if k in KEEP_KEYS and isinstance(v, str) else self.redact_data(v)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact_data(v) for v in value]
        return value

    def redact(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, MASK)
        return text


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
