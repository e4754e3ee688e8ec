#!/usr/bin/env python3
"""Benchmark: the whole suite against the reference agent, measured in one run on one machine.

Reports, for all journeys at once and for --parallel 1: wall time, the runner's own CPU time
(this process only: the agents' CPU is theirs, not ours) and the runner's peak memory; and the
slowest journey run alone, for the target "all at once <= 1.3x the slowest journey alone".
With --docker IMAGE it also runs the suite in docker mode, for the container overhead ratio,
and times the engine alone making as many containers at once as the suite has journeys (with
the journeys' limits, nothing run in them): what no change of ours can take off docker mode.
Not a test: it prints numbers (and writes them as JSON with --json) for the README.

    .venv/bin/python bench/bench.py [--repeat 3] [--docker acp-journeys/runner:dev] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import tempfile
import time
import uuid

from acp_journeys.cli.run import reference_agent_path
from acp_journeys.editor.session import Bounds
from acp_journeys.launch import LocalLauncher
from acp_journeys.output.console import Progress
from acp_journeys.rules import catalog
from acp_journeys.runner import Run, RunConfig


def make_launcher(kind: str, image: str | None, env: dict[str, str]):
    run_id = uuid.uuid4().hex[:12]
    if kind == "docker":
        from acp_journeys.launch import DockerLauncher

        return DockerLauncher(image, run_id=run_id, env=env)
    return LocalLauncher(run_id, env=env)


LATENCY = ["--latency", "0"]


def one_run(journeys: list[str], parallel: int | None, kind: str = "local", image: str | None = None,
            agent: list[str] | None = None) -> dict[str, float | str]:
    with tempfile.TemporaryDirectory() as state:
        env = {"ACP_REFERENCE_AGENT_STATE": state if kind == "local" else "/tmp/acp-reference-agent"}
        argv = agent or ([sys.executable, reference_agent_path()] if kind == "local"
                         else ["python3", "/opt/acp-journeys/reference_agent.py"]) + LATENCY
        launcher = make_launcher(kind, image, env)
        config = RunConfig(argv=argv, journeys=journeys, parallel=parallel, bounds=Bounds())
        cpu0, wall0 = time.process_time(), time.perf_counter()
        result = asyncio.run(Run(config, launcher, Progress(quiet=True)).execute())
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {"wall_s": wall, "cpu_s": cpu, "verdict": result.verdict}


def engine_floor(image: str, count: int) -> dict[str, float]:
    """Seconds for the engine to create and start `count` containers at once, with the options
    the journeys' containers get (no network, no capability, DockerLauncher's default limits),
    then to remove them: the part of docker mode's wall that is the engine's own."""
    from concurrent.futures import ThreadPoolExecutor

    from acp_journeys.launch import DockerLauncher
    from acp_journeys.launch.docker import engine

    limits = DockerLauncher(image, run_id="bench")  # never started: only its default limits are read
    api = engine.connect()
    host_config = api.create_host_config(network_mode="none", pids_limit=limits.pids_limit,
                                         mem_limit=limits.memory_bytes, memswap_limit=limits.memory_bytes,
                                         nano_cpus=int(limits.cpus * 1e9),
                                         security_opt=["no-new-privileges"], cap_drop=["ALL"])
    tag = f"acpj-bench-{uuid.uuid4().hex[:8]}"

    def make(n: int) -> str:
        cid = api.create_container(image, entrypoint=["sleep", "60"], name=f"{tag}-{n}",
                                   labels={"acp-journeys.bench": tag}, host_config=host_config)["Id"]
        api.start(cid)
        return cid

    ids: list[str] = []
    with ThreadPoolExecutor(count) as pool:
        try:
            t0 = time.perf_counter()
            ids = list(pool.map(make, range(count)))
            started = time.perf_counter() - t0
            t0 = time.perf_counter()
            list(pool.map(lambda cid: api.remove_container(cid, force=True), ids))
            removed = time.perf_counter() - t0
        finally:  # whatever was made, also after an error
            for c in api.containers(all=True, filters={"label": f"acp-journeys.bench={tag}"}):
                api.remove_container(c["Id"], force=True)
    return {"create_and_start_s": started, "remove_s": removed}


def median(runs: list[dict], key: str) -> float:
    return statistics.median(float(r[key]) for r in runs)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--docker", metavar="IMAGE", help="also measure docker mode with this agent image")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--latency", type=float, default=0.5,
                        help="seconds the reference agent waits before each reply, as a model would "
                             "(0: an agent that answers at once)")
    args = parser.parse_args()
    LATENCY[1] = str(args.latency)
    everything = list(catalog.JOURNEY_IDS)

    one_run(["turn-to-end"], None)  # warm-up: imports, the MCP hub, the page cache
    report: dict[str, object] = {"agent_latency_s": args.latency}
    at_once = [one_run(everything, None) for _ in range(args.repeat)]
    serial = [one_run(everything, 1) for _ in range(args.repeat)]
    alone = {j: median([one_run([j], None) for _ in range(args.repeat)], "wall_s") for j in everything}
    slowest = max(alone, key=alone.get)
    report["all_at_once"] = {"wall_s": median(at_once, "wall_s"), "runner_cpu_s": median(at_once, "cpu_s")}
    report["parallel_1"] = {"wall_s": median(serial, "wall_s"), "runner_cpu_s": median(serial, "cpu_s")}
    report["slowest_alone"] = {"journey": slowest, "wall_s": alone[slowest]}
    report["at_once_over_slowest"] = report["all_at_once"]["wall_s"] / alone[slowest]
    report["runner_cpu_share_at_once"] = report["all_at_once"]["runner_cpu_s"] / report["all_at_once"]["wall_s"]
    if args.docker:
        one_run(["turn-to-end"], None, "docker", args.docker)
        docker = [one_run(everything, None, "docker", args.docker) for _ in range(args.repeat)]
        report["docker_all_at_once"] = {"wall_s": median(docker, "wall_s"), "runner_cpu_s": median(docker, "cpu_s")}
        report["docker_over_local"] = report["docker_all_at_once"]["wall_s"] / report["all_at_once"]["wall_s"]
        floors = [engine_floor(args.docker, len(everything)) for _ in range(args.repeat)]
        floor = {k: statistics.median(f[k] for f in floors) for k in floors[0]}
        report["engine_floor"] = {**floor, "journeys": len(everything)}
        # The least docker mode could cost: local mode's wall plus the engine's own start.
        report["docker_over_local_floor"] = ((report["all_at_once"]["wall_s"] + floor["create_and_start_s"])
                                             / report["all_at_once"]["wall_s"])
    report["runner_peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    verdicts = {r["verdict"] for r in at_once + serial}
    report["verdicts"] = sorted(verdicts)
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0 if verdicts == {"pass"} else 1


if __name__ == "__main__":
    raise SystemExit(main())
