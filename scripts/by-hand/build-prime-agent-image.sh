#!/usr/bin/env bash
# Build a prime-agent image for docker mode, BY HAND: it is for trying the prime-agent recipe in
# docs/model-stub.md, and is not run in CI (prime-agent is in no package registry: it is built from
# its source, as that recipe says). No registry pull. Two layers of images:
#  - IMAGE-kernel: the kernel venv (PRIME_AGENT_KERNEL_PYTHON) and its Python prefix at their own
#    paths, by scripts/by-hand/build-venv-agent-image.sh (a venv is not relocatable);
#  - IMAGE: that, plus the built source tree at /opt/prime-agent, the given node (22.8 or newer;
#    prime-agent refuses 20) at /opt/prime-agent-node/node, Debian's procps (as the host has; the
#    packages fetched with `apt-get download`), and /usr/local/bin/prime-agent, a script that runs
#    the bundle's cli.js with that node. The PATH is the base's again (not the venv's bin first).
# Usage: build-prime-agent-image.sh SOURCE NODE KERNEL_VENV [IMAGE]
#   SOURCE: the checkout of the tag, built (packages/coding-agent/dist/bundle/cli.js exists)
#   e.g. build-prime-agent-image.sh ../prime-agent ../node22/bin/node ../prime-kernel acp-journeys/prime-agent:dev
#   then run with --setting PRIME_AGENT_KERNEL_PYTHON=KERNEL_VENV/bin/python (its path on the host)
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
[ $# -ge 3 ] && [ $# -le 4 ] || { echo "usage: $0 SOURCE NODE KERNEL_VENV [IMAGE]" >&2; exit 2; }
source_dir="$(cd "$1" && pwd)"
node="$(readlink -f "$2")"
kernel="$(cd "$3" && pwd)"
image="${4:-acp-journeys/prime-agent:dev}"
ctx="$here/build/prime-agent-context"
say() { printf 'build-prime-agent-image: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

[ -f "$source_dir/packages/coding-agent/dist/bundle/cli.js" ] || die "no packages/coding-agent/dist/bundle/cli.js in $source_dir: build it first"
"$node" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 8) ? 0 : 1)' \
    || die "$node is not node 22.8 or newer"
[ -x "$kernel/bin/python" ] || die "no bin/python in $kernel"

"$here/scripts/by-hand/build-venv-agent-image.sh" "$kernel" "$image-kernel" python

debs="$here/build/claude-acp-debs"  # shared with build-claude-acp-image.sh: the same two packages
mkdir -p "$debs"
for pkg in procps libproc2-0; do
    v="$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null)" || die "$pkg is not installed here (a Debian 12 host is needed)"
    ls "$debs/${pkg}_"*.deb >/dev/null 2>&1 \
        || (cd "$debs" && timeout 300 flock /tmp/apt.lock apt-get download -q "$pkg=$v" >&2) || die "apt-get download $pkg=$v failed"
done

rm -rf "$ctx"
mkdir -p "$ctx/debs"
trap 'rm -rf "$ctx"' EXIT  # half a gigabyte, needed only by the build
cp "$debs"/procps_*.deb "$debs"/libproc2-0_*.deb "$ctx/debs/"
cp "$node" "$ctx/node"
say "packing the source tree ($(du -sh "$source_dir" | cut -f1))"
tar -C "$source_dir" --exclude=./.git -cf "$ctx/prime-agent.tar" .
printf '#!/bin/sh\nexec /opt/prime-agent-node/node /opt/prime-agent/packages/coding-agent/dist/bundle/cli.js "$@"\n' \
    >"$ctx/prime-agent"
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $image-kernel
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
COPY debs /tmp/debs
RUN dpkg -i /tmp/debs/*.deb && rm -rf /tmp/debs
COPY node /opt/prime-agent-node/node
ADD prime-agent.tar /opt/prime-agent/
COPY prime-agent /usr/local/bin/prime-agent
RUN chmod 755 /usr/local/bin/prime-agent && ! ldd /opt/prime-agent-node/node | grep 'not found' \\
    && prime-agent --version && "$kernel/bin/python" -c 'import ipykernel, dill'
DOCKERFILE
say "building $image from $image-kernel (no pull)"
start=$(date +%s)
timeout 900 docker build --pull=false --force-rm --network none -t "$image" "$ctx" >"$ctx.log" 2>&1 \
    || { tail -n 30 "$ctx.log" >&2; die "docker build failed (log: $ctx.log)"; }
say "built $image in $(( $(date +%s) - start )) s: prime-agent on PATH, kernel Python at $kernel/bin/python"
