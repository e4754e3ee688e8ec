"""Where agent processes run: `local` (this machine) or `docker` (one container per journey)."""
