"""Files into and out of a container as tar archives (put_archive/get_archive), never through a
shell: agent images may have none.

Rules of this module: no engine calls, pure functions over bytes and streams. Hashing happens
here, on the runner's side.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import time
from pathlib import PurePosixPath
from typing import IO, Any, Iterable, cast


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
