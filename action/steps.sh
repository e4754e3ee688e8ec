#!/usr/bin/env bash
# The shell of action.yml and merge/action.yml: what must stay outside the runner image (docker
# build, pull, run and kill, the stop-commands guard). `acp-journeys action JOB` in that image
# checks every input and makes every docker parameter (src/acp_journeys/cli/action/); this takes
# them from its outputs and the work folder. Usage: steps.sh STEP (see the end). Inputs only as
# environment variables, nothing eval'ed; what may hold the agent's text runs under a random
# stop-commands token; runner containers run as the calling user, bounded, labelled. Exit 0, 1, 2.
set -euo pipefail
RUNNER_REGISTRY="ghcr.io"

# Workflow-command data: %, CR and LF escaped and ##[ broken, so no text can start a command.
escape_data() {
    local s=${1//'%'/'%25'}
    s=${s//$'\r'/'%0D'}
    s=${s//$'\n'/'%0A'}
    printf '%s' "${s//'##['/'##\x5b'}"
}
say() { printf 'acp-journeys: %s\n' "$(escape_data "$*")"; }
warn() { resume_commands; printf '::warning::%s\n' "$(escape_data "$*")"; }
error() { resume_commands; printf '::error::%s\n' "$(escape_data "$*")"; }
die() { error "$*"; exit 2; }
need() { for v; do [ -n "${!v:-}" ] || die "internal: $v is not set (did an earlier step of the action fail?)"; done; }
output() { printf '%s\n' "$@" >>"${GITHUB_OUTPUT:-/dev/stdout}"; }

# GitHub's runner acts on no workflow command between these two; the token is random and
# printed only here, so nothing inside can end the pause. Our own warn and error end it first.
STOP_TOKEN=""
pause_commands() {
    resume_commands
    STOP_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    printf '::stop-commands::%s\n' "$STOP_TOKEN"
}
resume_commands() { [ -z "$STOP_TOKEN" ] || printf '::%s::\n' "$STOP_TOKEN"; STOP_TOKEN=""; }

# "$@" under the pause, then the annotations that it left in $ACPJ_WORK/messages (escaped by
# it, one a line); its exit code.
paused() {
    local code=0 level text
    : >"$ACPJ_WORK/messages"
    pause_commands
    "$@" || code=$?
    resume_commands
    while read -r level text; do
        case $level in error | warning) printf '::%s::%s\n' "$level" "${text//'##['/'##\x5b'}" ;; esac
    done <"$ACPJ_WORK/messages"
    return "$code"
}

# RUNNER=(the options of every runner container), each "$@" folder mounted at its own path.
runner_args() {
    RUNNER=(--rm --init --label acp-journeys.action=1 --memory 2g --memory-swap 2g --pids-limit 1024)
    [ "$(id -u)" = 0 ] || RUNNER+=(--user "$(id -u):$(id -g)")  # what it writes stays the user's
    local dir
    for dir in "$@"; do RUNNER+=(-v "$dir:$dir"); done
}

# -e NAME for the step's variables that match $1, but those that would change the container itself.
pass_env() {
    local n
    for n in $(compgen -e); do
        # shellcheck disable=SC2254  # $1 is a pattern
        case $n in PATH | HOME | HOSTNAME | PWD | OLDPWD | SHLVL | TMPDIR | LD_* | PYTHON* | DOCKER_* | _) ;;
        $1) RUNNER+=(-e "$n") ;; esac
    done
}

# -v PATH:PATH for a GitHub file that the runner writes ($2 rw, made first: else a folder) or reads.
file_mount() {
    local path=${!1:-}
    [ -n "$path" ] || return 0
    if [ ! -e "$path" ]; then [ "$2" = rw ] && : >>"$path" || return 0; fi
    RUNNER+=(-v "$path:$path:$2" -e "$1")
}

# The engine's Unix socket in RUNNER (with its group, for a non-root user); else NO_SOCK says why.
with_socket() {
    local sock=${DOCKER_HOST:-unix:///var/run/docker.sock}
    [[ $sock == unix://* ]] || { NO_SOCK="DOCKER_HOST=$sock: the runner container can only share a Unix socket of the engine"; return 1; }
    sock=${sock#unix://}
    [ -S "$sock" ] || { NO_SOCK="no Docker engine socket at $sock: this action needs a runner with Docker (ubuntu-latest has it)"; return 1; }
    RUNNER+=(-v "$sock:/var/run/docker.sock")
    [ "$(id -u)" = 0 ] || RUNNER+=(--group-add "$(stat -c %g "$sock")")
}

# The runner image: the input's (a local image of that name is what it means), else the digest
# that the release wrote into action/runner-image, else the tag of the action's ref (pulled
# either way, never a local image that merely has that tag), else built from the Dockerfile.
step_runner() {
    local image=${ACPJ_RUNNER_IMAGE:-} path=${ACPJ_ACTION_PATH:-} repo=${ACPJ_ACTION_REPOSITORY:-} ref=${ACPJ_ACTION_REF:-}
    local built=acp-journeys/runner:action-build
    if [ -n "$image" ] && docker image inspect "$image" >/dev/null 2>&1; then
        say "runner image $image (already here)" && output "runner-image=$image" && return 0
    fi
    if [ -z "$image" ] && [ -f "$path/action/runner-image" ]; then
        image=$(grep -v '^#' "$path/action/runner-image" | head -n 1 | tr -d '[:space:]') || true
        [ -z "$image" ] || [[ $image =~ ^[a-z0-9][a-z0-9./_-]*@sha256:[0-9a-f]{64}$ ]] \
            || die "action/runner-image holds '$image', not IMAGE@sha256:DIGEST"
    fi
    # github.action_ref is not promised in composite actions; the runner's folder tells it too.
    if [ -z "$ref" ] && [[ $path =~ /_actions/([^/]+)/([^/]+)/([^/]+)$ ]]; then
        repo=${BASH_REMATCH[1]}/${BASH_REMATCH[2]} ref=${BASH_REMATCH[3]}
    fi
    [[ ! $ref =~ ^[0-9a-f]{40}$ ]] || ref="sha-$ref"
    repo=${repo:-rondar/acp-journeys}
    [ -n "$image" ] || ! [[ $ref =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || image="$RUNNER_REGISTRY/${repo,,}:$ref"
    if [ -n "$image" ]; then  # a branch like feature/x has no image
        say "pulling the runner image $image"
        docker pull --quiet "$image" && say "pulled $image" && output "runner-image=$image" && return 0
        warn "cannot pull the runner image $image: building it from the action's Dockerfile instead"
    fi
    [ -f "$path/Dockerfile" ] || die "no Dockerfile in the action's folder $path to build the runner image from"
    say "building the runner image $built from the action's Dockerfile"
    docker build -t "$built" "$path" || die "the runner image did not build: see the output above"
    say "built $built" && output "runner-image=$built"
}

# prepare or merge-prepare: the inputs, checked in the runner image, with the workspace, the
# runner's temp folder (rw) and the home (read-only) at their own paths, and the step's variables
# (an env or settings line may name one); no network, no socket.
step_prepare() {
    need ACPJ_RUNNER_IMAGE
    local ws=${GITHUB_WORKSPACE:-$PWD} temp=${RUNNER_TEMP:-${TMPDIR:-/tmp}} code=0
    runner_args "$ws" "$temp"
    case $HOME in / | "$ws" | "$temp") ;; *) [ ! -d "$HOME" ] || RUNNER+=(-v "$HOME:$HOME:ro") ;; esac
    pass_env '*'
    file_mount GITHUB_OUTPUT rw
    docker run "${RUNNER[@]}" -w "$ws" --network none -e HOME -e GITHUB_WORKSPACE="$ws" -e ACPJ_TEMP="$temp" \
        "$ACPJ_RUNNER_IMAGE" action "$1" || code=$?
    [ "$code" = 0 ] || [ "$code" = 2 ] || error "the inputs could not be checked in the runner image (exit $code)"
    [ "$code" = 0 ] || exit 2
}

step_build() {
    need ACPJ_WORK ACPJ_AGENT_IMAGE
    local args start=$SECONDS image=$ACPJ_AGENT_IMAGE
    if [ ! -f "$ACPJ_WORK/build.args" ]; then  # a prebuilt image
        if docker image inspect "$image" >/dev/null 2>&1; then say "using the agent image $image (no build)"; return 0; fi
        say "pulling the agent image $image"
        docker pull --quiet "$image" || die "cannot pull the image $image (log in first with docker/login-action for a private registry)"
        return 0
    fi
    mapfile -d '' -t args <"$ACPJ_WORK/build.args"
    say "building the agent image $image"
    pause_commands  # the agent's Dockerfile prints what it likes
    docker build "${args[@]}" || die "the agent image did not build: see the docker build output above"
    resume_commands
    say "built $image in $((SECONDS - start)) s"
}

step_run() {
    need ACPJ_WORK ACPJ_RESULT_PATH ACPJ_RUNNER_IMAGE ACPJ_RUNNER_NAME
    local work=$ACPJ_WORK opts volume pid code=0
    mapfile -d '' -t opts <"$work/run.args"
    mapfile -d '' -t volume <"$work/volume.args"  # the MCP sockets' volume, labelled for the cleanup step
    runner_args "$work"
    with_socket || die "$NO_SOCK"
    docker volume create "${volume[@]}" >/dev/null || die "the MCP sockets' volume ${volume[-1]} could not be made"
    rm -f "$work/result.json" "$work/result.html"
    # In the background, waited for, so that a cancelled job's SIGTERM reaches the journeys (which
    # stop cleanly, remove their containers and write a partial result.json).
    pause_commands
    trap 'docker kill --signal TERM "$ACPJ_RUNNER_NAME" >/dev/null 2>&1 || true' TERM INT
    docker run "${RUNNER[@]}" -w "$work" --network none "${opts[@]}" "$ACPJ_RUNNER_IMAGE" action run "$work" &
    pid=$!
    wait "$pid" || code=$?
    while kill -0 "$pid" 2>/dev/null; do  # a signal ends `wait` early: wait until it has stopped
        code=0
        wait "$pid" || code=$?
    done
    trap - TERM INT
    resume_commands
    docker volume rm -f "${volume[-1]}" >/dev/null 2>&1 || true  # in use still: the cleanup step's
    output "exit-code=$code"
    [ ! -f "$work/result.json" ] || [ "$work/result.json" = "$ACPJ_RESULT_PATH" ] || cp -- "$work/result.json" "$ACPJ_RESULT_PATH"
    [ ! -f "$work/result.html" ] || [ -z "${ACPJ_HTML_PATH:-}" ] || [ "$work/result.html" = "$ACPJ_HTML_PATH" ] \
        || cp -- "$work/result.html" "$ACPJ_HTML_PATH"
    case $code in 0 | 1) return 0 ;; esac  # a verdict: the gate step decides what a failure means
    if [ -f "$work/result.json" ]; then error "the journeys stopped early (exit $code): result.json is partial"
    else error "the journeys did not run (exit $code): see the message above"; fi
    exit "$code"
}

# `acp-journeys action $1 WORK` in a runner container of network $2, with no socket (result.json
# may be the agent's), the step's ACPJ_* variables and the RUNNER options that the step set.
in_runner() {
    pass_env 'ACPJ_*'
    docker run "${RUNNER[@]}" -w "$ACPJ_WORK" --network "$2" "$ACPJ_RUNNER_IMAGE" action "$1" "$ACPJ_WORK"
}

# The report: the host's network only when prepare said the GitHub API is on loopback.
step_report() {
    local code=0
    if [ -z "${ACPJ_WORK:-}" ] || [ ! -f "$ACPJ_WORK/result.json" ]; then warn "no result.json: nothing to report (see the earlier steps)"; return 0; fi
    if [ -z "${ACPJ_RUNNER_IMAGE:-}" ]; then warn "no runner image: nothing to report"; return 0; fi
    runner_args "$ACPJ_WORK"
    pass_env 'GITHUB_*'  # the API's address, the repository, the commit, the run, the token
    file_mount GITHUB_STEP_SUMMARY rw
    file_mount GITHUB_OUTPUT rw
    file_mount GITHUB_EVENT_PATH ro
    in_runner report "${ACPJ_REPORT_NETWORK:-bridge}" || code=$?
    [ "$code" = 0 ] || warn "the report did not run (exit $code): no check run or job summary; the gate still judges result.json"
}

# gate and merge: their words (they quote the agent) under the pause, their annotations after it.
step_gate() {
    local code=0
    if [ "$1" = gate ] && { [ -z "${ACPJ_WORK:-}" ] || [ ! -f "$ACPJ_WORK/result.json" ]; }; then
        error "the journeys did not run: no result.json (see the earlier steps)"
        exit 1
    fi
    need ACPJ_WORK ACPJ_RUNNER_IMAGE
    runner_args "$ACPJ_WORK"
    RUNNER+=(-e ACPJ_MESSAGES="$ACPJ_WORK/messages")
    [ -z "${GITHUB_SHA:-}" ] || [ "$1" != gate ] || RUNNER+=(-e GITHUB_SHA)
    paused in_runner "$1" none || code=$?
    [ "$1" = gate ] || [ "$code" = 0 ] || exit 2
    case $code in 0 | 1 | 2) exit "$code" ;; *) die "result.json could not be judged (exit $code)" ;; esac
}

# Whatever this job's run left, also when the runner was killed: `action cleanup` removes the
# runner container and every container, volume and network labelled with its name. Never fails the job.
step_cleanup() {
    [ -n "${ACPJ_RUNNER_NAME:-}" ] && [ -n "${ACPJ_RUNNER_IMAGE:-}" ] || return 0
    runner_args
    with_socket || { warn "the cleanup did not run: $NO_SOCK"; return 0; }
    docker run "${RUNNER[@]}" --network none -e ACPJ_RUNNER_NAME "$ACPJ_RUNNER_IMAGE" action cleanup \
        || warn "the cleanup did not run: objects labelled acp-journeys.owner=container:$ACPJ_RUNNER_NAME may be left"
}

set -f  # no globbing of unquoted words anywhere
# The action's folder: this script's parent's (either action's); ACPJ_ACTION_PATH names another.
ACPJ_ACTION_PATH=$(realpath -m -- "${ACPJ_ACTION_PATH:-$(dirname -- "$0")/..}")
trap resume_commands EXIT
case "${1:-}" in
prepare | merge-prepare) step_prepare "$1" ;;
gate | merge) step_gate "$1" ;;
runner | build | run | report | cleanup) "step_$1" ;;
*) printf 'usage: %s runner|prepare|merge-prepare|build|run|report|gate|merge|cleanup\n' "$0" >&2; exit 2 ;;
esac
