#!/usr/bin/env bash
# scripts/release/lock-runner-requirements.sh: (re)write requirements/runner.txt, the runner
# image's dependencies (and setuptools, which builds acp-journeys in it) pinned with the hashes
# of every file of each version, for the Python of the Dockerfile's base (3.12) on Linux.
#
# Run it after a change to the dependencies in pyproject.toml, and when bumping the base image.
# It uses uv (installed into build/lockenv, which git ignores) and reaches the package index.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
env="$here/build/lockenv"
[ -x "$env/bin/uv" ] || { python3 -m venv "$env" && "$env/bin/pip" install --quiet uv; }
extra="$(mktemp)"
trap 'rm -f "$extra"' EXIT
printf 'setuptools>=68\n' >"$extra"
cd "$here"
"$env/bin/uv" pip compile pyproject.toml "$extra" --python-version 3.12 --python-platform linux \
    --generate-hashes --no-header --no-annotate --quiet -o requirements/runner.txt
printf 'lock-runner-requirements: wrote requirements/runner.txt\n' >&2
