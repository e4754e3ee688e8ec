"""`acp-journeys verify FILE`: judge a result.json again from its evidence.

Rules of this module: the verdict is the judge's, from the stored evidence; the stored verdicts
are only compared with it. This path loads no launcher, no service and no event loop.
"""

from __future__ import annotations

import argparse
import sys

from acp_journeys.cli.common import (EXIT_FAIL, EXIT_USAGE, add_report_options, journey_ids, judged, load_baseline,
                                     publish, read_result)
from acp_journeys.output.logtext import one_line
from acp_journeys.rules import catalog


def add_parser(sub: argparse._SubParsersAction) -> None:
    verify = sub.add_parser("verify", help="judge a result.json again from its evidence")
    verify.add_argument("path")
    verify.add_argument("--journey", action="append", dest="journeys", metavar="ID",
                        help="a journey the file must hold (repeatable; default: all 7); a file without "
                             "one of them is a partial verdict (exit 1)")
    verify.add_argument("--expect-sha", metavar="SHA",
                        help="also fail when the result belongs to another commit or agent image")
    verify.add_argument("--tier", action="append", default=[], choices=("protocol",), dest="tiers",
                        help="let a tier count for the exit code: with `protocol`, a failed MUST check of "
                             "the protocol tier (or a file without that tier) fails")
    add_report_options(verify)


def run(args: argparse.Namespace) -> int:
    accepted = journey_ids(args.journeys) if args.journeys else list(catalog.JOURNEY_IDS)
    baseline = load_baseline(args.baseline)
    stored = read_result(args.path)
    result = judged(stored, args.path)
    code = publish(result, args, baseline)
    # A file without some journeys is a partial verdict, unless told to accept that.
    listed = {e.journey for e in baseline.entries} if baseline is not None else set()
    missing = [j for j in accepted if j not in {x.id for x in result.journeys} and j not in listed]
    if missing:
        print(f"acp-journeys: {args.path} lacks the journeys {', '.join(missing)}: a partial verdict; "
              "name the journeys to accept with --journey ID (or list them in the baseline)", file=sys.stderr)
        code = code if code == EXIT_USAGE else EXIT_FAIL
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
    if args.expect_sha:
        tested = {result.subject.get("sha"), result.subject.get("image")} - {None}
        if not any(args.expect_sha == t or (len(args.expect_sha) >= 7 and t.startswith(args.expect_sha))
                   for t in tested):
            what = one_line(", ".join(sorted(tested))) or "no recorded commit or image"
            print(f"acp-journeys: this result is not of {args.expect_sha}: it tested {what}", file=sys.stderr)
            return EXIT_FAIL
    return code



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
