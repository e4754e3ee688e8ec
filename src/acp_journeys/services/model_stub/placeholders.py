"""`{model_url}` in the user's settings: where the runner puts the stub's address.

Rules of this module: pure string work, no I/O. `{model_url}` becomes the stub's base URL with
no trailing slash and no `/v1`: the user writes `{model_url}/v1` (OpenAI clients) or
`{model_url}` (Anthropic clients, which add `/v1/messages` themselves). Only that exact token
is replaced, so JSON or TOML braces of a config file stay as they are.
"""

from __future__ import annotations

from collections.abc import Mapping

PLACEHOLDER = "{model_url}"


def fill(text: str, url: str) -> str:
    return text.replace(PLACEHOLDER, url.rstrip("/"))


def fill_env(env: Mapping[str, str], url: str) -> dict[str, str]:
    return {name: fill(value, url) for name, value in env.items()}


def uses_placeholder(env: Mapping[str, str]) -> bool:
    return any(PLACEHOLDER in value for value in env.values())


def parse_config_template(option: str) -> tuple[str, str]:
    """`SRC:DEST` of --model-stub-config-template: a file here, a path in the agent's home.

    DEST must be relative (to the agent's home) and stay inside it.
    """
    source, sep, dest = option.rpartition(":")
    if not sep or not source or not dest:
        raise ValueError(f"--model-stub-config-template wants SRC:DEST, got {option!r}")
    parts = dest.replace("\\", "/").split("/")
    if dest.startswith(("/", "~")) or ".." in parts:
        raise ValueError(f"the DEST of {option!r} must be a path inside the agent's home, like .config/agent.toml")
    return source, dest
