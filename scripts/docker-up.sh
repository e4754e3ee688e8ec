#!/usr/bin/env bash
# Make sure a Docker engine answers: install docker.io from Debian's packages when dockerd is
# missing, start dockerd in the background when none runs, and wait (bounded) until it answers.
# Idempotent: when `docker info` already works it does nothing. Needs root to install or start.
set -euo pipefail

say() { printf 'docker-up: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

engine_ok() { docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && engine_ok; then
    say "a Docker engine already answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
    exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || die "dockerd is missing and installing it needs root"
    say "dockerd is missing: installing docker.io from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die "apt-get update failed"
    apt-get install -y -qq docker.io >/dev/null || die "apt-get install docker.io failed"
fi
command -v docker >/dev/null 2>&1 || die "the docker client is missing after the install"

# Another dockerd may be starting already (a parallel call): only start one when none runs.
if ! pgrep -x dockerd >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || die "no Docker engine runs and starting dockerd needs root"
    log="${ACP_JOURNEYS_DOCKERD_LOG:-$(mktemp -t dockerd.XXXXXX.log)}"
    # None runs, so a pid file is stale (a killed session); its pid may belong to another process now.
    rm -f /var/run/docker.pid /var/run/docker/containerd/containerd.pid
    say "starting dockerd in the background (log: $log)"
    # setsid + nohup: the engine must outlive this script and its terminal.
    setsid nohup dockerd >"$log" 2>&1 </dev/null &
else
    log=""
    say "dockerd runs already: waiting for it to answer"
fi

deadline=$(( $(date +%s) + ${ACP_JOURNEYS_DOCKERD_WAIT:-60} ))
until engine_ok; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
        [ -n "$log" ] && { say "last lines of the dockerd log:"; tail -n 20 "$log" >&2 || true; }
        die "the Docker engine did not answer within ${ACP_JOURNEYS_DOCKERD_WAIT:-60} s"
    fi
    sleep 0.5
done
say "the Docker engine answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
