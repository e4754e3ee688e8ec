#!/usr/bin/env bash
# Build an agent image for docker mode from a host venv, BY HAND: it is for trying the recipes in
# docs/model-stub.md (kimi-cli, which needs Python 3.12+), and is not run in CI. No registry pull:
# FROM the local debootstrap base (Debian 12, python3.11), plus the venv and the Python
# installation prefix it was made from, each at its SAME path (a venv is not relocatable), as
# scripts/setup/build-vibe-image.sh does for Vibe. Host and base are both Debian 12, so the shared
# libraries the copy links to are Debian's own: each one's package is found on the host
# (dpkg -S) and installed in the image with apt only when the base lacks it. The build then
# checks that nothing is left unresolved (but in a wheel's vendored `*.libs`, whose files find
# each other through the RPATH of the module that loads them) and that EXECUTABLE (in the venv's bin) runs with
# --version. The venv's bin is put first on PATH. Skips when an image of the same venv and base exists.
# Usage: build-venv-agent-image.sh VENV IMAGE EXECUTABLE
#   e.g. python3.13 -m venv build/kimi-venv && build/kimi-venv/bin/pip install kimi-cli==1.50.0
#        build-venv-agent-image.sh build/kimi-venv acp-journeys/kimi-agent:dev kimi
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
[ $# -eq 3 ] || { echo "usage: $0 VENV IMAGE EXECUTABLE" >&2; exit 2; }
venv="$(cd "$1" && pwd)"
image="$2"
executable="$3"
base="acp-journeys/base:bookworm"
ctx="$here/build/venv-agent-context"
say() { printf 'build-venv-agent-image: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

[ -x "$venv/bin/$executable" ] || die "no $executable in $venv/bin"
read -r prefix pyver < <("$venv/bin/python" -c 'import sys; print(sys.base_prefix, "%d.%d" % sys.version_info[:2])') \
    || die "the venv's Python does not run"
case "$prefix" in
/ | /usr | /usr/local) die "the venv's Python lives in $prefix, shared with the system: it cannot be copied whole" ;;
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
want="$venv/bin/$executable $venv_id $base_id"
have="$(docker image inspect --format '{{index .Config.Labels "org.acp-journeys.venv-executable"}} {{index .Config.Labels "org.acp-journeys.venv-id"}} {{index .Config.Labels "org.acp-journeys.base-id"}}' "$image" 2>/dev/null || true)"
if [ "$have" = "$want" ]; then
    say "$image holds this venv ($venv) on this base: nothing to do"
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
        -not -path "$prefix/lib/python$pyver/site-packages/*" -not -name '_tkinter*' -print0 2>/dev/null \
    | xargs -0 -r sh -c 'for f; do if head -c4 "$f" | grep -q ELF; then ldd "$f"; fi; done 2>/dev/null; true' sh \
    | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u \
    | while read -r lib; do
        case "$lib" in "$prefix"/* | "$venv"/*) continue ;; esac
        real="$(readlink -f "$lib")"
        pkg="$( { dpkg -S "$lib" || dpkg -S "$real" || dpkg -S "/usr$lib" || dpkg -S "${real#/usr}"; } 2>/dev/null | head -n1 | cut -d: -f1)"
        if [ -n "$pkg" ]; then echo "$pkg"; else say "warning: $lib belongs to no Debian package here; the image check decides"; fi
    done | sort -u | tr '\n' ' ' | sed 's/ $//')"
say "libraries of the copy come from: ${packages:-nothing outside it}"
read -r -a package_list <<<"$packages"
missing="$(docker run --rm --network none --entrypoint sh "$base" -c \
    'for p; do dpkg -s "$p" >/dev/null 2>&1 || printf "%s " "$p"; done' sh "${package_list[@]}")"
[ -z "$missing" ] || say "the base lacks: $missing(installed with apt in the build, which then needs the network)"

rm -rf "$ctx"
mkdir -p "$ctx"
trap 'rm -rf "$ctx"' EXIT  # hundreds of megabytes, needed only by the build
say "packing Python $pyver ($prefix) and the venv at their own paths"
tar -C / "${excludes[@]}" --exclude='__pycache__/*.opt-*.pyc' -cf "$ctx/payload.tar" "${prefix#/}" "${venv#/}"
say "payload: $(du -sh "$ctx/payload.tar" | cut -f1)"
cat >"$ctx/Dockerfile" <<'DOCKERFILE'
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG MISSING VENV EXECUTABLE
# Only what the base lacks, from the Debian mirror in the base's own apt sources.
RUN set -e; if [ -n "$MISSING" ]; then \
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $MISSING \
        && rm -rf /var/lib/apt/lists/*; \
    fi
ADD payload.tar /
ENV PATH="${VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
RUN set -e; \
    unresolved="$(find "$VENV" "$(readlink -f "$VENV/bin/python")" -path '*.libs/*' -prune -o -type f \
        \( -name '*.so' -o -name '*.so.*' -o -name 'python3*' \) -exec ldd {} + 2>/dev/null | grep 'not found' | sort -u || true)"; \
    [ -z "$unresolved" ] || { echo "unresolved libraries: $unresolved" >&2; exit 1; }; \
    "$VENV/bin/python" -c 'import ssl, sqlite3, ctypes, lzma, bz2' && "$EXECUTABLE" --version && command -v "$EXECUTABLE"
DOCKERFILE

network=(--network none)
[ -z "$missing" ] || network=()
say "building $image from $base (no pull)"
start=$(date +%s)
timeout 900 docker build --pull=false --force-rm "${network[@]}" \
    --build-arg "BASE_IMAGE=$base" --build-arg "MISSING=$missing" --build-arg "VENV=$venv" \
    --build-arg "EXECUTABLE=$executable" \
    --label "org.acp-journeys.venv-executable=$venv/bin/$executable" --label "org.acp-journeys.venv-id=$venv_id" \
    --label "org.acp-journeys.venv-python=$prefix" --label "org.acp-journeys.base-id=$base_id" \
    -t "$image" "$ctx" >"$ctx.log" 2>&1 || { tail -n 40 "$ctx.log" >&2; die "docker build failed (log: $ctx.log)"; }
say "built $image in $(( $(date +%s) - start )) s: $executable on PATH (the venv's bin first)"
