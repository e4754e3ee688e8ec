#!/usr/bin/env bash
# Build the Mistral Vibe agent image (default acp-journeys/vibe-agent:dev) for docker mode, with
# no registry pull: FROM the local debootstrap base (Debian 12, python3.11; built when missing),
# plus the host's install of Vibe at the SAME paths: the venv made by scripts/setup/setup-vibe.sh and
# the Python installation prefix it was made from (Vibe needs Python 3.12+, the base has 3.11).
# Host and base are both Debian 12, so the shared libraries the copy links to are Debian's own:
# each one's package is found on the host (dpkg -S) and installed in the image with apt only
# when the base lacks it. The build then checks that nothing is left unresolved and that
# `vibe-acp` imports. Skips when an image of the same install and base exists.
# Usage: build-vibe-image.sh [VENV [IMAGE]]
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$(cd "${1:-$here/build/vibe-venv}" && pwd)"
image="${2:-${ACP_JOURNEYS_VIBE_IMAGE:-acp-journeys/vibe-agent:dev}}"
base="acp-journeys/base:bookworm"
ctx="$here/build/vibe-context"

say() { printf 'build-vibe-image: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

[ -x "$venv/bin/vibe-acp" ] || die "no vibe-acp in $venv: run scripts/setup/setup-vibe.sh"
read -r prefix pyver vibe_version < <("$venv/bin/python" -c 'import importlib.metadata as m, sys
print(sys.base_prefix, "%d.%d" % sys.version_info[:2], m.version("mistral-vibe"))') || die "the venv's Python does not run"
case "$prefix" in
/ | /usr | /usr/local)
    # A shared system prefix cannot be copied whole; an image would need that Python from apt.
    say "the venv's Python lives in $prefix, shared with the system: not copied, no image (docker tests skip)"
    exit 0 ;;
esac
case "$venv/" in "$prefix/"*) die "the venv is inside the Python prefix $prefix" ;; esac

if ! docker image inspect "$base" >/dev/null 2>&1; then
    say "the local base $base is missing: building it"
    "$here/scripts/setup/build-base-image.sh" "$base"
fi
base_id="$(docker image inspect --format '{{.Id}}' "$base")"
# This very install: the Python it runs on, its packages, its files (a new venv has new times).
venv_id="$({ "$venv/bin/python" -c 'import sys; print(sys.version)'; "$venv/bin/python" -m pip freeze --all 2>/dev/null;
            find "$venv" -path '*/__pycache__' -prune -o -type f -printf '%P %s %T@\n' | sort; } \
          | sha256sum | cut -c1-16)"
labels='{{index .Config.Labels "org.acp-journeys.vibe-acp"}} {{index .Config.Labels "org.acp-journeys.vibe-version"}}'
labels="$labels"' {{index .Config.Labels "org.acp-journeys.vibe-venv-id"}} {{index .Config.Labels "org.acp-journeys.base-id"}}'
want="$venv/bin/vibe-acp $vibe_version $venv_id $base_id"
have="$(docker image inspect --format "$labels" "$image" 2>/dev/null || true)"
if [ "$have" = "$want" ]; then
    say "$image holds this install of mistral-vibe $vibe_version ($venv) on this base: nothing to do"
    exit 0
fi

# Not copied: the test suite, the static library and build config, IDLE and Tk (their X11 and
# font libraries are not in the base), the prefix's own site-packages (the venv does not use it).
excludes=(--exclude="${prefix#/}/lib/python$pyver/test" --exclude="${prefix#/}/lib/python$pyver/idlelib"
          --exclude="${prefix#/}/lib/python$pyver/tkinter" --exclude="${prefix#/}/lib/python$pyver/turtledemo"
          --exclude="${prefix#/}/lib/python$pyver/config-*" --exclude="${prefix#/}/lib/python$pyver/site-packages"
          --exclude="${prefix#/}/lib/python$pyver/lib-dynload/_tkinter*" --exclude="${prefix#/}/lib/libpython*.a")

# The Debian packages of every shared library the copied ELF files load, as resolved on this host.
# shellcheck disable=SC2016  # the inner sh expands its own $f
packages="$(find "$prefix/bin" "$prefix/lib" "$venv" -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \) \
        -not -path "$prefix/lib/python$pyver/test/*" -not -path "$prefix/lib/python$pyver/config-*" \
        -not -name '_tkinter*' -print0 2>/dev/null \
    | xargs -0 -r sh -c 'for f; do if head -c4 "$f" | grep -q ELF; then ldd "$f"; fi; done 2>/dev/null; true' sh \
    | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u \
    | while read -r lib; do
        case "$lib" in "$prefix"/* | "$venv"/*) continue ;; esac
        real="$(readlink -f "$lib")"
        pkg="$( { dpkg -S "$lib" || dpkg -S "$real" || dpkg -S "/usr$lib" || dpkg -S "${real#/usr}"; } 2>/dev/null | head -n1 | cut -d: -f1)"
        if [ -n "$pkg" ]; then echo "$pkg"; else say "warning: $lib belongs to no Debian package here; the image check decides"; fi
    done | sort -u | tr '\n' ' ' | sed 's/ $//')"
say "libraries of the copy come from: ${packages:-nothing outside it}"

rm -rf "$ctx"
mkdir -p "$ctx"
trap 'rm -f "$ctx/payload.tar"' EXIT  # half a gigabyte, needed only by the build
say "packing Python $pyver ($prefix) and the venv at their own paths"
tar -C / "${excludes[@]}" --exclude='__pycache__/*.opt-*.pyc' -cf "$ctx/payload.tar" "${prefix#/}" "${venv#/}"
say "payload: $(du -sh "$ctx/payload.tar" | cut -f1)"
cat >"$ctx/Dockerfile" <<'DOCKERFILE'
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG PACKAGES VIBE_ACP
# Only what the base lacks, from the Debian mirror in the base's own apt sources.
RUN set -e; missing=; for p in $PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done; \
    if [ -n "$missing" ]; then \
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing \
        && rm -rf /var/lib/apt/lists/*; \
    fi
ADD payload.tar /
RUN set -e; venv="$(dirname "$(dirname "$VIBE_ACP")")"; \
    unresolved="$(find "$venv" "$(readlink -f "$venv/bin/python")" -type f \( -name '*.so' -o -name '*.so.*' -o -name 'python3*' \) \
        -exec ldd {} + 2>/dev/null | grep 'not found' | sort -u || true)"; \
    [ -z "$unresolved" ] || { echo "unresolved libraries: $unresolved" >&2; exit 1; }; \
    "$venv/bin/python" -c 'import ssl, sqlite3, ctypes, lzma, bz2, readline, vibe.acp.entrypoint' \
    && test -x "$VIBE_ACP"
DOCKERFILE

old_id="$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)"
say "building $image from $base (no pull)"
start=$(date +%s)
timeout 900 docker build --pull=false \
    --build-arg "BASE_IMAGE=$base" --build-arg "PACKAGES=$packages" --build-arg "VIBE_ACP=$venv/bin/vibe-acp" \
    --label "org.acp-journeys.vibe-acp=$venv/bin/vibe-acp" --label "org.acp-journeys.vibe-version=$vibe_version" \
    --label "org.acp-journeys.vibe-python=$prefix" --label "org.acp-journeys.vibe-venv-id=$venv_id" \
    --label "org.acp-journeys.base-id=$base_id" \
    -t "$image" "$ctx" >"$ctx.log" 2>&1 || { tail -n 40 "$ctx.log" >&2; die "docker build failed (log: $ctx.log)"; }
# The image this one replaces is half a gigabyte: remove it unless something else still uses it.
if [ -n "$old_id" ] && [ "$old_id" != "$(docker image inspect --format '{{.Id}}' "$image")" ]; then
    docker image rm "$old_id" >/dev/null 2>&1 || true
fi
say "built $image in $(( $(date +%s) - start )) s: vibe-acp at $venv/bin/vibe-acp in the image"
