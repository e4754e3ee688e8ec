"""The Docker engine: the client, and the low-level calls that the `docker` package has no public
API for.

Rules of this module:
- The one place that imports `docker` (lazily: 0.3 s, only when a docker run is asked for) and
  the one place that touches its private API (`_url`, `_post_json`, `_raise_for_status`,
  `_get_raw_response_socket`, `response.raw._fp`, a SocketIO's `_sock`). A new `docker` release
  that moves them breaks this file only.
- Every function here blocks (the `docker` package does): callers run them in their executor
  (`call`). `scratch_container` is the one async helper, and it takes that `call`.
- It knows containers, archives and execs; it knows no journey, no sandbox and no launcher.
"""

from __future__ import annotations

import base64
import json
import socket
import tarfile
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable

from acp_journeys.launch.docker.tar import chunk_file

ENGINE_TIMEOUT_S = 120

Call = Callable[..., Awaitable[Any]]
"""Runs a blocking engine call off the event loop: `await call(fn, *args, **kwargs)`."""


def docker_module() -> Any:
    import docker  # 0.3 s to import: only when a docker run is asked for

    return docker


def connect() -> Any:
    """The low-level API client of the engine that DOCKER_HOST (or the default socket) names."""
    return docker_module().from_env(timeout=ENGINE_TIMEOUT_S, max_pool_size=32).api


def short_error(exc: BaseException) -> str:
    """An engine error in one line (docker's messages can carry the whole HTTP answer)."""
    text = getattr(exc, "explanation", None) or str(exc)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return " ".join(str(text).split())[:300]


def stat_path(api: Any, container_id: str, path: str) -> dict[str, Any] | None:
    """The engine's stat of a path in a container (HEAD archive), or None when it is missing."""
    res = api.head(api._url("/containers/{0}/archive", container_id), params={"path": path},
                   timeout=ENGINE_TIMEOUT_S)
    if res.status_code == 404:
        return None
    api._raise_for_status(res)
    header = res.headers.get("X-Docker-Container-Path-Stat")
    return json.loads(base64.b64decode(header)) if header else {}


def read_file(api: Any, container_id: str, path: str) -> bytes | None:
    """One file of a container (started or not), or None when it is missing or unreadable."""
    try:
        chunks, _ = api.get_archive(container_id, path)
        with tarfile.open(fileobj=chunk_file(chunks), mode="r|") as tar:
            for member in tar:
                f = tar.extractfile(member)
                return f.read() if f else None
    except Exception:  # missing, or the container is gone: no file
        return None
    return None


def raw_socket(obj: Any) -> socket.socket:
    """The real socket under what `docker` returns for a hijacked connection (a SocketIO)."""
    sock = getattr(obj, "_sock", obj)
    if not isinstance(sock, socket.socket) or type(sock).__name__ == "SSLSocket":
        raise TypeError(f"unsupported attach connection: {type(obj).__name__}")
    return sock


def exec_attached(api: Any, container_id: str, cmd: list[str], *, workdir: str,
                  env: list[str] | None) -> tuple[str, Any, socket.socket, bytes]:
    """exec_create + a hijacked exec_start: (exec id, the HTTP response, its socket, the bytes
    that came with the answer). The socket comes back non-blocking."""
    exec_id = api.exec_create(container_id, cmd, stdin=True, stdout=True, stderr=True,
                              tty=False, workdir=workdir, environment=env)["Id"]
    # exec_start(socket=True) would hide the response; we keep it so its connection stays ours.
    response = api._post_json(api._url("/exec/{0}/start", exec_id), data={"Tty": False, "Detach": False},
                              headers={"Connection": "Upgrade", "Upgrade": "tcp"}, stream=True)
    sock = raw_socket(api._get_raw_response_socket(response))
    sock.setblocking(False)
    pending = b""
    try:
        # Bytes that came with the HTTP answer sit in its read buffer, not in the socket.
        pending = response.raw._fp.fp.read1(1 << 16) or b""
    except (AttributeError, BlockingIOError, OSError, ValueError):
        pass
    return exec_id, response, sock, pending


@asynccontextmanager
async def scratch_container(call: Call, api: Any, image: str, *, labels: dict[str, str],
                            **create: Any) -> AsyncIterator[str]:
    """A container that is created and never started, for one look at the image (a file, a
    stat, a mount); removed on the way out. Yields its id."""
    created = await call(api.create_container, image, command=["true"], labels=labels, **create)
    try:
        yield created["Id"]
    finally:
        await call(api.remove_container, created["Id"], force=True, v=True)
