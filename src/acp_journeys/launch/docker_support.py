"""What the docker launcher needs besides the engine: tar archives, the helpers, labels.

Rules of this module:
- No engine calls here: pure functions and small files, so they are easy to test.
- Files go into and out of a container as tar archives (put_archive/get_archive), never through
  a shell: agent images may have none. Hashing happens here, on the runner's side.
- Every object a run makes carries LABEL_RUN, LABEL_CREATED and LABEL_OWNER; a later run removes
  a killed run's objects when their owner is gone (see `owner_alive`).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import IO, Any, Iterable, cast

LABEL = "acp-journeys"
LABEL_RUN = "acp-journeys.run"
LABEL_CREATED = "acp-journeys.created"
LABEL_OWNER = "acp-journeys.owner"
LABEL_JOURNEY = "acp-journeys.journey"

IN_CONTAINER_DIR = "/.acp-journeys"
HOLDER = IN_CONTAINER_DIR + "/holder"
RELAY = IN_CONTAINER_DIR + "/relay"
PID_DIR = IN_CONTAINER_DIR + "/run"
HELPER_NAMES = ("holder", "relay")

# When an owner cannot be checked from here (another machine, another pid namespace), its
# objects count as live for this long after they were made.
UNKNOWN_OWNER_TTL_S = 24 * 3600.0

_SOURCES = Path(__file__).resolve().parent / "helpers"


# --- tar ---------------------------------------------------------------------------------------

def _dir_info(name: str, mode: int, owner: tuple[int, int]) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name.strip("/") + "/")
    info.type = tarfile.DIRTYPE
    info.mode = mode
    info.uid, info.gid = owner
    info.mtime = int(time.time())
    return info


def _file_info(name: str, size: int, mode: int, owner: tuple[int, int]) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name.strip("/"))
    info.size = size
    info.mode = mode
    info.uid, info.gid = owner
    info.mtime = int(time.time())
    return info


def build_tar(dirs: Iterable[tuple[str, int]], files: Iterable[tuple[str, bytes, int]],
              owner: tuple[int, int] = (0, 0)) -> bytes:
    """A tar of folders (name, mode) then files (name, bytes, mode), names relative to its root.

    Docker applies each entry's mode to an existing folder too, so list only folders that we own
    (or whose usual mode we give, like /tmp's 1777). It also gives each entry the (uid, gid) of
    its header: `owner`.
    """
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, mode in dirs:
            tar.addfile(_dir_info(name, mode, owner))
        for name, data, mode in files:
            tar.addfile(_file_info(name, len(data), mode, owner), io.BytesIO(data))
    return out.getvalue()


def file_tar(rel_parts: list[str], data: bytes, *, mode: int = 0o644, owner: tuple[int, int] = (0, 0)) -> bytes:
    """A tar that makes the missing folders `rel_parts[:-1]` (0755) and the file (`mode`)."""
    dirs = [("/".join(rel_parts[:i]), 0o755) for i in range(1, len(rel_parts))]
    return build_tar(dirs, [("/".join(rel_parts), data, mode)], owner)


def snapshot_tar(stream: IO[bytes]) -> dict[str, str]:
    """Every entry below the archived folder: relative path -> sha256 (as the local launcher).

    get_archive names entries after the folder itself ("ws/", "ws/a.txt"): that first part goes.
    Folders are "rel/": "dir", links "link:TARGET".
    """
    out: dict[str, str] = {}
    hashes: dict[str, str] = {}
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            parts = PurePosixPath(member.name).parts
            if len(parts) <= 1:
                continue  # the folder itself
            rel = "/".join(parts[1:])
            if member.isdir():
                out[rel + "/"] = "dir"
            elif member.issym():
                out[rel] = "link:" + member.linkname
            elif member.islnk():
                target = "/".join(PurePosixPath(member.linkname).parts[1:])
                out[rel] = hashes.get(target, "")
            elif member.isfile():
                digest = hashlib.sha256()
                f = tar.extractfile(member)
                if f is not None:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        digest.update(block)
                out[rel] = hashes[rel] = digest.hexdigest()
            else:
                out[rel] = "special"
    return dict(sorted(out.items()))


class StreamReader(io.RawIOBase):
    """A file object over the chunks that get_archive yields, so tarfile can stream it."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buf: bytearray) -> int:  # type: ignore[override]
        while not self._left:
            try:
                self._left = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(buf), len(self._left))
        buf[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


def chunk_file(chunks: Iterable[bytes]) -> IO[bytes]:
    """A buffered, readable file over get_archive's chunks."""
    return cast(IO[bytes], io.BufferedReader(cast(Any, StreamReader(chunks)), 1 << 16))


# --- helpers -----------------------------------------------------------------------------------

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
    sources = [_SOURCES / f"{name}.c" for name in HELPER_NAMES]
    repo_build = _SOURCES.parents[3] / "build" / "helpers"
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
    return [(f"{IN_CONTAINER_DIR}/{name}".lstrip("/"), (folder / name).read_bytes(), 0o755)
            for name in HELPER_NAMES]


# --- where we run, labels, liveness --------------------------------------------------------------

def own_owner(in_container: bool) -> str:
    """Who owns what this run makes: a container name/id, or a pid on the engine's host.

    `in_container`: this runner does not share the engine's file system (it runs in a container
    whose hostname is its container id, unless ACP_JOURNEYS_OWNER names it).
    """
    explicit = os.environ.get("ACP_JOURNEYS_OWNER")
    if explicit:
        return explicit
    if in_container:
        return "container:" + socket.gethostname()
    return f"pid:{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid()):.0f}"


def _start_time(pid: int) -> float:
    try:
        import psutil

        return psutil.Process(pid).create_time()
    except Exception:
        return 0.0


def pid_owner_alive(owner: str, now: float, created: float) -> bool:
    """A "pid:HOST:PID:START" owner is alive while that process runs (checkable on HOST only)."""
    try:
        _, host, pid_s, start_s = owner.split(":", 3)
        pid, start = int(pid_s), float(start_s)
    except ValueError:
        return now - created < UNKNOWN_OWNER_TTL_S
    if host != socket.gethostname():
        return now - created < UNKNOWN_OWNER_TTL_S
    if pid == os.getpid():
        return True
    try:
        import psutil

        proc = psutil.Process(pid)
        return abs(proc.create_time() - start) < 2 or start == 0
    except Exception:
        return False


def run_labels(run_id: str, owner: str, created: float, **more: str) -> dict[str, str]:
    labels = {LABEL: "1", LABEL_RUN: run_id, LABEL_CREATED: f"{created:.3f}", LABEL_OWNER: owner}
    labels.update({f"{LABEL}.{k}": v for k, v in more.items()})
    return labels


def resolve_user(spec: str, passwd: bytes | None, group: bytes | None) -> tuple[int, int]:
    """The (uid, gid) a container's `User` ("name", "uid", "name:group", "uid:gid") runs as.

    As the runtime does it: a user found in /etc/passwd takes its primary group from there; a
    numeric user that is not found runs with gid 0; a named group is looked up in /etc/group.
    A name found nowhere raises ValueError (the engine could not run that user either).
    """
    user, _, grp = spec.partition(":")
    uid, gid = 0, 0
    if user not in ("", "root"):
        entry = _find_entry(passwd, user, width=4)
        if entry is not None:
            uid, gid = int(entry[2]), int(entry[3])
        elif user.isdigit():
            uid = int(user)
        else:
            raise ValueError(f"user {user!r} is not in the image's /etc/passwd")
    if grp:
        if grp.isdigit():
            gid = int(grp)
        else:
            entry = _find_entry(group, grp, width=3)
            if entry is None:
                raise ValueError(f"group {grp!r} is not in the image's /etc/group")
            gid = int(entry[2])
    return uid, gid


def _find_entry(table: bytes | None, key: str, width: int) -> list[str] | None:
    """The line of /etc/passwd (width 4) or /etc/group (width 3) whose name or id (its third
    field) is `key`, split on ':'; a line whose id fields are not numbers is skipped."""
    for line in (table or b"").decode("utf-8", "replace").splitlines():
        fields = line.split(":")
        if len(fields) >= width and key in (fields[0], fields[2]) and all(f.isdigit() for f in fields[2:width]):
            return fields
    return None


def safe_name(text: str, limit: int = 40) -> str:
    """A piece of a container name: [a-zA-Z0-9_.-] only."""
    cleaned = "".join(c if c.isalnum() or c in "_.-" else "-" for c in text).strip("-.")
    return cleaned[:limit] or "x"


def parse_memory(text: str) -> int:
    """ "1g", "512m", "1048576" -> bytes."""
    value = text.strip().lower().rstrip("b")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(value[-1:], 1)
    number = value[:-1] if value[-1:] in "kmg" else value
    return int(float(number) * scale)


def parse_ps(output: bytes) -> list[tuple[int, int, str, tuple[str, ...]]]:
    """Records of `holder ps`: pid, ppid, name, argc, then argc args, each field NUL-ended."""
    fields = output.split(b"\0")
    out: list[tuple[int, int, str, tuple[str, ...]]] = []
    i = 0
    while i + 4 <= len(fields) - 1:
        try:
            pid, ppid, argc = int(fields[i]), int(fields[i + 1]), int(fields[i + 3])
        except ValueError:
            break
        name = fields[i + 2].decode("utf-8", "replace")
        args = tuple(f.decode("utf-8", "replace") for f in fields[i + 4:i + 4 + argc])
        out.append((pid, ppid, name, args))
        i += 4 + argc
    return out
