"""`acp-journeys merge OUT IN...`: the command-line edge of `merge.merge_results`.

Rules of this module: read, merge, write, print; a bad file or parts that cannot be one result
exit 2 with a message naming the file (never a traceback). The merged file is written only when
every part is good; merging never judges the agent's exit code (that is `verify`'s job): 0 when
the merged result was written.
"""

from __future__ import annotations

import argparse
import sys

from acp_journeys.rules import catalog

EXIT_WRITTEN, EXIT_USAGE = 0, 2


def add_parser(sub: argparse._SubParsersAction) -> None:
    merge = sub.add_parser("merge", help="join the result.json files of a matrix into one result",
                           description="Join result.json files of one agent and subject, each of some of "
                                       "the journeys, into one result (judge it with verify).")
    merge.add_argument("out", metavar="OUT", help="where to write the merged result.json")
    merge.add_argument("inputs", nargs="+", metavar="IN", help="the result.json files of the parts")
    merge.add_argument("--expect", action="append", default=[], metavar="IDS",
                       help="journeys that must be in the merged result (ids split by spaces or commas, "
                            "or `all`; repeatable): one missing, from a matrix job that never wrote its "
                            "result, exits 2")


def expected_journeys(options: list[str]) -> list[str]:
    ids: list[str] = []
    for option in options:
        for word in option.replace(",", " ").split():
            if word == "all":
                ids += catalog.JOURNEY_IDS
            elif word in catalog.JOURNEYS_BY_ID:
                ids.append(word)
            else:
                raise ValueError(f"--expect: unknown journey {word}; the journeys are: {', '.join(catalog.JOURNEY_IDS)}")
    return list(dict.fromkeys(ids))


def run(args: argparse.Namespace) -> int:
    from acp_journeys.output import console, result_file
    from acp_journeys.rules.merge import MergeError, merge_results, missing_journeys

    from acp_journeys.cli.common import UsageError, check_outputs

    try:
        check_outputs([("OUT", args.out)], [(f"the input {path}", path) for path in args.inputs])
    except UsageError as exc:  # OUT among the inputs would replace a part: nothing is read or written
        return _error(str(exc))
    try:
        expected = expected_journeys(args.expect)
        if _holds_a_result(args.out):  # `merge p1.json p2.json` meant two inputs, not OUT p1.json
            return _error(f"OUT {args.out} already holds a result, which the merge would replace (did you mean "
                          f"`merge MERGED.json {args.out} ...`?): remove it first or give another OUT")
        parts = [(path, result_file.read(path)) for path in args.inputs]
        merged = merge_results(parts)
    except (ValueError, result_file.ResultFileError, MergeError) as exc:
        return _error(str(exc))
    missing = missing_journeys(merged, expected)
    if missing:
        return _error(f"no result for {', '.join(missing)} in {len(parts)} file(s): did a matrix job stop "
                      "before it wrote its result.json?")
    try:
        result_file.write(merged, args.out)
    except OSError as exc:
        return _error(f"cannot write {args.out}: {exc.strerror or exc}")
    print(console.table(merged))
    print(f"merged {len(parts)} result(s), {len(merged.journeys)} journey(s): {args.out} "
          f"(verdict {merged.verdict})")
    return EXIT_WRITTEN


def _holds_a_result(path: str) -> bool:
    """Whether `path` is a file that starts as a result.json of ours does (its schema first)."""
    import os

    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return b'"schema"' in head and b'"acp-journeys/result/' in head


def _error(message: str) -> int:
    from acp_journeys.output.logtext import one_line

    print(f"acp-journeys: error: {one_line(message)}", file=sys.stderr)  # it quotes the parts' fields
    return EXIT_USAGE
