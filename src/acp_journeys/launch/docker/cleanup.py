"""Removing what docker runs made: this run's objects at its end, older runs' left behind, and
what the action's runner container left (remove_owned_by).

Rules of this module: only objects labelled by acp-journeys (labels.LABEL) are touched. An older
run's objects are removed only when their owner is gone (a container no longer running, a pid no
longer alive, or an unknown owner past labels.UNKNOWN_OWNER_TTL_S) and they were made before this
run; when the owner's state cannot be told, they are kept. A failed removal is logged, never raised.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Awaitable, Callable

import acp_journeys.launch.docker.labels as labels
from acp_journeys.launch.docker.engine import docker_module, short_error

log = logging.getLogger("acp_journeys.launch.docker")

Call = Callable[..., Awaitable[Any]]
"""The launcher's `call`: runs a blocking docker call in its thread pool."""


async def remove_stale(call: Call, api: Any, run_id: str, created_at: float) -> None:
    """Remove what older runs whose owner is gone left (a killed run's containers, volumes)."""
    flt = {"label": labels.LABEL}
    alive: dict[str, bool] = {}

    async def stale(tags: dict[str, str]) -> bool:
        if tags.get(labels.LABEL_RUN) == run_id:
            return False
        try:
            created = float(tags.get(labels.LABEL_CREATED, "0"))
        except ValueError:
            created = 0.0
        if created >= created_at:
            return False
        owner = tags.get(labels.LABEL_OWNER, "")
        if owner not in alive:
            alive[owner] = await owner_alive(call, api, owner, created)
        return not alive[owner]

    removed = 0
    for c in await call(api.containers, all=True, filters=flt):
        if await stale(c.get("Labels") or {}):
            try:
                await call(api.remove_container, c["Id"], force=True, v=True)
                removed += 1
            except Exception as exc:
                log.debug("could not remove a stale container: %s", short_error(exc))
    volumes = (await call(api.volumes, filters=flt)).get("Volumes") or []
    for v in volumes:
        if await stale(v.get("Labels") or {}):
            try:
                await call(api.remove_volume, v["Name"], force=True)
                removed += 1
            except Exception as exc:
                log.debug("could not remove a stale volume: %s", short_error(exc))
    for n in await call(api.networks, filters=flt):
        if await stale(n.get("Labels") or {}):
            try:
                await call(api.remove_network, n["Id"])
                removed += 1
            except Exception as exc:
                log.debug("could not remove a stale network: %s", short_error(exc))
    if removed:
        log.info("removed %d object(s) left by older runs", removed)


async def owner_alive(call: Call, api: Any, owner: str, created: float) -> bool:
    if owner.startswith("container:"):
        try:
            info = await call(api.inspect_container, owner.split(":", 1)[1])
            return bool((info.get("State") or {}).get("Running"))
        except docker_module().errors.NotFound:
            return False
        except Exception:
            return True  # cannot tell: keep it
    if owner.startswith("pid:"):
        return labels.pid_owner_alive(owner, time.time(), created)
    return time.time() - created < labels.UNKNOWN_OWNER_TTL_S


async def remove_run(call: Call, api: Any, run_id: str) -> None:
    """Remove every object labelled with this run's id."""
    for problem in await call(remove_labelled, api, f"{labels.LABEL_RUN}={run_id}"):
        log.warning("run %s: %s", run_id, problem)


def remove_owned_by(name: str) -> list[str]:
    """The container `name` (the action's runner), then every container, volume and network whose
    owner label names it, also after the runner was killed; what could not be removed, in words.
    Blocking: for the action's cleanup step, not for a run's loop."""
    try:
        api = docker_module().from_env(timeout=60).api
    except Exception as exc:
        return [f"cannot reach the Docker engine: {short_error(exc)}"]
    problems = _removed(lambda: api.remove_container(name, force=True, v=True), f"the runner container {name}")
    return problems + remove_labelled(api, f"{labels.LABEL_OWNER}=container:{name}")


def remove_labelled(api: Any, label: str) -> list[str]:
    """Every container (with its anonymous volumes), volume and network with `label` (KEY=VALUE),
    each tried; blocking. What could not be listed or removed, in words (one gone meanwhile is no
    problem)."""
    flt = {"label": label}
    kinds: list[tuple[str, Callable[[], list[dict]], str, Callable[[str], object]]] = [
        ("containers", lambda: api.containers(all=True, filters=flt), "Id",
         lambda i: api.remove_container(i, force=True, v=True)),
        ("volumes", lambda: api.volumes(filters=flt).get("Volumes") or [], "Name",
         lambda i: api.remove_volume(i, force=True)),
        ("networks", lambda: api.networks(filters=flt), "Id", api.remove_network),
    ]
    problems: list[str] = []
    for kind, listed, key, remove in kinds:
        try:
            ids = [item[key] for item in listed()]
        except Exception as exc:
            problems.append(f"could not list the {kind} labelled {label}: {short_error(exc)}")
            continue
        for ident in ids:
            problems += _removed(lambda: remove(ident), f"the {kind[:-1]} {ident[:12]} labelled {label}")
    return problems


def _removed(remove: Callable[[], object], what: str) -> list[str]:
    try:
        remove()
    except docker_module().errors.NotFound:
        pass  # gone meanwhile (an --rm container that ended)
    except Exception as exc:
        return [f"could not remove {what}: {short_error(exc)}"]
    return []
