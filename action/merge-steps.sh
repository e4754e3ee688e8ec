#!/usr/bin/env bash
# The shell steps of merge/action.yml (the matrix's one verdict), one subcommand a step:
#
#   merge-steps.sh prepare   check the inputs, make the work folder; outputs work, download-path,
#                            result-path, html-path
#   merge-steps.sh merge     merge every result.json that the download step put in download-path,
#                            and write the HTML report of the merged result beside it
#
# The runner image, the report and the gate are steps.sh's own steps on the merged result.
# Rules: those of steps.sh (inputs only through ACPJ_* variables, nothing eval'ed, exit 2 for bad
# inputs and a merge that could not be done, with a message).
set -euo pipefail

# shellcheck source=action/steps.sh
. "$(dirname "${BASH_SOURCE[0]}")/steps.sh"

step_merge_prepare() {
    local work
    no_newline pattern "${ACPJ_PATTERN:-}"
    [ -n "${ACPJ_PATTERN:-}" ] || die "input pattern is empty: give the pattern of the matrix jobs' artifact names"
    expect_args "${ACPJ_JOURNEYS:-all}"
    is_true fail-on-failure "${ACPJ_FAIL_ON_FAILURE:-true}" || true
    is_true post-check "${ACPJ_POST_CHECK:-true}" || true
    no_newline check-name "${ACPJ_CHECK_NAME:-}"
    no_newline runner-image "${ACPJ_RUNNER_IMAGE:-}"
    no_newline docs-url "${ACPJ_DOCS_URL:-}"
    work=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/acp-journeys-merge.XXXXXX")
    chmod 755 "$work"
    mkdir "$work/parts"
    set_output work "$work"
    set_output download-path "$work/parts"
    set_output result-path "$work/result.json"
    set_output html-path "$work/result.html"
    say "work folder $work; the artifacts matching '$ACPJ_PATTERN' go to $work/parts"
}

# EXPECT_ARGS=(--expect ID ...) from the journeys input (`all`, or ids split by spaces, commas, lines)
expect_args() {
    EXPECT_ARGS=()
    local text=${1:-} id
    text=${text//,/ }
    for id in $text; do  # word splitting on purpose (set -f: no globs); each word is checked
        [[ $id =~ ^[a-z0-9][a-z0-9-]*$ ]] || die "input journeys: '$id' is not a journey id (see acp-journeys list)"
        EXPECT_ARGS+=(--expect "$id")
    done
}

step_merge() {
    need ACPJ_WORK
    need ACPJ_RUNNER_IMAGE
    expect_args "${ACPJ_JOURNEYS:-all}"
    local work=$ACPJ_WORK parts=()
    # download-artifact puts each artifact of a pattern in a folder named after it.
    mapfile -d '' -t parts < <(find "$work/parts" -mindepth 1 -maxdepth 2 -type f -name result.json -print0 | sort -z)
    [ "${#parts[@]}" -gt 0 ] || die "no result.json in the artifacts matching '${ACPJ_PATTERN:-}': did the matrix jobs run, and does the pattern match their artifact-name?"
    say "merging ${#parts[@]} result(s): ${parts[*]#"$work/parts/"}"
    runner_args "$work"
    # The parts hold the agents' text, which the table and a refusal quote: the runner acts on
    # no workflow command of it (our own error and warn end the pause first).
    pause_commands
    docker run "${RUNNER_ARGS[@]}" --network none "$ACPJ_RUNNER_IMAGE" \
        merge "$work/result.json" "${parts[@]}" "${EXPECT_ARGS[@]}" \
        || die "the results could not be merged: see the message above"
    # The page of the merged result, judged again from its evidence like everything we publish.
    docker run "${RUNNER_ARGS[@]}" --network none "$ACPJ_RUNNER_IMAGE" \
        report "$work/result.json" --html "$work/result.html" \
        || warn "the HTML report of the merged result could not be written (see above); result.json is uploaded all the same"
    resume_commands
}

merge_main() {
    set -f
    trap resume_commands EXIT
    [ -z "${ACPJ_ACTION_PATH:-}" ] || ACPJ_ACTION_PATH=$(realpath -m -- "$ACPJ_ACTION_PATH")
    case "${1:-}" in
    prepare) step_merge_prepare ;;
    merge) step_merge ;;
    *)
        printf 'usage: %s prepare|merge\n' "$0" >&2
        exit 2
        ;;
    esac
}

merge_main "$@"
