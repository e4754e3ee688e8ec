#!/usr/bin/env bash
# The main job on the embedded default: all 7 journeys against the bundled reference agent.
# Does its own set-up (venv, install). Extra arguments go to `acp-journeys run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
exec .venv/bin/acp-journeys run --demo "$@"
