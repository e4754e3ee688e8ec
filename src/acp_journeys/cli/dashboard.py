"""`acp-journeys dashboard DIR --out FILE [--previous SUMMARY]`: the registry page from
`DIR/agents/*/` alone (a matrix's last job has nothing but the shards' artifacts).

Rules of this module: it writes the page and `summary.json` (beside the page unless `--summary`
says where); the verdicts come from each agent's evidence, judged again. Exit 0 once both are
written, 2 on a usage error (no such DIR, a previous summary that is not one).
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
    p.add_argument("--previous", metavar="SUMMARY", help="the previous run's summary.json: mark what changed")
    p.add_argument("--summary", metavar="PATH", help="where to write summary.json (default: beside the page)")
    p.add_argument("--docs-url", default=catalog.DEFAULT_DOCS_URL, help="the base of failure links")


def build(folder: str, out: str, *, previous: str | None, summary_path: str | None, docs_url: str,
          date: str | None = None) -> dict:
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


def run(args: argparse.Namespace) -> int:
    build(args.dir, args.out, previous=args.previous, summary_path=args.summary, docs_url=args.docs_url)
    return EXIT_PASS
