"""The runner image's entry point: the acp-journeys command line."""

from acp_journeys.cli import main

raise SystemExit(main())
