#!/usr/bin/env bash
# The fixture table, again and again, several copies at once: a verdict that changes with timing
# or load is a race (in the product first, then in the test), never a flake to retry.
#
#   scripts/soak-fixtures.sh [ROUNDS] [AT_ONCE] [pytest args...]
#
# Defaults: 10 rounds of 4 copies at once, of tests/fixture_tables/test_fixture_verdicts.py (local mode); pass
# tests/fixture_tables/test_fixture_verdicts_docker.py as a pytest argument for docker mode. Every copy's output
# is kept under build/soak/; the exit status is 1 when any copy of any round failed. A table's cases
# spend most of their time waiting (Rondar's 30 s cancel bound), so `-n 4` (pytest-xdist, in the
# test extras) runs four cases at once: a round in about 4 minutes instead of 10 to 15, under the
# load of four suites at once on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
at_once=${2:-4}
shift $(( $# > 2 ? 2 : $# ))
[ "$#" -gt 0 ] || set -- tests/fixture_tables/test_fixture_verdicts.py
out=build/soak/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
failed=0
for round in $(seq 1 "$rounds"); do
    pids=()
    for copy in $(seq 1 "$at_once"); do
        # A bound on every copy: a hang is a finding too.
        timeout 1800 .venv/bin/python -m pytest -q -p no:cacheprovider "$@" \
            >"$out/round$round-copy$copy.log" 2>&1 &
        pids+=("$!")
    done
    for i in "${!pids[@]}"; do
        if wait "${pids[$i]}"; then
            printf 'round %s copy %s: %s\n' "$round" "$((i + 1))" "$(tail -n 1 "$out/round$round-copy$((i + 1)).log")"
        else
            failed=1
            printf 'round %s copy %s: FAILED\n' "$round" "$((i + 1))"
            grep -E '^(FAILED|ERROR) ' "$out/round$round-copy$((i + 1)).log" | sed 's/^/    /' || true
        fi
    done
done
echo "soak: $rounds round(s) of $at_once at once; logs in $out"
exit "$failed"
