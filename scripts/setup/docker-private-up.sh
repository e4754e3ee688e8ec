#!/usr/bin/env bash
# A second Docker engine of this checkout's own, whose containers get a PRIVATE cgroup namespace
# by default, as the Docker of GitHub's runners gives them: the docker tests of process tracking,
# leftovers and the cancel journey run against it too (scripts/test.sh). The shared engine is
# never restarted or changed; it is only read (`docker save`) for the images the tests need.
#
#   docker-private-up.sh up [IMAGE...]   start it (or reuse it), load IMAGEs from the shared engine
#                                        when it lacks them; prints its DOCKER_HOST on stdout
#   docker-private-up.sh down            stop it (its dockerd, by the pid in its own pid file)
#
# Its own socket, pid file and exec root (under /run, short: Unix socket paths are bounded),
# its own data root (build/private-engine, git-ignored) and config file, and its own network
# namespace (unshare --net): a dockerd started with `--bridge none` deletes the host's docker0,
# which is the shared engine's bridge, and one with a bridge adds iptables rules; in a namespace
# of its own it can do neither to the host. Its containers get no network beyond that namespace's
# loopback (the tests run them with --network none). Needs root, as any dockerd.
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
tag=$(printf '%s' "$here" | sha256sum | cut -c1-8)
run_dir="${ACP_JOURNEYS_PRIVATE_ENGINE_RUN:-/run/acpj-engine-$tag}"
data_dir="${ACP_JOURNEYS_PRIVATE_ENGINE_DATA:-$here/build/private-engine}"
sock="$run_dir/docker.sock"
pidfile="$run_dir/dockerd.pid"
log="$data_dir/dockerd.log"
host="unix://$sock"

say() { printf 'docker-private-up: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
answers() { DOCKER_HOST=$host timeout 20 docker info >/dev/null 2>&1; }
our_pid() {
    local pid
    pid=$(cat "$pidfile" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ] || return 1
    printf '%s' "$pid"
}

up() {
    command -v dockerd >/dev/null || die "no dockerd (scripts/docker-up.sh installs docker.io)"
    if ! command -v unshare >/dev/null || ! command -v ip >/dev/null; then
        die "unshare and ip are needed (util-linux, iproute2)"
    fi
    mkdir -p "$run_dir" "$data_dir"
    if ! answers; then
        [ "$(id -u)" = 0 ] || die "starting dockerd needs root"
        if pid=$(our_pid); then
            say "our dockerd $pid runs but does not answer yet"
        else
            rm -f "$pidfile" "$sock"  # stale: from a killed session
            say "starting a dockerd with --default-cgroupns-mode=private (log: $log)"
            printf '{}\n' >"$data_dir/daemon.json"  # not the shared engine's /etc/docker/daemon.json
            # setsid: not in the caller's process group, so a Ctrl-C reaches `down`, not the engine.
            # unshare --net: its own network namespace (see above), where `lo` is brought up.
            setsid unshare --net sh -c 'ip link set lo up && exec "$@"' dockerd \
                dockerd --config-file "$data_dir/daemon.json" -H "$host" --data-root "$data_dir/data" \
                --exec-root "$run_dir/exec" --pidfile "$pidfile" --bridge none --iptables=false \
                --ip-masq=false --ip6tables=false --default-cgroupns-mode=private \
                --cgroup-parent "acpj-private-$tag" >"$log" 2>&1 </dev/null &
        fi
        local deadline=$((SECONDS + ${ACP_JOURNEYS_DOCKERD_WAIT:-60}))
        until answers; do
            if [ "$SECONDS" -ge "$deadline" ]; then
                tail -n 20 "$log" >&2 || true
                die "the private engine did not answer within ${ACP_JOURNEYS_DOCKERD_WAIT:-60} s"
            fi
            sleep 0.5
        done
    fi
    local mode
    mode=$(DOCKER_HOST=$host docker info --format '{{range .SecurityOptions}}{{.}} {{end}}')
    case $mode in *name=cgroupns*) ;; *) die "the private engine does not report cgroupns in its security options ($mode)" ;; esac
    local image want have
    for image in "$@"; do
        want=$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null) || die "the shared engine has no $image"
        have=$(DOCKER_HOST=$host docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
        if [ "$want" != "$have" ]; then
            say "loading $image from the shared engine"
            docker save "$image" | DOCKER_HOST=$host docker load -q >&2 || die "cannot load $image"
        fi
    done
    DOCKER_HOST=$host docker image prune -f >/dev/null  # the images a load untagged: only our cache
    printf '%s\n' "$host"
}

down() {
    local pid
    if pid=$(our_pid); then
        say "stopping our dockerd $pid"
        kill -TERM "$pid"
        local deadline=$((SECONDS + 30))
        while kill -0 "$pid" 2>/dev/null; do
            if [ "$SECONDS" -ge "$deadline" ]; then
                kill -KILL "$pid" 2>/dev/null || true
                break
            fi
            sleep 0.2
        done
    fi
    rm -f "$pidfile" "$sock"
    # dockerd leaves its default network namespace bound under the exec root: ours, so unmount it.
    local mnt
    while read -r _ mnt _; do
        case $mnt in "$run_dir"/*) umount -l -- "$mnt" 2>/dev/null || true ;; esac
    done </proc/self/mounts
    rm -rf -- "$run_dir" 2>/dev/null || true  # the exec root; the data root under build/ is a cache
    local parent
    for parent in /sys/fs/cgroup/*/"acpj-private-$tag" /sys/fs/cgroup/"acpj-private-$tag"; do
        [ ! -d "$parent" ] || rmdir -- "$parent" 2>/dev/null || true  # empty once the engine is gone
    done
}

case "${1:-}" in
up) shift; up "$@" ;;
down) down ;;
*) printf 'usage: %s up [IMAGE...] | down\n' "$0" >&2; exit 2 ;;
esac
