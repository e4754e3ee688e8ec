"""What runs on the agent's side of a sandbox, and how to name it: the MCP relay script (a local
agent starts it), the holder script of a local agent process (`subreaper.py`), the static helpers `holder` and `relay` (a container's PID 1 and its relay),
and where those sit inside a container.

Rules of this module: the files here are copied or started as they are and import nothing of
ours (mcp_relay.py is standard library only; holder.c and relay.c are static C). This module
only finds and names them; it starts nothing but gcc, when a helper must be built.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCES = Path(__file__).resolve().parent
RELAY_SCRIPT = SOURCES / "mcp_relay.py"
SUBREAPER_SCRIPT = SOURCES / "subreaper.py"
"""The holder of one local agent process under `--tracking subreaper` (standard library only)."""

IN_CONTAINER_DIR = "/.acp-journeys"
HELPERS_DIR = IN_CONTAINER_DIR + "/bin"  # copied in, or mounted read-only: nothing is written here
HOLDER = HELPERS_DIR + "/holder"
RELAY = HELPERS_DIR + "/relay"
PID_DIR = IN_CONTAINER_DIR + "/run"
READY_FILE = PID_DIR + "/ready"
"""Exists once the container's folders are made (by the setup archive, or by the holder)."""
PID_LINE_PREFIX = b"\0acp-journeys-pid "
"""What `holder run` writes first on stderr, then the agent's pid and a newline (see holder.c)."""
HELPER_NAMES = ("holder", "relay")


def relay_command(socket_path: str, python: str = sys.executable) -> list[str]:
    """The command line of the `rondar` stdio server: the bundled relay to `socket_path`.

    ACP wants an absolute path for the command, so a bare `python` is looked up on PATH.
    """
    if not os.path.isabs(python):
        python = shutil.which(python) or python
    return [python, str(RELAY_SCRIPT), socket_path]


def _usable(folder: Path) -> bool:
    return all(os.access(folder / name, os.X_OK) for name in HELPER_NAMES)


def _newer(folder: Path, sources: list[Path]) -> bool:
    """Are the binaries in `folder` at least as new as their sources (when we have them)?"""
    try:
        built = min((folder / name).stat().st_mtime for name in HELPER_NAMES)
        return all(built >= s.stat().st_mtime for s in sources if s.exists())
    except OSError:
        return False


def find_helpers() -> Path | None:
    """The folder holding the static holder and relay binaries, building them when we can.

    Order: $ACP_JOURNEYS_HELPERS (the runner image sets it), the repository's build/helpers
    (scripts/build-helpers.sh), then a per-user cache compiled from the C sources with gcc.
    """
    env = os.environ.get("ACP_JOURNEYS_HELPERS")
    if env:
        return Path(env) if _usable(Path(env)) else None
    sources = [SOURCES / f"{name}.c" for name in HELPER_NAMES]
    repo_build = SOURCES.parents[3] / "build" / "helpers"
    if _usable(repo_build) and _newer(repo_build, sources):
        return repo_build
    if not all(s.is_file() for s in sources) or shutil.which("gcc") is None:
        return None
    digest = hashlib.sha256(b"".join(s.read_bytes() for s in sources)).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "acp-journeys" / f"helpers-{digest}"
    if _usable(cache):
        return cache
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=cache.parent))
    try:
        for name, src in zip(HELPER_NAMES, sources):
            subprocess.run(["gcc", "-static", "-O2", "-o", str(tmp / name), str(src)],
                           check=True, capture_output=True, timeout=120)
        if cache.exists():  # another process built it meanwhile
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, cache)
    except (OSError, subprocess.SubprocessError):
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    return cache if _usable(cache) else None


def helper_files(folder: Path) -> list[tuple[str, bytes, int]]:
    return [(f"{HELPERS_DIR}/{name}".lstrip("/"), (folder / name).read_bytes(), 0o755)
            for name in HELPER_NAMES]
