#!/usr/bin/env bash
# Build the local base image (default acp-journeys/base:bookworm) with no registry: debootstrap a
# minimal Debian bookworm rootfs with python3 and ca-certificates, then `docker import` it.
# Skips when the image exists. The Debian mirror is the one apt uses on this machine, read from
# its sources at run time (never written here), so whatever apt reaches, debootstrap reaches.
set -euo pipefail

image="${1:-${ACP_JOURNEYS_LOCAL_BASE:-acp-journeys/base:bookworm}}"
suite=bookworm

say() { printf 'build-base-image: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

if docker image inspect "$image" >/dev/null 2>&1; then
    say "$image exists: nothing to do"
    exit 0
fi
[ "$(id -u)" = 0 ] || die "debootstrap needs root"

# The first Debian mirror of an active apt source (deb822 *.sources or one-line *.list) that
# serves the suite itself; security and update suites live elsewhere or lack the base packages.
find_mirror() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        case "$f" in
        *.sources)
            awk -v suite="$suite" '
                function flush() { if (uris != "" && types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ")) { split(uris, u, " "); print u[1]; exit } uris=""; suites=""; types="" }
                /^[[:space:]]*$/ { flush(); next }
                /^[[:space:]]*#/ { next }
                /^Types:/ { sub(/^Types:[[:space:]]*/, ""); types=$0 }
                /^URIs:/ { sub(/^URIs:[[:space:]]*/, ""); uris=$0 }
                /^Suites:/ { sub(/^Suites:[[:space:]]*/, ""); suites=$0 }
                END { flush() }' "$f"
            ;;
        *)
            # deb [options] URI SUITE COMPONENTS...
            awk -v suite="$suite" '$1 == "deb" { i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } if ($(i+1) == suite) { print $i; exit } }' "$f"
            ;;
        esac
    done | grep -m1 . || true
}

mirror="${ACP_JOURNEYS_DEBIAN_MIRROR:-$(find_mirror)}"
[ -n "$mirror" ] || die "no apt source for $suite found in the apt sources; set ACP_JOURNEYS_DEBIAN_MIRROR"

if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die "apt-get update failed"
    apt-get install -y -qq debootstrap >/dev/null || die "apt-get install debootstrap failed"
fi

root="$(mktemp -d -t acp-journeys-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT
say "debootstrap $suite (minbase + python3, ca-certificates) from the apt mirror into a temp folder"
start=$(date +%s)
debootstrap --variant=minbase --include=python3,ca-certificates "$suite" "$root" "$mirror" \
    >"$root.log" 2>&1 || { tail -n 30 "$root.log" >&2; rm -f "$root.log"; die "debootstrap failed"; }
rm -f "$root.log"
# apt caches and lists are dead weight in an image that never runs apt-get update by itself.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
say "debootstrap took $(( $(date +%s) - start )) s; importing as $image"
tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
say "built $image"
