"""`python -m acp_journeys`: the command line (see acp_journeys.cli)."""

from acp_journeys.cli import main

raise SystemExit(main())
