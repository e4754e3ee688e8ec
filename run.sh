#!/usr/bin/env bash
# ./run.sh [--agent-dir DIR] [run options...] -- COMMAND...
#
# Runs `acp-journeys run` in the runner image, as the doc's command does: each journey in its own
# container, made from the runner image (a general runtime with python3) unless you give
# --image; your agent's folder mounted at /agent; no network unless --network; result.json in
# the current folder. Every run option passes through.
#
# The runner image ($ACP_JOURNEYS_RUNNER_IMAGE, default acp-journeys/runner:dev) is built when it
# is missing, on the public base image when that can be pulled, else on a local Debian base built
# with debootstrap (or the image named by $ACP_JOURNEYS_BASE_IMAGE). No Docker engine running?
# scripts/docker-up.sh starts one.
#
# The runner talks to the engine through its socket, so paths given to the engine are this
# machine's: the current folder, the agent folder and the logins are mounted at their own paths,
# and the MCP sockets live on a volume that the runner and the agents' containers share.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
runner_image="${ACP_JOURNEYS_RUNNER_IMAGE:-acp-journeys/runner:dev}"
public_base="python:3.12-slim@sha256:78387bc3881b8273120a12ebe6c1ab22b018ccc2c9adf565ae1ac9b536e184ea"  # as the Dockerfile
shared_dir=/acp-journeys-shared

say() { printf 'run.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 2; }

command -v docker >/dev/null 2>&1 || die "no docker command: install Docker (or run scripts/docker-up.sh as root)"
docker info >/dev/null 2>&1 || die "no Docker engine answers (scripts/docker-up.sh starts one)"

abs() { case "$1" in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "${1#./}" ;; esac; }

# --- the options: make host paths absolute and mount what the runner must see -----------------
args=() mounts=() envs=() have_image=0
while [ $# -gt 0 ]; do
    case "$1" in
    --)
        break ;;
    --agent-dir|--agent-dir=*)
        if [ "$1" = --agent-dir ]; then [ $# -ge 2 ] || die "--agent-dir needs a folder"; dir="$2"; shift; else dir="${1#*=}"; fi
        [ -d "$dir" ] || die "--agent-dir $dir is not a folder"
        dir="$(cd "$dir" && pwd)"
        args+=(--agent-dir "$dir"); mounts+=(-v "$dir:$dir:ro") ;;
    --login|--login=*)
        if [ "$1" = --login ]; then [ $# -ge 2 ] || die "--login needs SRC[:DEST]"; spec="$2"; shift; else spec="${1#*=}"; fi
        src="${spec%%:*}"; dest=""; [ "$src" = "$spec" ] || dest=":${spec#*:}"
        [ -e "$src" ] || die "--login $src: no such file or folder"
        src="$(abs "$src")"
        args+=(--login "$src$dest"); mounts+=(-v "$src:$src:ro") ;;
    --env|--env=*)
        # Every value reaches the runner's container by name (docker run -e NAME), never on a
        # command line, where `docker inspect` and ps would show it.
        if [ "$1" = --env ]; then [ $# -ge 2 ] || die "--env needs NAME[=VALUE]"; spec="$2"; shift; else spec="${1#*=}"; fi
        env_name="${spec%%=*}"
        case "$env_name" in
        PATH|HOME|PWD|HOSTNAME|LD_*|PYTHON*|DOCKER_*|ACP_JOURNEYS_*)
            die "--env $env_name: run.sh passes values through the runner's own environment, where $env_name would change the runner; set it in the agent's image instead" ;;
        esac
        if [ "$env_name" != "$spec" ]; then export "$env_name=${spec#*=}"; fi
        envs+=(-e "$env_name"); args+=(--env "$env_name") ;;
    --setting|--setting=*)
        # No secret: the value goes on the runner's command line as it is. NAME alone takes this
        # shell's value, which the runner's container does not have.
        if [ "$1" = --setting ]; then [ $# -ge 2 ] || die "--setting needs NAME[=VALUE]"; spec="$2"; shift; else spec="${1#*=}"; fi
        setting_name="${spec%%=*}"
        [[ $setting_name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "--setting '$spec': expected NAME or NAME=VALUE"
        if [ "$setting_name" = "$spec" ]; then
            [ -n "${!setting_name+set}" ] || die "--setting $setting_name: not set in this environment"
            spec="$setting_name=${!setting_name}"
        fi
        args+=(--setting "$spec") ;;
    --image|--image=*)
        have_image=1; args+=("$1"); if [ "$1" = --image ]; then [ $# -ge 2 ] || die "--image needs a name"; args+=("$2"); shift; fi ;;
    *)
        args+=("$1") ;;
    esac
    shift
done

# --- the runner image --------------------------------------------------------------------------
if ! docker image inspect "$runner_image" >/dev/null 2>&1; then
    say "the runner image $runner_image is missing: building it"
    base="${ACP_JOURNEYS_BASE_IMAGE:-}"
    if [ -z "$base" ]; then
        if docker image inspect "$public_base" >/dev/null 2>&1 || docker pull -q "$public_base" >/dev/null 2>&1; then
            base="$public_base"
            say "base: the public image $base"
        else
            say "the public base $public_base cannot be pulled: building a local Debian base instead"
            "$here/scripts/setup/build-base-image.sh"
            base="acp-journeys/base:bookworm"
        fi
    else
        say "base: $base (from ACP_JOURNEYS_BASE_IMAGE)"
    fi
    ACP_JOURNEYS_BASE_IMAGE="$base" "$here/scripts/setup/build-runner-image.sh" "$runner_image"
fi
[ "$have_image" = 1 ] || args=(--image "$runner_image" "${args[@]}")

# --- the run -----------------------------------------------------------------------------------
sock="${DOCKER_HOST:-unix:///var/run/docker.sock}"
case "$sock" in unix://*) sock="${sock#unix://}" ;; *) die "run.sh needs the engine on a local Unix socket (DOCKER_HOST=$DOCKER_HOST)" ;; esac

id="$(date +%s)-$$"
name="acpj-runner-$id"
volume="acpj-shared-$id"
labels=(--label acp-journeys=1 --label "acp-journeys.run=run-sh-$id" --label "acp-journeys.created=$(date +%s)"
        --label "acp-journeys.owner=container:$name")
# The sockets' volume: a small tmpfs, nosuid and nodev, so nothing on it can be a setuid file or a
# device even for the engine's host (each agent container also mounts only its own folder of it,
# read-only).
docker volume create "${labels[@]}" --driver local --opt type=tmpfs --opt device=tmpfs \
    --opt o=nosuid,nodev,noexec,size=16m,mode=1777 "$volume" >/dev/null
cleanup() { docker rm -f "$name" >/dev/null 2>&1 || true; docker volume rm -f "$volume" >/dev/null 2>&1 || true; }
trap cleanup EXIT

user=()
if [ "$(id -u)" != 0 ]; then
    # Files it writes here are then yours; the socket's group lets it reach the engine.
    user=(--user "$(id -u):$(id -g)" --group-add "$(stat -c %g "$sock")" -e HOME=/tmp)
fi

say "running acp-journeys in $runner_image (the runner has no network; the engine makes the agents' containers)"
set +e
# --init: PID 1 of its own, so that the runner gets SIGTERM from `docker stop` like any process.
docker run --rm --init --name "$name" "${labels[@]}" --network none "${user[@]}" \
    --memory 2g --memory-swap 2g --pids-limit 1024 \
    -v "$sock:/var/run/docker.sock" \
    -v "$volume:$shared_dir" -e "ACP_JOURNEYS_SHARED_VOLUME=$volume" -e "ACP_JOURNEYS_SHARED_DIR=$shared_dir" \
    -e "ACP_JOURNEYS_OWNER=container:$name" -e "ACP_JOURNEYS_HOST_HOME=$HOME" -e ACP_JOURNEYS_IN_CONTAINER=1 \
    -v "$PWD:$PWD" -w "$PWD" "${mounts[@]}" "${envs[@]}" \
    "$runner_image" run "${args[@]}" "$@" &
child=$!
# Ctrl-C and SIGTERM reach the runner through the docker client, which stops its journeys cleanly.
trap 'kill -TERM "$child" 2>/dev/null' INT TERM
wait "$child"; code=$?
# A signal interrupts the first wait: wait again for the runner's own exit code.
while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done
exit "$code"
