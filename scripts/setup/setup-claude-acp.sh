#!/usr/bin/env bash
# Install Claude Code's ACP adapter (npm @agentclientprotocol/claude-agent-acp, which brings the
# Claude Code binary through @anthropic-ai/claude-agent-sdk) into build/claude-acp, for the tests
# that run it against the scripted model endpoint. Prints the path of `claude-agent-acp` on
# stdout, nothing else.
#
# It needs node and npm (node 20 runs it, though the package asks for 22). With none, it says so
# and exits 0 with nothing on stdout, so the tests skip with a reason. Idempotent: an install of
# the pinned version is kept. ACP_JOURNEYS_SKIP_CLAUDE=1: do nothing (the tests skip).
set -euo pipefail
exec 3>&1 1>&2  # everything but the path goes to stderr

here="$(cd "$(dirname "$0")/../.." && pwd)"
VERSION=0.101.0
dir="$here/build/claude-acp"
bin="$dir/node_modules/.bin/claude-agent-acp"
say() { printf 'setup-claude-acp: %s\n' "$*" >&2; }

if [ "${ACP_JOURNEYS_SKIP_CLAUDE:-}" = "1" ]; then
    say "ACP_JOURNEYS_SKIP_CLAUDE=1: not installed, its tests skip"
    exit 0
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    say "no node or npm here: claude-agent-acp is not installed, its tests skip"
    exit 0
fi
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
    say "node $(node --version) is older than 20: claude-agent-acp is not installed, its tests skip"
    exit 0
fi
installed() {
    node -e 'console.log(require(process.argv[1]).version)' \
        "$dir/node_modules/@agentclientprotocol/claude-agent-acp/package.json" 2>/dev/null || true
}
if [ -x "$bin" ] && [ "$(installed)" = "$VERSION" ]; then
    say "claude-agent-acp $VERSION is in build/claude-acp: nothing to install"
else
    say "installing @agentclientprotocol/claude-agent-acp@$VERSION (about a minute)"
    rm -rf "$dir"
    mkdir -p "$dir"
    printf '{"private": true}\n' > "$dir/package.json"
    # The npm cache stays under build/ too: nothing outside the repository's build folder.
    if ! (cd "$dir" && timeout 600 npm install --no-audit --no-fund --loglevel=error \
            --cache "$here/build/npm-cache" "@agentclientprotocol/claude-agent-acp@$VERSION" >&2); then
        rm -rf "$dir"
        say "error: npm install failed: its tests skip"
        exit 0
    fi
    [ -x "$bin" ] || { rm -rf "$dir"; say "error: the install has no claude-agent-acp"; exit 0; }
fi
echo "$bin" >&3
