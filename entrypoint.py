#!/usr/bin/env python3
"""The runner image's entry point: the same main as the `acp-journeys` command."""

from acp_journeys.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
