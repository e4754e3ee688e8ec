#!/usr/bin/env bash
# Build an agent image for docker mode from a PyPI agent (agentao's for its CI test, through
# scripts/setup/build-agentao-image.sh; the others for the recipes in docs/model-stub.md that are tried
# by hand): no registry pull, FROM the local
# debootstrap base (Debian 12, python3.11), the requirement installed into its Python from wheels
# downloaded on the host for the base's Python, C library and machine; EXECUTABLE must then be on
# PATH. Skips when an image of the same requirement and base exists.
# Usage: build-pypi-agent-image.sh REQUIREMENT IMAGE EXECUTABLE
#   e.g. build-pypi-agent-image.sh 'hermes-agent[acp]==0.19.0' acp-journeys/hermes-agent:dev hermes-acp
#        build-pypi-agent-image.sh 'gptme[acp]==0.35.1' acp-journeys/gptme-agent:dev gptme-acp
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
[ $# -eq 3 ] || { echo "usage: $0 REQUIREMENT IMAGE EXECUTABLE" >&2; exit 2; }
requirement="$1"
image="$2"
executable="$3"
base="acp-journeys/base:bookworm"
ctx="$here/build/agent-image-context"
say() { printf 'build-pypi-agent-image: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

if ! docker image inspect "$base" >/dev/null 2>&1; then
    say "the local base $base is missing: building it"
    "$here/scripts/setup/build-base-image.sh" "$base"
fi
base_id="$(docker image inspect --format '{{.Id}}' "$base")"
want="$requirement $base_id"
have="$(docker image inspect --format '{{index .Config.Labels "org.acp-journeys.pypi-requirement"}} {{index .Config.Labels "org.acp-journeys.base-id"}}' "$image" 2>/dev/null || true)"
if [ "$have" = "$want" ]; then
    say "$image holds $requirement on this base: nothing to do"
    exit 0
fi

read -r pyver glibc arch < <(docker run --rm --network none --entrypoint python3 "$base" -c \
    'import platform, sys; print("%d.%d" % sys.version_info[:2], platform.libc_ver()[1] or "none", platform.machine())') \
    || die "cannot run python3 in $base"
platforms=()
for minor in $(seq 17 "${glibc#2.}"); do platforms+=(--platform "manylinux_2_${minor}_${arch}"); done
platforms+=(--platform "manylinux2014_${arch}")
host_python="$here/.venv/bin/python"
[ -x "$host_python" ] || host_python=python3

rm -rf "$ctx"
mkdir -p "$ctx/wheels"
say "downloading the wheels of $requirement for Python $pyver, glibc $glibc, $arch"
"$host_python" -m pip download --quiet --dest "$ctx/wheels" --only-binary=:all: --python-version "$pyver" \
    "${platforms[@]}" "$requirement" pip 2> >(grep -v "^WARNING: Location" >&2) || die "pip download failed"
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $base
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_BREAK_SYSTEM_PACKAGES=1 PYTHONDONTWRITEBYTECODE=1
COPY wheels /tmp/wheels
RUN python3 "\$(ls /tmp/wheels/pip-*.whl | head -n1)/pip" install --no-index --find-links /tmp/wheels \
        "$requirement" && rm -rf /tmp/wheels && command -v "$executable"
LABEL org.acp-journeys.pypi-requirement="$requirement" org.acp-journeys.base-id="$base_id"
DOCKERFILE
say "building $image from $base (no pull)"
start=$(date +%s)
# No network: everything it installs is in the context (and the build needs no bridge).
docker build --pull=false --network none -t "$image" "$ctx" >"$ctx.log" 2>&1 \
    || { tail -n 30 "$ctx.log" >&2; die "docker build failed (log: $ctx.log)"; }
rm -rf "$ctx"
say "built $image in $(( $(date +%s) - start )) s"
