#!/usr/bin/env bash
# Build the agentao agent image (default acp-journeys/agentao-agent:dev) for the docker-mode test
# of agentao: scripts/setup/build-pypi-agent-image.sh with agentao's pinned version, `agentao` on PATH.
# Usage: build-agentao-image.sh [VERSION [IMAGE]]
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
exec "$here/scripts/setup/build-pypi-agent-image.sh" "agentao==${1:-0.5.17}" \
    "${2:-${ACP_JOURNEYS_AGENTAO_IMAGE:-acp-journeys/agentao-agent:dev}}" agentao
