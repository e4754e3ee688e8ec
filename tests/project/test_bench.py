"""The benchmark's engine floor on the real engine: numbers it can give, and nothing left behind.

Not a timed test: it checks what the script measures and cleans up, never how fast the engine is.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from conftest import agent_image_or_skip, docker_engine_or_skip, make_empty_image

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_script", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bench_containers(engine) -> list:
    return engine.containers.list(all=True, filters={"label": "acp-journeys.bench"})


def test_the_engine_floor_measures_and_removes_its_containers() -> None:
    engine = docker_engine_or_skip()
    image = agent_image_or_skip(engine)
    floor = _bench().engine_floor(image, 2)
    assert set(floor) == {"create_and_start_s", "remove_s"}
    assert floor["create_and_start_s"] > 0 and floor["remove_s"] > 0
    assert _bench_containers(engine) == []


def test_the_engine_floor_removes_what_it_made_when_a_start_fails() -> None:
    import docker

    engine = docker_engine_or_skip()
    empty = make_empty_image(engine)
    with pytest.raises(docker.errors.APIError):  # no `sleep` in it: created, then the start fails
        _bench().engine_floor(empty, 2)
    assert _bench_containers(engine) == []
