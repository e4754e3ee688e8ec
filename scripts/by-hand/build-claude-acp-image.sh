#!/usr/bin/env bash
# Build a Claude Code agent image (default acp-journeys/claude-acp-agent:dev) for docker mode, BY
# HAND: it is for trying the recipe in docs/model-stub.md, and is not run in CI. No registry pull:
# FROM the local debootstrap base (Debian 12), plus the host's node binary (20 or newer) at
# /usr/local/bin/node and the install made by scripts/setup/setup-claude-acp.sh (build/claude-acp, the
# adapter and its Claude Code binary) at /opt/claude-acp; `claude-agent-acp` lands on PATH.
# It also gets Debian's procps (`ps`), which the base lacks: Claude Code finds the processes of a
# Bash tool call to stop them on cancel by listing them with `ps -A -o pid= -o ppid= -o pgid=`;
# with no `ps` a cancelled `sleep 120` is left running (seen in docker mode, 2026-12-02). Its
# packages are fetched on the host with `apt-get download` (the host's versions: Debian 12 too),
# so the build needs no network.
# Node packages are relocatable, so the install need not keep its host path. The host must be a
# glibc system no newer than the base's: the build checks that every ELF file of the copy resolves
# its libraries in the image and that both node and Claude Code start.
# Usage: build-claude-acp-image.sh [IMAGE]
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
image="${1:-acp-journeys/claude-acp-agent:dev}"
base="acp-journeys/base:bookworm"
install="$here/build/claude-acp"
ctx="$here/build/claude-acp-context"
say() { printf 'build-claude-acp-image: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

node="$(command -v node)" || die "no node on PATH"
node="$(readlink -f "$node")"
"$node" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
    || die "node $("$node" --version) is older than 20"
[ -x "$install/node_modules/.bin/claude-agent-acp" ] || die "no install in build/claude-acp: run scripts/setup/setup-claude-acp.sh"
version="$("$node" -e 'console.log(require(process.argv[1]).version)' \
    "$install/node_modules/@agentclientprotocol/claude-agent-acp/package.json")"

if ! docker image inspect "$base" >/dev/null 2>&1; then
    say "the local base $base is missing: building it"
    "$here/scripts/setup/build-base-image.sh" "$base"
fi
base_id="$(docker image inspect --format '{{.Id}}' "$base")"
want="$version $("$node" --version) procps $base_id"
have="$(docker image inspect --format '{{index .Config.Labels "org.acp-journeys.claude-agent-acp-version"}} {{index .Config.Labels "org.acp-journeys.node-version"}} {{index .Config.Labels "org.acp-journeys.with"}} {{index .Config.Labels "org.acp-journeys.base-id"}}' "$image" 2>/dev/null || true)"
if [ "$have" = "$want" ]; then
    say "$image holds claude-agent-acp $version on this node and base: nothing to do"
    exit 0
fi

debs="$here/build/claude-acp-debs"
procps_pkgs=(procps libproc2-0)
mkdir -p "$debs"
for pkg in "${procps_pkgs[@]}"; do
    v="$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null)" || die "$pkg is not installed here (a Debian 12 host is needed)"
    ls "$debs/${pkg}_"*.deb >/dev/null 2>&1 \
        || (cd "$debs" && timeout 300 flock /tmp/apt.lock apt-get download -q "$pkg=$v" >&2) || die "apt-get download $pkg=$v failed"
done

rm -rf "$ctx"
mkdir -p "$ctx/debs"
trap 'rm -rf "$ctx"' EXIT  # 400 MB, needed only by the build
for pkg in "${procps_pkgs[@]}"; do cp "$debs/${pkg}_"*.deb "$ctx/debs/"; done
say "packing node ($("$node" --version)) and claude-agent-acp $version"
cp "$node" "$ctx/node"
tar -C "$install" -cf "$ctx/claude-acp.tar" .
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $base
COPY debs /tmp/debs
RUN dpkg -i /tmp/debs/*.deb && rm -rf /tmp/debs && ps -o pid= -p 1
COPY node /usr/local/bin/node
ADD claude-acp.tar /opt/claude-acp/
RUN set -e; ln -s /opt/claude-acp/node_modules/.bin/claude-agent-acp /usr/local/bin/claude-agent-acp; \\
    unresolved="\$(find /usr/local/bin/node /opt/claude-acp -type f \\( -name '*.node' -o -perm -u+x \\) \\
        -exec sh -c 'for f; do head -c4 "\$f" | grep -q ELF && ldd "\$f"; done; true' sh {} + 2>/dev/null \\
        | grep 'not found' | sort -u || true)"; \\
    [ -z "\$unresolved" ] || { echo "unresolved libraries: \$unresolved" >&2; exit 1; }; \\
    node --version; /opt/claude-acp/node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/claude --version; \\
    command -v claude-agent-acp
LABEL org.acp-journeys.claude-agent-acp-version="$version" org.acp-journeys.node-version="$("$node" --version)" \\
      org.acp-journeys.with=procps org.acp-journeys.base-id="$base_id"
DOCKERFILE
say "building $image from $base (no pull)"
start=$(date +%s)
# No network: everything it installs is in the context (and the build needs no bridge).
timeout 900 docker build --pull=false --force-rm --network none -t "$image" "$ctx" >"$ctx.log" 2>&1 \
    || { tail -n 30 "$ctx.log" >&2; die "docker build failed (log: $ctx.log)"; }
say "built $image in $(( $(date +%s) - start )) s: claude-agent-acp on PATH"
