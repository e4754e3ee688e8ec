"""docs/journeys.md has an anchor for every failure id and every anchor that the reports link to."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from acp_journeys.rules.catalog import FAILURES, JOURNEY_FAILURES, JOURNEY_IDS, JOURNEYS, anchor_for

DOC = Path(__file__).resolve().parents[2] / "docs" / "journeys.md"
TEXT = DOC.read_text(encoding="utf-8")
ANCHORS = re.findall(r'<a id="([^"]+)"></a>', TEXT)


def test_anchors_are_unique() -> None:
    assert [a for a, n in Counter(ANCHORS).items() if n > 1] == []


def test_rondar_page_anchors() -> None:
    assert [a for a in ANCHORS if a.startswith("step-")] == [f"step-{n}" for n in range(1, 11)]


def test_every_failure_id_has_its_anchor() -> None:
    missing = [f for f in FAILURES if f"failure-{f}" not in ANCHORS]
    assert missing == []
    stray = [a for a in ANCHORS if a.startswith("failure-") and a not in ("failure-ids",)
             and a.removeprefix("failure-") not in FAILURES]
    assert stray == []


def test_every_anchor_that_a_report_can_link_to_exists() -> None:
    linked = {anchor_for(f, j) for j in JOURNEY_IDS for f in FAILURES}
    linked |= {j.anchor for j in JOURNEYS}
    linked |= {FAILURES[f].anchor for f in FAILURES if FAILURES[f].anchor}
    assert sorted(linked - set(ANCHORS)) == []


def test_each_journey_lists_its_own_failures() -> None:
    sections = re.split(r'<a id="(step-\d+)"></a>', TEXT)
    by_anchor = dict(zip(sections[1::2], sections[2::2], strict=True))
    for journey in JOURNEYS:
        section = by_anchor[journey.anchor]
        assert f"(`{journey.id}`)" in section
        for failure_id in JOURNEY_FAILURES[journey.id]:
            if FAILURES[failure_id].anchor in ("step-1", "step-2"):
                continue  # listed once under the checks on every process
            assert f"(#failure-{failure_id})" in section, (journey.id, failure_id)


def test_internal_links_point_at_anchors() -> None:
    targets = set(re.findall(r"\]\(#([^)]+)\)", TEXT))
    assert sorted(targets - set(ANCHORS)) == []


def test_the_security_docs_name_the_risks_users_must_handle() -> None:
    root = DOC.parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    security = readme.split("## Security", 1)[1].split("\n## ", 1)[0]
    for words in ("pull_request_target", "attacker-controlled", "model-stub: true", "persist-credentials: false",
                  "does not stop a hostile agent", "169.254.169.254", "docs/security.md",
                  # issue 23: the build's network, and the line local mode does not draw
                  "build-network: none", "`RUN` steps", "/proc/<parent>/environ", "docker mode"):
        assert words in security, words
    [inherit] = [line for line in readme.splitlines() if line.startswith("| `--inherit-env` |")]
    assert "no secret boundary" in inherit and "/proc/<parent>/environ" in inherit and "docker mode" in inherit
    page = (root / "docs" / "security.md").read_text(encoding="utf-8")
    for words in ("cap_drop: ALL", "read-only", "enable_icc=false", "169.254.169.254", "::stop-commands::",
                  "digest", "provenance", "if: always()",
                  "no secret boundary", "/proc/<pid>/environ", "Run an untrusted agent in docker mode",
                  "build-network:", "65,536", "pquota", "launch.disk_note", "known by identity"):
        assert words in page, words


# --- the README (for users) and the contributor docs --------------------------------------------

ROOT = DOC.parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    found = set(re.findall(r'<a id="([^"]+)"></a>', text))
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            found.add(_slug(line.lstrip("#")))
    return found


def _section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_every_link_of_the_readme_and_the_contributor_docs_lands() -> None:
    for page in (ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "docs" / "development.md"):
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            assert file.exists(), (page.name, target)
            if anchor:
                assert anchor in _anchors(file), (page.name, target)


def test_the_readme_starts_where_a_user_starts() -> None:
    headings = re.findall(r"^## (.+)$", README, flags=re.M)
    # The two set-up commands stay near the top; then install, the three commands, the image, failures.
    assert headings[:6] == ["The two commands", "Install", "Your agent in three commands",
                            "What your agent's image must contain", "When a journey fails", "CI: the GitHub Action"]
    two = _section(README, "The two commands")
    assert "scripts/demo.sh " in two and "scripts/test.sh " in two and ".ci/run" in two
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    assert "[docs/journeys.md](docs/journeys.md)" in README.split("## ", 1)[0]  # Rondar's article, linked
    install = _section(README, "Install")
    assert re.search(r'pip install "acp-journeys @ git\+https://github\.com/rondar/acp-journeys@v\d+\.\d+\.\d+"', install)
    assert "-v /var/run/docker.sock:/var/run/docker.sock" in install and "ACP_JOURNEYS_SHARED_DIR=" in install
    assert "docker run" in install and 'run --image my-agent:dev' in install
    three = _section(README, "Your agent in three commands")
    assert "acp-journeys run -- my-agent --acp" in three and "acp-journeys run --image my-agent:dev" in three
    for words in ("--env NAME", "--setting NAME=VALUE", "--inherit-env", "--network", "--model-stub"):
        assert words in three, words
    # Contributor material lives in docs/development.md.
    for moved in ("## Benchmark", "soak-fixtures.sh", "Private cgroup namespaces", "src/acp_journeys/\n"):
        assert moved not in README, moved
    # The numbers stay in the README (the method is contributor material): each row a measured value.
    speed = _section(README, "Speed and memory")
    assert "bench/bench.py" in speed and "docs/development.md#benchmark" in speed
    rows = [r for r in speed.splitlines() if r.startswith("| ") and not r.startswith("| what")]
    assert len(rows) >= 6 and all(re.search(r"\d", r.split("|")[2]) for r in rows), rows
    development = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    for kept in ("## Benchmark", "soak-fixtures.sh", "Private cgroup namespaces", "src/acp_journeys/\n",
                 "ACP_JOURNEYS_SKIP_DOCKER"):
        assert kept in development, kept


def test_the_image_requirements_match_the_launcher() -> None:
    import inspect

    from acp_journeys.launch.docker.launcher import DockerLauncher

    image = _section(README, "What your agent's image must contain")
    for command in ("`sh`", "`sleep`", "`cat`", "`touch`", "`ps`"):
        assert command in image, command
    defaults = inspect.signature(DockerLauncher.__init__).parameters
    assert defaults["pids_limit"].default == 256 and "at most 256 processes" in image
    assert defaults["memory"].default == "1g" and "1 GiB of memory" in image
    assert defaults["cpus"].default == 2.0 and "2 CPUs" in image
    assert defaults["nofile"].default == 65_536 and "65,536 open files" in image
    assert defaults["disk"].default == "10g" and "10 GiB of\ndisk" in image
    assert "no Linux capabilities" in image and "no-new-privileges" in image


def test_when_a_journey_fails_links_each_common_failure_to_its_fix() -> None:
    failing = _section(README, "When a journey fails")
    common = [f for f, kind in FAILURES.items() if kind.common]
    assert len(common) == 9
    for failure_id in [*common, "agent-exited", "timeout", "runner-error"]:
        assert f"[`{failure_id}`](docs/journeys.md#failure-{failure_id})" in failing, failure_id


def test_every_path_under_scripts_and_tests_that_is_named_exists() -> None:
    # scripts/ and tests/ are laid out by purpose (#27 point 3): a path under them that a doc, a
    # script, a workflow, the action, an example, the code or a test names is a real file or folder.
    named = [ROOT / n for n in ("README.md", "CONTRIBUTING.md", "run.sh", "Dockerfile", ".ci/run", "action.yml",
                                "pyproject.toml")]
    for folder, pattern in (("docs", "*.md"), ("scripts", "**/*"), (".github/workflows", "*.yml"),
                            ("examples", "**/*"), ("action", "*"), ("merge", "*"), ("bench", "*.py"),
                            ("src/acp_journeys", "**/*.py"), ("src/acp_journeys/registry/recipes", "*.yaml"),
                            ("tests", "**/*.py")):
        named += sorted((ROOT / folder).glob(pattern))
    missing = []
    for file in (f for f in named if f.is_file()):
        text = file.read_text(encoding="utf-8", errors="replace")
        for path in re.findall(r"(?<![\w.-])((?:scripts|tests)/[\w./+-]*)", text):
            path = path.rstrip(".")
            # A name's prefix ("tests/data/model-requests/gemini-cli-") stands for the files it starts.
            if not ((ROOT / path).exists() or (path.endswith("-") and any(ROOT.glob(path + "*")))):
                missing.append(f"{file.relative_to(ROOT)}: {path}")
    assert missing == []
