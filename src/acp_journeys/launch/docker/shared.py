"""Where the MCP sockets live, so that the engine can mount them into the agents' containers.

Rules of this module: bind-mount sources are paths of the engine's host. When this runner runs on
that host, its own folders are; when it runs in a container, the sockets live on a volume shared
with it (ACP_JOURNEYS_SHARED_VOLUME mounted at ACP_JOURNEYS_SHARED_DIR), or ACP_JOURNEYS_SHARED_DIR
alone names a path mirrored from the host. Which one is found by looking, never assumed.
"""

from __future__ import annotations

import logging
import os
import posixpath
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable

import acp_journeys.launch.docker.engine as engine
from acp_journeys.launch.docker.engine import docker_module, short_error
from acp_journeys.launch.docker.sandbox import MCP_MOUNT
from acp_journeys.launch.seam import LaunchError

log = logging.getLogger("acp_journeys.launch.docker")

Call = Callable[..., Awaitable[Any]]
"""The launcher's `call`: runs a blocking docker call in its thread pool."""


async def shared_mode(call: Call, api: Any, scratch: Callable[..., Any]) -> tuple[tuple[str, str, str], str]:
    """Where MCP sockets live: ("host", "", "") | ("volume", NAME, DIR) | ("mirror", "", DIR), and the
    volume's folder on the engine's host ("" unless a volume shows one)."""
    volume = os.environ.get("ACP_JOURNEYS_SHARED_VOLUME", "")
    folder = os.environ.get("ACP_JOURNEYS_SHARED_DIR", "")
    if volume and folder:
        return ("volume", volume, folder), await _volume_folder(call, api, volume)
    if folder:
        return ("mirror", "", folder), ""
    if not await _engine_sees_our_files(call, api, scratch):
        raise LaunchError("this runner runs in a container, so its folders are not the engine's: give it a "
                          "volume shared with the agents' containers (ACP_JOURNEYS_SHARED_VOLUME mounted at "
                          "ACP_JOURNEYS_SHARED_DIR, as run.sh does) or a host path mirrored at "
                          "ACP_JOURNEYS_SHARED_DIR")
    return ("host", "", ""), ""


async def _volume_folder(call: Call, api: Any, volume: str) -> str:
    """The shared volume's folder on the engine's host, so that each journey can bind only its
    own subfolder (an engine of API < 1.45 cannot mount a volume's subpath); "" when unknown."""
    try:
        found = await call(api.inspect_volume, volume)
    except docker_module().errors.DockerException as exc:
        raise LaunchError(f"cannot inspect the shared volume {volume}: {short_error(exc)}") from exc
    if found.get("Driver") == "local" and posixpath.isabs(found.get("Mountpoint") or ""):
        return str(found["Mountpoint"])
    log.warning("the shared volume %s has no local folder: each journey sees all of it (read-only)", volume)
    return ""


async def _engine_sees_our_files(call: Call, api: Any, scratch: Callable[..., Any]) -> bool:
    """Does a bind mount of one of our folders show its files? (False when we run in a container.)

    A /.dockerenv is no proof: a machine can have one and run the engine itself. So look: mount
    a fresh folder with a marker into a never-started container and stat the marker there.
    """
    flag = os.environ.get("ACP_JOURNEYS_IN_CONTAINER", "")
    if flag:
        return flag in ("0", "false", "no")
    folder = tempfile.mkdtemp(prefix="acpj-probe-")
    marker = uuid.uuid4().hex
    Path(folder, marker).write_bytes(b"")
    docker = docker_module()
    mount = docker.types.Mount(MCP_MOUNT, folder, type="bind", read_only=True)
    try:
        async with scratch(entrypoint=[], host_config=api.create_host_config(mounts=[mount])) as cid:
            return await call(engine.stat_path, api, cid, f"{MCP_MOUNT}/{marker}") is not None
    except docker.errors.DockerException:
        return False  # the engine cannot mount our folder: it is not on our side
    finally:
        shutil.rmtree(folder, ignore_errors=True)
