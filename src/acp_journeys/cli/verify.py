"""`acp-journeys verify FILE`: judge a result.json again from its evidence.

Rules of this module: the verdict is the judge's, from the stored evidence; the stored verdicts
are only compared with it. This path loads no launcher, no service and no event loop.
"""

from __future__ import annotations

import argparse
import sys

from acp_journeys.cli.common import (EXIT_FAIL, EXIT_USAGE, UsageError, add_report_options, check_outputs,
                                     journey_ids, judged, load_baseline, publish, read_result)
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
    verify.add_argument("--tier", action="append", default=[], choices=("protocol",), dest="tiers",
                        help="let a tier count for the exit code: with `protocol`, a failed MUST check of "
                             "the protocol tier (or a file without that tier) fails")
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
    stored_tier = stored.tiers.protocol if stored.tiers else None
    judged_tier = result.tiers.protocol if result.tiers else None
    if stored_tier is not None and judged_tier is not None and \
            [(c.id, c.verdict) for c in stored_tier.checks] != [(c.id, c.verdict) for c in judged_tier.checks]:
        print("note: the stored verdicts of the protocol tier do not match its evidence; the tier above is the "
              "one computed from the evidence", file=sys.stderr)
    if "protocol" in args.tiers:
        code = _protocol_gate(result, args.path, code)
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


def _protocol_gate(result, path: str, code: int) -> int:
    """`verify --tier protocol`: a MUST failure of the tier, re-judged from its evidence, fails."""
    from acp_journeys.rules.protocol_tier import must_failures

    if result.tiers is None or result.tiers.protocol is None:
        print(f"acp-journeys: {path} holds no protocol tier: run with --tier protocol", file=sys.stderr)
        return code if code == EXIT_USAGE else EXIT_FAIL
    failed = must_failures(result)
    if failed:
        print(f"acp-journeys: the protocol tier fails: MUST checks {one_line(', '.join(c.id for c in failed))}",
              file=sys.stderr)
        return code if code == EXIT_USAGE else EXIT_FAIL
    if result.tiers.protocol.verdict != "pass":
        print("acp-journeys: the protocol tier fails: no MUST check could be judged (see the skipped checks)",
              file=sys.stderr)
        return code if code == EXIT_USAGE else EXIT_FAIL
    return code
