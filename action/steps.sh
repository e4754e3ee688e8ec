#!/usr/bin/env bash
# The shell of action.yml and merge/action.yml: what must stay outside the runner image (docker
# build, pull, run and kill, the stop-commands guard, the clean-up). Every input is checked, and
# every docker parameter made, by `acp-journeys action JOB` in the runner image
# (src/acp_journeys/cli/action/): this script takes them from its outputs and the work folder.
#
#   steps.sh runner     the runner image: the input's (local, else pulled), else the release's digest
#                       or the ref's tag (pulled), else built from the action's Dockerfile
#   steps.sh prepare    `action prepare` in it (merge-prepare: the merge action's); outputs work, ...
#   steps.sh build      build the agent image with prepare's arguments (or pull the given image)
#   steps.sh run        `action run` with the engine's socket; report, gate and merge likewise, without
#   steps.sh cleanup    remove every container, volume and network of this job's run
#
# Rules: inputs only as environment variables, never spliced into code; nothing eval'ed. Output
# that may hold the agent's text runs under a stop-commands pause with a random token. Runner
# containers run as the calling user, bounded, labelled. Exit codes: 0, or 1 for a failed gate,
# or 2 for bad inputs and a run that could not be done.
set -euo pipefail

DEFAULT_RUNNER_REPO="rondar/acp-journeys"
RUNNER_REGISTRY="ghcr.io"
LOCAL_RUNNER_TAG="acp-journeys/runner:action-build"

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
need() { [ -n "${!1:-}" ] || die "internal: $1 is not set (did an earlier step of the action fail?)"; }

# GitHub's runner acts on no workflow command between these two; the token is random and
# printed only here, so nothing inside can end the pause. Our own warn and error end it first.
STOP_TOKEN=""
pause_commands() {
    resume_commands
    STOP_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    printf '::stop-commands::%s\n' "$STOP_TOKEN"
}
resume_commands() {
    [ -z "$STOP_TOKEN" ] || printf '::%s::\n' "$STOP_TOKEN"
    STOP_TOKEN=""
}

# "$@" (a docker run that may print the agent's text) under the pause; then the annotations that
# it left in $ACPJ_WORK/messages (escaped by it, one a line); its exit code.
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

# RUNNER=(the docker run options of every runner container), each "$@" folder mounted as it is.
runner_args() {
    RUNNER=(--rm --init --label acp-journeys.action=1 --memory 2g --memory-swap 2g --pids-limit 1024)
    [ "$(id -u)" = 0 ] || RUNNER+=(--user "$(id -u):$(id -g)")  # what it writes stays the user's
    local dir
    for dir in "$@"; do RUNNER+=(-v "$dir:$dir"); done
    ENV_OPTS=()
    FILE_MOUNTS=()
}

# -e NAME for the step's variables that match $1, but those that would change the container itself.
pass_env() {
    local n
    for n in $(compgen -e); do
        # shellcheck disable=SC2254  # $1 is a pattern
        case $n in PATH | HOME | HOSTNAME | PWD | OLDPWD | SHLVL | TMPDIR | LD_* | PYTHON* | DOCKER_* | _) ;;
        $1) ENV_OPTS+=(-e "$n") ;; esac
    done
}

# -v PATH:PATH for a GitHub file that the runner writes or reads (made first: else a folder).
github_file_mount() {
    local path=${!1:-}
    [ -n "$path" ] || return 0
    if [ ! -e "$path" ]; then [ "$2" = rw ] && : >>"$path" || return 0; fi
    FILE_MOUNTS+=(-v "$path:$path:$2" -e "$1")
}

# The step's output runner-image=$1, after saying $2.
found() { say "$2"; printf 'runner-image=%s\n' "$1" >>"${GITHUB_OUTPUT:-/dev/stdout}"; }
step_runner() {
    local candidate=${ACPJ_RUNNER_IMAGE:-} repo=${ACPJ_ACTION_REPOSITORY:-} ref=${ACPJ_ACTION_REF:-} line=""
    # The workflow's own choice: a local image of that name is what it means.
    if [ -n "$candidate" ] && docker image inspect "$candidate" >/dev/null 2>&1; then
        found "$candidate" "runner image $candidate (already here)" && return 0
    fi
    if [ -z "$candidate" ]; then
        # The digest that the release wrote into this copy (action/runner-image), else the tag of
        # the action's ref; pulled either way, never a local image that merely has that tag.
        [ ! -f "${ACPJ_ACTION_PATH:-}/action/runner-image" ] \
            || line=$(grep -v '^#' "$ACPJ_ACTION_PATH/action/runner-image" | head -n 1 | tr -d '[:space:]') || true
        [ -z "$line" ] || [[ $line =~ ^[a-z0-9][a-z0-9./_-]*@sha256:[0-9a-f]{64}$ ]] \
            || die "action/runner-image holds '$line', not IMAGE@sha256:DIGEST"
        # github.action_ref is not promised in composite actions; the runner's folder tells it too.
        if [ -z "$ref" ] && [[ ${ACPJ_ACTION_PATH:-} =~ /_actions/([^/]+)/([^/]+)/([^/]+)$ ]]; then
            repo=${BASH_REMATCH[1]}/${BASH_REMATCH[2]} ref=${BASH_REMATCH[3]}
        fi
        [[ ! $ref =~ ^[0-9a-f]{40}$ ]] || ref="sha-$ref"
        repo=${repo:-$DEFAULT_RUNNER_REPO}
        candidate=$line
        [ -n "$candidate" ] || ! [[ $ref =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] \
            || candidate="$RUNNER_REGISTRY/${repo,,}:$ref"  # a branch like feature/x: no image
    fi
    if [ -n "$candidate" ]; then
        say "pulling the runner image $candidate"
        docker pull --quiet "$candidate" && found "$candidate" "pulled $candidate" && return 0
        warn "cannot pull the runner image $candidate: building it from the action's Dockerfile instead"
    fi
    [ -f "${ACPJ_ACTION_PATH:-}/Dockerfile" ] || die "no Dockerfile in the action's folder ${ACPJ_ACTION_PATH:-} to build the runner image from"
    say "building the runner image $LOCAL_RUNNER_TAG from the action's Dockerfile"
    docker build -t "$LOCAL_RUNNER_TAG" "$ACPJ_ACTION_PATH" || die "the runner image did not build: see the output above"
    found "$LOCAL_RUNNER_TAG" "built $LOCAL_RUNNER_TAG"
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
    github_file_mount GITHUB_OUTPUT rw
    docker run "${RUNNER[@]}" -w "$ws" --network none -e HOME -e GITHUB_WORKSPACE="$ws" -e ACPJ_TEMP="$temp" \
        "${FILE_MOUNTS[@]}" "${ENV_OPTS[@]}" "$ACPJ_RUNNER_IMAGE" action "$1" || code=$?
    [ "$code" = 0 ] || [ "$code" = 2 ] || error "the inputs could not be checked in the runner image (exit $code)"
    [ "$code" = 0 ] || exit 2
}

step_build() {
    need ACPJ_WORK
    need ACPJ_AGENT_IMAGE
    local args start=$SECONDS
    if [ ! -f "$ACPJ_WORK/build.args" ]; then  # a prebuilt image
        if docker image inspect "$ACPJ_AGENT_IMAGE" >/dev/null 2>&1; then
            say "using the agent image $ACPJ_AGENT_IMAGE (no build)"
        else
            say "pulling the agent image $ACPJ_AGENT_IMAGE"
            docker pull --quiet "$ACPJ_AGENT_IMAGE" || die "cannot pull the image $ACPJ_AGENT_IMAGE (log in first with docker/login-action for a private registry)"
        fi
        return 0
    fi
    mapfile -d '' -t args <"$ACPJ_WORK/build.args"
    say "building the agent image $ACPJ_AGENT_IMAGE"
    pause_commands  # the agent's Dockerfile prints what it likes
    docker build "${args[@]}" || die "the agent image did not build: see the docker build output above"
    resume_commands
    say "built $ACPJ_AGENT_IMAGE in $((SECONDS - start)) s"
}

step_run() {
    need ACPJ_WORK
    need ACPJ_RESULT_PATH
    need ACPJ_RUNNER_IMAGE
    need ACPJ_RUNNER_NAME
    local work=$ACPJ_WORK opts sock=${DOCKER_HOST:-unix:///var/run/docker.sock} pid code=0
    [[ $sock == unix://* ]] || die "DOCKER_HOST=$sock: the runner container can only share a Unix socket of the engine"
    sock=${sock#unix://}
    [ -S "$sock" ] || die "no Docker engine socket at $sock: this action needs a runner with Docker (ubuntu-latest has it)"
    mapfile -d '' -t opts <"$work/run.args"
    runner_args "$work"
    [ "$(id -u)" = 0 ] || RUNNER+=(--group-add "$(stat -c %g "$sock")")  # the socket's group
    # The MCP sockets of the journeys: a short host path of their own (a socket's path has a bound
    # of about 100 bytes), noted in the work folder for the cleanup step.
    MCP_DIR=$(mktemp -d /tmp/acpj.XXXXXX)
    chmod 755 "$MCP_DIR"
    printf '%s\n' "$MCP_DIR" >"$work/mcp-dir"
    rm -f "$work/result.json" "$work/result.html"
    # In the background, waited for, so that a cancelled job's SIGTERM reaches the journeys (which
    # stop cleanly, remove their containers and write a partial result.json).
    pause_commands
    trap 'docker kill --signal TERM "$ACPJ_RUNNER_NAME" >/dev/null 2>&1 || true' TERM INT
    docker run "${RUNNER[@]}" -w "$work" --network none -v "$sock:/var/run/docker.sock" -v "$MCP_DIR:$MCP_DIR" \
        -e ACP_JOURNEYS_SHARED_DIR="$MCP_DIR" "${opts[@]}" "$ACPJ_RUNNER_IMAGE" action run "$work" &
    pid=$!
    wait "$pid" || code=$?
    while kill -0 "$pid" 2>/dev/null; do  # a signal ends `wait` early: wait until it has stopped
        code=0
        wait "$pid" || code=$?
    done
    trap - TERM INT
    resume_commands
    rm -rf -- "$MCP_DIR" || true
    printf 'exit-code=%s\n' "$code" >>"${GITHUB_OUTPUT:-/dev/stdout}"
    [ ! -f "$work/result.json" ] || [ "$work/result.json" = "$ACPJ_RESULT_PATH" ] || cp -- "$work/result.json" "$ACPJ_RESULT_PATH"
    [ ! -f "$work/result.html" ] || [ -z "${ACPJ_HTML_PATH:-}" ] || [ "$work/result.html" = "$ACPJ_HTML_PATH" ] \
        || cp -- "$work/result.html" "$ACPJ_HTML_PATH"
    case $code in 0 | 1) return 0 ;; esac  # a verdict: the gate step decides what a failure means
    if [ -f "$work/result.json" ]; then error "the journeys stopped early (exit $code): result.json is partial"
    else error "the journeys did not run (exit $code): see the message above"; fi
    exit "$code"
}

# `acp-journeys action $1 WORK` in a runner container of network $2, with no socket (result.json
# may be the agent's), the step's ACPJ_* variables, and ENV_OPTS and FILE_MOUNTS as the step set them.
in_runner() {
    pass_env 'ACPJ_*'
    docker run "${RUNNER[@]}" -w "$ACPJ_WORK" --network "$2" "${FILE_MOUNTS[@]}" "${ENV_OPTS[@]}" \
        "$ACPJ_RUNNER_IMAGE" action "$1" "$ACPJ_WORK"
}

# The report: the host's network only when prepare said the GitHub API is on loopback.
step_report() {
    local var code=0
    if [ -z "${ACPJ_WORK:-}" ] || [ ! -f "$ACPJ_WORK/result.json" ]; then warn "no result.json: nothing to report (see the earlier steps)"; return 0; fi
    if [ -z "${ACPJ_RUNNER_IMAGE:-}" ]; then warn "no runner image: nothing to report"; return 0; fi
    runner_args "$ACPJ_WORK"
    for var in GITHUB_API_URL GITHUB_REPOSITORY GITHUB_SHA GITHUB_EVENT_NAME GITHUB_SERVER_URL GITHUB_RUN_ID GITHUB_TOKEN; do
        [ -z "${!var:-}" ] || ENV_OPTS+=(-e "$var")
    done
    github_file_mount GITHUB_STEP_SUMMARY rw
    github_file_mount GITHUB_OUTPUT rw
    github_file_mount GITHUB_EVENT_PATH ro
    in_runner report "${ACPJ_REPORT_NETWORK:-bridge}" || code=$?
    [ "$code" = 0 ] || warn "the report did not run (exit $code): no check run or job summary; the gate still judges result.json"
}

step_gate() {
    local code=0
    if [ -z "${ACPJ_WORK:-}" ] || [ ! -f "$ACPJ_WORK/result.json" ]; then
        error "the journeys did not run: no result.json (see the earlier steps)"
        exit 1
    fi
    need ACPJ_RUNNER_IMAGE
    runner_args "$ACPJ_WORK"
    ENV_OPTS+=(-e ACPJ_MESSAGES="$ACPJ_WORK/messages")
    [ -z "${GITHUB_SHA:-}" ] || ENV_OPTS+=(-e GITHUB_SHA)
    paused in_runner gate none || code=$?
    case $code in 0 | 1 | 2) exit "$code" ;; *) die "result.json could not be judged (exit $code)" ;; esac
}

step_merge() {
    need ACPJ_WORK
    need ACPJ_RUNNER_IMAGE
    runner_args "$ACPJ_WORK"
    ENV_OPTS+=(-e ACPJ_MESSAGES="$ACPJ_WORK/messages")
    paused in_runner merge none || exit 2
}

# Whatever this job's run left, also when the runner was killed: the runner container, every
# container, volume and network labelled with its name, and the folder of the MCP sockets (by a
# root container of ours when the job's user cannot remove it). Never fails the job.
step_cleanup() {
    local work=${ACPJ_WORK:-} name=${ACPJ_RUNNER_NAME:-} owner ids dir=""
    [ -n "$work" ] && [ -n "$name" ] || return 0
    owner="label=acp-journeys.owner=container:$name"
    docker rm -f "$name" >/dev/null 2>&1 || true
    ids=$(docker ps -aq --filter "$owner" 2>/dev/null) || ids=""
    # shellcheck disable=SC2086  # one id a word
    [ -z "$ids" ] || docker rm -f $ids >/dev/null 2>&1 || warn "could not remove the containers of $name"
    ids=$(docker volume ls -q --filter "$owner" 2>/dev/null) || ids=""
    # shellcheck disable=SC2086
    [ -z "$ids" ] || docker volume rm -f $ids >/dev/null 2>&1 || warn "could not remove the volumes of $name"
    ids=$(docker network ls -q --filter "$owner" 2>/dev/null) || ids=""
    # shellcheck disable=SC2086
    [ -z "$ids" ] || docker network rm $ids >/dev/null 2>&1 || warn "could not remove the networks of $name"
    [ ! -f "$work/mcp-dir" ] || dir=$(head -n 1 "$work/mcp-dir")
    if [[ $dir == /tmp/acpj.* ]] && [ -d "$dir" ] && ! rm -rf -- "$dir" 2>/dev/null; then
        [ -z "${ACPJ_RUNNER_IMAGE:-}" ] || docker run --rm --network none --user 0 --entrypoint find -v "$dir:/purge" \
            "$ACPJ_RUNNER_IMAGE" /purge -mindepth 1 -delete >/dev/null 2>&1 || true
        rm -rf -- "$dir" 2>/dev/null || warn "could not remove $dir"
    fi
    return 0
}

set -f  # no globbing of unquoted words anywhere
# The merge action gives <action>/merge/..: the same folder, spelt as the runner's own path.
[ -z "${ACPJ_ACTION_PATH:-}" ] || ACPJ_ACTION_PATH=$(realpath -m -- "$ACPJ_ACTION_PATH")
trap resume_commands EXIT
case "${1:-}" in
prepare | merge-prepare) step_prepare "$1" ;;
runner | build | run | report | gate | merge | cleanup) "step_$1" ;;
*) printf 'usage: %s runner|prepare|merge-prepare|build|run|report|gate|merge|cleanup\n' "$0" >&2; exit 2 ;;
esac
