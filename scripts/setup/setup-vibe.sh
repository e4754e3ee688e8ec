#!/usr/bin/env bash
# Install Mistral Vibe (PyPI mistral-vibe, its ACP agent is `vibe-acp`), the real third-party
# agent the tests run against the scripted model endpoint, into build/vibe-venv; when a Docker
# engine is up (and ACP_JOURNEYS_SKIP_DOCKER is not 1), also build its agent image
# (scripts/setup/build-vibe-image.sh). Prints the path of `vibe-acp` on stdout, nothing else.
#
# Vibe needs Python 3.12 or newer: the first of python3.13 / python3.12 / python3 on PATH that
# runs and is new enough, else the newest such version pyenv has installed, else a Debian package
# that provides one. With none, it says so and exits 0 with nothing on stdout, so the tests skip
# with a reason. Idempotent: an existing venv with the pinned version is kept.
# ACP_JOURNEYS_SKIP_VIBE=1: do nothing (the Vibe tests skip).
#
# The pin: 3.0.2 installs and runs the journeys; 3.0.3 pins certifi==2026.10.19, which the index
# does not serve.
set -euo pipefail
exec 3>&1 1>&2  # everything but the path goes to stderr

here="$(cd "$(dirname "$0")/../.." && pwd)"
VIBE_VERSION=3.0.2
venv="$here/build/vibe-venv"
if [ "${ACP_JOURNEYS_SKIP_VIBE:-}" = "1" ]; then
    printf 'setup-vibe: ACP_JOURNEYS_SKIP_VIBE=1: not installed, its tests skip\n' >&2
    exit 0
fi

say() { printf 'setup-vibe: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }

find_python() {
    local name v root
    # A pyenv shim is on PATH for every installed version but fails unless that version is
    # selected: running it (not `command -v`) is the test.
    for name in python3.13 python3.12 python3; do
        if command -v "$name" >/dev/null 2>&1 && new_enough "$name"; then
            "$name" -c 'import sys; print(sys.executable)'
            return
        fi
    done
    if command -v pyenv >/dev/null 2>&1 || [ -n "${PYENV_ROOT:-}" ] || [ -d "$HOME/.pyenv" ]; then
        root="$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"
        # Newest first: 3.13.x before 3.12.x.
        for v in $(for d in "$root"/versions/3.*.*; do [ -x "$d/bin/python3" ] && basename "$d"; done \
                   | grep -E '^3\.[0-9]+\.[0-9]+$' | sort -t. -k2,2nr -k3,3nr); do
            if new_enough "$root/versions/$v/bin/python3"; then
                echo "$root/versions/$v/bin/python3"
                return
            fi
        done
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        timeout 120 apt-get update -qq >/dev/null 2>&1 || say "warning: apt-get update failed"
        for name in python3.13 python3.12; do
            if apt-cache policy "$name" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
                say "installing $name from Debian's packages"
                DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq "$name" "$name-venv" >/dev/null \
                    && new_enough "$name" && { command -v "$name"; return; }
            fi
        done
    fi
    return 0  # none: an empty answer
}

installed_version() {
    "$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mistral-vibe"))' 2>/dev/null || true
}

if [ -x "$venv/bin/vibe-acp" ] && [ "$(installed_version)" = "$VIBE_VERSION" ]; then
    say "mistral-vibe $VIBE_VERSION is in build/vibe-venv: nothing to install"
else
    python="$(find_python)"
    if [ -z "$python" ]; then
        say "no Python 3.12 or newer here (PATH, pyenv, Debian packages): Vibe is not installed, its tests skip"
        exit 0
    fi
    say "creating build/vibe-venv with $("$python" -c 'import platform; print("Python", platform.python_version())')"
    rm -rf "$venv"
    "$python" -m venv "$venv" || die "venv creation failed"
    say "installing mistral-vibe==$VIBE_VERSION (a few minutes at most)"
    start=$(date +%s)
    timeout 600 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --no-cache-dir \
        "mistral-vibe==$VIBE_VERSION" 2> >(grep -v "^WARNING: Location" >&2) \
        || { rm -rf "$venv"; die "pip install mistral-vibe==$VIBE_VERSION failed"; }
    [ -x "$venv/bin/vibe-acp" ] || { rm -rf "$venv"; die "the install has no vibe-acp"; }
    say "installed in $(( $(date +%s) - start )) s"
fi

if [ "${ACP_JOURNEYS_SKIP_DOCKER:-}" != "1" ] && docker info >/dev/null 2>&1; then
    "$here/scripts/setup/build-vibe-image.sh" "$venv"
fi
echo "$venv/bin/vibe-acp" >&3
