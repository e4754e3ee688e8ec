#!/usr/bin/env bash
# The whole test suite, with all its set-up: venv and install, a Docker engine (installed and
# started when none runs), the local base and runner images (no registry needed), then pytest.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh test
if [ "${ACP_JOURNEYS_SKIP_DOCKER:-}" != "1" ]; then
  scripts/docker-up.sh
  scripts/build-base-image.sh
  scripts/build-runner-image.sh
fi
chromium="$(scripts/setup-chromium.sh)"; [ -z "$chromium" ] || export ACP_JOURNEYS_CHROMIUM="$chromium"
vibe_acp="$(scripts/setup-vibe.sh)"; [ -z "$vibe_acp" ] || export ACP_JOURNEYS_VIBE_ACP="$vibe_acp"
claude_acp="$(scripts/setup-claude-acp.sh)"; [ -z "$claude_acp" ] || export ACP_JOURNEYS_CLAUDE_ACP="$claude_acp"
agentao="$(scripts/setup-agentao.sh)"; [ -z "$agentao" ] || export ACP_JOURNEYS_AGENTAO="$agentao"
set +e
.venv/bin/python -m pytest "$@"
code=$?
set -e
if [ "$code" = 5 ]; then
  echo "test: pytest collected no test" >&2
  exit 1
fi
exit "$code"
