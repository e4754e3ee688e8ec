"""`acp-journeys registry SOURCE --out DIR`: every agent of an ACP registry through the journeys,
with the scripted model, and one dashboard page.

Rules of this module: parse, select (`--agent`, `--shard`), then per agent, `--jobs` at once:
install it (registry/install.py), take its recipe, check the `run` arguments with `run`'s own
`plan_run`, and run them as `acp-journeys run` (registry/runs.py); then build the page with the
code of `acp-journeys dashboard`. An agent that cannot be installed or run is a row with why,
never a failed command: exit 0 once the dashboard is written, 2 on a usage error (a bad SOURCE,
an unknown --agent, a bad --shard). `--list-json` prints the agents and a matrix of shards and
runs nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import threading

from acp_journeys.cli.common import EXIT_PASS, UsageError, journey_ids
from acp_journeys.rules import catalog


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("registry", help="run every agent of an ACP registry through the journeys, and a dashboard",
                       usage="acp-journeys registry SOURCE --out DIR [options]")
    p.add_argument("source", metavar="SOURCE",
                   help="a folder of <id>/agent.json, a registry.json, or an https URL of one")
    p.add_argument("--out", metavar="DIR", help="where agents/<id>/, summary.json and index.html go")
    p.add_argument("--agent", action="append", default=[], metavar="ID", help="only this agent (repeatable)")
    p.add_argument("--shard", metavar="K/N", help="only the K-th of N stable slices of the agents")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="agents at once (default 1)")
    p.add_argument("--image", metavar="IMAGE",
                   help="run each agent's journeys in containers of IMAGE, its install mounted read-only at /agent")
    p.add_argument("--previous", metavar="SUMMARY", help="the previous run's summary.json: mark what changed")
    p.add_argument("--list-json", action="store_true", help="print the agents and the matrix of shards as JSON; run nothing")
    p.add_argument("--shards", type=int, default=1, metavar="N", help="with --list-json: how many shards (default 1)")
    p.add_argument("--cache", metavar="DIR", help="the install cache, by id and version (default: "
                                                  "$ACP_JOURNEYS_CACHE, else ~/.cache/acp-journeys/registry)")
    p.add_argument("--recipes", action="append", default=[], metavar="DIR",
                   help="a folder of <id>.yaml recipes, over the bundled ones (repeatable)")
    p.add_argument("--journey", action="append", dest="journeys", metavar="ID", help="a journey to run (default: all 7)")
    p.add_argument("--parallel", type=int, default=None, metavar="N", help="journeys at once per agent")
    p.add_argument("--timeout-scale", type=float, default=1.0, metavar="F", help="as for run")
    p.add_argument("--python", metavar="PATH", help="the Python that uvx agents' venvs are made with (default: "
                                                  "the one running acp-journeys)")
    p.add_argument("--install-timeout", type=float, default=900.0, metavar="S", help="each install's bound (default 900)")
    p.add_argument("--docs-url", default=catalog.DEFAULT_DOCS_URL, help="the base of failure links")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")


def run(args: argparse.Namespace) -> int:
    from acp_journeys.registry.shards import ShardError, parse_shard, select_shard, shard_of
    from acp_journeys.registry.source import SourceError, read_source

    if args.jobs < 1:
        raise UsageError("--jobs takes a whole number of 1 or more")
    if args.shards < 1:
        raise UsageError("--shards takes a whole number of 1 or more")
    if not args.list_json and not args.out:
        raise UsageError("registry: give --out DIR (or --list-json)")
    journeys = journey_ids(args.journeys) if args.journeys else None
    try:
        entries, bad = read_source(args.source)
    except SourceError as exc:
        raise UsageError(str(exc)) from None
    rows: dict[str, object] = {e.id: e for e in entries}
    for b in bad:
        rows.setdefault(b.id, b)
    if args.agent:
        unknown = [a for a in args.agent if a not in rows]
        if unknown:
            raise UsageError(f"--agent {', '.join(unknown)}: not in {args.source}")
        rows = {a: rows[a] for a in dict.fromkeys(args.agent)}
    ids = sorted(rows)
    if args.shard:
        try:
            k, n = parse_shard(args.shard)
        except ShardError as exc:
            raise UsageError(str(exc)) from None
        ids = select_shard(ids, k, n)
    if args.list_json:
        shards = sorted({shard_of(i, args.shards) for i in ids})
        print(json.dumps({"agents": [_listing(rows[i], shard_of(i, args.shards)) for i in ids],
                          "shard": [f"{s}/{args.shards}" for s in shards]}))
        return EXIT_PASS
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "agents"), exist_ok=True)
    cache = os.path.abspath(args.cache or os.environ.get("ACP_JOURNEYS_CACHE")
                            or os.path.join(os.path.expanduser("~"), ".cache", "acp-journeys", "registry"))
    say = (lambda _m: None) if args.quiet else (lambda m: print(f"registry: {m}", file=sys.stderr, flush=True))
    say(f"{len(ids)} agent(s) from {args.source}" + (f", shard {args.shard}" if args.shard else ""))
    queue = list(ids)
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not queue:
                    return
                agent_id = queue.pop(0)
            try:
                status = _one_agent(rows[agent_id], args, out, cache, journeys)
            except Exception as exc:  # our bug: this agent's row says so, and the others go on
                status = {"id": agent_id, "status": "run-error",
                          "reason": f"acp-journeys internal error: {type(exc).__name__}"}
                try:
                    _write_status(os.path.join(out, "agents", agent_id), status)
                except OSError:
                    pass
            say(f"{agent_id}: {status['status']}" + (f" ({status['reason']})" if status.get("reason") else ""))

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(args.jobs, max(1, len(ids))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    from acp_journeys.cli.dashboard import build

    build(out, os.path.join(out, "index.html"), previous=args.previous,
          summary_path=os.path.join(out, "summary.json"), docs_url=args.docs_url)
    return EXIT_PASS


def _listing(row, shard: int) -> dict:
    from acp_journeys.registry.source import Entry

    if isinstance(row, Entry):
        return {"id": row.id, "name": row.name, "version": row.version, "kind": row.kind, "shard": shard}
    return {"id": row.id, "name": row.name, "version": row.version, "kind": "", "shard": shard, "bad": row.why}


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _write_status(folder: str, status: dict) -> dict:
    tmp = os.path.join(folder, ".status.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(status, f, indent=2)
        f.write("\n")
    os.replace(tmp, os.path.join(folder, "status.json"))
    return status


def _one_agent(row, args: argparse.Namespace, out: str, cache: str, journeys: list[str] | None) -> dict:
    """Install, check and run one agent; its status.json says how far it got and why."""
    import shutil

    from acp_journeys import __version__
    from acp_journeys.registry.install import InstallError, install
    from acp_journeys.registry.recipes import RecipeError, find_recipe
    from acp_journeys.registry.runs import RunOptions, run_agent, run_args, run_bound
    from acp_journeys.registry.source import Entry

    folder = os.path.join(out, "agents", row.id)
    # A rerun into the same DIR starts this agent's folder afresh: no stale result is shown.
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    status: dict = {"id": row.id, "name": row.name, "version": row.version, "kind": "", "status": "",
                    "reason": "", "tool_version": __version__, "date": _now(), "notes": []}
    if not isinstance(row, Entry):
        return _write_status(folder, {**status, "status": "bad-entry", "reason": row.why})
    status.update(kind=row.kind, package=row.package, description=row.description)
    try:
        recipe = find_recipe(row.id, args.recipes)
    except RecipeError as exc:
        return _write_status(folder, {**status, "status": "run-error", "reason": str(exc)})
    status.update(recipe=recipe.name, notes=list(recipe.notes), login_row=recipe.login_row, tried=recipe.tried)
    if recipe.skip:
        return _write_status(folder, {**status, "status": "needs-login", "reason": recipe.skip})
    log = os.path.join(folder, "install.log")
    try:
        installed = install(row, cache, log, bound_s=args.install_timeout, python=args.python)
    except InstallError as exc:
        return _write_status(folder, {**status, "status": "not-installed", "reason": str(exc)})
    except OSError as exc:
        return _write_status(folder, {**status, "status": "not-installed", "reason": f"{exc.strerror or exc}"})
    status.update(install_s=installed.seconds, cached=installed.cached)
    templates = []
    for n, (text, dest) in enumerate(recipe.files):
        path = os.path.join(folder, "templates", f"{n + 1}-{os.path.basename(dest)}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        templates.append((path, dest))
    options = RunOptions(result=os.path.join(folder, "result.json"), html=os.path.join(folder, "report.html"),
                         image=args.image, timeout_scale=args.timeout_scale, parallel=args.parallel,
                         journeys=journeys)
    argv = run_args(row, installed, recipe, options, templates)
    why = _check_run_args(argv)
    if why:
        return _write_status(folder, {**status, "status": "run-error", "reason": why})
    outcome = run_agent(argv, os.path.join(folder, "run.log"), run_bound(options))
    status["run_s"] = outcome.seconds
    if not os.path.exists(options.result):
        tail = _tail(os.path.join(folder, "run.log"))
        return _write_status(folder, {**status, "status": "run-error",
                                      "reason": f"acp-journeys run ended with exit code {outcome.code} and wrote no "
                                                f"result.json" + (f": {tail}" if tail else "")})
    reason = "over its run bound: stopped" if outcome.timed_out else ""
    return _write_status(folder, {**status, "status": "ran", "reason": reason})


def _check_run_args(argv: list[str]) -> str | None:
    """`run`'s own parser and plan: a recipe that `run` would refuse is found before anything starts."""
    from acp_journeys.cli import run as run_command
    from acp_journeys.cli.run import plan_run

    parser = argparse.ArgumentParser(prog="acp-journeys", add_help=False, exit_on_error=False)
    sub = parser.add_subparsers(dest="command")
    run_command.add_parser(sub)
    try:
        args = parser.parse_args(["run", *argv])
        plan_run(args, os.environ, python=sys.executable, reference_agent=run_command.reference_agent_path())
    except (argparse.ArgumentError, UsageError) as exc:
        return f"acp-journeys run would refuse the recipe: {exc}"
    except SystemExit:
        return "acp-journeys run would refuse the recipe's arguments"
    return None


def _tail(path: str, size: int = 400) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - size))
            return " ".join(f.read().decode("utf-8", "replace").split())
    except OSError:
        return ""
