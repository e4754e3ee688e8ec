"""Recipes: how to point one agent of the registry at the scripted model, as data.

Rules of this module: a recipe is a YAML file `recipes/<id>.yaml` (the bundled ones sit beside
this module; `--recipes DIR` adds a folder that wins over them) with only these keys:

- `env`: variables whose values are secrets (given to `run` with `--env`, masked everywhere);
- `settings`: variables that are no secrets (`--setting`); the registry entry's own `env` goes
  here too, under the recipe's;
- `files`: config templates, each `{dest: path under the agent's home, text: ...}` (or `src:` a
  file beside the recipe), `{model_url}` filled per journey (`--model-stub-config-template`);
- `args`: the agent's arguments instead of the entry's; `extra_args`: appended to them;
- `skip`: a reason not to run it at all ("needs its vendor's login: ..."), shown as its row;
- `login_row`: the row's words when `session/new` answers an auth error ("needs authenticate");
- `notes`: what is known of its verdicts (which failures are its own doing, and why);
- `tried`: the version and date the recipe was run with, and how.

An agent with no recipe gets `GENERIC`: the common base-URL and key variables of the OpenAI,
Anthropic and Gemini SDKs pointed at the stub. Reading a recipe never runs anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML, YAMLError

KEYS = {"env", "settings", "files", "args", "extra_args", "skip", "login_row", "notes", "tried"}
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
STUB_KEY = "acpj-stub-key-7f3a"
"""The key the generic recipe gives: a value that appears nowhere else, since secrets are masked
wherever they occur (a key of `stub` would mask every "stub" of the output)."""


class RecipeError(Exception):
    pass


@dataclass
class Recipe:
    name: str
    """`generic`, or the agent id whose file it is."""
    env: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    files: list[tuple[str, str]] = field(default_factory=list)
    """(template text, dest under the agent's home)."""
    args: list[str] | None = None
    extra_args: list[str] = field(default_factory=list)
    skip: str | None = None
    login_row: str | None = None
    notes: list[str] = field(default_factory=list)
    tried: str | None = None


GENERIC = Recipe(
    name="generic",
    env={"OPENAI_API_KEY": STUB_KEY, "ANTHROPIC_API_KEY": STUB_KEY, "GEMINI_API_KEY": STUB_KEY},
    settings={"OPENAI_BASE_URL": "{model_url}/v1", "ANTHROPIC_BASE_URL": "{model_url}",
              "GOOGLE_GEMINI_BASE_URL": "{model_url}"},
    notes=["no recipe: the generic one (the OpenAI, Anthropic and Gemini base-URL and key variables)"],
)


def bundled_folder() -> Path:
    return Path(str(resources.files("acp_journeys.registry").joinpath("recipes")))


def find_recipe(agent_id: str, folders: list[str]) -> Recipe:
    """The recipe of `agent_id`: from the first folder of `folders` that has one, then the
    bundled ones, else `GENERIC`."""
    for folder in [*folders, str(bundled_folder())]:
        path = Path(folder) / f"{agent_id}.yaml"
        if path.is_file():
            return load_recipe(path)
    return GENERIC


def load_recipe(path: Path) -> Recipe:
    try:
        data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    except (OSError, YAMLError, UnicodeDecodeError) as exc:
        raise RecipeError(f"recipe {path.name}: cannot be read ({exc})") from None
    return parse_recipe(data, path.stem, base=path.parent)


def parse_recipe(data: Any, name: str, base: Path | None = None) -> Recipe:
    where = f"recipe {name}"
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise RecipeError(f"{where}: not a mapping")
    unknown = sorted(set(map(str, data)) - KEYS)
    if unknown:
        raise RecipeError(f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(sorted(KEYS))})")
    recipe = Recipe(name=name)
    for key in ("env", "settings"):
        value = data.get(key) or {}
        if not isinstance(value, dict) or not all(isinstance(k, str) and NAME.match(k) for k in value):
            raise RecipeError(f"{where}: {key} is not a mapping of variable names")
        setattr(recipe, key, {k: str(v) for k, v in value.items()})
    clash = sorted(set(recipe.env) & set(recipe.settings))
    if clash:
        raise RecipeError(f"{where}: {', '.join(clash)} in both env and settings")
    for item in data.get("files") or []:
        if not isinstance(item, dict) or not isinstance(item.get("dest"), str) or not item["dest"]:
            raise RecipeError(f"{where}: each of files needs a dest")
        dest = item["dest"]
        if dest.startswith("/") or ".." in Path(dest).parts:
            raise RecipeError(f"{where}: files dest {dest!r} must be a relative path under the home")
        if isinstance(item.get("text"), str):
            recipe.files.append((item["text"], dest))
        elif isinstance(item.get("src"), str) and base is not None:
            try:
                recipe.files.append(((base / item["src"]).read_text(encoding="utf-8"), dest))
            except OSError as exc:
                raise RecipeError(f"{where}: files src {item['src']}: {exc.strerror or exc}") from None
        else:
            raise RecipeError(f"{where}: each of files needs a text (or a src beside the recipe)")
    for key in ("args", "extra_args", "notes"):
        value = data.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise RecipeError(f"{where}: {key} is not a list of strings")
    recipe.args = list(data["args"]) if data.get("args") is not None else None
    recipe.extra_args = list(data.get("extra_args") or [])
    recipe.notes = list(data.get("notes") or [])
    for key in ("skip", "login_row", "tried"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise RecipeError(f"{where}: {key} is not a string")
        setattr(recipe, key, value)
    return recipe
