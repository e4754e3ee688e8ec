#!/usr/bin/env bash
# The shell steps of action.yml, one subcommand a step, so they run (and are tested) outside
# GitHub too:
#
#   steps.sh prepare   check every input, make the work folder; outputs work, result-path, agent-image
#   steps.sh build     build the agent image from the checkout (or pull the given `image`)
#   steps.sh runner    find the runner image: local, else pulled, else built from the action's Dockerfile
#   steps.sh run       run the journeys in the runner image against the agent image
#   steps.sh report    post the check run (unless post-check is false), write the job summary and outputs
#   steps.sh gate      fail when a journey failed and fail-on-failure is true
#
# Rules of this script:
# - Inputs come only as environment variables (ACPJ_*), never spliced into code; nothing is
#   eval'ed. Multi-line inputs are read line by line: blank lines and lines starting with # are
#   skipped. The agent command is split into words like a shell would, quotes included, with
#   xargs: no variables, globs or substitutions.
# - Values of the `env` input are secrets: they reach the runner container through the docker
#   client's environment (`-e NAME`), never through a command line, and are never printed.
# - The runner container shares the engine's socket and the work folder, mounted at the same path
#   inside, so that paths mean the same on both sides and the agent containers that the runner
#   makes can bind its MCP sockets (ACP_JOURNEYS_SHARED_DIR). It runs as the calling user, so
#   what it writes stays the user's.
# - Exit codes: 0, or 1 for a failed gate, or 2 for bad inputs and a run that could not be done.
set -euo pipefail

DEFAULT_RUNNER_REPO="rondar/acp-journeys"
RUNNER_REGISTRY="ghcr.io"
LOCAL_RUNNER_TAG="acp-journeys/runner:action-build"

# --- output ----------------------------------------------------------------------------------

# Workflow-command data: %, CR and LF escaped, so no text can start a command of its own.
escape_data() {
    local s=${1//'%'/'%25'}
    s=${s//$'\r'/'%0D'}
    printf '%s' "${s//$'\n'/'%0A'}"
}
say() { printf 'acp-journeys: %s\n' "$(escape_data "$*")"; }
warn() { printf '::warning::%s\n' "$(escape_data "$*")"; }
error() { printf '::error::%s\n' "$(escape_data "$*")"; }
die() { error "$*"; exit 2; }

set_output() {
    local name=$1 value=$2
    case $value in *$'\n'* | *$'\r'*) die "internal: output $name holds a line break" ;; esac
    if [ -n "${GITHUB_OUTPUT:-}" ]; then
        printf '%s=%s\n' "$name" "$value" >>"$GITHUB_OUTPUT"
    else
        printf 'output %s=%s\n' "$name" "$value"
    fi
}

# --- inputs ----------------------------------------------------------------------------------

# LINES=(the non-blank, non-comment lines of $1, trimmed)
split_lines() {
    LINES=()
    local line
    while IFS= read -r line || [ -n "$line" ]; do
        line=${line%$'\r'}
        line=${line#"${line%%[![:space:]]*}"}
        line=${line%"${line##*[![:space:]]}"}
        [ -n "$line" ] || continue
        [ "${line:0:1}" != "#" ] || continue
        LINES+=("$line")
    done <<<"${1:-}"
}

# true/false inputs: 0 for true, 1 for false.
is_true() {
    case "${2:-}" in
    true | True | TRUE | yes | 1) return 0 ;;
    false | False | FALSE | no | 0 | "") return 1 ;;
    *) die "input $1: expected true or false, got '$2'" ;;
    esac
}

workspace() { printf '%s' "${GITHUB_WORKSPACE:-$PWD}"; }

# An input path made absolute: ~/ is the home, a relative path is relative to the workspace.
abs_path() {
    local p=$1
    # shellcheck disable=SC2088  # a literal ~ from the input, matched, then replaced by $HOME
    case $p in
    "~") p=$HOME ;;
    "~/"*) p=$HOME/${p#"~/"} ;;
    /*) ;;
    *) p=$(workspace)/$p ;;
    esac
    realpath -m -- "$p"
}

no_newline() {
    case $2 in *$'\n'* | *$'\r'*) die "input $1: must be one line" ;; esac
}

# ARGV=(the words of the agent command)
split_command() {
    ARGV=()
    local text=$1 tmp
    [ -n "${text//[[:space:]]/}" ] || die "input agent-command is empty: give the command line that starts the agent in ACP mode"
    tmp=$(mktemp)
    if ! printf '%s\n' "$text" | xargs -r printf '%s\0' >"$tmp" 2>"$tmp.err"; then
        local why
        why=$(sed 's/^xargs: //; s/; by default.*//' "$tmp.err" | head -n 1)
        rm -f "$tmp" "$tmp.err"
        die "input agent-command cannot be split into words: ${why:-bad quoting}"
    fi
    mapfile -d '' -t ARGV <"$tmp"
    rm -f "$tmp" "$tmp.err"
    [ "${#ARGV[@]}" -gt 0 ] || die "input agent-command is empty"
}

# JOURNEY_ARGS=(--journey ID ...) from the journeys input ("all", or IDs split by spaces, commas, lines)
journey_args() {
    JOURNEY_ARGS=()
    local text=${1:-} id
    text=${text//,/ }
    for id in $text; do  # word splitting on purpose; each word is checked below (set -f: no globs)
        [ "$id" != all ] || continue
        [[ $id =~ ^[a-z0-9][a-z0-9-]*$ ]] || die "input journeys: '$id' is not a journey id (see acp-journeys list)"
        JOURNEY_ARGS+=(--journey "$id")
    done
}

# Names that would change the runner itself, not the agent (the runner container gets each name).
reserved_name() {
    case $1 in
    PATH | HOME | HOSTNAME | PWD | LD_* | PYTHON* | ACP_JOURNEYS_* | DOCKER_*) return 0 ;;
    *) return 1 ;;
    esac
}

# ENV_NAMES=(names), ENV_SET=(name value name value ...) for the NAME=VALUE lines.
parse_env() {
    ENV_NAMES=()
    ENV_SET=()
    split_lines "${1:-}"
    local line name
    for line in "${LINES[@]}"; do
        name=${line%%=*}
        [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "input env: a line is not NAME or NAME=VALUE (line starting '${name:0:20}')"
        reserved_name "$name" && die "input env: $name cannot be passed: it would change the runner, not only the agent"
        if [ "$name" = "$line" ]; then
            [ -n "${!name+set}" ] || die "input env: $name is not set in the step's environment (set it with env: on the step)"
        else
            ENV_SET+=("$name" "${line#*=}")
        fi
        ENV_NAMES+=("$name")
    done
}

# LOGIN_ARGS=(--login SRC[:DEST] ...), LOGIN_MOUNTS=(-v SRC:SRC:ro ...)
parse_logins() {
    LOGIN_ARGS=()
    LOGIN_MOUNTS=()
    split_lines "${1:-}"
    local line src dest
    for line in "${LINES[@]}"; do
        src=${line%%:*}
        dest=""
        [ "$src" = "$line" ] || dest=${line#*:}
        [ -n "$src" ] || die "input login: a line has no source ('$line')"
        src=$(abs_path "$src")
        [ -e "$src" ] || die "input login: $src does not exist (write the login file in an earlier step)"
        case $src in *,*) die "input login: $src: a path with a comma cannot be mounted" ;; esac
        LOGIN_MOUNTS+=(-v "$src:$src:ro")
        LOGIN_ARGS+=(--login "$src${dest:+:$dest}")
    done
}

# BUILD_ARGS=(--build-arg NAME[=VALUE] ...)
parse_build_args() {
    BUILD_ARGS=()
    split_lines "${1:-}"
    local line name
    for line in "${LINES[@]}"; do
        name=${line%%=*}
        [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "input build-args: a line is not NAME=VALUE (line starting '${name:0:20}')"
        BUILD_ARGS+=(--build-arg "$line")
    done
}

# --- the runner container ----------------------------------------------------------------------

docker_socket() {
    local host=${DOCKER_HOST:-unix:///var/run/docker.sock}
    case $host in
    unix://*) SOCK=${host#unix://} ;;
    *) die "DOCKER_HOST=$host: the runner container can only share a Unix socket of the engine" ;;
    esac
    [ -S "$SOCK" ] || die "no Docker engine socket at $SOCK: this action needs a runner with Docker (ubuntu-latest has it)"
}

# RUNNER_ARGS=(the docker run options common to every runner container)
runner_args() {
    local work=$1
    docker_socket
    RUNNER_ARGS=(--rm --init --label acp-journeys.action=1
        -v "$SOCK:/var/run/docker.sock" -v "$work:$work" -w "$work")
    if [ "$(id -u)" != 0 ]; then
        # The calling user, so that files written in the work folder and the GitHub files stay
        # theirs; the socket's group, so that this user can reach the engine.
        RUNNER_ARGS+=(--user "$(id -u):$(id -g)" --group-add "$(stat -c %g "$SOCK")")
    fi
}

need() {
    [ -n "${!1:-}" ] || die "internal: $1 is not set (did an earlier step of the action fail?)"
}

# --- the steps ---------------------------------------------------------------------------------

step_prepare() {
    local work result image
    # Check everything now, before minutes of building.
    split_command "${ACPJ_AGENT_COMMAND:-}"
    journey_args "${ACPJ_JOURNEYS:-}"
    is_true network "${ACPJ_NETWORK:-false}" || true
    is_true model-stub "${ACPJ_MODEL_STUB:-false}" || true
    is_true fail-on-failure "${ACPJ_FAIL_ON_FAILURE:-true}" || true
    is_true post-check "${ACPJ_POST_CHECK:-true}" || true
    parse_env "${ACPJ_ENV:-}"
    parse_logins "${ACPJ_LOGIN:-}"
    parse_build_args "${ACPJ_BUILD_ARGS:-}"
    no_newline image "${ACPJ_IMAGE:-}"
    no_newline runner-image "${ACPJ_RUNNER_IMAGE:-}"
    no_newline result-path "${ACPJ_RESULT_PATH:-}"
    no_newline check-name "${ACPJ_CHECK_NAME:-}"
    no_newline docs-url "${ACPJ_DOCS_URL:-}"
    if [ -z "${ACPJ_IMAGE:-}" ]; then
        local context dockerfile
        context=$(abs_path "${ACPJ_CONTEXT:-.}")
        [ -d "$context" ] || die "input context: $context is not a folder (did the job check out the repository?)"
        dockerfile=$(abs_path "${ACPJ_DOCKERFILE:-${ACPJ_CONTEXT:-.}/Dockerfile}")
        [ -f "$dockerfile" ] || die "no Dockerfile at $dockerfile: give the dockerfile input, or a prebuilt image with the image input"
    fi

    work=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/acp-journeys.XXXXXX")
    chmod 755 "$work"
    result=$work/result.json
    if [ -n "${ACPJ_RESULT_PATH:-}" ]; then
        result=$(abs_path "$ACPJ_RESULT_PATH")
        mkdir -p "$(dirname "$result")"
    fi
    if [ -n "${ACPJ_IMAGE:-}" ]; then
        image=$ACPJ_IMAGE
    else
        local sha=${GITHUB_SHA:-local}
        local suffix=${work##*.}
        image="acp-journeys-agent:${sha:0:12}-${suffix,,}"
    fi
    set_output work "$work"
    set_output result-path "$result"
    set_output agent-image "$image"
    say "work folder $work; result.json goes to $result"
}

step_build() {
    need ACPJ_AGENT_IMAGE
    if [ -n "${ACPJ_IMAGE:-}" ]; then
        if docker image inspect "$ACPJ_IMAGE" >/dev/null 2>&1; then
            say "using the agent image $ACPJ_IMAGE (no build)"
        else
            say "pulling the agent image $ACPJ_IMAGE"
            docker pull --quiet "$ACPJ_IMAGE" || die "cannot pull the image $ACPJ_IMAGE (log in first with docker/login-action for a private registry)"
        fi
        return 0
    fi
    local context dockerfile
    context=$(abs_path "${ACPJ_CONTEXT:-.}")
    dockerfile=$(abs_path "${ACPJ_DOCKERFILE:-${ACPJ_CONTEXT:-.}/Dockerfile}")
    parse_build_args "${ACPJ_BUILD_ARGS:-}"
    local labels=()
    [ -z "${GITHUB_SHA:-}" ] || labels=(--label "org.opencontainers.image.revision=$GITHUB_SHA")
    say "building the agent image $ACPJ_AGENT_IMAGE from $dockerfile (context $context)"
    local start=$SECONDS
    docker build "${BUILD_ARGS[@]}" "${labels[@]}" -f "$dockerfile" -t "$ACPJ_AGENT_IMAGE" "$context" \
        || die "the agent image did not build: see the docker build output above"
    say "built $ACPJ_AGENT_IMAGE in $((SECONDS - start)) s"
}

# The published image for the action's own ref, or nothing when there is none (a local action).
published_runner() {
    local repo=${ACPJ_ACTION_REPOSITORY:-} ref=${ACPJ_ACTION_REF:-} path=${ACPJ_ACTION_PATH:-}
    if [ -z "$ref" ] && [[ $path =~ /_actions/([^/]+)/([^/]+)/([^/]+)$ ]]; then
        # github.action_ref is not promised in composite actions; the runner's folder tells it too.
        repo=${BASH_REMATCH[1]}/${BASH_REMATCH[2]}
        ref=${BASH_REMATCH[3]}
    fi
    [ -n "$ref" ] || return 0
    [[ $ref =~ ^[0-9a-f]{40}$ ]] && ref="sha-$ref"
    [[ $ref =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || return 0  # a branch like feature/x: no image
    repo=${repo:-$DEFAULT_RUNNER_REPO}
    printf '%s/%s:%s' "$RUNNER_REGISTRY" "${repo,,}" "$ref"
}

step_runner() {
    local candidate=${ACPJ_RUNNER_IMAGE:-}
    [ -n "$candidate" ] || candidate=$(published_runner)
    if [ -n "$candidate" ]; then
        if docker image inspect "$candidate" >/dev/null 2>&1; then
            say "runner image $candidate (already here)"
            set_output runner-image "$candidate"
            return 0
        fi
        say "pulling the runner image $candidate"
        if docker pull --quiet "$candidate"; then
            set_output runner-image "$candidate"
            return 0
        fi
        warn "cannot pull the runner image $candidate: building it from the action's Dockerfile instead"
    fi
    need ACPJ_ACTION_PATH
    [ -f "$ACPJ_ACTION_PATH/Dockerfile" ] || die "no Dockerfile in the action's folder $ACPJ_ACTION_PATH to build the runner image from"
    say "building the runner image $LOCAL_RUNNER_TAG from the action's Dockerfile"
    local start=$SECONDS
    docker build -t "$LOCAL_RUNNER_TAG" "$ACPJ_ACTION_PATH" || die "the runner image did not build: see the output above"
    say "built $LOCAL_RUNNER_TAG in $((SECONDS - start)) s"
    set_output runner-image "$LOCAL_RUNNER_TAG"
}

step_run() {
    need ACPJ_WORK
    need ACPJ_RESULT_PATH
    need ACPJ_AGENT_IMAGE
    need ACPJ_RUNNER_IMAGE
    split_command "${ACPJ_AGENT_COMMAND:-}"
    journey_args "${ACPJ_JOURNEYS:-}"
    parse_env "${ACPJ_ENV:-}"
    parse_logins "${ACPJ_LOGIN:-}"
    local work=$ACPJ_WORK
    local produced=$work/result.json
    runner_args "$work"
    # The MCP sockets of the journeys: in a short host path of their own (a Unix socket's path has
    # a bound of about 100 bytes, which a runner's temp folder can come near), shared as it is.
    MCP_DIR=$(mktemp -d /tmp/acpj.XXXXXX)
    chmod 755 "$MCP_DIR"
    RUNNER_ARGS+=(-v "$MCP_DIR:$MCP_DIR")
    local name=${work##*.}
    name="acp-journeys-runner-${name,,}"
    local cli=(run --image "$ACPJ_AGENT_IMAGE" --output "$produced" "${JOURNEY_ARGS[@]}")
    [ -z "${GITHUB_SHA:-}" ] || cli+=(--subject-sha "$GITHUB_SHA")
    if is_true network "${ACPJ_NETWORK:-false}"; then cli+=(--network); fi
    if is_true model-stub "${ACPJ_MODEL_STUB:-false}"; then cli+=(--model-stub); fi
    [ -z "${ACPJ_DOCS_URL:-}" ] || cli+=(--docs-url "$ACPJ_DOCS_URL")
    local env_opts=() name_
    for name_ in "${ENV_NAMES[@]}"; do
        env_opts+=(-e "$name_")
        cli+=(--env "$name_")  # NAME alone: the runner reads the value from its environment
    done
    cli+=("${LOGIN_ARGS[@]}" -- "${ARGV[@]}")
    rm -f "$produced"

    # In the background, waited for, so that a cancelled job's SIGTERM reaches the journeys
    # (which then stop cleanly, remove their containers and write a partial result.json). The
    # NAME=VALUE lines of the env input are set in the docker client's environment only (the
    # subshell that becomes docker), never on a command line.
    RUNNER_NAME=$name
    trap 'docker kill --signal TERM "$RUNNER_NAME" >/dev/null 2>&1 || true' TERM INT
    (
        for ((i = 0; i < ${#ENV_SET[@]}; i += 2)); do
            export "${ENV_SET[i]}=${ENV_SET[i + 1]}"
        done
        exec docker run --name "$name" "${RUNNER_ARGS[@]}" --network none \
            -e ACP_JOURNEYS_SHARED_DIR="$MCP_DIR" -e ACP_JOURNEYS_HOST_HOME="$HOME" \
            "${env_opts[@]}" "${LOGIN_MOUNTS[@]}" "$ACPJ_RUNNER_IMAGE" "${cli[@]}"
    ) &
    local pid=$! code=0
    wait "$pid" || code=$?
    # A signal ends `wait` early: wait on until the container has stopped.
    while kill -0 "$pid" 2>/dev/null; do
        code=0
        wait "$pid" || code=$?
    done
    trap - TERM INT
    rm -rf -- "$MCP_DIR" || true
    set_output exit-code "$code"
    if [ -f "$produced" ] && [ "$produced" != "$ACPJ_RESULT_PATH" ]; then
        cp -- "$produced" "$ACPJ_RESULT_PATH"
    fi
    case $code in
    0 | 1) return 0 ;;  # a verdict; the gate step decides what a failure means for the job
    *)
        if [ -f "$produced" ]; then
            error "the journeys stopped early (exit $code): result.json is partial"
        else
            error "the journeys did not run (exit $code): see the message above"
        fi
        exit "$code"
        ;;
    esac
}

# -v PATH:PATH for a GitHub file that the runner writes or reads (made first: a missing source
# would become a folder).
github_file_mount() {
    local var=$1 mode=$2 path=${!1:-}
    [ -n "$path" ] || return 0
    if [ ! -e "$path" ]; then
        [ "$mode" = rw ] || return 0
        : >>"$path" || return 0
    fi
    FILE_MOUNTS+=(-v "$path:$path:$mode")
    FILE_ENV+=(-e "$var")
}

step_report() {
    local work=${ACPJ_WORK:-}
    if [ -z "$work" ] || [ ! -f "$work/result.json" ]; then
        warn "no result.json: nothing to report (see the earlier steps)"
        return 0
    fi
    if [ -z "${ACPJ_RUNNER_IMAGE:-}" ]; then
        warn "no runner image: nothing to report"
        return 0
    fi
    runner_args "$work"
    FILE_MOUNTS=()
    FILE_ENV=()
    github_file_mount GITHUB_STEP_SUMMARY rw
    github_file_mount GITHUB_OUTPUT rw
    github_file_mount GITHUB_EVENT_PATH ro
    local env_opts=() var
    for var in GITHUB_API_URL GITHUB_REPOSITORY GITHUB_SHA GITHUB_EVENT_NAME GITHUB_SERVER_URL GITHUB_RUN_ID \
        GITHUB_TOKEN; do
        [ -z "${!var:-}" ] || env_opts+=(-e "$var")
    done
    local cli=(report "$work/result.json" --github --check-name "${ACPJ_CHECK_NAME:-ACP journeys}")
    [ -z "${ACPJ_DOCS_URL:-}" ] || cli+=(--docs-url "$ACPJ_DOCS_URL")
    is_true post-check "${ACPJ_POST_CHECK:-true}" || cli+=(--no-check-run)
    # The host's network: the GitHub API (or a stand-in on loopback) is reached as from the job.
    local code=0
    docker run "${RUNNER_ARGS[@]}" --network host "${FILE_MOUNTS[@]}" "${FILE_ENV[@]}" "${env_opts[@]}" \
        "$ACPJ_RUNNER_IMAGE" "${cli[@]}" || code=$?
    [ "$code" = 0 ] || warn "the report did not run (exit $code): no check run or job summary; the gate still judges result.json"
    return 0
}

step_gate() {
    local work=${ACPJ_WORK:-}
    if [ -z "$work" ] || [ ! -f "$work/result.json" ]; then
        error "the journeys did not run: no result.json (see the earlier steps)"
        exit 1
    fi
    need ACPJ_RUNNER_IMAGE
    runner_args "$work"
    local cli=(verify "$work/result.json")
    [ -z "${GITHUB_SHA:-}" ] || cli+=(--expect-sha "$GITHUB_SHA")
    local code=0
    docker run "${RUNNER_ARGS[@]}" --network none "$ACPJ_RUNNER_IMAGE" "${cli[@]}" >"$work/verify.log" 2>&1 || code=$?
    local verdict=${ACPJ_VERDICT:-}
    case $code in
    0)
        say "verdict: pass${verdict:+ (reported: $verdict)}"
        return 0
        ;;
    1)
        cat "$work/verify.log"
        if is_true fail-on-failure "${ACPJ_FAIL_ON_FAILURE:-true}"; then
            error "ACP journeys failed (${ACPJ_FAILED:-some} failed, ${ACPJ_PASSED:-?} passed): see the job summary"
            exit 1
        fi
        warn "ACP journeys failed (${ACPJ_FAILED:-some} failed); fail-on-failure is false, so the job goes on"
        return 0
        ;;
    *)
        cat "$work/verify.log"
        error "result.json could not be judged (exit $code)"
        exit 2
        ;;
    esac
}

main() {
    set -f  # no globbing of unquoted words anywhere
    # The merge action gives <action>/merge/..: the same folder, spelt as the runner's own path.
    [ -z "${ACPJ_ACTION_PATH:-}" ] || ACPJ_ACTION_PATH=$(realpath -m -- "$ACPJ_ACTION_PATH")
    case "${1:-}" in
    prepare) step_prepare ;;
    build) step_build ;;
    runner) step_runner ;;
    run) step_run ;;
    report) step_report ;;
    gate) step_gate ;;
    *)
        printf 'usage: %s prepare|build|runner|run|report|gate\n' "$0" >&2
        exit 2
        ;;
    esac
}

# Sourced by merge-steps.sh for these functions; run as a script, it runs a step.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
