#!/usr/bin/env bash
# Build a Hermes agent image (PyPI hermes-agent with its `acp` extra; default
# acp-journeys/hermes-agent:dev) for docker mode, by hand: no test uses it (Hermes is not in CI).
# No registry pull: FROM the local debootstrap base (Debian 12, python3.11, which hermes-agent
# supports), installed into its Python from wheels downloaded on the host for the base's Python,
# C library and machine. `hermes-acp` lands on PATH. Skips when an image of the same version and
# base exists.
# Usage: build-hermes-image.sh [VERSION [IMAGE]]
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
version="${1:-0.19.0}"
image="${2:-${ACP_JOURNEYS_HERMES_IMAGE:-acp-journeys/hermes-agent:dev}}"
base="acp-journeys/base:bookworm"
ctx="$here/build/hermes-context"
say() { printf 'build-hermes-image: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

if ! docker image inspect "$base" >/dev/null 2>&1; then
    say "the local base $base is missing: building it"
    "$here/scripts/build-base-image.sh" "$base"
fi
base_id="$(docker image inspect --format '{{.Id}}' "$base")"
want="$version $base_id"
have="$(docker image inspect --format '{{index .Config.Labels "org.acp-journeys.hermes-version"}} {{index .Config.Labels "org.acp-journeys.base-id"}}' "$image" 2>/dev/null || true)"
if [ "$have" = "$want" ]; then
    say "$image holds hermes-agent $version on this base: nothing to do"
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
say "downloading the wheels of hermes-agent[acp]==$version for Python $pyver, glibc $glibc, $arch"
"$host_python" -m pip download --quiet --dest "$ctx/wheels" --only-binary=:all: --python-version "$pyver" \
    "${platforms[@]}" "hermes-agent[acp]==$version" pip 2> >(grep -v "^WARNING: Location" >&2) || die "pip download failed"
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $base
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_BREAK_SYSTEM_PACKAGES=1 PYTHONDONTWRITEBYTECODE=1
COPY wheels /tmp/wheels
RUN python3 "\$(ls /tmp/wheels/pip-*.whl | head -n1)/pip" install --no-index --find-links /tmp/wheels \
        "hermes-agent[acp]==$version" && rm -rf /tmp/wheels && command -v hermes-acp
LABEL org.acp-journeys.hermes-version="$version" org.acp-journeys.base-id="$base_id"
DOCKERFILE
say "building $image from $base (no pull)"
start=$(date +%s)
docker build --pull=false -t "$image" "$ctx" >"$ctx.log" 2>&1 \
    || { tail -n 30 "$ctx.log" >&2; die "docker build failed (log: $ctx.log)"; }
rm -rf "$ctx"
say "built $image in $(( $(date +%s) - start )) s"
