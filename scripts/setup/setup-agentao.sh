#!/usr/bin/env bash
# Install agentao (PyPI `agentao`, its ACP agent is `agentao --acp`), a real third-party agent
# that the tests run against the scripted model endpoint, into build/agentao-venv; when a Docker
# engine is up (and ACP_JOURNEYS_SKIP_DOCKER is not 1), also build its agent image
# (scripts/setup/build-agentao-image.sh). Prints the path of `agentao` on stdout, nothing else.
#
# agentao needs Python 3.10 or newer: the project's own .venv Python (3.11+) is used, else
# python3. With none new enough, it says so and exits 0 with nothing on stdout, so the tests
# skip with a reason. Idempotent: a venv with the pinned version is kept.
# ACP_JOURNEYS_SKIP_AGENTAO=1: do nothing (the agentao tests skip).
set -euo pipefail
exec 3>&1 1>&2  # everything but the path goes to stderr

here="$(cd "$(dirname "$0")/../.." && pwd)"
AGENTAO_VERSION=0.5.17
venv="$here/build/agentao-venv"
say() { printf 'setup-agentao: %s\n' "$*" >&2; }

if [ "${ACP_JOURNEYS_SKIP_AGENTAO:-}" = "1" ]; then
    say "ACP_JOURNEYS_SKIP_AGENTAO=1: not installed, its tests skip"
    exit 0
fi
new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1; }
installed_version() {
    "$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("agentao"))' 2>/dev/null || true
}

if [ -x "$venv/bin/agentao" ] && [ "$(installed_version)" = "$AGENTAO_VERSION" ]; then
    say "agentao $AGENTAO_VERSION is in build/agentao-venv: nothing to install"
else
    python=""
    for candidate in "$here/.venv/bin/python" python3; do
        if command -v "$candidate" >/dev/null 2>&1 && new_enough "$candidate"; then python="$candidate"; break; fi
    done
    if [ -z "$python" ]; then
        say "no Python 3.10 or newer here: agentao is not installed, its tests skip"
        exit 0
    fi
    rm -rf "$venv"
    # The venv is made from the interpreter the project's venv was made from, not from inside it.
    base="$("$python" -c 'import sys; print(sys._base_executable)')"
    "$base" -m venv "$venv" || { say "error: venv creation failed: its tests skip"; exit 0; }
    say "installing agentao==$AGENTAO_VERSION (a minute at most)"
    if ! timeout 600 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --no-cache-dir \
            "agentao==$AGENTAO_VERSION" 2> >(grep -v "^WARNING: Location" >&2); then
        rm -rf "$venv"
        say "error: pip install agentao==$AGENTAO_VERSION failed: its tests skip"
        exit 0
    fi
fi

if [ "${ACP_JOURNEYS_SKIP_DOCKER:-}" != "1" ] && docker info >/dev/null 2>&1; then
    "$here/scripts/setup/build-agentao-image.sh" "$AGENTAO_VERSION" || say "warning: no agentao image: its docker test skips"
fi
echo "$venv/bin/agentao" >&3
