from acp_journeys.cli import main

raise SystemExit(main())
