"""`acp-journeys schema`: print the JSON Schema of result.json (the output's own schema)."""

from __future__ import annotations

import argparse
import json

from acp_journeys.cli.common import EXIT_PASS


def add_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("schema", help="print the JSON Schema of result.json")


def run(args: argparse.Namespace) -> int:
    from acp_journeys.output.result_file import json_schema

    print(json.dumps(json_schema(), indent=2))
    return EXIT_PASS
