"""The fixture agents packaged as a registry's `binary` entries, with `file:` archives built at
run time, and the broken entries around them: the registry command's end-to-end input.

Each archive holds the reference agent (`reference_agent.py`), `_reference.py` and the fixture's
own file, as an agent's release would hold its program; its `cmd` is the fixture's file.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path

from conftest import FIXTURE_AGENTS, REFERENCE_AGENT, fixture_constant

from acp_journeys.registry.install import platform_key
from acp_journeys.rules.catalog import JOURNEY_IDS

MISSING_NPM_PACKAGE = "@acp-journeys-fixture/no-such-agent-8d1e@0.0.1"


def _add(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


def agent_archive(path: Path, fixture: str | None, *, escape: bool = False) -> Path:
    """A .tar.gz of the reference agent (fixture None) or of a fixture agent; `escape` adds a
    member whose name leaves the folder."""
    with tarfile.open(path, "w:gz") as tar:
        _add(tar, "reference_agent.py", REFERENCE_AGENT.read_bytes(), 0o755)
        _add(tar, "_reference.py", (FIXTURE_AGENTS / "_reference.py").read_bytes())
        if fixture:
            _add(tar, f"{fixture}.py", (FIXTURE_AGENTS / f"{fixture}.py").read_bytes(), 0o755)
        if escape:
            _add(tar, "../escaped.txt", b"outside\n")
    return path


def zip_archive(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        info = zipfile.ZipInfo("reference_agent.py")
        info.external_attr = 0o100755 << 16
        zf.writestr(info, REFERENCE_AGENT.read_bytes())
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def binary_entry(agent_id: str, archive: str, cmd: str, *, digest: str | None = None, name: str | None = None,
                 description: str = "a fixture agent") -> dict:
    target = {"archive": archive, "cmd": cmd}
    if digest:
        target["sha256"] = digest
    return {"id": agent_id, "name": name or agent_id, "version": "1.0.0", "description": description,
            "distribution": {"binary": {platform_key(): target}}}


HOSTILE_NAME = '<script>document.title="pwned"</script><img src=x onerror=alert(1)>'

# id -> (fixture file or None for the reference agent, what the dashboard must show)
FAILING_FIXTURE = "no-load-session"


def make_registry(folder: Path) -> Path:
    """registry.json with every kind of row; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    ref = agent_archive(folder / "reference.tar.gz", None)
    failing = agent_archive(folder / "failing.tgz", FAILING_FIXTURE)
    login = agent_archive(folder / "login.tar.gz", "auth-required")
    escape = agent_archive(folder / "escape.tar.gz", None, escape=True)
    agents = [
        # A file: URL with its sha256, and a hostile display name.
        binary_entry("reference", ref.as_uri(), "./reference_agent.py", digest=sha256(ref), name=HOSTILE_NAME,
                     description="</td></tr><b>hostile</b>"),
        # A path relative to registry.json.
        binary_entry("failing", failing.name, f"./{FAILING_FIXTURE}.py"),
        binary_entry("needs-login", str(login), "./auth-required.py"),
        binary_entry("bad-sha", ref.as_uri(), "./reference_agent.py", digest="0" * 64),
        binary_entry("escape", escape.as_uri(), "./reference_agent.py"),
        {"id": "missing-package", "name": "No such package", "version": "0.0.1", "description": "not on npm",
         "distribution": {"npx": {"package": MISSING_NPM_PACKAGE}}},
        {"id": "bad-entry", "name": "A bad entry", "version": "1.0.0", "description": "no distribution"},
    ]
    path = folder / "registry.json"
    path.write_text(json.dumps({"version": "1.0.0", "agents": agents}, indent=2))
    return path


def expected_journeys(fixture: str | None) -> dict[str, dict]:
    verdict = fixture_constant(fixture, "VERDICT") if fixture else {}
    return {j: {"verdict": "fail" if verdict.get(j) else "pass", "failures": list(verdict.get(j, []))}
            for j in JOURNEY_IDS}
