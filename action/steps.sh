#!/usr/bin/env bash
# The shell steps of action.yml, one subcommand a step, so they run (and are tested) outside
# GitHub too:
#
#   steps.sh prepare   check every input, make the work folder; outputs work, result-path, html-path, agent-image
#   steps.sh build     build the agent image from the checkout (or pull the given `image`)
#   steps.sh runner    find the runner image: the input's (local, else pulled), else the release's
#                      digest or the ref's tag (always pulled), else built from the action's Dockerfile
#   steps.sh run       run the journeys in the runner image against the agent image
#   steps.sh report    post the check run (unless post-check is false), write the job summary and outputs
#   steps.sh gate      fail when a journey failed and fail-on-failure is true
#   steps.sh cleanup   remove every container, volume and network of this job's run (always runs)
#
# Rules of this script:
# - Inputs come only as environment variables (ACPJ_*), never spliced into code; nothing is
#   eval'ed. Multi-line inputs are read line by line: blank lines and lines starting with # are
#   skipped. The agent command is split into words like a shell would, quotes included, with
#   xargs: no variables, globs or substitutions.
# - Values of the `env` input are secrets: they reach the runner container through the docker
#   client's environment (`-e NAME`), never through a command line, and are never printed.
# - The runner container shares the work folder, mounted at the same path inside, so that paths
#   mean the same on both sides; only the run step's container also gets the engine's socket, so
#   that the agent containers that it makes can bind its MCP sockets (ACP_JOURNEYS_SHARED_DIR).
#   The report and gate steps read result.json, which the agent may have shaped: they get no
#   socket, and the report step the host's network only when the GitHub API is on loopback.
#   Every runner container runs as the calling user (what it writes stays the user's), with a
#   memory and a pids limit, and labels what it makes with its own name (the cleanup step's key).
# - Exit codes: 0, or 1 for a failed gate, or 2 for bad inputs and a run that could not be done.
set -euo pipefail

DEFAULT_RUNNER_REPO="rondar/acp-journeys"
RUNNER_REGISTRY="ghcr.io"
LOCAL_RUNNER_TAG="acp-journeys/runner:action-build"
RUNNER_MEMORY=2g  # the runner's peak is about 100 MiB; bodies it may hold are bounded below 100 MiB each
RUNNER_PIDS=1024

# --- output ----------------------------------------------------------------------------------

# Workflow-command data: %, CR and LF escaped, so no text can start a command of its own.
escape_data() {
    local s=${1//'%'/'%25'}
    s=${s//$'\r'/'%0D'}
    printf '%s' "${s//$'\n'/'%0A'}"
}
say() { printf 'acp-journeys: %s\n' "$(escape_data "$*")"; }
warn() { resume_commands; printf '::warning::%s\n' "$(escape_data "$*")"; }
error() { resume_commands; printf '::error::%s\n' "$(escape_data "$*")"; }

# Output that may hold the agent's text (its image build, the journeys, the verdict table) goes
# between these two: GitHub's runner then acts on no workflow command in it. The token is random
# and printed only here, so nothing inside can end the pause; our own warn/error end it first.
STOP_TOKEN=""
pause_commands() {
    resume_commands
    STOP_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    printf '::stop-commands::%s\n' "$STOP_TOKEN"
}
resume_commands() {
    [ -n "$STOP_TOKEN" ] || return 0
    printf '::%s::\n' "$STOP_TOKEN"
    STOP_TOKEN=""
}
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

# The network of the agent image's build (its RUN steps): `default`, the engine's default bridge,
# which reaches what the machine reaches (a cloud's metadata address on a self-hosted runner too),
# or `none`. The engine pulls the FROM images either way.
build_network_args() {
    BUILD_NETWORK_ARGS=()
    case "${1:-}" in
    "" | default) ;;
    none) BUILD_NETWORK_ARGS=(--network none) ;;
    *) die "input build-network: expected default or none, got '$1'" ;;
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

# SETTING_ARGS=(--setting NAME=VALUE ...) from the settings input: no secrets, so on the command
# line as they are; NAME alone takes the step's value.
parse_settings() {
    SETTING_ARGS=()
    split_lines "${1:-}"
    local line name
    for line in "${LINES[@]}"; do
        name=${line%%=*}
        [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "input settings: a line is not NAME or NAME=VALUE (line starting '${name:0:20}')"
        if [ "$name" = "$line" ]; then
            [ -n "${!name+set}" ] || die "input settings: $name is not set in the step's environment (set it with env: on the step)"
            line="$name=${!name}"
        fi
        case " ${ENV_NAMES[*]:-} " in *" $name "*) die "input settings: $name is in the env input too: a value is a secret (env) or not (settings)" ;; esac
        SETTING_ARGS+=(--setting "$line")
    done
}

# WS_FILE=(the absolute path of an input file, which must be a file in the workspace)
workspace_file() {
    local input=$1 given=$2 root
    WS_FILE=$(abs_path "$given")
    root=$(realpath -m -- "$(workspace)")
    case $WS_FILE/ in "$root"/*) ;; *) die "input $input: $given is not in the workspace" ;; esac
    [ -f "$WS_FILE" ] || die "input $input: $WS_FILE is not a file (write or check it out in an earlier step)"
}

# TEMPLATE_LINES=(SRC:DEST ...) of the model-stub-config-templates input, SRC made absolute.
parse_templates() {
    TEMPLATE_LINES=()
    split_lines "${1:-}"
    local line src dest
    for line in "${LINES[@]}"; do
        case $line in *:*) ;; *) die "input model-stub-config-templates: a line is not SRC:DEST ('$line')" ;; esac
        src=${line%:*}
        dest=${line##*:}
        [ -n "$src" ] && [ -n "$dest" ] || die "input model-stub-config-templates: a line is not SRC:DEST ('$line')"
        case /$dest/ in
        //* | /~* | */../*) die "input model-stub-config-templates: the DEST of '$line' must be a path inside the agent's home, like .config/agent.toml" ;;
        esac
        workspace_file model-stub-config-templates "$src"
        TEMPLATE_LINES+=("$WS_FILE:$dest")
    done
}

# The inputs that the run step turns into options, checked: timeout-scale, parallel, strict, the
# settings, the config templates (with model-stub only) and the baseline.
check_run_inputs() {
    local scale=${ACPJ_TIMEOUT_SCALE:-}
    if [ -n "$scale" ]; then
        [[ $scale =~ ^[0-9]+(\.[0-9]+)?$|^\.[0-9]+$ ]] && [[ $scale =~ [1-9] ]] \
            || die "input timeout-scale: expected a number above 0 (like 2 or 1.5), got '$scale'"
    fi
    local parallel=${ACPJ_PARALLEL:-}
    if [ -n "$parallel" ]; then
        [[ $parallel =~ ^[1-9][0-9]{0,3}$ ]] || die "input parallel: expected a whole number of 1 or more, got '$parallel'"
    fi
    is_true strict "${ACPJ_STRICT:-false}" || true
    case "${ACPJ_TIER:-}" in
        ""|protocol) ;;
        *) die "input tier: expected protocol or nothing, got '${ACPJ_TIER}'" ;;
    esac
    parse_settings "${ACPJ_SETTINGS:-}"
    parse_templates "${ACPJ_CONFIG_TEMPLATES:-}"
    if [ "${#TEMPLATE_LINES[@]}" -gt 0 ] && ! is_true model-stub "${ACPJ_MODEL_STUB:-false}"; then
        die "input model-stub-config-templates: the config templates are for the scripted model: set model-stub: true"
    fi
    no_newline baseline "${ACPJ_BASELINE:-}"
    [ -z "${ACPJ_BASELINE:-}" ] || workspace_file baseline "$ACPJ_BASELINE"
}

# The baseline and the config templates, copied into the work folder (which every runner
# container of the job mounts), under their own names; TEMPLATE_ARGS for the run step.
copy_run_files() {
    local work=$1 i=0 line src
    if [ -n "${ACPJ_BASELINE:-}" ]; then
        workspace_file baseline "$ACPJ_BASELINE"
        mkdir -p "$work/baseline"
        cp -- "$WS_FILE" "$work/baseline/$(basename -- "$WS_FILE")"
    fi
    for line in "${TEMPLATE_LINES[@]}"; do
        i=$((i + 1))
        src=${line%:*}
        mkdir -p "$work/templates/$i"
        cp -- "$src" "$work/templates/$i/$(basename -- "$src")"
    done
}

# BASELINE_ARGS=(--baseline FILE) when the work folder holds the baseline.
baseline_args() {
    BASELINE_ARGS=()
    local file
    if [ -d "$1/baseline" ]; then  # the one file that prepare copied
        file=$(find "$1/baseline" -mindepth 1 -maxdepth 1 -type f | head -n 1)
        [ -z "$file" ] || BASELINE_ARGS=(--baseline "$file")
    fi
}

# TEMPLATE_ARGS=(--model-stub-config-template COPY:DEST ...), in the order of the input.
template_args() {
    TEMPLATE_ARGS=()
    local work=$1 i=0 line src
    for line in "${TEMPLATE_LINES[@]}"; do
        i=$((i + 1))
        src=${line%:*}
        TEMPLATE_ARGS+=(--model-stub-config-template "$work/templates/$i/$(basename -- "$src"):${line##*:}")
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

# RUNNER_ARGS=(the docker run options common to every runner container); `socket` as $2: with
# the engine's socket (the run step only).
runner_args() {
    local work=$1 socket=${2:-}
    RUNNER_ARGS=(--rm --init --label acp-journeys.action=1 --memory "$RUNNER_MEMORY" --memory-swap "$RUNNER_MEMORY"
        --pids-limit "$RUNNER_PIDS" -v "$work:$work" -w "$work")
    # The calling user, so that files written in the work folder and the GitHub files stay theirs.
    [ "$(id -u)" = 0 ] || RUNNER_ARGS+=(--user "$(id -u):$(id -g)")
    if [ "$socket" = socket ]; then
        docker_socket
        RUNNER_ARGS+=(-v "$SOCK:/var/run/docker.sock")
        # The socket's group, so that this user can reach the engine.
        [ "$(id -u)" = 0 ] || RUNNER_ARGS+=(--group-add "$(stat -c %g "$SOCK")")
    fi
}

# The run step's runner container: its name, and the owner label of all it makes.
runner_name() {
    local suffix=${1##*.}
    printf 'acp-journeys-runner-%s' "${suffix,,}"
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
    build_network_args "${ACPJ_BUILD_NETWORK:-}"
    check_run_inputs
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
    copy_run_files "$work"
    set_output work "$work"
    set_output result-path "$result"
    set_output html-path "${result%.json}.html"
    set_output agent-image "$image"
    say "work folder $work; result.json goes to $result"
}

# A checkout that kept its token (actions/checkout's persist-credentials, on by default) has it in
# .git/config; in the build context, the agent's Dockerfile can copy it into the image or send it
# away. Warn, unless .dockerignore leaves .git out. (Never prints the token.)
warn_git_token() {
    local context=$1 config=$1/.git/config
    [ -f "$config" ] || return 0
    grep -qiE '^[[:space:]]*extraheader[[:space:]]*=.*authorization|://[^/@[:space:]]+:[^/@[:space:]]+@' "$config" || return 0
    if [ -f "$context/.dockerignore" ] && grep -qxE '[[:space:]]*/?\.git(/|/\*\*?)?[[:space:]]*' "$context/.dockerignore"; then
        return 0
    fi
    warn "the build context's .git/config holds a token (actions/checkout keeps it unless persist-credentials: false): the agent's Dockerfile can read it; set persist-credentials: false, or put .git in .dockerignore"
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
    build_network_args "${ACPJ_BUILD_NETWORK:-}"
    warn_git_token "$context"
    local labels=()
    [ -z "${GITHUB_SHA:-}" ] || labels=(--label "org.opencontainers.image.revision=$GITHUB_SHA")
    say "building the agent image $ACPJ_AGENT_IMAGE from $dockerfile (context $context, network ${ACPJ_BUILD_NETWORK:-default})"
    local start=$SECONDS
    pause_commands  # the agent's Dockerfile prints what it likes
    docker build "${BUILD_NETWORK_ARGS[@]}" "${BUILD_ARGS[@]}" "${labels[@]}" -f "$dockerfile" -t "$ACPJ_AGENT_IMAGE" "$context" \
        || die "the agent image did not build: see the docker build output above"
    resume_commands
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

# The runner image that the release wrote into this copy of the action (action/runner-image):
# PINNED=IMAGE@sha256:DIGEST, or empty in a copy that no release made (a branch, `uses: ./`).
pinned_runner() {
    PINNED=""
    local file=${ACPJ_ACTION_PATH:-}/action/runner-image line
    [ -f "$file" ] || return 0
    line=$(grep -v '^#' "$file" | head -n 1 | tr -d '[:space:]') || true
    [ -n "$line" ] || return 0
    [[ $line =~ ^[a-z0-9][a-z0-9./_-]*@sha256:[0-9a-f]{64}$ ]] || die "action/runner-image holds '$line', not IMAGE@sha256:DIGEST"
    PINNED=$line
}

step_runner() {
    local candidate=${ACPJ_RUNNER_IMAGE:-}
    if [ -n "$candidate" ]; then
        # The workflow's own choice: a local image of that name is what it means.
        if docker image inspect "$candidate" >/dev/null 2>&1; then
            say "runner image $candidate (already here)"
            set_output runner-image "$candidate"
            return 0
        fi
    else
        pinned_runner
        candidate=$PINNED
        # By digest, when the release wrote one; else the published tag of the action's ref. Either
        # way pulled, never taken from a local image that merely has the same tag (anyone who
        # could run a container on this machine could have made that).
        [ -n "$candidate" ] || candidate=$(published_runner)
    fi
    if [ -n "$candidate" ]; then
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
    check_run_inputs
    local work=$ACPJ_WORK
    local produced=$work/result.json
    baseline_args "$work"
    template_args "$work"
    runner_args "$work" socket
    # The MCP sockets of the journeys: in a short host path of their own (a Unix socket's path has
    # a bound of about 100 bytes, which a runner's temp folder can come near), shared as it is.
    # Noted in the work folder, so that the cleanup step finds it after a killed run too.
    MCP_DIR=$(mktemp -d /tmp/acpj.XXXXXX)
    chmod 755 "$MCP_DIR"
    printf '%s\n' "$MCP_DIR" >"$work/mcp-dir"
    RUNNER_ARGS+=(-v "$MCP_DIR:$MCP_DIR")
    local name
    name=$(runner_name "$work")
    # Everything the runner makes is labelled with this owner: the cleanup step removes it all.
    RUNNER_ARGS+=(--label "acp-journeys.owner=container:$name" -e "ACP_JOURNEYS_OWNER=container:$name")
    local cli=(run --image "$ACPJ_AGENT_IMAGE" --output "$produced" "${JOURNEY_ARGS[@]}")
    [ -z "${GITHUB_SHA:-}" ] || cli+=(--subject-sha "$GITHUB_SHA")
    cli+=(--html "${produced%.json}.html")  # the HTML report, uploaded beside result.json
    if is_true network "${ACPJ_NETWORK:-false}"; then cli+=(--network); fi
    if is_true model-stub "${ACPJ_MODEL_STUB:-false}"; then cli+=(--model-stub); fi
    [ -z "${ACPJ_DOCS_URL:-}" ] || cli+=(--docs-url "$ACPJ_DOCS_URL")
    [ -z "${ACPJ_TIMEOUT_SCALE:-}" ] || cli+=(--timeout-scale "$ACPJ_TIMEOUT_SCALE")
    [ -z "${ACPJ_PARALLEL:-}" ] || cli+=(--parallel "$ACPJ_PARALLEL")
    if is_true strict "${ACPJ_STRICT:-false}"; then cli+=(--strict); fi
    [ -z "${ACPJ_TIER:-}" ] || cli+=(--tier "$ACPJ_TIER")  # its own verdict: the job's stays Rondar's
    cli+=("${SETTING_ARGS[@]}" "${TEMPLATE_ARGS[@]}" "${BASELINE_ARGS[@]}")
    local env_opts=() name_
    for name_ in "${ENV_NAMES[@]}"; do
        env_opts+=(-e "$name_")
        cli+=(--env "$name_")  # NAME alone: the runner reads the value from its environment
    done
    cli+=("${LOGIN_ARGS[@]}" -- "${ARGV[@]}")
    rm -f "$produced" "${produced%.json}.html"

    # In the background, waited for, so that a cancelled job's SIGTERM reaches the journeys
    # (which then stop cleanly, remove their containers and write a partial result.json). The
    # NAME=VALUE lines of the env input are set in the docker client's environment only (the
    # subshell that becomes docker), never on a command line.
    RUNNER_NAME=$name
    pause_commands
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
    resume_commands
    rm -rf -- "$MCP_DIR" || true
    set_output exit-code "$code"
    if [ -f "$produced" ] && [ "$produced" != "$ACPJ_RESULT_PATH" ]; then
        cp -- "$produced" "$ACPJ_RESULT_PATH"
    fi
    local html=${produced%.json}.html
    if [ -f "$html" ] && [ -n "${ACPJ_HTML_PATH:-}" ] && [ "$html" != "$ACPJ_HTML_PATH" ]; then
        cp -- "$html" "$ACPJ_HTML_PATH"
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
    # As the gate step will judge it: a partial or another commit's result is never reported as a pass.
    journey_args "${ACPJ_JOURNEYS:-}"
    cli+=("${JOURNEY_ARGS[@]}")
    [ -z "${GITHUB_SHA:-}" ] || cli+=(--expect-sha "$GITHUB_SHA")
    [ -z "${ACPJ_ARTIFACT_URL:-}" ] || cli+=(--artifact-url "$ACPJ_ARTIFACT_URL")  # of the HTML report
    [ -z "${ACPJ_DOCS_URL:-}" ] || cli+=(--docs-url "$ACPJ_DOCS_URL")
    baseline_args "$work"
    cli+=("${BASELINE_ARGS[@]}")
    # The host's network only for an API on loopback (a stand-in, or a proxy of the runner's);
    # else the default bridge, which reaches what the job reaches.
    local network=bridge api_host=${GITHUB_API_URL:-https://api.github.com}
    api_host=${api_host#*://}
    api_host=${api_host%%/*}
    api_host=${api_host##*@}
    case $api_host in
    localhost | localhost:* | 127.* | "[::1]" | "[::1]:"*) network=host ;;
    esac
    is_true post-check "${ACPJ_POST_CHECK:-true}" || cli+=(--no-check-run)
    local code=0
    docker run "${RUNNER_ARGS[@]}" --network "$network" "${FILE_MOUNTS[@]}" "${FILE_ENV[@]}" "${env_opts[@]}" \
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
    journey_args "${ACPJ_JOURNEYS:-}"  # the journeys that ran: a file without one is a partial verdict
    local cli=(verify "$work/result.json" "${JOURNEY_ARGS[@]}")
    [ -z "${GITHUB_SHA:-}" ] || cli+=(--expect-sha "$GITHUB_SHA")
    baseline_args "$work"
    cli+=("${BASELINE_ARGS[@]}")
    local code=0
    docker run "${RUNNER_ARGS[@]}" --network none "$ACPJ_RUNNER_IMAGE" "${cli[@]}" >"$work/verify.log" 2>&1 || code=$?
    local verdict=${ACPJ_VERDICT:-}
    case $code in
    0)
        say "verdict: pass${verdict:+ (reported: $verdict)}"
        return 0
        ;;
    1)
        pause_commands
        cat "$work/verify.log"
        resume_commands
        # A refused or partial result is no failure count: say the gate's word (verify's line above).
        local word
        word=$(grep -m1 -oE '^verdict: (REFUSED|PARTIAL)' "$work/verify.log" | cut -d' ' -f2) || true
        if is_true fail-on-failure "${ACPJ_FAIL_ON_FAILURE:-true}"; then
            if [ -n "$word" ]; then
                error "ACP journeys: the gate says $word (see verify's verdict line above): the job fails"
            else
                error "ACP journeys failed (${ACPJ_FAILED:-some} failed, ${ACPJ_PASSED:-?} passed): see the job summary"
            fi
            exit 1
        fi
        if [ -n "$word" ]; then
            warn "ACP journeys: the gate says $word; fail-on-failure is false, so the job goes on"
            return 0
        fi
        warn "ACP journeys failed (${ACPJ_FAILED:-some} failed); fail-on-failure is false, so the job goes on"
        return 0
        ;;
    *)
        pause_commands
        cat "$work/verify.log"
        error "result.json could not be judged (exit $code)"
        exit 2
        ;;
    esac
}

# Whatever this job's run left, also when the runner was killed: the runner container, every
# container, volume and network labelled with its name, and the folder of the MCP sockets. That
# folder is removed by a root container of ours when the job's user cannot (nothing of an agent's
# should be in it: agents see it read-only). Never fails the job.
step_cleanup() {
    local work=${ACPJ_WORK:-}
    [ -n "$work" ] || return 0
    local name owner ids
    name=$(runner_name "$work")
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
    local dir=""
    [ ! -f "$work/mcp-dir" ] || dir=$(head -n 1 "$work/mcp-dir")
    if [[ $dir == /tmp/acpj.* ]] && [ -d "$dir" ] && ! rm -rf -- "$dir" 2>/dev/null; then
        if [ -n "${ACPJ_RUNNER_IMAGE:-}" ]; then
            docker run --rm --network none --user 0 --entrypoint find -v "$dir:/purge" "$ACPJ_RUNNER_IMAGE" \
                /purge -mindepth 1 -delete >/dev/null 2>&1 || true
        fi
        rm -rf -- "$dir" 2>/dev/null || warn "could not remove $dir"
    fi
    return 0
}

main() {
    set -f  # no globbing of unquoted words anywhere
    # The merge action gives <action>/merge/..: the same folder, spelt as the runner's own path.
    [ -z "${ACPJ_ACTION_PATH:-}" ] || ACPJ_ACTION_PATH=$(realpath -m -- "$ACPJ_ACTION_PATH")
    trap resume_commands EXIT
    case "${1:-}" in
    prepare) step_prepare ;;
    build) step_build ;;
    runner) step_runner ;;
    run) step_run ;;
    report) step_report ;;
    gate) step_gate ;;
    cleanup) step_cleanup ;;
    *)
        printf 'usage: %s prepare|build|runner|run|report|gate|cleanup\n' "$0" >&2
        exit 2
        ;;
    esac
}

# Sourced by merge-steps.sh for these functions; run as a script, it runs a step.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
