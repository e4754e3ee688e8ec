"""`acp-journeys dashboard DIR --out FILE [--previous SUMMARY | --previous-artifact NAME]`: the
registry page from `DIR/agents/*/` alone (a matrix's last job has nothing but the shards' artifacts).

Rules of this module: it writes the page and `summary.json` (beside the page unless `--summary`
says where); the verdicts come from each agent's evidence, judged again. Exit 0 once both are
written, 2 on a usage error (no such DIR, a --previous file that is not a summary). The previous
night's summary fetched with `--previous-artifact` may be missing or bad: that is said in one
line and the page shows no changes (the page matters more than its diff).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os

from acp_journeys.cli.common import EXIT_PASS, UsageError
from acp_journeys.rules import catalog


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dashboard", help="build the registry page and summary.json from DIR/agents/*/")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--out", required=True, metavar="FILE", help="where to write the page")
    before = p.add_mutually_exclusive_group()
    before.add_argument("--previous", metavar="SUMMARY", help="the previous run's summary.json: mark what changed")
    before.add_argument("--previous-artifact", metavar="NAME",
                        help="in a GitHub Actions run: take summary.json from the artifact NAME of this "
                             "workflow's last successful run (GITHUB_TOKEN with actions: read); none found "
                             "is said, and the page shows no changes")
    p.add_argument("--summary", metavar="PATH", help="where to write summary.json (default: beside the page)")
    p.add_argument("--docs-url", default=catalog.DEFAULT_DOCS_URL, help="the base of failure links")


def build(folder: str, out: str, *, previous: str | None, summary_path: str | None, docs_url: str,
          date: str | None = None, previous_artifact: str | None = None) -> dict:
    """The summary and the page, written; `registry` calls this too."""
    from acp_journeys import __version__
    from acp_journeys.output.html.dashboard import write_dashboard
    from acp_journeys.output.registry_summary import SummaryError, build_summary, read_summary

    if not os.path.isdir(folder):
        raise UsageError(f"{folder}: no such folder")
    before = None
    if previous:
        try:
            before = read_summary(previous)
        except SummaryError as exc:
            raise UsageError(f"--previous {exc}") from None
    elif previous_artifact:
        before = _previous_from_artifact(previous_artifact)
    when = date or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    summary = build_summary(folder, tool_version=__version__, date=when, previous=before)
    target = summary_path or os.path.join(os.path.dirname(os.path.abspath(out)), "summary.json")
    try:
        write_dashboard(summary, out, docs_url=docs_url)
        tmp = target + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
            f.write("\n")
        os.replace(tmp, target)
    except OSError as exc:
        raise UsageError(f"cannot write the dashboard: {exc.strerror or exc}") from None
    print(f"dashboard: {out}")
    print(f"summary: {target}")
    changes = summary.get("changes")
    if changes:
        print(f"since the previous run: {len(changes['regressions'])} regression(s), {len(changes['fixes'])} fix(es)")
    return summary


def _previous_from_artifact(name: str) -> dict | None:
    import tempfile

    from acp_journeys.output.github_previous import fetch_previous_summary
    from acp_journeys.output.registry_summary import SummaryError, read_summary

    with tempfile.TemporaryDirectory(prefix="acp-journeys-previous-") as tmp:
        fetched = fetch_previous_summary(os.environ, name, os.path.join(tmp, "summary.json"))
        if fetched.path is None:
            print(f"no previous summary: {fetched.note}; the page shows no changes")
            return None
        try:
            before = read_summary(fetched.path)
        except SummaryError:
            print(f"no previous summary: {fetched.note} is not a registry summary; the page shows no changes")
            return None
    print(f"previous summary: {fetched.note}")
    return before


def run(args: argparse.Namespace) -> int:
    build(args.dir, args.out, previous=args.previous, summary_path=args.summary, docs_url=args.docs_url,
          previous_artifact=args.previous_artifact)
    return EXIT_PASS
