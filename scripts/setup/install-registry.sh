#!/usr/bin/env bash
# Debian's docker-registry (the CNCF distribution registry), for the tests that push and pull
# images on loopback (tests/launch/test_registry.py starts and stops it itself). Installs the pinned
# version when apt has it, else the candidate; apt runs under a lock so that two callers never
# run it at once. Does nothing when it is installed. Needs root to install.
set -euo pipefail
PINNED="2.8.2+ds1-1"

say() { printf 'install-registry: %s\n' "$*" >&2; }
command -v docker-registry >/dev/null 2>&1 && exit 0
[ "$(id -u)" = 0 ] || { say "docker-registry is missing and installing it needs root: its tests will skip"; exit 0; }
command -v apt-get >/dev/null 2>&1 || { say "no apt-get: the registry tests will skip"; exit 0; }
export DEBIAN_FRONTEND=noninteractive
version=""
if apt-cache madison docker-registry 2>/dev/null | grep -q " $PINNED "; then version="=$PINNED"; fi
say "installing docker-registry${version}"
flock /tmp/apt.lock apt-get install -y -q --no-install-recommends "docker-registry$version" >/dev/null \
    || { flock /tmp/apt.lock apt-get update -qq && flock /tmp/apt.lock apt-get install -y -q --no-install-recommends "docker-registry$version" >/dev/null; } \
    || say "the install failed: the registry tests will skip"
