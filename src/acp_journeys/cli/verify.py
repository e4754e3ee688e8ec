"""`acp-journeys verify FILE`: judge a result.json again from its evidence.

Rules of this module: the verdict is the judge's, from the stored evidence; the stored verdicts
are only compared with it. This path loads no launcher, no service and no event loop.
"""

from __future__ import annotations

import argparse
import sys

from acp_journeys.cli.common import (UsageError, add_report_options, check_outputs, journey_ids, judged, load_baseline,
                                     publish, read_result)
from acp_journeys.output.logtext import one_line
from acp_journeys.rules import catalog
from acp_journeys.rules.gate import check_expected_sha, other_subject


def add_parser(sub: argparse._SubParsersAction) -> None:
    verify = sub.add_parser("verify", help="judge a result.json again from its evidence")
    verify.add_argument("path")
    verify.add_argument("--journey", action="append", dest="journeys", metavar="ID",
                        help="a journey the file must hold (repeatable; default: all 7); a file without "
                             "one of them is a partial verdict (exit 1)")
    verify.add_argument("--expect-sha", metavar="SHA",
                        help="refuse the result (verdict REFUSED, exit 1) when it belongs to another commit "
                             "or agent image; an empty value is an error (exit 2), not a check turned off")
    add_report_options(verify)


def run(args: argparse.Namespace) -> int:
    expect_sha = expected_sha(args.expect_sha)
    check_outputs([("--junit", args.junit), ("--html", args.html)],
                  [("the result", args.path), ("--baseline", args.baseline)])
    accepted = journey_ids(args.journeys) if args.journeys else list(catalog.JOURNEY_IDS)
    baseline = load_baseline(args.baseline)
    stored = read_result(args.path)
    result = judged(stored, args.path)
    # A file without some journeys is a partial verdict, unless told to accept that.
    missing = missing_journeys(result, accepted, baseline)
    code = publish(result, args, baseline, missing=missing, expect_sha=expect_sha)
    if missing:
        print(f"acp-journeys: {args.path} lacks the journeys {', '.join(missing)}: a partial verdict; "
              "name the journeys to accept with --journey ID (or list them in the baseline)", file=sys.stderr)
    changed = [j.id for j, s in zip(result.journeys, stored.journeys)
               if j.verdict != s.verdict or [f.id for f in j.failures] != [f.id for f in s.failures]]
    if changed:
        print(f"note: the stored verdicts of {one_line(', '.join(changed))} do not match their evidence; "
              "the verdict above is the one computed from the evidence", file=sys.stderr)
    if expect_sha is not None:
        refused = other_subject(result, expect_sha)
        if refused is not None:
            print(f"acp-journeys: {one_line(refused)}", file=sys.stderr)
    return code


def expected_sha(value: str | None) -> str | None:
    """--expect-sha as given; an empty value (an unset variable of a workflow) is a usage error,
    never a check turned off."""
    try:
        return check_expected_sha(value)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def missing_journeys(result, accepted: list[str], baseline) -> list[str]:
    """The journeys of `accepted` that the result lacks and the baseline does not list."""
    listed = {e.journey for e in baseline.entries} if baseline is not None else set()
    held = {x.id for x in result.journeys}
    return [j for j in accepted if j not in held and j not in listed]
