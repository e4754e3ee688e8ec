#!/usr/bin/env bash
# Build the static helper binaries (holder, relay) on this machine into build/helpers/ (or $1),
# with the same flags as the runner Dockerfile's helper stage. Needs gcc and a static libc.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$here/build/helpers}"
src="$here/src/acp_journeys/launch/agent_side"
mkdir -p "$out"
for name in holder relay; do
    gcc -static -O2 -Wall -Wextra -o "$out/$name" "$src/$name.c"
    strip "$out/$name" 2>/dev/null || true
done
printf 'build-helpers: built holder and relay into %s\n' "$out" >&2
