"""The registry wing's parts, with no agent run: reading entries (the snapshot of the public
registry's layout, an aggregate, bad entries), installing archives safely (a real tar and zip,
an escape refused, a sha256 checked, the cache reused), stable shards, recipes, and the `run`
arguments made from them, checked by `run`'s own plan."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
from registry_fixtures import agent_archive, binary_entry, make_registry, sha256, zip_archive

from acp_journeys.cli import main
from acp_journeys.registry import install as inst
from acp_journeys.registry.recipes import GENERIC, RecipeError, find_recipe, parse_recipe
from acp_journeys.registry.runs import RunOptions, run_args
from acp_journeys.registry.shards import ShardError, parse_shard, select_shard, shard_of
from acp_journeys.registry.source import BadEntry, Entry, SourceError, parse_entry, read_source

SNAPSHOT = Path(__file__).parents[1] / "data" / "registry" / "snapshot"
REAL = {"agentao": "uvx", "claude-acp": "npx", "codex-acp": "npx", "deepagents": "npx", "fast-agent": "uvx",
        "gemini": "npx", "gptme": "uvx", "kimi": "binary", "mistral-vibe": "binary", "qwen-code": "npx"}


def test_the_snapshot_reads_as_the_public_registry_is_laid_out() -> None:
    entries, bad = read_source(str(SNAPSHOT))
    assert bad == []  # .github/ and _not_yet_unsupported/ are skipped, as the registry's own build does
    assert {e.id: e.kind for e in entries} == REAL
    by_id = {e.id: e for e in entries}
    assert by_id["gemini"].package == "@google/gemini-cli@0.37.1" and by_id["gemini"].args == ["--acp"]
    assert by_id["fast-agent"].env == {"FAST_AGENT_MODEL": "codexplan"}
    vibe = by_id["mistral-vibe"].binary["linux-x86_64"]
    assert vibe.cmd == "./vibe-acp" and vibe.sha256 and len(vibe.sha256) == 64
    assert by_id["kimi"].binary["linux-x86_64"].args == ["acp"]


def test_an_aggregate_and_its_bad_entries(tmp_path: Path) -> None:
    path = make_registry(tmp_path)
    entries, bad = read_source(str(path))
    assert [b.id for b in bad] == ["bad-entry"] and bad[0].why == "no distribution (npx, uvx or binary)"
    assert {e.id for e in entries} == {"reference", "failing", "needs-login", "bad-sha", "escape", "missing-package"}
    assert next(e for e in entries if e.id == "failing").base == str(tmp_path.resolve())


@pytest.mark.parametrize("raw,why", [
    ("x", "the entry is not a JSON object"),
    ({"name": "n"}, "no id of lowercase letters, digits and hyphens"),
    ({"id": "Bad_Id"}, "the id 'Bad_Id' is not lowercase letters, digits and hyphens"),
    ({"id": "a", "name": "A", "description": "d", "version": "latest", "distribution": {"npx": {"package": "p"}}},
     "the version 'latest' is not a semantic version"),
    ({"id": "a", "name": "A", "description": "d", "version": "1.0.0", "distribution": {"brew": {}}},
     "unknown distribution brew (npx, uvx and binary are known)"),
    ({"id": "a", "name": "A", "description": "d", "version": "1.0.0", "distribution": {"npx": {"args": []}}},
     "distribution.npx: no package"),
    ({"id": "a", "name": "A", "description": "d", "version": "1.0.0",
      "distribution": {"binary": {"linux-x86_64": {"archive": "https://x/a.tgz", "cmd": "./a", "sha256": "abc"}}}},
     "distribution.binary: linux-x86_64: sha256 is not 64 hex digits"),
    ({"id": "a", "name": "A", "description": "d", "version": "1.0.0",
      "distribution": {"binary": {"plan9-mips": {"archive": "https://x/a.tgz", "cmd": "./a"}}}},
     "distribution.binary: unknown platform 'plan9-mips'"),
    ({"id": "a", "name": "A", "description": "d", "version": "1.0.0",
      "distribution": {"uvx": {"package": "p", "env": {"A B": "x"}}}},
     "distribution.uvx: env is not an object of variable names to strings"),
])
def test_a_bad_entry_is_a_row_with_why(raw, why: str) -> None:
    entry = parse_entry(raw, fallback_id="entry-3")
    assert isinstance(entry, BadEntry) and entry.why == why
    assert entry.id == (raw["id"] if isinstance(raw, dict) and raw.get("id") == "a" else "entry-3")


def test_a_folder_whose_id_is_not_its_name_and_unreadable_json(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "agent.json").write_text(json.dumps(
        {"id": "two", "name": "T", "version": "1.0.0", "description": "d", "distribution": {"npx": {"package": "p"}}}))
    (tmp_path / "three").mkdir()
    (tmp_path / "three" / "agent.json").write_text("{not json")
    entries, bad = read_source(str(tmp_path))
    assert entries == []
    assert [(b.id, b.why.split(" (")[0]) for b in bad] == [
        ("one", "its id 'two' is not its folder's name 'one'"), ("three", "three/agent.json: not JSON")]


def test_an_unreadable_source_is_a_usage_error(tmp_path: Path, capsys) -> None:
    with pytest.raises(SourceError):
        read_source(str(tmp_path / "nothing"))
    with pytest.raises(SourceError, match="only https"):
        read_source("http://example.invalid/registry.json")
    (tmp_path / "r.json").write_text('{"agents": 3}')
    assert main(["registry", str(tmp_path / "r.json"), "--out", str(tmp_path / "o")]) == 2
    assert "not a registry" in capsys.readouterr().err
    assert main(["registry", str(SNAPSHOT), "--out", str(tmp_path / "o"), "--agent", "nope"]) == 2
    assert main(["registry", str(SNAPSHOT), "--out", str(tmp_path / "o"), "--shard", "0/2"]) == 2
    assert main(["registry", str(SNAPSHOT)]) == 2  # no --out


# --- installing archives ------------------------------------------------------------------------

def _entry(archive: str, cmd: str, digest: str | None = None, base: str = "") -> Entry:
    parsed = parse_entry(binary_entry("fixture", archive, cmd, digest=digest), fallback_id="x", base=base)
    assert isinstance(parsed, Entry)
    return parsed


def test_a_tar_is_unpacked_checked_and_cached(tmp_path: Path) -> None:
    archive = agent_archive(tmp_path / "a.tar.gz", "no-load-session")
    entry = _entry(archive.as_uri(), "./no-load-session.py", sha256(archive))
    log = tmp_path / "install.log"
    done = inst.install(entry, str(tmp_path / "cache"), str(log))
    assert not done.cached and os.access(Path(done.folder) / "no-load-session.py", os.X_OK)
    assert done.argv() == [str(Path(done.folder) / "no-load-session.py")]
    assert done.argv("/agent") == ["/agent/no-load-session.py"]
    again = inst.install(entry, str(tmp_path / "cache"), str(log))
    assert again.cached and again.argv() == done.argv()
    assert "sha256 " + sha256(archive) in log.read_text() and "cached: fixture 1.0.0" in log.read_text()


def test_a_sha256_that_does_not_match_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    archive = agent_archive(tmp_path / "a.tar.gz", None)
    entry = _entry(str(archive), "./reference_agent.py", "f" * 64)
    with pytest.raises(inst.InstallError, match=f"sha256 is {sha256(archive)}, not the {'f' * 64}"):
        inst.install(entry, str(tmp_path / "cache"), str(tmp_path / "log"))
    assert list((tmp_path / "cache" / "fixture").iterdir()) == []


def _tar_with(path: Path, member: tarfile.TarInfo, data: bytes = b"x") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        member.size = len(data) if member.isfile() else 0
        tar.addfile(member, io.BytesIO(data) if member.isfile() else None)
    return path


def _link(name: str, target: str, kind=tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


@pytest.mark.parametrize("member,why", [
    (tarfile.TarInfo("../escaped"), "would be outside the install folder"),
    (tarfile.TarInfo("/etc/escaped"), "would be outside the install folder"),
    (tarfile.TarInfo("a/../../escaped"), "would be outside the install folder"),
    (_link("link", "/etc/passwd"), "links outside the install folder"),
    (_link("sub/link", "../../outside"), "would be outside the install folder"),
    (_link("hard", "../outside", tarfile.LNKTYPE), "would be outside the install folder"),
])
def test_a_tar_member_that_leaves_the_folder_is_refused(tmp_path: Path, member, why: str) -> None:
    archive = _tar_with(tmp_path / "evil.tar.gz", member)
    entry = _entry(archive.as_uri(), "./agent")
    with pytest.raises(inst.InstallError, match=why):
        inst.install(entry, str(tmp_path / "cache" / "deep"), str(tmp_path / "log"))
    assert not (tmp_path / "cache" / "escaped").exists() and not (tmp_path / "escaped").exists()
    assert list((tmp_path / "cache" / "deep" / "fixture").iterdir()) == []


def test_a_zip_keeps_its_modes_and_refuses_an_escape(tmp_path: Path) -> None:
    good = zip_archive(tmp_path / "a.zip")
    done = inst.install(_entry(good.as_uri(), "./reference_agent.py"), str(tmp_path / "c1"), str(tmp_path / "log"))
    assert os.access(Path(done.folder) / "reference_agent.py", os.X_OK)
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../../escaped", b"x")
    with pytest.raises(inst.InstallError, match="would be outside"):
        inst.install(_entry(evil.as_uri(), "./agent"), str(tmp_path / "c2"), str(tmp_path / "log"))
    assert not (tmp_path / "escaped").exists()


def test_a_raw_binary_and_a_cmd_outside_the_folder(tmp_path: Path) -> None:
    raw = tmp_path / "agent-linux"
    raw.write_bytes(b"#!/bin/sh\necho hi\n")
    done = inst.install(_entry(raw.name, "./bin/agent", base=str(tmp_path)), str(tmp_path / "c"), str(tmp_path / "l"))
    assert os.access(Path(done.folder) / "bin" / "agent", os.X_OK)
    with pytest.raises(inst.InstallError, match="outside the install folder"):
        inst.install(_entry(raw.as_uri(), "../../agent"), str(tmp_path / "c2"), str(tmp_path / "l"))
    with pytest.raises(inst.InstallError, match="ftp: URLs are not read"):
        inst.install(_entry("ftp://example.invalid/a.tgz", "./a"), str(tmp_path / "c3"), str(tmp_path / "l"))


def test_a_platform_the_entry_lacks(tmp_path: Path) -> None:
    entry = _entry("https://example.invalid/a.tgz", "./a")
    with pytest.raises(inst.InstallError, match="no binary for windows-x86_64"):
        inst.install(entry, str(tmp_path / "c"), str(tmp_path / "l"), platform_name="windows-x86_64")


def test_an_install_that_runs_over_its_bound_is_stopped(tmp_path: Path, monkeypatch) -> None:
    # A real npm stand-in on PATH that never ends: the bound ends it and its group.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "npm").write_text("#!/bin/sh\nsleep 60 &\nwait\n")
    (fake / "npm").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    entry = parse_entry({"id": "slow", "name": "S", "version": "1.0.0", "description": "d",
                         "distribution": {"npx": {"package": "slow-agent@1.0.0"}}}, fallback_id="x")
    with pytest.raises(inst.InstallError, match="npm install slow-agent@1.0.0 ran over the install's time bound"):
        inst.install(entry, str(tmp_path / "c"), str(tmp_path / "l"), bound_s=1.0)


def test_package_specs() -> None:
    assert inst.split_npm("@google/gemini-cli@0.37.1") == ("@google/gemini-cli", "0.37.1")
    assert inst.split_npm("deepagents-acp") == ("deepagents-acp", None)
    assert inst.split_pypi("agentao@0.5.10") == ("agentao==0.5.10", "agentao")
    assert inst.split_pypi("fast-agent-acp==0.10.1") == ("fast-agent-acp==0.10.1", "fast-agent-acp")
    assert inst.split_pypi("gptme-acp") == ("gptme-acp", "gptme-acp")


# --- shards -------------------------------------------------------------------------------------

def test_shards_are_stable_and_cover_every_agent_once() -> None:
    ids = [f"agent-{i}" for i in range(200)]
    slices = [select_shard(ids, k, 8) for k in range(1, 9)]
    assert sorted(sum(slices, [])) == sorted(ids)
    assert all(slices)  # 200 ids over 8: none empty
    # Adding agents moves no other agent.
    more = ids + [f"new-{i}" for i in range(50)]
    assert all(set(select_shard(ids, k, 8)) <= set(select_shard(more, k, 8)) for k in range(1, 9))
    assert shard_of("gemini", 4) == shard_of("gemini", 4)
    assert parse_shard("2/8") == (2, 8)
    for bad in ("0/3", "4/3", "x", "1/0", "2"):
        with pytest.raises(ShardError):
            parse_shard(bad)


def test_list_json_prints_the_matrix(capsys) -> None:
    assert main(["registry", str(SNAPSHOT), "--list-json", "--shards", "3"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert {a["id"] for a in listing["agents"]} == set(REAL)
    assert listing["shard"] == sorted({f"{shard_of(i, 3)}/3" for i in REAL})
    assert all(a["shard"] == shard_of(a["id"], 3) for a in listing["agents"])


# --- recipes and the run arguments --------------------------------------------------------------

def test_every_bundled_recipe_reads_and_no_agent_has_none() -> None:
    for agent_id in REAL:
        recipe = find_recipe(agent_id, [])
        assert recipe.name in (agent_id, "generic")
    assert find_recipe("deepagents", []) is GENERIC  # the registry's is deepagents-acp on npm: no recipe yet
    assert find_recipe("codex-acp", []).login_row == "needs authenticate"
    assert any(dest == ".kimi/config.toml" and "{model_url}/v1" in text for text, dest in find_recipe("kimi", []).files)
    with pytest.raises(RecipeError, match="unknown key colour"):
        parse_recipe({"colour": "red"}, "x")
    with pytest.raises(RecipeError, match="must be a relative path"):
        parse_recipe({"files": [{"dest": "../.bashrc", "text": "x"}]}, "x")


def test_a_recipe_folder_wins_over_the_bundled_one(tmp_path: Path) -> None:
    (tmp_path / "gemini.yaml").write_text("settings:\n  GEMINI_MODEL: other\nskip: needs its vendor's login\n")
    recipe = find_recipe("gemini", [str(tmp_path)])
    assert recipe.settings == {"GEMINI_MODEL": "other"} and recipe.skip == "needs its vendor's login"


def test_the_run_arguments_are_ones_that_run_itself_accepts(tmp_path: Path) -> None:
    from acp_journeys.cli.registry import _check_run_args

    entries, _ = read_source(str(SNAPSHOT))
    fast = next(e for e in entries if e.id == "fast-agent")
    installed = inst.Installed(folder=str(tmp_path), program="venv/bin/fast-agent-acp", args=["-x"],
                               env={"FAST_AGENT_MODEL": "codexplan"}, interpreter="python3",
                               site_packages="venv/lib/python3.12/site-packages")
    recipe = find_recipe("fast-agent", [])
    opts = RunOptions(result=str(tmp_path / "r.json"), html=str(tmp_path / "r.html"))
    args = run_args(fast, installed, recipe, opts, [(str(tmp_path / "t"), ".fast-agent/model-overlays/stub.yaml")])
    assert args[args.index("--") + 1:] == [str(tmp_path / "venv/bin/fast-agent-acp"), "--model", "stub", "--shell"]
    assert "FAST_AGENT_MODEL=stub" in args and "FAST_AGENT_MODEL=codexplan" not in args  # the recipe's wins
    assert "STUB_API_KEY=acpj-stub-key-7f3a" in args[args.index("--env") + 1]
    assert _check_run_args(args) is None
    docker = run_args(fast, installed, recipe, RunOptions(result="r", html="h", image="img"), [])
    assert docker[docker.index("--") + 1:docker.index("--") + 3] == ["python3", "/agent/venv/bin/fast-agent-acp"]
    assert "PYTHONPATH=/agent/venv/lib/python3.12/site-packages" in docker
    assert docker[docker.index("--agent-dir") + 1] == str(tmp_path)
    # A recipe that run would refuse is found before anything starts.
    clash = parse_recipe({"env": {"A_KEY": "x"}}, "x")
    bad = run_args(fast, inst.Installed(folder="/x", program="a", env={"A_KEY": "y"}), clash, opts, [])
    assert "A_KEY=y" not in bad  # the recipe's secret wins over the entry's variable of the same name
    cut = bad.index("--")
    why = _check_run_args(bad[:cut] + ["--setting", "A_KEY=z"] + bad[cut:])
    assert why == "acp-journeys run would refuse the recipe: A_KEY is given with --env and --setting: one or the other"


def _wheel(folder: Path, name: str = "fixture_agent", version: str = "1.0.0") -> Path:
    """A minimal wheel by hand (no build tool, no index): one module and its console script."""
    dist = f"{name}-{version}.dist-info"
    path = folder / f"{name}-{version}-py3-none-any.whl"
    files = {
        f"{name}/__init__.py": "def main():\n    print('fixture agent ' + __name__)\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/entry_points.txt": f"[console_scripts]\n{name.replace('_', '-')} = {name}:main\n",
    }
    record = "".join(f"{p},,\n" for p in files) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for p, text in files.items():
            zf.writestr(p, text)
        zf.writestr(f"{dist}/RECORD", record)
    return path


def test_a_uvx_package_goes_into_a_venv_whose_command_runs(tmp_path: Path, monkeypatch) -> None:
    # pip's own settings reach it (PIP_*): an index of one local wheel, no network.
    index = tmp_path / "index"
    index.mkdir()
    _wheel(index)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                                if not (Path(p) / "uv").exists()))  # the venv + pip path
    entry = parse_entry({"id": "fixture-agent", "name": "F", "version": "1.0.0", "description": "d",
                         "distribution": {"uvx": {"package": "fixture-agent@1.0.0", "args": ["--acp"]}}},
                        fallback_id="x")
    done = inst.install(entry, str(tmp_path / "cache"), str(tmp_path / "log"), bound_s=300)
    assert done.program == "venv/bin/fixture-agent" and done.argv()[1:] == ["--acp"]
    # The script runs where it was installed (a venv names its python by absolute path).
    proc = subprocess.run(done.argv()[:1], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "fixture agent fixture_agent\n", proc.stderr
    assert done.site_packages and (Path(done.folder) / done.site_packages / "fixture_agent").is_dir()


def test_a_recipe_can_skip_an_agent(tmp_path: Path) -> None:
    source = make_registry(tmp_path / "src")
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    (recipes / "failing.yaml").write_text("skip: \"needs its vendor's login: it reaches only its own backend\"\n")
    out = tmp_path / "out"
    assert main(["registry", str(source), "--out", str(out), "--cache", str(tmp_path / "cache"), "-q",
                 "--recipes", str(recipes), "--agent", "failing", "--journey", "nope"]) == 2  # a usage error
    assert main(["registry", str(source), "--out", str(out), "--cache", str(tmp_path / "cache"), "-q",
                 "--recipes", str(recipes), "--agent", "failing"]) == 0
    [row] = json.loads((out / "summary.json").read_text())["agents"]
    assert (row["id"], row["status"], row["reason"]) == (
        "failing", "needs-login", "needs its vendor's login: it reaches only its own backend")
    assert not (tmp_path / "cache" / "failing").exists()  # nothing installed for it
