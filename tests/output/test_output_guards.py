"""Nothing overwritten by mistake: an output (`--output`, `--junit`, `--html`, merge's OUT) that
names an input, another output or a folder exits 2 before any work, and every file stays as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import sample_results
from acp_journeys.output import result_file


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acp_journeys", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """Two result.json parts of a matrix (one journey each) and a baseline."""
    journeys = sample_results.all_pass().journeys
    result_file.write(sample_results.run(journeys[:1]), str(tmp_path / "p1.json"))
    result_file.write(sample_results.run(journeys[1:2]), str(tmp_path / "p2.json"))
    (tmp_path / "baseline.yml").write_text("- stop-running-turn\n")
    (tmp_path / "folder").mkdir()
    return tmp_path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(folder: Path, *args: str, says: str) -> None:
    before = snapshot(folder)
    out = cli(*args, cwd=folder)
    assert out.returncode == 2, (args, out.stdout, out.stderr)
    assert says in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert out.stdout == ""  # before any work: no table, no verdict
    assert snapshot(folder) == before  # nothing written, nothing replaced


@pytest.mark.parametrize("args, says", [
    (("merge", "p1.json", "p2.json"), "OUT p1.json already holds a result, which the merge would replace"),
    (("merge", "p2.json", "p1.json", "p2.json"), "OUT p2.json is also the input p2.json"),
    (("merge", "./sub/../p1.json", "p1.json", "p2.json"), "is also the input p1.json"),
    (("merge", "folder", "p1.json", "p2.json"), "OUT folder is a folder"),
    (("verify", "p1.json", "--html", "p1.json"), "--html p1.json is also the result"),
    (("verify", "p1.json", "--junit", "p1.json"), "--junit p1.json is also the result"),
    (("verify", "p1.json", "--baseline", "baseline.yml", "--junit", "baseline.yml"), "is also --baseline"),
    (("verify", "p1.json", "--html", "out.html", "--junit", "out.html"), "--html out.html is also --junit"),
    (("verify", "p1.json", "--html", "folder"), "--html folder is a folder"),
    (("report", "p1.json", "--html", "p1.json"), "--html p1.json is also the result"),
    (("run", "--demo", "-o", "baseline.yml", "--baseline", "baseline.yml"), "--output baseline.yml is also --baseline"),
    (("run", "--demo", "-o", "r.json", "--html", "r.json"), "--html r.json is also --output"),
    (("run", "--demo", "-o", "folder"), "--output folder is a folder"),
    (("run", "--demo", "--junit", "folder"), "--junit folder is a folder"),
    (("run", "--model-stub", "--model-stub-config-template", "baseline.yml:.config/a.toml", "-o", "baseline.yml",
      "--demo"), "--output baseline.yml is also --model-stub-config-template baseline.yml"),
])
def test_an_output_that_names_an_input_or_a_folder_is_refused_before_any_work(files: Path, args, says) -> None:
    (files / "sub").mkdir(exist_ok=True)
    refused(files, *args, says=says)


def test_links_to_an_input_are_the_input(files: Path) -> None:
    os.symlink(files / "p1.json", files / "link.json")
    os.link(files / "p2.json", files / "hard.json")
    refused(files, "merge", "link.json", "p1.json", "p2.json", says="OUT link.json is also the input p1.json")
    refused(files, "merge", "hard.json", "p1.json", "p2.json", says="OUT hard.json is also the input p2.json")
    refused(files, "verify", "p2.json", "--html", "hard.json", says="--html hard.json is also the result")


def test_a_merge_into_a_new_file_still_works(files: Path) -> None:
    out = cli("merge", "merged.json", "p1.json", "p2.json", cwd=files)
    assert out.returncode == 0, out.stderr
    assert len(result_file.read(str(files / "merged.json")).journeys) == 2
    # A file that holds no result may be replaced (an empty one made by mktemp, say).
    (files / "empty.json").write_text("")
    assert cli("merge", "empty.json", "p1.json", "p2.json", cwd=files).returncode == 0
