"""What the commands share: the exit codes, the usage error, and the steps that `run`, `verify`
and `report` take alike (reading a result, judging it, loading a baseline, publishing).

Rules of this module: no command of its own; every error the user can fix is a `UsageError`
(exit 2, one line, no traceback).
"""

from __future__ import annotations

import argparse
import sys

from acp_journeys.output.logtext import one_line
from acp_journeys.rules import catalog

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def add_report_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--junit", metavar="PATH", help="also write a JUnit XML report")
    parser.add_argument("--html", metavar="OUT", help="also write a self-contained HTML report with a timeline "
                                                      "of each journey")
    parser.add_argument("--baseline", metavar="FILE",
                        help="expected failures (YAML): pass when only these fail; a stale entry fails")


def check_outputs(outputs: list[tuple[str, str | None]], inputs: list[tuple[str, str | None]]) -> None:
    """Before any work: no output may be a folder, name an input or another output (by path, link or
    hard link), so that no file is overwritten by mistake (`verify r.json --html r.json`). Each item
    is (the option as the user wrote it, the path or None)."""
    import os

    def same(a: str, b: str) -> bool:
        if os.path.realpath(a) == os.path.realpath(b):
            return True
        try:
            return os.path.samefile(a, b)
        except OSError:
            return False  # one of them does not exist yet: then they are not one file

    given = [(option, path) for option, path in outputs if path]
    for i, (option, path) in enumerate(given):
        if os.path.isdir(path):
            raise UsageError(f"{option} {path} is a folder: give the file to write")
        for other_option, other in [*((o, p) for o, p in inputs if p), *given[:i]]:
            if same(path, other):
                raise UsageError(f"{option} {path} is also {other_option}: it would be overwritten; "
                                 "give another path")


def journey_ids(ids: list[str]) -> list[str]:
    unknown = [j for j in ids if j not in catalog.JOURNEYS_BY_ID]
    if unknown:
        raise UsageError(f"unknown journey {', '.join(unknown)}; the journeys are: {', '.join(catalog.JOURNEY_IDS)}")
    return list(dict.fromkeys(ids))


def load_baseline(path: str | None):
    if not path:
        return None
    from acp_journeys.output.bounded_file import load_baseline
    from acp_journeys.rules.baseline import BaselineError

    try:
        return load_baseline(path)
    except BaselineError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"--baseline {path}: {exc.strerror or exc}") from None


def gate_of(result, outcome, *, missing: list[str] | tuple[str, ...] = (), expect_sha: str | None = None):
    """The gate's word on `result` (under the baseline's `outcome`, when there is one)."""
    from acp_journeys.rules.gate import gate

    return gate(result, outcome.verdict if outcome is not None else result.verdict, missing=missing,
                expect_sha=expect_sha)


def refusing(gate) -> bool:
    return gate.word in ("PARTIAL", "REFUSED")


def publish(result, args: argparse.Namespace, baseline, *, missing: list[str] | tuple[str, ...] = (),
            expect_sha: str | None = None) -> int:
    """The table, the baseline's word and the JUnit file; returns the exit code of the gate's word
    (`missing`: journeys the result must hold and lacks; `expect_sha`: the commit it must be of)."""
    from acp_journeys.output import console

    outcome = None
    if baseline is not None:
        from acp_journeys.rules.baseline import apply_baseline

        outcome = apply_baseline(result, baseline)
    gate = gate_of(result, outcome, missing=missing, expect_sha=expect_sha)
    print(console.table(result, gate))
    from acp_journeys.output.protocol_tier import console_text

    if tier_text := console_text(result):  # the protocol tier: its own table and verdict
        print("\n" + tier_text)
    if outcome is not None:
        print("")
        for message in outcome.messages:
            print(f"baseline: {one_line(message)}")
        word = gate.word if refusing(gate) else outcome.verdict.upper()
        print(f"verdict under the baseline: {word}")
    if args.junit:
        from acp_journeys.output.junit import write_junit

        write_junit(result, args.junit, docs_url=result.docs_url, baseline=outcome)
        print(f"junit: {args.junit}")
    if args.html and not write_html(result, args.html, result.docs_url, outcome, gate):
        return EXIT_USAGE
    ours = [j.id for j in result.journeys if any(f.id == "runner-error" for f in j.failures)]
    if ours:
        # Our own failure is no finding about the agent: a gate must not blame the agent for it.
        print(f"acp-journeys: error: acp-journeys itself failed in {one_line(', '.join(ours))} (not a finding about "
              "the agent); see runner_error in the result", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_PASS if gate.passed else EXIT_FAIL


def write_html(result, path: str, docs_url: str, outcome, gate=None) -> bool:
    from acp_journeys.output.html.report import write_html

    try:
        write_html(result, path, docs_url=docs_url, baseline=outcome, gate=gate)
    except OSError as exc:
        print(f"acp-journeys: error: cannot write the HTML report {path}: {exc.strerror or exc}", file=sys.stderr)
        return False
    print(f"html: {path}")
    return True


def read_result(path: str):
    from acp_journeys.output import result_file

    try:
        return result_file.read(path)
    except result_file.ResultFileError as exc:
        raise UsageError(str(exc)) from None


def judged(stored, path: str):
    """The verdict from the evidence; evidence that the judge cannot read is a bad file (exit 2)."""
    from acp_journeys.rules.judge import judge_result
    from acp_journeys.rules.protocol_tier import judge_tiers

    try:
        return judge_tiers(judge_result(stored))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise UsageError(f"{path}: its evidence cannot be judged ({type(exc).__name__}: {exc})") from None
