"""`acp-journeys report FILE`: publish a result.json (a GitHub check run and job summary, an
HTML page).

Rules of this module: what is published is what the evidence says (judged again here);
publishing never fails the job (exit 0 once published): the gate step does.
"""

from __future__ import annotations

import argparse
import os

from acp_journeys.cli.common import (EXIT_PASS, EXIT_USAGE, UsageError, check_outputs, gate_of, journey_ids, judged,
                                     load_baseline, read_result, refusing, write_html)
from acp_journeys.output.logtext import command_data, one_line
from acp_journeys.rules import catalog


def add_parser(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser("report", help="publish a result.json (a GitHub check run and job summary, an HTML page)")
    report.add_argument("path")
    report.add_argument("--github", action="store_true",
                        help="post a check run and write the job summary and step outputs")
    report.add_argument("--html", metavar="OUT", help="write the self-contained HTML report of the result")
    report.add_argument("--artifact-url", metavar="URL",
                        help="with --github: the artifact that holds the HTML report, linked from the summaries")
    report.add_argument("--token", help="the GitHub token (default: $GITHUB_TOKEN)")
    report.add_argument("--check-name", default="ACP journeys",
                        help="the name of the check run (default: ACP journeys)")
    report.add_argument("--docs-url", default=None, help="the base of failure links (default: the result's)")
    report.add_argument("--baseline", metavar="FILE", help="the expected-failures baseline (YAML)")
    report.add_argument("--no-check-run", action="store_false", dest="post_check",
                        help="write the job summary and step outputs only (a matrix job: the merge posts the check)")
    report.add_argument("--journey", action="append", dest="journeys", metavar="ID",
                        help="a journey the file must hold (repeatable; with --github the default is all 7, as "
                             "verify's): a file without one is reported PARTIAL")
    report.add_argument("--expect-sha", metavar="SHA",
                        help="as verify, report a result of another commit or image as REFUSED")


def run(args: argparse.Namespace) -> int:
    from acp_journeys.output.github import report_github

    from acp_journeys.cli.verify import expected_sha, missing_journeys

    if not args.github and not args.html:
        raise UsageError("report: say what to make: --github, --html OUT, or both")
    expect_sha = expected_sha(args.expect_sha)
    check_outputs([("--html", args.html)], [("the result", args.path), ("--baseline", args.baseline)])
    accepted = journey_ids(args.journeys) if args.journeys else list(catalog.JOURNEY_IDS)
    result = judged(read_result(args.path), args.path)  # what we publish is what the evidence says
    outcome = None
    baseline = load_baseline(args.baseline)
    if baseline is not None:
        from acp_journeys.rules.baseline import apply_baseline

        outcome = apply_baseline(result, baseline)
    # The word of the gate step that follows, so that the check run, the summary and the page never
    # say pass where the gate refuses.
    missing = missing_journeys(result, accepted, baseline) if args.github or args.journeys else []
    gate = gate_of(result, outcome, missing=missing, expect_sha=expect_sha)
    if args.html and not write_html(result, args.html, args.docs_url or result.docs_url, outcome, gate):
        return EXIT_USAGE
    if not args.github:
        return EXIT_PASS
    report = report_github(result, env=os.environ, token=args.token or os.environ.get("GITHUB_TOKEN"),
                           docs_url=args.docs_url or result.docs_url, check_name=args.check_name,
                           baseline=outcome, result_path=args.path, artifact_url=args.artifact_url,
                           post_check=args.post_check, gate=gate)
    for warning in report.warnings:
        print(f"::warning::{command_data(warning)}")
    if report.check_url:
        print(f"check run: {one_line(report.check_url)}")
    print(f"verdict: {report.verdict.upper()}{': ' + one_line(gate.why) if refusing(gate) and gate.why else ''}")
    return EXIT_PASS  # publishing never fails the job; the gate step does
