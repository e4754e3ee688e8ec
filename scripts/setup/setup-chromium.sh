#!/usr/bin/env bash
# Make sure a headless Chromium is at hand for the HTML report's browser tests and benchmark:
# Debian's `chromium` package, installed with apt-get (under flock /tmp/apt.lock, so that two
# set-ups never run apt at once) when it is missing on a Debian machine run as root. Elsewhere an
# installed Chromium or Chrome is used when one runs. Prints the browser's path on stdout and
# nothing else; with none, it says why on stderr and prints nothing, so the tests skip with a
# reason. Idempotent. ACP_JOURNEYS_SKIP_CHROMIUM=1: do nothing.
#
# No version pin: Debian's security archive keeps only the newest build of chromium, so a pinned
# version would stop installing at the next security update; the version is printed instead.
set -euo pipefail
exec 3>&1 1>&2  # everything but the path goes to stderr

say() { printf 'setup-chromium: %s\n' "$*" >&2; }
if [ "${ACP_JOURNEYS_SKIP_CHROMIUM:-}" = "1" ]; then
    say "ACP_JOURNEYS_SKIP_CHROMIUM=1: no browser, the browser tests skip"
    exit 0
fi

runs() { timeout 60 "$1" --headless --no-sandbox --version >/dev/null 2>&1; }

found() {
    say "using $1 ($(timeout 60 "$1" --version 2>/dev/null | head -1))"
    printf '%s\n' "$1" >&3
    exit 0
}

path=$(command -v chromium || true)
if [ -n "$path" ] && runs "$path"; then found "$path"; fi

debian=no
if [ -r /etc/os-release ] && grep -qx 'ID=debian' /etc/os-release; then debian=yes; fi
if [ "$debian" = yes ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    say "installing Debian's chromium package"
    if ! apt-cache policy chromium 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        timeout 300 flock /tmp/apt.lock apt-get update -qq >/dev/null 2>&1 || say "warning: apt-get update failed"
    fi
    if timeout 900 flock /tmp/apt.lock apt-get install -y -qq --no-install-recommends chromium >/dev/null; then
        path=$(command -v chromium || true)
        if [ -n "$path" ] && runs "$path"; then found "$path"; fi
    fi
    say "apt-get install chromium failed"
fi

# Not Debian (a GitHub runner has Google Chrome), or no root: a browser that is already here.
for name in google-chrome chromium-browser google-chrome-stable; do
    path=$(command -v "$name" || true)
    if [ -n "$path" ] && runs "$path"; then found "$path"; fi
done
say "no Chromium: the HTML report's browser tests skip"
exit 0
