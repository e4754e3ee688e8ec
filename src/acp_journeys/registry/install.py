"""Installing an agent of the registry as its clients launch it, once, into a cache keyed by id
and version.

Rules of this module: the one place that runs npm, uv or pip and unpacks archives.
- `npx` packages go into an npm prefix of their own (`npm install --prefix`), `uvx` packages into
  a venv of their own (`uv` where it is on PATH, else `python -m venv` and its pip), `binary`
  archives are downloaded (https) or read (`file:` URLs, paths), checked against their `sha256`
  when the entry gives one, and unpacked (`.tar.gz`, `.tgz`, `.tar.bz2`, `.tbz2`, `.zip`, or a raw
  file) with no member leaving the folder: an absolute name, a `..`, a link out, a device is
  refused and the install fails with why.
- Every command and download has a time bound; everything it does is appended to the log file
  given (`agents/<id>/install.log`), never to our output.
- An install is made in its final folder (a venv cannot move); a finished one leaves
  `install.json` there, and the next run with the same id and version reuses it. A failed one
  leaves no folder behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import posixpath
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from acp_journeys.registry.source import Entry, archive_location

INSTALL_BOUND_S = 900.0
MAX_ARCHIVE_BYTES = 2 << 30
MARKER = "install.json"


class InstallError(Exception):
    pass


@dataclass
class Installed:
    """A finished install: the command that starts the agent, with paths inside `folder`."""

    folder: str
    program: str
    """The path of the program, relative to `folder`."""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    interpreter: str | None = None
    """For a venv's script: `python`, since a script's #! line names the venv's own path, which a
    container that mounts the folder elsewhere does not have."""
    site_packages: str | None = None
    """Relative to `folder`: where that script's imports are."""
    seconds: float = 0.0
    cached: bool = False

    def argv(self, root: str | None = None) -> list[str]:
        """The command with the folder at `root` (a mount point) or where it is here."""
        base = root or self.folder
        program = posixpath.join(base, self.program) if root else os.path.join(base, self.program)
        head = [self.interpreter, program] if (root and self.interpreter) else [program]
        return head + list(self.args)


def platform_key() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(machine, machine)
    system = {"linux": "linux", "darwin": "darwin", "windows": "windows"}.get(sys.platform.rstrip("0123456789"),
                                                                            sys.platform)
    return f"{system}-{arch}"


def cache_folder(cache: str, entry: Entry) -> Path:
    version = re.sub(r"[^A-Za-z0-9._+-]", "_", entry.version)
    return Path(cache) / entry.id / version


def install(entry: Entry, cache: str, log_path: str, *, bound_s: float = INSTALL_BOUND_S,
            platform_name: str | None = None, python: str | None = None) -> Installed:
    """The agent installed (or found in the cache), or an `InstallError` with why."""
    folder = cache_folder(cache, entry)
    marker = folder / MARKER
    with open(log_path, "a", encoding="utf-8") as log:
        if marker.is_file():
            try:
                found = Installed(**{**json.loads(marker.read_text()), "folder": str(folder), "cached": True})
                if (folder / found.program).exists():
                    log.write(f"cached: {entry.id} {entry.version} ({entry.kind})\n")
                    return found
                log.write(f"the cached install has no {found.program}: installing again\n")
            except (ValueError, TypeError) as exc:
                log.write(f"the cached install's {MARKER} is unreadable ({exc}): installing again\n")
        # Made in place, not in a temp folder moved there after: a venv's scripts name their
        # python by its absolute path, so a venv cannot move. The marker, written last, is what
        # makes the folder an install; a failed one is removed.
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        work = folder
        started = time.monotonic()
        deadline = started + bound_s
        log.write(f"installing {entry.id} {entry.version} ({entry.kind})\n")
        log.flush()
        try:
            if entry.kind == "npx":
                done = _npx(entry, work, log, deadline)
            elif entry.kind == "uvx":
                done = _uvx(entry, work, log, deadline, python or sys.executable)
            else:
                done = _binary(entry, work, log, deadline, platform_name or platform_key())
            done.seconds = round(time.monotonic() - started, 3)
            (work / f".{MARKER}.tmp").write_text(json.dumps({k: v for k, v in asdict(done).items()
                                                          if k not in ("folder", "cached")}, indent=2))
            os.replace(work / f".{MARKER}.tmp", work / MARKER)
        except BaseException as exc:
            shutil.rmtree(work, ignore_errors=True)
            if isinstance(exc, InstallError):
                log.write(f"failed: {exc}\n")
            raise
        done.folder = str(folder)
        log.write(f"installed in {done.seconds:.1f} s: {' '.join(done.argv())}\n")
        return done


# --- commands -----------------------------------------------------------------------------------

def _command(argv: list[str], log, deadline: float, what: str, *, cwd: Path | None = None,
             env: dict | None = None) -> None:
    """`argv` with the install's bound; `what` names it in errors (no path of this machine)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise InstallError("the install ran over its time bound")
    log.write(f"$ {' '.join(argv)}\n")
    log.flush()
    try:
        # Its own session: on the bound the whole group goes (npm's and pip's children too).
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)
    except OSError as exc:
        raise InstallError(f"{what}: cannot be started: {exc.strerror or exc}") from None
    try:
        code = proc.wait(timeout=left)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise InstallError(f"{what} ran over the install's time bound") from None
    except BaseException:
        _kill_group(proc)
        raise
    if code != 0:
        raise InstallError(f"{what} failed with exit code {code}{_known_cause(log)} (see install.log)")


_CAUSES = (("require a different python version", "it needs another Python version (see --python)"),
           ("E404", "the package does not exist"), ("No matching distribution", "no such package or version"),
           ("ETARGET", "no such version"), ("SELF_SIGNED_CERT", "the index's certificate is not trusted here"),
           ("ENOTFOUND", "the index cannot be reached"), ("Could not find a version", "no such version"))


def _known_cause(log) -> str:
    """A well-known cause, read from the end of the log, in our words."""
    try:
        with open(log.name, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - (64 << 10)))
            tail = f.read().decode("utf-8", "replace")
    except (OSError, AttributeError):
        return ""
    return next((f": {why}" for mark, why in _CAUSES if mark in tail), "")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _tool_env() -> dict[str, str]:
    """What npm, uv and pip need from this environment: the path, the home (their own config
    files), proxies, certificate authorities and their own settings; nothing else of ours."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
            "REQUESTS_CA_BUNDLE")
    env = {k: v for k, v in os.environ.items()
           if k in keep or k.lower() in ("http_proxy", "https_proxy", "no_proxy")
           or k.startswith(("npm_config_", "NPM_CONFIG_", "PIP_", "UV_"))}
    env.setdefault("PATH", os.defpath)
    return env


def split_npm(spec: str) -> tuple[str, str | None]:
    """`@scope/name@1.2.3` -> (`@scope/name`, `1.2.3`)."""
    at = spec.rfind("@")
    if at > 0:
        return spec[:at], spec[at + 1:] or None
    return spec, None


def _npx(entry: Entry, work: Path, log, deadline: float) -> Installed:
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not on PATH")
    assert entry.package
    name, _ = split_npm(entry.package)
    env = _tool_env()
    env["npm_config_cache"] = str(work / ".npm-cache")
    _command([npm, "install", "--prefix", str(work), "--no-audit", "--no-fund", "--no-save",
              "--loglevel", "warn", entry.package], log, deadline, f"npm install {entry.package}", env=env)
    shutil.rmtree(work / ".npm-cache", ignore_errors=True)
    manifest = work / "node_modules" / name / "package.json"
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError) as exc:
        raise InstallError(f"{name}: no readable package.json after the install ({exc})") from None
    bins = data.get("bin")
    base = name.rsplit("/", 1)[-1]
    if isinstance(bins, str):
        program = base
    elif isinstance(bins, dict) and bins:
        # npx runs the bin named like the package, or the only one.
        program = base if base in bins else (next(iter(bins)) if len(bins) == 1 else "")
        if not program:
            raise InstallError(f"{name} has several commands ({', '.join(sorted(bins))}) and none is named {base}")
    else:
        raise InstallError(f"{name} declares no command (no \"bin\" in its package.json)")
    if not (work / "node_modules" / ".bin" / program).exists():
        raise InstallError(f"{name}: node_modules/.bin/{program} is missing after the install")
    return Installed(folder=str(work), program=f"node_modules/.bin/{program}", args=list(entry.args), env=dict(entry.env))


def split_pypi(spec: str) -> tuple[str, str]:
    """The registry writes `pkg@1.2.3` (uvx's form) or a pip requirement: (pip requirement, command name)."""
    spec = spec.strip()
    m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?@([0-9][^\s]*)$", spec)
    if m:
        return f"{m.group(1)}{m.group(2) or ''}=={m.group(3)}", m.group(1)
    m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    if not m:
        raise InstallError(f"{spec!r} is not a package name")
    return spec, m.group(1)


def _uvx(entry: Entry, work: Path, log, deadline: float, python: str) -> Installed:
    assert entry.package
    requirement, command = split_pypi(entry.package)
    venv = work / "venv"
    env = _tool_env()
    uv = shutil.which("uv")
    if uv:
        env["UV_CACHE_DIR"] = str(work / ".uv-cache")
        _command([uv, "venv", "--quiet", "--python", python, str(venv)], log, deadline, "uv venv", env=env)
        _command([uv, "pip", "install", "--python", str(venv / "bin" / "python"), requirement], log, deadline,
                 f"uv pip install {requirement}", env=env)
        shutil.rmtree(work / ".uv-cache", ignore_errors=True)
    else:
        _command([python, "-m", "venv", str(venv)], log, deadline, "python -m venv", env=env)
        _command([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-cache-dir",
                  "--disable-pip-version-check", requirement], log, deadline, f"pip install {requirement}", env=env)
    script = venv / "bin" / command
    if not script.exists():
        found = sorted(p.name for p in (venv / "bin").iterdir()
                       if p.name not in ("python", "python3", "pip", "pip3") and not p.name.startswith(
                           ("python3.", "pip3.", "activate", "Activate")))
        raise InstallError(f"the venv has no command {command} (it has: {', '.join(found[:12]) or 'none'})")
    site = next((p for p in (venv / "lib").glob("python*/site-packages")), None)
    return Installed(folder=str(work), program=f"venv/bin/{command}", args=list(entry.args), env=dict(entry.env),
                     interpreter="python3",
                     site_packages=str(site.relative_to(work)) if site else None)


# --- archives -----------------------------------------------------------------------------------

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".zip")


def _binary(entry: Entry, work: Path, log, deadline: float, platform_name: str) -> Installed:
    target = entry.binary.get(platform_name)
    if target is None:
        raise InstallError(f"no binary for {platform_name} (it has: {', '.join(sorted(entry.binary))})")
    where, location = archive_location(entry, target.archive)
    if where == "bad":
        raise InstallError(f"archive {target.archive}: {location}")
    download = work / ".download"
    if where == "https":
        _download(location, download, log, deadline)
    else:
        log.write(f"reading {location}\n")
        try:
            if os.path.getsize(location) > MAX_ARCHIVE_BYTES:
                raise InstallError(f"archive {location}: larger than {MAX_ARCHIVE_BYTES >> 20} MiB")
            shutil.copyfile(location, download)
        except OSError as exc:
            raise InstallError(f"archive {target.archive}: cannot be read ({exc.strerror or exc})") from None
    digest = _sha256(download)
    log.write(f"sha256 {digest}\n")
    if target.sha256 and digest.lower() != target.sha256.lower():
        raise InstallError(f"the archive's sha256 is {digest}, not the {target.sha256.lower()} the entry gives")
    name = target.archive.rsplit("/", 1)[-1].split("?")[0].lower()
    if name.endswith((".tar.gz", ".tgz", ".tar.bz2", ".tbz2")):
        extract_tar(download, work)
    elif name.endswith(".zip"):
        extract_zip(download, work)
    else:  # a raw binary: it is the command
        dest = _inside(work, target.cmd)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(download, dest)
    download.unlink(missing_ok=True)
    program = _inside(work, target.cmd)
    if not program.is_file():
        raise InstallError(f"the archive holds no {target.cmd}")
    program.chmod(program.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return Installed(folder=str(work), program=str(program.relative_to(work)), args=list(target.args),
                     env=dict(target.env))


def _download(url: str, dest: Path, log, deadline: float) -> None:
    log.write(f"downloading {url}\n")
    left = deadline - time.monotonic()
    request = urllib.request.Request(url, headers={"User-Agent": "acp-journeys"})
    try:
        with urllib.request.urlopen(request, timeout=max(1.0, min(left, 120.0))) as answer, \
                open(dest, "wb") as out:  # noqa: S310 (https only: archive_location)
            size = 0
            while chunk := answer.read(1 << 20):
                size += len(chunk)
                if size > MAX_ARCHIVE_BYTES:
                    raise InstallError(f"archive {url}: larger than {MAX_ARCHIVE_BYTES >> 20} MiB")
                if time.monotonic() > deadline:
                    raise InstallError("the download ran over the install's time bound")
                out.write(chunk)
    except OSError as exc:
        raise InstallError(f"archive {url}: cannot be downloaded ({exc})") from None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _inside(root: Path, name: str) -> Path:
    """`name` under `root`, or an `InstallError` when it would leave it."""
    cleaned = posixpath.normpath(name.replace("\\", "/"))
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or cleaned == ".." or cleaned.startswith("../"):
        raise InstallError(f"{name!r} would be outside the install folder")
    return root / cleaned


def extract_tar(archive: Path, dest: Path) -> None:
    """Every member checked first (see the module's rules), then unpacked with tarfile's `data`
    filter as a second guard."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()
            for m in members:
                _inside(dest, m.name)
                if m.isdev() or m.isfifo():
                    raise InstallError(f"{m.name!r} is a device or a pipe")
                if m.issym() or m.islnk():
                    link = m.linkname if m.islnk() else posixpath.join(posixpath.dirname(m.name), m.linkname)
                    if posixpath.isabs(m.linkname):
                        raise InstallError(f"{m.name!r} links outside the install folder ({m.linkname})")
                    _inside(dest, link)
            tar.extractall(dest, members=members, filter="data")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise InstallError(f"the archive cannot be unpacked: {exc}") from None


def extract_zip(archive: Path, dest: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            for info in infos:
                _inside(dest, info.filename)
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise InstallError(f"{info.filename!r} is a link (links in zip archives are refused)")
            for info in infos:
                path = _inside(dest, info.filename)
                if info.is_dir():
                    path.mkdir(parents=True, exist_ok=True)
                    continue
                path.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(path, "wb") as out:
                    shutil.copyfileobj(src, out)
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    path.chmod(mode & 0o755 | 0o600)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise InstallError(f"the archive cannot be unpacked: {exc}") from None
