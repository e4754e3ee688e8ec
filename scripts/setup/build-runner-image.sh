#!/usr/bin/env bash
# Build the runner image (default acp-journeys/runner:dev) with no registry: wheels for the
# project and its dependencies are downloaded on the host (where pip works), put in a context
# folder (build/runner-context/wheels), and the Dockerfile installs from them alone. The base is
# $ACP_JOURNEYS_BASE_IMAGE, default the local debootstrap base (built when missing). Nothing is
# pulled. Usage: build-runner-image.sh [IMAGE]
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
image="${1:-${ACP_JOURNEYS_RUNNER_IMAGE:-acp-journeys/runner:dev}}"
local_base="acp-journeys/base:bookworm"
base="${ACP_JOURNEYS_BASE_IMAGE:-$local_base}"
ctx="$here/build/runner-context"

say() { printf 'build-runner-image: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

if ! docker image inspect "$base" >/dev/null 2>&1; then
    [ "$base" = "$local_base" ] || die "base image $base is missing (no pull is made)"
    say "the local base $base is missing: building it"
    "$here/scripts/setup/build-base-image.sh" "$base"
fi

# Wheels must fit the base's Python, C library and machine, not this host's.
read -r pyver glibc arch < <(docker run --rm --network none --entrypoint python3 "$base" -c \
    'import platform, sys; print("%d.%d" % sys.version_info[:2], platform.libc_ver()[1] or "none", platform.machine())') \
    || die "cannot run python3 in $base"
[ "$glibc" != none ] || die "$base has no glibc; only glibc bases are supported"
platforms=()
for minor in $(seq 17 "${glibc#2.}"); do platforms+=(--platform "manylinux_2_${minor}_${arch}"); done
platforms+=(--platform "manylinux2014_${arch}")
say "base $base: Python $pyver, glibc $glibc, $arch"

host_python="${PYTHON:-}"
if [ -z "$host_python" ]; then
    if [ -x "$here/.venv/bin/python" ]; then host_python="$here/.venv/bin/python"; else host_python=python3; fi
fi

rm -rf "$ctx"
mkdir -p "$ctx/wheels" "$ctx/src"
# A clean copy of the sources: a wheel built in place could pick up stale build/ files.
cp "$here/pyproject.toml" "$ctx/"
[ -f "$here/README.md" ] && cp "$here/README.md" "$ctx/"
if [ -f "$here/entrypoint.py" ]; then
    cp "$here/entrypoint.py" "$ctx/"
else
    printf 'from acp_journeys.cli import main\n\nraise SystemExit(main())\n' >"$ctx/entrypoint.py"
fi
tar -C "$here" --exclude=__pycache__ --exclude='*.egg-info' -cf - src | tar -C "$ctx" -xf -

say "building the project wheel and downloading its dependencies' wheels on the host"
"$host_python" -m pip wheel --quiet --no-deps --wheel-dir "$ctx/wheels" "$ctx" >/dev/null \
    || die "pip wheel failed"
rm -rf "$ctx/build" "$ctx"/src/*.egg-info
"$host_python" -m pip download --quiet --dest "$ctx/wheels" --only-binary=:all: \
    --python-version "$pyver" "${platforms[@]}" "$ctx"/wheels/acp_journeys-*.whl pip \
    2> >(grep -v "^WARNING: Location" >&2) \
    || die "pip download failed"
say "$(ls "$ctx/wheels" | wc -l) wheels in the context"

say "building $image from $base (no pull)"
start=$(date +%s)
docker build --pull=false --build-arg "BASE_IMAGE=$base" -f "$here/Dockerfile" -t "$image" "$ctx" \
    >"$ctx.log" 2>&1 || { tail -n 40 "$ctx.log" >&2; die "docker build failed (log: $ctx.log)"; }
say "built $image in $(( $(date +%s) - start )) s"
