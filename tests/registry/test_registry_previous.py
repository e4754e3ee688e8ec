"""`dashboard --previous-artifact NAME`: last night's summary.json through GitHub's REST API, from a
real HTTP server on loopback standing in for it (tests/fake_github.py): the workflow's successful
runs newest first, the current run skipped, the first with the artifact, its zip behind a
redirect that is followed without the token. Not finding one is one line and a page with no
changes, never a failed job; the token never shows.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import FAST_SCALE
from fake_github import FakeGitHub, serve
from registry_fixtures import make_registry

from acp_journeys.cli import main
from acp_journeys.output.github_previous import workflow_file

TOKEN = "ghs_previous-token-4242"
REPO = "/repos/o/registry-runs"
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def agents_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A shard's agents/ folder, made by a real run of the reference agent."""
    tmp = tmp_path_factory.mktemp("registry")
    out = tmp / "out"
    code = main(["registry", str(make_registry(tmp / "src")), "--agent", "reference", "--out", str(out),
                 "--cache", str(tmp / "cache"), "--timeout-scale", FAST_SCALE, "--install-timeout", "120", "-q"])
    assert code == 0
    return out


def last_night(agents_dir: Path) -> bytes:
    """Last night's summary: the reference agent failed turn-to-end then."""
    summary = json.loads((agents_dir / "summary.json").read_text())
    [row] = summary["agents"]
    row["journeys"]["turn-to-end"] = {"verdict": "fail", "failures": ["wrong-reply"]}
    return json.dumps(summary).encode()


def page_zip(members: dict[str, bytes]) -> bytes:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, body in members.items():
            archive.writestr(name, body)
    return data.getvalue()


def runs(*ids: int) -> tuple[int, dict[str, str], bytes]:
    return 200, JSON, json.dumps({"total_count": len(ids), "workflow_runs": [{"id": i} for i in ids]}).encode()


def artifacts(*items: dict) -> tuple[int, dict[str, str], bytes]:
    return 200, JSON, json.dumps({"total_count": len(items), "artifacts": list(items)}).encode()


def api(fake: FakeGitHub, zipped: bytes, *, size: int | None = None) -> None:
    """Runs 42 (this one), 41 (its artifact expired) and 40 (its artifact 9 behind a redirect)."""
    fake.gets.update({
        f"{REPO}/actions/workflows/registry-nightly.yml/runs": runs(42, 41, 40),
        f"{REPO}/actions/runs/41/artifacts": artifacts({"id": 8, "name": "registry-dashboard", "expired": True}),
        f"{REPO}/actions/runs/40/artifacts": artifacts(
            {"id": 9, "name": "registry-dashboard", "expired": False, "size_in_bytes": size or len(zipped)}),
        f"{REPO}/actions/artifacts/9/zip": (302, {"Location": "{url}/blob/9?sig=signed-part"}, b""),
        "/blob/9": (200, {"Content-Type": "application/zip"}, zipped),
    })


def github_env(fake: FakeGitHub) -> dict[str, str]:
    return {"GITHUB_API_URL": fake.url, "GITHUB_REPOSITORY": "o/registry-runs", "GITHUB_RUN_ID": "42",
            "GITHUB_WORKFLOW_REF": "o/registry-runs/.github/workflows/registry-nightly.yml@refs/heads/main",
            "GITHUB_TOKEN": TOKEN}


def dashboard(agents_dir: Path, tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, dict]:
    page = tmp_path / "site" / "index.html"
    # A process of its own: the command reads the environment of a workflow step.
    proc = subprocess.run([sys.executable, "-m", "acp_journeys", "dashboard", str(agents_dir), "--out", str(page),
                           "--previous-artifact", "registry-dashboard"],
                          capture_output=True, text=True, timeout=120, env={"PATH": os.environ["PATH"], **env})
    summary = json.loads((page.parent / "summary.json").read_text()) if page.with_name("summary.json").exists() else {}
    return proc, summary


def test_the_summary_comes_from_the_last_successful_run_that_still_has_the_artifact(agents_dir: Path,
                                                                                    tmp_path: Path) -> None:
    with serve(FakeGitHub()) as fake:
        api(fake, page_zip({"summary.json": last_night(agents_dir), "index.html": b"<html>",
                            "agents/reference/result.json": b"{}"}))
        proc, summary = dashboard(agents_dir, tmp_path, github_env(fake))
    assert proc.returncode == 0, proc.stderr
    assert "previous summary: the summary of run 40 (artifact registry-dashboard)" in proc.stdout
    assert summary["changes"] == {"regressions": [], "fixes": [
        {"agent": "reference", "journey": "turn-to-end", "was": "fail", "now": "pass"}]}
    paths = [r["path"] for r in fake.requests]
    assert paths == [f"{REPO}/actions/workflows/registry-nightly.yml/runs?status=success&per_page=10",
                     f"{REPO}/actions/runs/41/artifacts?name=registry-dashboard",
                     f"{REPO}/actions/runs/40/artifacts?name=registry-dashboard",
                     f"{REPO}/actions/artifacts/9/zip", "/blob/9?sig=signed-part"]
    # The token goes to the API only, never to the signed URL the download redirects to.
    auth = [r["headers"].get("Authorization") for r in fake.requests]
    assert auth == [f"Bearer {TOKEN}"] * 4 + [None]
    assert TOKEN not in proc.stdout + proc.stderr


CASES = {
    "no successful run": ({f"{REPO}/actions/workflows/registry-nightly.yml/runs": runs(42)},
                          "no successful run of registry-nightly.yml before this one"),
    "a token without actions: read": (
        {f"{REPO}/actions/workflows/registry-nightly.yml/runs":
         (403, JSON, json.dumps({"message": f"Resource not accessible by integration {TOKEN}"}).encode())},
        f"GET {REPO}/actions/workflows/registry-nightly.yml/runs answered HTTP 403 "
        "(Resource not accessible by integration ***)"),
    "every artifact expired": ({f"{REPO}/actions/workflows/registry-nightly.yml/runs": runs(41),
                                f"{REPO}/actions/runs/41/artifacts": artifacts(
                                    {"id": 8, "name": "registry-dashboard", "expired": True})},
                               "none of the last 1 successful run(s) has an artifact named registry-dashboard"),
    "a list that is not JSON": ({f"{REPO}/actions/workflows/registry-nightly.yml/runs": (200, JSON, b"<html>")},
                                "is not JSON"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_previous_summary_is_one_line_and_a_page_with_no_changes(case: str, agents_dir: Path,
                                                                    tmp_path: Path) -> None:
    routes, why = CASES[case]
    with serve(FakeGitHub()) as fake:
        fake.gets.update(routes)
        proc, summary = dashboard(agents_dir, tmp_path, github_env(fake))
    assert proc.returncode == 0, proc.stderr
    [line] = [l for l in proc.stdout.splitlines() if l.startswith("no previous summary: ")]
    assert why in line and line.endswith("; the page shows no changes")
    assert summary["changes"] is None and summary["agents"][0]["passed"] == 7
    assert TOKEN not in proc.stdout + proc.stderr


@pytest.mark.parametrize("case", ["no summary.json", "not a zip", "not a summary", "over the bound"])
def test_a_bad_artifact_is_no_previous_summary(case: str, agents_dir: Path, tmp_path: Path) -> None:
    zipped = {"no summary.json": page_zip({"site/summary.json": last_night(agents_dir)}),
              "not a zip": b"PK\x03\x04 not really",
              "not a summary": page_zip({"summary.json": b'{"agents": "no"}'}),
              "over the bound": page_zip({"summary.json": last_night(agents_dir)})}[case]
    with serve(FakeGitHub()) as fake:
        api(fake, zipped, size=(1 << 40) if case == "over the bound" else None)
        proc, summary = dashboard(agents_dir, tmp_path, github_env(fake))
    assert proc.returncode == 0, proc.stderr
    why = {"no summary.json": "has no top-level summary.json", "not a zip": "is not a readable zip (BadZipFile)",
           "not a summary": "is not a registry summary", "over the bound": "over the bound of"}[case]
    assert "no previous summary: " in proc.stdout and why in proc.stdout, proc.stdout
    assert summary["changes"] is None
    if case == "over the bound":  # refused from the listing's size: never downloaded
        assert not [r for r in fake.requests if r["path"].startswith("/blob/")]


def test_outside_a_workflow_run_or_without_a_token_it_says_so(agents_dir: Path, tmp_path: Path) -> None:
    proc, summary = dashboard(agents_dir, tmp_path, {})
    assert proc.returncode == 0, proc.stderr
    assert "no previous summary: not in a GitHub Actions run" in proc.stdout and summary["changes"] is None
    with serve(FakeGitHub()) as fake:
        env = {k: v for k, v in github_env(fake).items() if k != "GITHUB_TOKEN"}
        proc, _ = dashboard(agents_dir, tmp_path, env)
    assert "no previous summary: no token (set GITHUB_TOKEN" in proc.stdout and fake.requests == []


def test_previous_and_previous_artifact_are_one_or_the_other(agents_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["dashboard", str(agents_dir), "--out", str(tmp_path / "i.html"), "--previous", "x.json",
              "--previous-artifact", "registry-dashboard"])
    assert exc.value.code == 2


@pytest.mark.parametrize(("ref", "name"), [
    ("o/r/.github/workflows/registry-nightly.yml@refs/heads/main", "registry-nightly.yml"),
    ("o/r/.github/workflows/nightly.yaml@refs/tags/v1", "nightly.yaml"),
    ("o/r/.github/workflows/x.yml", "x.yml"),
    ("", None), ("o/r/elsewhere/x.yml@main", None), ("o/r/.github/workflows/readme.md@main", None),
])
def test_the_workflow_file_comes_from_github_workflow_ref(ref: str, name: str | None) -> None:
    assert workflow_file({"GITHUB_WORKFLOW_REF": ref}) == name
