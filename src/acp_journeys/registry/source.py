"""Reading a registry into typed entries: a folder of `<id>/agent.json`, an aggregate
`registry.json` (`{"agents": [...]}`), or an https URL of the latter.

Rules of this module: the entries follow the public registry's `agent.schema.json` (id, name,
version, description, distribution with `npx` / `uvx` / `binary`); a bad entry becomes a
`BadEntry` with why, never an exception, so one broken agent is one row of the dashboard. Only a
source that cannot be read at all (no such folder, a URL that does not answer, not JSON) is a
`SourceError`. A download is bounded in time and size. Nothing here installs or runs anything.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ID_PATTERN = re.compile(r"^[a-z][a-z0-9-]*$")
VERSION_PATTERN = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+")
SHA256_PATTERN = re.compile(r"^[a-fA-F0-9]{64}$")
PLATFORMS = ("darwin-aarch64", "darwin-x86_64", "linux-aarch64", "linux-x86_64", "windows-aarch64", "windows-x86_64")
KINDS = ("npx", "uvx", "binary")
"""In the order a client prefers them when an entry offers several (a package runs anywhere)."""
MAX_SOURCE_BYTES = 32 << 20
FETCH_TIMEOUT_S = 60.0


class SourceError(Exception):
    pass


@dataclass
class BinaryTarget:
    archive: str
    cmd: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    sha256: str | None = None


@dataclass
class Entry:
    id: str
    name: str
    version: str
    description: str
    kind: str
    """The distribution used: `npx`, `uvx` or `binary` (the first the entry offers, in KINDS' order)."""
    package: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    binary: dict[str, BinaryTarget] = field(default_factory=dict)
    """By platform key (`linux-x86_64`...)."""
    base: str = ""
    """The folder that relative archive paths are read from (the entry's own folder, or the
    registry.json's); empty for a URL source."""
    repository: str | None = None


@dataclass
class BadEntry:
    id: str
    """The entry's id when it has a usable one, else a name made from where it was found."""
    why: str
    name: str = ""
    version: str = ""


def read_source(source: str) -> tuple[list[Entry], list[BadEntry]]:
    """Every entry of `source`, sorted by id; see the module's rules."""
    if source.startswith(("https://", "http://")):
        if not source.startswith("https://"):
            raise SourceError(f"{source}: only https URLs are read")
        entries, bad = _read_aggregate(_fetch_json(source), base="", where=source)
    else:
        path = Path(source)
        if path.is_dir():
            entries, bad = _read_folder(path)
        elif path.is_file():
            entries, bad = _read_aggregate(_load_json(path), base=str(path.resolve().parent), where=str(path))
        else:
            raise SourceError(f"{source}: no such folder or file")
    seen: dict[str, int] = {}
    for e in entries:
        seen[e.id] = seen.get(e.id, 0) + 1
    dupes = {i for i, n in seen.items() if n > 1}
    bad += [BadEntry(i, f"the id {i} is given by {seen[i]} entries") for i in sorted(dupes)]
    entries = [e for e in entries if e.id not in dupes]
    return sorted(entries, key=lambda e: e.id), sorted(bad, key=lambda b: b.id)


def _fetch_json(url: str) -> Any:
    request = urllib.request.Request(url, headers={"User-Agent": "acp-journeys", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as answer:  # noqa: S310 (https only, above)
            data = answer.read(MAX_SOURCE_BYTES + 1)
    except (OSError, ValueError) as exc:
        raise SourceError(f"{url}: cannot be read ({exc})") from None
    if len(data) > MAX_SOURCE_BYTES:
        raise SourceError(f"{url}: larger than {MAX_SOURCE_BYTES >> 20} MiB")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SourceError(f"{url}: not JSON ({exc})") from None


def _load_json(path: Path) -> Any:
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            raise SourceError(f"{path}: larger than {MAX_SOURCE_BYTES >> 20} MiB")
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise SourceError(f"{path}: not JSON ({exc})") from None


def _read_aggregate(data: Any, *, base: str, where: str) -> tuple[list[Entry], list[BadEntry]]:
    if not isinstance(data, dict) or not isinstance(data.get("agents"), list):
        raise SourceError(f"{where}: not a registry: no \"agents\" list at the top level")
    entries, bad = [], []
    for index, raw in enumerate(data["agents"]):
        entry = parse_entry(raw, fallback_id=f"entry-{index + 1}", base=base)
        (entries if isinstance(entry, Entry) else bad).append(entry)
    return entries, bad


def _read_folder(folder: Path) -> tuple[list[Entry], list[BadEntry]]:
    entries: list[Entry] = []
    bad: list[BadEntry] = []
    for child in sorted(folder.iterdir()):
        # The public registry keeps other things beside the agents (.github, _not_yet_unsupported).
        if not child.is_dir() or child.name.startswith((".", "_")):
            continue
        file = child / "agent.json"
        if not file.is_file():
            continue
        fallback = child.name if ID_PATTERN.match(child.name) else f"bad-folder-{len(bad) + 1}"
        try:
            raw = _load_json(file)
        except SourceError as exc:
            bad.append(BadEntry(fallback, str(exc).replace(str(folder) + os.sep, "")))
            continue
        entry = parse_entry(raw, fallback_id=fallback, base=str(child.resolve()))
        if isinstance(entry, Entry) and entry.id != child.name:
            entry = BadEntry(fallback, f"its id {entry.id!r} is not its folder's name {child.name!r}",
                             entry.name, entry.version)
        (entries if isinstance(entry, Entry) else bad).append(entry)
    return entries, bad


def parse_entry(raw: Any, *, fallback_id: str, base: str = "") -> Entry | BadEntry:
    """One entry, checked as the registry's schema says; the first thing wrong is the why."""
    if not isinstance(raw, dict):
        return BadEntry(fallback_id, "the entry is not a JSON object")
    ident = raw.get("id")
    good_id = isinstance(ident, str) and bool(ID_PATTERN.match(ident))
    row_id = ident if good_id else fallback_id
    name = raw.get("name") if isinstance(raw.get("name"), str) else ""
    version = raw.get("version") if isinstance(raw.get("version"), str) else ""

    def bad(why: str) -> BadEntry:
        return BadEntry(row_id, why, name, version)

    if not good_id:
        return bad("no id of lowercase letters, digits and hyphens" if ident is None
                   else f"the id {str(ident)[:80]!r} is not lowercase letters, digits and hyphens")
    for key in ("name", "description"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            return bad(f"no {key}")
    if not isinstance(raw.get("version"), str) or not VERSION_PATTERN.match(raw["version"]):
        return bad(f"the version {str(raw.get('version'))[:40]!r} is not a semantic version")
    dist = raw.get("distribution")
    if not isinstance(dist, dict) or not dist:
        return bad("no distribution (npx, uvx or binary)")
    unknown = sorted(k for k in dist if k not in KINDS)
    if unknown:
        return bad(f"unknown distribution {', '.join(map(str, unknown))} (npx, uvx and binary are known)")
    entry = Entry(id=ident, name=raw["name"], version=raw["version"], description=raw["description"],
                  kind="", base=base,
                  repository=raw.get("repository") if isinstance(raw.get("repository"), str) else None)
    for kind in KINDS:
        if kind not in dist:
            continue
        why = _fill(entry, kind, dist[kind])
        if why:
            return bad(f"distribution.{kind}: {why}")
        if not entry.kind:
            entry.kind = kind
    return entry


def _strings(value: Any, what: str) -> str | None:
    if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
        return f"{what} is not a list of strings"
    return None


def _env(value: Any) -> str | None:
    if value is not None and (not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", k)
            for k, v in value.items())):
        return "env is not an object of variable names to strings"
    return None


def _fill(entry: Entry, kind: str, spec: Any) -> str | None:
    if kind in ("npx", "uvx"):
        if not isinstance(spec, dict):
            return "not an object"
        extra = sorted(set(spec) - {"package", "args", "env"})
        if extra:
            return f"unknown field {', '.join(extra)}"
        if not isinstance(spec.get("package"), str) or not spec["package"].strip():
            return "no package"
        why = _strings(spec.get("args"), "args") or _env(spec.get("env"))
        if why:
            return why
        if not entry.kind:
            entry.package = spec["package"].strip()
            entry.args = list(spec.get("args") or [])
            entry.env = dict(spec.get("env") or {})
        return None
    if not isinstance(spec, dict) or not spec:
        return "no platform"
    for platform_key, target in spec.items():
        if platform_key not in PLATFORMS:
            return f"unknown platform {str(platform_key)[:40]!r}"
        if not isinstance(target, dict):
            return f"{platform_key}: not an object"
        extra = sorted(set(target) - {"archive", "cmd", "args", "env", "sha256"})
        if extra:
            return f"{platform_key}: unknown field {', '.join(extra)}"
        for key in ("archive", "cmd"):
            if not isinstance(target.get(key), str) or not target[key]:
                return f"{platform_key}: no {key}"
        if target.get("sha256") is not None and (not isinstance(target["sha256"], str)
                                                 or not SHA256_PATTERN.match(target["sha256"])):
            return f"{platform_key}: sha256 is not 64 hex digits"
        why = _strings(target.get("args"), "args") or _env(target.get("env"))
        if why:
            return f"{platform_key}: {why}"
        entry.binary[platform_key] = BinaryTarget(
            archive=target["archive"], cmd=target["cmd"], args=list(target.get("args") or []),
            env=dict(target.get("env") or {}), sha256=(target.get("sha256") or None))
    return None


def archive_location(entry: Entry, archive: str) -> tuple[str, str]:
    """("https", URL) or ("file", absolute path) of an archive: https, `file:` URLs and paths
    (relative ones from the entry's folder); anything else is ("bad", why)."""
    if archive.startswith("https://"):
        return "https", archive
    if archive.startswith("file:"):
        parts = urllib.parse.urlsplit(archive)
        if parts.netloc not in ("", "localhost"):
            return "bad", f"a file: URL of another host ({parts.netloc})"
        path = urllib.parse.unquote(parts.path)
        return "file", path if os.path.isabs(path) else os.path.join(entry.base or os.getcwd(), path)
    if "://" in archive:
        return "bad", f"{archive.split('://')[0]}: URLs are not read (https, file: and paths are)"
    return "file", archive if os.path.isabs(archive) else os.path.join(entry.base or os.getcwd(), archive)
