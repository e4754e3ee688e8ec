"""`acp-journeys mcp-server`: the rondar MCP tools on stdio, for an agent author to try by hand.

Rules of this module: a thin edge over `services.mcp_hub.serve_stdio`; nothing is recorded.
"""

from __future__ import annotations

import argparse

from acp_journeys.cli.common import EXIT_PASS


def add_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("mcp-server", help="serve the rondar MCP tools on stdio (to try them by hand)")


def run(args: argparse.Namespace) -> int:
    import asyncio  # here: every command's parser imports this module

    from acp_journeys.services.mcp_hub import serve_stdio

    asyncio.run(serve_stdio())
    return EXIT_PASS
