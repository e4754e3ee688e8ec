"""The layout's rules, read from the code's own imports: they fail loudly when a change breaks them.

Wings and what each may import (besides itself, the standard library and third-party packages):
rules/ is pure and imports no other wing; protocol/ and launch/ are the ground; services/ stands on
rules/ and protocol/; editor/ and output/ stand on rules/ and protocol/ (the editor also on
launch/'s public seam); runner.py ties them together; registry/ stands on runner.py; cli/ is the top. demo/ is the stdlib
reference agent and knows none of it. An import inside a function counts like one at the top
(a lazy import is still an arrow), and so does one under `TYPE_CHECKING`. At the end: the folders
around the code show their purpose (scripts/ by who runs it, tests/ by wing).

Sizes: each job its module, so no module of src/ is over 450 lines (but the few named in
LONG_MODULES, which may only shrink) and no function is over 80.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "acp_journeys"

ALLOWED: dict[str, set[str]] = {
    "rules": set(),
    "protocol": set(),
    "launch": set(),
    "demo": set(),
    "services": {"rules", "protocol"},
    "editor": {"rules", "protocol", "launch"},
    "output": {"rules", "protocol"},
    "runner": {"rules", "protocol", "launch", "services", "editor", "output"},
    "registry": {"rules", "protocol", "launch", "services", "editor", "output", "runner"},
    "cli": {"rules", "protocol", "launch", "services", "editor", "output", "runner", "registry"},
    "__main__": {"cli"},
    "__init__": set(),
}
# Only the seam is public: outside launch/ nothing reaches into its modules.
LAUNCH_PUBLIC = {"acp_journeys.launch"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def wing(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(module: str, path: Path) -> set[str]:
    """Every acp_journeys module this one imports, at any depth of its code."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "acp_journeys")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "acp_journeys":
                continue
            found.add(target)
            # `from acp_journeys.x import y`: y may be a module of its own.
            for alias in node.names:
                found.add(f"{target}.{alias.name}")
    known = modules()
    return {m for m in found if m in known and m != module}


def graph() -> dict[str, set[str]]:
    return {name: imports_of(name, path) for name, path in modules().items()}


def test_every_module_belongs_to_a_known_wing():
    assert {wing(m) for m in modules()} <= set(ALLOWED), "a new wing needs its row in ALLOWED"


def test_no_wing_imports_a_higher_or_sideways_one():
    wrong = []
    for module, targets in graph().items():
        for target in targets:
            # Everyone may read the package's own __version__.
            if wing(target) not in (wing(module), "__init__") and wing(target) not in ALLOWED[wing(module)]:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_outside_launch_only_its_public_seam_is_imported():
    wrong = [f"{m} -> {t}" for m, targets in graph().items() if wing(m) != "launch"
             for t in targets if wing(t) == "launch" and t not in LAUNCH_PUBLIC]
    assert wrong == []


def test_there_is_no_import_circle():
    edges = graph()
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            # A package's __init__ importing its own submodules is how packages re-export; the
            # circle that matters is between modules that are not parent and child.
            if nxt.startswith(node + ".") or node.startswith(nxt + "."):
                continue
            if state.get(nxt) == 1:
                circles.append(trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    assert circles == []


def test_demo_agent_is_stdlib_only():
    tree = ast.parse((PACKAGE / "demo" / "reference_agent.py").read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not names - set(sys.stdlib_module_names), names - set(sys.stdlib_module_names)


# The judge's path must be pure. `socket` is left out of the runtime check on purpose: pydantic loads
# importlib.metadata, which loads email.utils, which imports socket; the static check below keeps our
# own code from importing it in rules/.
FORBIDDEN_AT_RUNTIME = ("asyncio", "subprocess", "http", "socketserver", "docker", "jsonschema", "mcp",
                        "acp_journeys.services", "acp_journeys.launch", "acp_journeys.editor")
FORBIDDEN_IN_RULES = {"asyncio", "subprocess", "socket", "http", "socketserver", "docker", "threading",
                      "urllib", "jsonschema", "mcp", "psutil"}


def loaded_io_modules(code: str) -> list[str]:
    """The forbidden modules loaded once `code` ran in a fresh interpreter."""
    probe = (f"{code}\nimport sys\n"
             f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN_AT_RUNTIME!r} "
             f"or any(m.startswith(p + '.') for p in {FORBIDDEN_AT_RUNTIME!r}))\n"
             "print('\\n'.join(bad))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).parents[1])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_importing_the_judge_loads_no_io_module():
    assert loaded_io_modules("import acp_journeys.rules.judge") == []


def test_verify_of_a_result_loads_no_io_module(tmp_path):
    # verify's whole path, as the command runs it: read a real result, judge it, print the table.
    path = tmp_path / "result.json"
    code = ("import contextlib, io, sample_results\n"
            "from acp_journeys.output import result_file\n"
            f"result_file.write(sample_results.all_pass(), {str(path)!r})\n"
            "from acp_journeys.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
            f"    code = main(['verify', {str(path)!r}])\n"
            "assert code in (0, 1), code")
    assert loaded_io_modules(code) == []


def test_rules_import_nothing_that_does_io():
    wrong = []
    for path in sorted((PACKAGE / "rules").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            wrong += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN_IN_RULES]
    assert wrong == []


def test_every_module_opens_with_its_rules():
    bare = [m for m, p in modules().items()
            if p.stat().st_size and not ast.get_docstring(ast.parse(p.read_text()))]
    assert bare == []


def test_the_sandbox_seam_is_three_small_roles():
    # Files, processes and the links to the run's services are kept apart so each reads alone;
    # the sandbox itself adds only `close`.
    from acp_journeys.launch import seam

    roles = (seam.AgentFiles, seam.AgentProcesses, seam.ServiceLinks)
    members = [{n for n in vars(r) if not n.startswith("_")} | set(getattr(r, "__annotations__", {}))
               for r in roles]
    assert all(len(m) <= 5 for m in members), members
    assert not set.intersection(*members) and sum(map(len, members)) == len(set.union(*members))
    assert {n for n in vars(seam.Sandbox) if not n.startswith("_")} == {"close"}
    assert seam.Sandbox.__mro__[1:4] == roles


def test_only_the_engine_module_touches_dockers_private_api():
    private = re.compile(r"_get_raw_response_socket|\._url\(|\._post_json\(|\.raw\._fp|\"_sock\"")
    wrong = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if p != PACKAGE / "launch" / "docker" / "engine.py" and private.search(p.read_text())]
    assert wrong == []
    assert private.search((PACKAGE / "launch" / "docker" / "engine.py").read_text())  # the patterns are live


def test_the_readme_tree_names_every_module():
    # The tree is contributor material: it lives in docs/development.md, which the README links.
    readme = (PACKAGE.parent.parent / "docs" / "development.md").read_text()
    assert "docs/development.md" in (PACKAGE.parent.parent / "README.md").read_text()
    tree = readme[readme.index("src/acp_journeys/\n"):]
    tree = tree[: tree.index("```")]
    # Folders whose modules the tree describes as a group: one module per journey, per API dialect.
    grouped = {"journeys", "dialects"}
    missing = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
               if p.name != "__init__.py" and p.parent.name not in grouped
               and not re.search(rf"\b{re.escape(p.name)}\b", tree)]
    assert missing == []
    folders = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.iterdir())
               if p.is_dir() and not p.name.startswith("__") and f"{p.name}/" not in tree]
    assert folders == []


# --- the folders around the code show their purpose (#27 point 3) -------------------------------

ROOT = PACKAGE.parent.parent
TESTS = ROOT / "tests"
# scripts/: at its top the commands a person types (the README's two, bootstrap.sh, and what the
# docs and our messages tell you to run); in folders, by who runs the rest.
SCRIPT_FOLDERS = {"by-hand", "release", "setup"}
# tests/: one folder a source wing, named as the wing, and three that are not one: the GitHub
# Action (action.yml, merge/), the fixture tables, and the project as a whole (these layers, the docs).
TEST_FOLDERS = (set(ALLOWED) - {"__main__", "__init__"}) | {"action", "fixture_tables", "project"}
# ...and beside them what tests start or read, never a test: agents, fixture agents, data files.
SUPPORT_FOLDERS = {"agents", "fixtures", "data"}


def _entries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith((".", "__pycache__")))


def test_scripts_has_at_most_ten_files_at_its_top_and_the_rest_by_who_runs_it():
    scripts = ROOT / "scripts"
    top = [p.name for p in _entries(scripts) if p.is_file()]
    assert len(top) <= 10, top
    assert {p.name for p in _entries(scripts) if p.is_dir()} == SCRIPT_FOLDERS
    assert {"demo.sh", "test.sh", "bootstrap.sh"} <= set(top)  # the README's commands, and their set-up
    assert [p for f in SCRIPT_FOLDERS for p in _entries(scripts / f) if p.is_dir()] == []


def test_every_test_file_sits_in_a_wing_folder():
    misplaced = [str(p.relative_to(TESTS)) for p in sorted(TESTS.rglob("*.py"))
                 if p.name.startswith("test_") or p.name.endswith("_test.py")
                 if p.parent.parent != TESTS or p.parent.name not in TEST_FOLDERS]
    assert misplaced == []
    folders = {p.name for p in _entries(TESTS) if p.is_dir()}
    assert folders - SUPPORT_FOLDERS <= TEST_FOLDERS, folders - SUPPORT_FOLDERS - TEST_FOLDERS
    assert all(any((TESTS / f).glob("test_*.py")) for f in folders - SUPPORT_FOLDERS)  # no empty wing folder
    # At the top only the helpers every test imports (conftest.py puts every folder on sys.path).
    assert all(not p.name.startswith("test_") for p in _entries(TESTS) if p.is_file())


def test_test_modules_and_helpers_have_unique_names():
    # Every test folder is on sys.path and pytest names a test module by its basename.
    names = [p.name for f in [TESTS, *(TESTS / n for n in sorted(TEST_FOLDERS))] if f.is_dir()
             for p in f.glob("*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []


MODULE_LINES = 450
FUNCTION_LINES = 80
# Modules over MODULE_LINES that no split has reached yet, each with its size now: the list only
# shrinks, and a module on it may not grow (the stdlib reference agent is one file on purpose: it
# is copied into images and run as `python3 reference_agent.py`).
LONG_MODULES = {
    "demo/reference_agent.py": 1000,
    "launch/docker/sandbox.py": 620,
    "launch/local.py": 575,
    "output/html/report.py": 480,
    "services/model_stub/server.py": 470,
    "services/model_stub/script.py": 459,
}


def test_no_module_is_over_its_size():
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    over = {m: n for m, n in sizes.items() if n > LONG_MODULES.get(m, MODULE_LINES)}
    assert over == {}, f"split these modules (at most {MODULE_LINES} lines each): {over}"
    shorter = [m for m, bound in LONG_MODULES.items() if sizes.get(m, 0) <= MODULE_LINES]
    assert shorter == [], f"these are short enough now: take them off LONG_MODULES: {shorter}"


def test_no_function_is_over_its_size():
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if lines > FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == [], f"functions over {FUNCTION_LINES} lines: {long}"
