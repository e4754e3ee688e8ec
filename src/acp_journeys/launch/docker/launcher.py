"""Agents in containers: one container per journey, one `docker exec` per agent process.

Rules of this module:
- The container's PID 1 is our static holder (copied in with put_archive before the start), so
  a process the agent leaves is re-parented to it and stays visible until we record and kill it.
  After an agent process ends, every process in the container but the holder and our own helper
  execs is a leftover: that includes the MCP relay the agent started. Ours are known by pid
  (sandbox.py), never by a command line, which the agent can copy.
- No network (network mode "none") unless `network`, and then a bridge network of the run's own
  with no traffic between containers; a pids limit, a memory limit (swap included), a CPU limit,
  an open-files limit (set by the holder for every agent process), no capabilities and no-new-privileges on every container, and a bound on
  its disk where the engine's storage driver has one (`disk_bound`; else `disk_note` says why).
- Each journey's socket folder is its own and mounted read-only: nothing an agent makes can land
  on the runner's side (see docs/security.md).
- Nothing assumes a shell or Python in the image: files go through put_archive/get_archive;
  processes are listed with `docker top` (the engine's `ps`: no exec, no free pid needed; the
  container is frozen while leftovers are listed, so a fork bomb cannot outrun the list) and
  killed by host pid on the engine's host, else by the holder (`holder kill`), and in the end by
  a SIGUSR1 to the holder, which then kills everything else in the container.
- The `docker` package blocks: every call runs in this launcher's thread pool.
- Values of `env` and the files under `logins` are secrets: log and describe names only.
- Everything made is labelled (labels.LABEL_*). `close` removes this run's objects; the
  first use of a launcher removes what an older run that is no longer alive left behind
  (cleanup.py). The image's users are read from its /etc/passwd and /etc/group (passwd.py).
- Bind-mount sources are paths of the engine's host. When this runner runs in a container, the
  MCP sockets live on a volume shared with it (ACP_JOURNEYS_SHARED_VOLUME mounted at
  ACP_JOURNEYS_SHARED_DIR), or ACP_JOURNEYS_SHARED_DIR alone names a path mirrored from the host
  (shared.py finds which).
"""

from __future__ import annotations

import asyncio
import logging
import os
import posixpath
import shutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable

import acp_journeys.launch.agent_side as agent_side
import acp_journeys.launch.docker.cleanup as cleanup
import acp_journeys.launch.docker.engine as engine
import acp_journeys.launch.docker.labels as labels
import acp_journeys.launch.docker.shared as shared
import acp_journeys.launch.docker.tar as tar
from acp_journeys.launch.docker.engine import docker_module, short_error
from acp_journeys.launch.docker.passwd import home_from_passwd, resolve_user
from acp_journeys.launch.docker.sandbox import DockerSandbox
from acp_journeys.launch.seam import SESSION_FILES_DIR, Launcher, LaunchError, Sandbox

log = logging.getLogger("acp_journeys.launch.docker")

AGENT_DIR_MOUNT = "/agent"
NOFILE = 65_536  # open files a process: the engine's default ranges from 20,000 to 1,048,576
DISK = "10g"  # the container's writable layer, where the engine can bound it


class DockerLauncher(Launcher):
    """Makes one container per journey from `image`; see the module's rules."""

    kind = "docker"

    def __init__(
        self,
        image: str,
        *,
        run_id: str,
        network: bool = False,
        env: dict[str, str] | None = None,
        settings: dict[str, str] | None = None,
        logins: Iterable[tuple[str, str]] = (),
        pull: str = "never",
        agent_dir: str | None = None,
        pids_limit: int = 256,
        memory: str = "1g",
        cpus: float = 2.0,
        nofile: int = NOFILE,
        disk: str | None = DISK,
    ) -> None:
        if pull not in ("never", "missing"):
            raise ValueError(f"pull must be 'never' or 'missing', not {pull!r}")
        self.image = image
        self.run_id = run_id
        self.network = network
        self.env = dict(env or {})
        self.settings = dict(settings or {})  # not secrets: described with their values
        self.logins = [(src, dest) for src, dest in logins]
        self.pull = pull
        self.agent_dir = agent_dir
        self.pids_limit = pids_limit
        self.memory = memory
        self.memory_bytes = parse_memory(memory)
        self.cpus = cpus
        self.nofile = nofile
        self.disk = disk
        self.disk_bound: str | None = None
        """The size set on every container's writable layer, once the engine is known to take it."""
        self.disk_note = ""
        """Why there is no disk bound, when there is none."""
        self.network_name: str | None = None  # the run's own network, made at start when `network`
        self.volume_root = ""  # the shared volume's folder on the engine's host (volume mode)
        self.created = time.time()
        self.owner = labels.own_owner(False)  # settled in _start, once we know where we run
        self.executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="acpj-docker")
        self.image_id: str | None = None
        self.shared: tuple[str, str, str] = ("host", "", "")
        self._api: Any = None
        self._facts: dict[str, object] = {}
        self._helpers: Path | None = None
        self.helpers_source: str | None = None
        """The helpers' folder on the engine's host, mounted read-only in every container; None
        when they are copied into each container before its start instead."""
        self._copied_helpers: str | None = None
        self._home: str | None = None
        self._user: asyncio.Task[tuple[str, int, int]] | None = None
        self._sandboxes: list[DockerSandbox] = []
        self._started: asyncio.Task[None] | None = None
        self._mounts: list[Any] = []
        self._image_config: dict[str, Any] = {}

    # --- plumbing -----------------------------------------------------------------------------

    @property
    def on_engine_host(self) -> bool:
        """Does this runner share the engine's file system (bind sources and /proc are ours)?"""
        return self.shared[0] == "host"

    @property
    def api(self) -> Any:
        if self._api is None:
            raise LaunchError("the Docker engine was not reached yet")
        return self._api

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, lambda: fn(*args, **kwargs))

    def environment(self) -> list[str]:
        return [f"{name}={value}" for name, value in {**self.settings, **self.env}.items()]

    def static_mounts(self) -> list[Any]:
        return list(self._mounts)

    @staticmethod
    def setup_folders(workspace: str) -> list[tuple[str, int]]:
        """The folders a journey's container needs before its first agent process, with modes."""
        return [
            (agent_side.PID_DIR, 0o1777),  # the agent may run as any user: it writes its pid here
            (posixpath.dirname(workspace), 0o755),
            (workspace, 0o777),  # fresh and ours; the image's user may not be root
            ("/tmp", 0o1777),  # /tmp's usual mode, given again (a tar entry sets a folder's mode)
            (SESSION_FILES_DIR, 0o1777),
        ]

    def setup_tar(self, workspace: str) -> bytes:
        """The helpers, the folders and the ready file, for a container whose holder cannot make them."""
        assert self._helpers is not None
        dirs = [(agent_side.IN_CONTAINER_DIR.strip("/"), 0o755), (agent_side.HELPERS_DIR.strip("/"), 0o755)]
        dirs += [(path.strip("/"), mode) for path, mode in self.setup_folders(workspace)]
        files = [*agent_side.helper_files(self._helpers), (agent_side.READY_FILE.strip("/"), b"", 0o644)]
        return tar.build_tar(dirs, files)

    async def _helpers_for_mount(self) -> str | None:
        """Where the engine finds our helpers to mount them read-only, or None: copy them in.

        Copying them in is a put_archive per journey, which costs the engine more than a start
        of the container waits for (about 0.2 s with 7 journeys at once on 2 cores). A mount needs
        a path on the engine's host, and the folders must then be made by the holder itself, so
        only as root: an image that runs as another user gets the copy.
        """
        user = (self._image_config.get("User") or "").split(":")[0]
        if user not in ("", "root", "0"):
            return None
        assert self._helpers is not None
        mode, _volume, shared_dir = self.shared
        if mode == "host":
            return str(self._helpers)
        if mode == "volume" and not self.volume_root:
            return None  # the volume shows no host folder: nothing of it can be bound alone
        name = f"helpers-{labels.safe_name(self.run_id, 40)}"
        await self.call(_copy_helpers, self._helpers, os.path.join(shared_dir, name))
        self._copied_helpers = os.path.join(shared_dir, name)
        return posixpath.join(self.volume_root, name) if mode == "volume" else posixpath.join(shared_dir, name)

    # --- start-up -----------------------------------------------------------------------------

    async def _ensure_started(self) -> None:
        if self._started is None:
            self._started = asyncio.ensure_future(self._start())
        await asyncio.shield(self._started)

    async def _start(self) -> None:
        docker = docker_module()
        try:
            self._api = await self.call(engine.connect)
            info = await self.call(self._api.info)
            version = await self.call(self._api.version)
        except docker.errors.DockerException as exc:
            where = os.environ.get("DOCKER_HOST") or "the default socket"
            raise LaunchError(f"cannot reach the Docker engine at {where}: {short_error(exc)} "
                              "(is dockerd running? scripts/docker-up.sh starts one)") from exc
        self._facts = {
            "engine_version": version.get("Version"),
            "api_version": self._api.api_version,
            "cgroup_version": str(info.get("CgroupVersion") or "1"),
            "cgroup_driver": info.get("CgroupDriver"),
        }
        await self._resolve_image(docker)
        self.disk_bound, self.disk_note = await self._disk_bound(docker, info)
        if self.disk_note:
            log.info("no disk bound on the agents' containers: %s", self.disk_note)
        self._helpers = await self.call(agent_side.find_helpers)
        if self._helpers is None:
            raise LaunchError("the static helpers (holder, relay) are missing: run scripts/build-helpers.sh, "
                              "or set ACP_JOURNEYS_HELPERS to their folder (gcc builds them when present)")
        self.shared, self.volume_root = await shared.shared_mode(self.call, self.api, self._scratch)
        self.owner = labels.own_owner(not self.on_engine_host)
        self._mounts = await self._make_static_mounts(docker)
        self.helpers_source = await self._helpers_for_mount()
        await cleanup.remove_stale(self.call, self.api, self.run_id, self.created)
        if self.network:
            self.network_name = await self._make_network(docker)

    async def _make_network(self, docker: Any) -> str:
        """A bridge network of this run's own, with no traffic between its containers: journeys
        cannot reach one another (the engine's default bridge lets them)."""
        name = f"acpj-{labels.safe_name(self.run_id, 40)}-{uuid.uuid4().hex[:6]}"
        try:
            await self.call(self.api.create_network, name, driver="bridge",
                            options={"com.docker.network.bridge.enable_icc": "false"},
                            labels=labels.run_labels(self.run_id, self.owner, self.created))
        except docker.errors.DockerException as exc:
            raise LaunchError(f"cannot make the run's network: {short_error(exc)}") from exc
        return name

    async def _resolve_image(self, docker: Any) -> None:
        try:
            found = await self.call(self.api.inspect_image, self.image)
        except docker.errors.ImageNotFound:
            if self.pull != "missing":
                raise LaunchError(f"image {self.image} is not on this engine (--pull never): build it, "
                                  "or pass --pull missing to pull it") from None
            try:
                await self.call(self.api.pull, self.image)  # the package splits off the tag itself
                found = await self.call(self.api.inspect_image, self.image)
            except docker.errors.DockerException as exc:
                raise LaunchError(f"cannot pull image {self.image}: {short_error(exc)}") from exc
        except docker.errors.DockerException as exc:
            raise LaunchError(f"cannot inspect image {self.image}: {short_error(exc)}") from exc
        self.image_id = found["Id"]
        self._image_config = found.get("Config") or {}

    async def _disk_bound(self, docker: Any, info: dict[str, Any]) -> tuple[str | None, str]:
        """(the size to set, "") when the engine bounds a container's disk, else (None, why not).

        Only some storage drivers take `storage_opt size` (overlay2 only on xfs mounted with
        pquota; btrfs, zfs, devicemapper), and an engine that cannot refuses the container: so
        ask once with a never-started container, unless the driver's status already says no.
        A run never fails for want of it (docs/security.md)."""
        if not self.disk:
            return None, "none asked"
        driver = str(info.get("Driver") or "unknown")
        status = {str(row[0]): str(row[1]) for row in info.get("DriverStatus") or [] if len(row) == 2}
        backing = status.get("Backing Filesystem", "")
        if driver == "overlay2" and backing != "xfs":
            return None, (f"the engine's storage driver is overlay2 on {backing or 'an unknown file system'}; "
                          "it bounds a container's disk only on xfs mounted with pquota")
        try:
            async with self._scratch(entrypoint=[], host_config=self.api.create_host_config(
                    storage_opt={"size": self.disk})):
                pass
        except docker.errors.DockerException as exc:
            return None, f"the engine's storage driver ({driver}) refused a size: {short_error(exc)}"
        return self.disk, ""

    def _scratch(self, **create: Any) -> Any:
        """A never-started container of the image, labelled as this run's probe (see engine)."""
        return engine.scratch_container(self.call, self.api, self.image_id or self.image,
                                        labels=labels.run_labels(self.run_id, self.owner, self.created, probe="1"),
                                        **create)

    async def _make_static_mounts(self, docker: Any) -> list[Any]:
        """The agent folder and the logins, read-only. Mounts (not binds): a missing source fails."""
        mounts = []
        local = self.on_engine_host
        if self.agent_dir:
            source = os.path.abspath(self.agent_dir) if local else self.agent_dir
            if local and not os.path.isdir(source):
                raise LaunchError(f"--agent-dir {self.agent_dir} is not a folder")
            mounts.append(docker.types.Mount(AGENT_DIR_MOUNT, source, type="bind", read_only=True))
        if self.logins:
            host_home = os.environ.get("ACP_JOURNEYS_HOST_HOME") or str(Path.home())
            for src, dest in self.logins:
                source = os.path.abspath(src) if local else src
                if local and not os.path.exists(source):
                    raise LaunchError(f"--login {src}: no such file or folder")
                target = dest or _same_place(source, host_home, await self._container_home())
                if not posixpath.isabs(target):
                    target = posixpath.join(await self._container_home(), target)
                mounts.append(docker.types.Mount(target, source, type="bind", read_only=True))
                log.info("login mounted read-only at %s", target)
        return mounts

    async def _container_home(self) -> str:
        """The home of the image's user: HOME in its env, else /etc/passwd, else /root."""
        if self._home is not None:
            return self._home
        config = self._image_config
        for item in config.get("Env") or []:
            if item.startswith("HOME="):
                self._home = item[5:]
                return self._home
        user = (config.get("User") or "").split(":")[0]
        self._home = "/root"
        if user not in ("", "root", "0"):
            self._home = home_from_passwd(await self._probe_file("/etc/passwd"), user)
        return self._home

    async def agent_user(self) -> tuple[str, int, int]:
        """(home, uid, gid) of the image's user, found once a run: what we write into its home is
        its own, so the agent can write beside it (a config folder that also holds its sessions)."""
        if self._user is None:
            self._user = asyncio.ensure_future(self._find_user())
        return await asyncio.shield(self._user)

    async def _find_user(self) -> tuple[str, int, int]:
        home = await self._container_home()
        spec = (self._image_config.get("User") or "").strip()
        user, _, group = spec.partition(":")
        passwd = None if user in ("", "root", "0") else await self._probe_file("/etc/passwd")
        groups = await self._probe_file("/etc/group") if group and not group.isdigit() else None
        try:
            uid, gid = resolve_user(spec, passwd, groups)
        except ValueError as exc:
            raise LaunchError(f"image {self.image}: {exc}") from None
        return home, uid, gid

    async def _probe_file(self, path: str) -> bytes | None:
        """A file of the image, read from a container that is created and never started."""
        async with self._scratch() as cid:
            return await self.call(engine.read_file, self.api, cid, path)

    # --- Launcher -----------------------------------------------------------------------------

    async def check(self, argv: list[str]) -> None:
        if not argv:
            raise LaunchError("no agent command: give it after --")
        await self._ensure_started()
        program = argv[0]
        if posixpath.isabs(program):
            if program.startswith(AGENT_DIR_MOUNT + "/") and self.agent_dir and self.on_engine_host:
                inside = os.path.join(os.path.abspath(self.agent_dir), program[len(AGENT_DIR_MOUNT) + 1:])
                if not os.path.isfile(inside):
                    raise LaunchError(f"agent command not found: {program} (not in --agent-dir {self.agent_dir})")
                return
            if program.startswith(AGENT_DIR_MOUNT + "/"):
                return  # in the mounted agent folder, which this runner cannot see
            if await self._probe_stat([program]) is None:
                raise LaunchError(f"agent command not found in image {self.image}: {program}")
        elif "/" not in program:
            path = self.env.get("PATH") or self.settings.get("PATH") or next(
                (e[5:] for e in self._image_config.get("Env") or [] if e.startswith("PATH=")),
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            candidates = [posixpath.join(d, program) for d in path.split(":") if d]
            if await self._probe_stat(candidates) is None:
                raise LaunchError(f"agent command not found on the PATH of image {self.image}: {program}")

    async def _probe_stat(self, paths: list[str]) -> dict[str, Any] | None:
        """The first of `paths` that exists in the image, statted in a never-started container."""
        async with self._scratch(entrypoint=[]) as cid:
            for path in paths:
                found = await self.call(engine.stat_path, self.api, cid, path)
                if found is not None:
                    return found
            return None

    async def open_sandbox(self, journey_id: str) -> Sandbox:
        await self._ensure_started()
        sandbox = DockerSandbox(self, journey_id)
        self._sandboxes.append(sandbox)
        await sandbox.create()
        return sandbox

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self._sandboxes), return_exceptions=True)
        self._sandboxes.clear()
        if self._api is None:
            return
        await cleanup.remove_run(self.call, self.api, self.run_id)
        if self._copied_helpers:
            shutil.rmtree(self._copied_helpers, ignore_errors=True)

    def describe(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "image": self.image,
            "image_id": self.image_id,
            **self._facts,
            "network": "bridge" if self.network else "none",
            "pids_limit": self.pids_limit,
            "memory": self.memory,
            "cpus": self.cpus,
            "nofile": self.nofile,
            "disk": self.disk_bound,
            **({"disk_note": self.disk_note} if self.disk_note else {}),
            "env": sorted(self.env),  # names only: values are secrets
            "settings": self.settings,
            "logins": len(self.logins),
            "agent_dir": AGENT_DIR_MOUNT if self.agent_dir else None,
        }


def _copy_helpers(folder: Path, dest: str) -> None:
    os.makedirs(dest, mode=0o755, exist_ok=True)
    for name in agent_side.HELPER_NAMES:
        shutil.copy2(folder / name, os.path.join(dest, name))
    os.chmod(dest, 0o755)


def _same_place(source: str, host_home: str, container_home: str) -> str:
    """A login's default DEST: the same path relative to the home, or the same absolute path."""
    try:
        rel = os.path.relpath(source, host_home)
    except ValueError:
        return source
    if rel == "." or rel.startswith(".."):
        return source
    return posixpath.join(container_home, rel.replace(os.sep, "/"))


def parse_memory(text: str) -> int:
    """ "1g", "512m", "1048576" -> bytes."""
    value = text.strip().lower().rstrip("b")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(value[-1:], 1)
    number = value[:-1] if value[-1:] in "kmg" else value
    return int(float(number) * scale)
