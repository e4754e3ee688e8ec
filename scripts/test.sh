#!/usr/bin/env bash
# The whole test suite, with all its set-up: venv and install, a Docker engine (installed and
# started when none runs), the local base and runner images (no registry needed), then pytest.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh test
if [ "${ACP_JOURNEYS_SKIP_DOCKER:-}" != "1" ]; then
  scripts/docker-up.sh
  scripts/setup/build-base-image.sh
  scripts/setup/build-runner-image.sh
  scripts/setup/install-registry.sh  # Debian's docker-registry, for the pull tests on loopback
fi
chromium="$(scripts/setup/setup-chromium.sh)"; [ -z "$chromium" ] || export ACP_JOURNEYS_CHROMIUM="$chromium"
vibe_acp="$(scripts/setup/setup-vibe.sh)"; [ -z "$vibe_acp" ] || export ACP_JOURNEYS_VIBE_ACP="$vibe_acp"
claude_acp="$(scripts/setup/setup-claude-acp.sh)"; [ -z "$claude_acp" ] || export ACP_JOURNEYS_CLAUDE_ACP="$claude_acp"
agentao="$(scripts/setup/setup-agentao.sh)"; [ -z "$agentao" ] || export ACP_JOURNEYS_AGENTAO="$agentao"
# With no test named (no test file or folder among the arguments, as .ci/run passes), the two fixture tables run apart, their
# cases $ACP_JOURNEYS_TABLE_WORKERS at once (pytest-xdist, default 3): a case mostly waits out
# Rondar's own bounds (10 s to exit, 30 s to cancel), and its verdict must not depend on load
# (the soak runs them so, beside other suites). The rest of the suite stays serial.
tables=(tests/fixture_tables/test_fixture_verdicts.py tests/fixture_tables/test_fixture_verdicts_docker.py)
named=0
for arg in "$@"; do case "$arg" in -*) ;; *) [ ! -e "${arg%%::*}" ] || named=1 ;; esac; done
set +e
if [ "$named" = 1 ]; then
  .venv/bin/python -m pytest "$@"
  code=$?
else
  .venv/bin/python -m pytest "$@" "${tables[@]/#/--ignore=}"
  code=$?
  .venv/bin/python -m pytest "$@" -n "${ACP_JOURNEYS_TABLE_WORKERS:-3}" "${tables[@]}"
  table_code=$?
  echo "test: the fixture tables exited $table_code" >&2
  # 5 (no test collected) in either half is a failure too.
  [ "$code" != 0 ] || code=$table_code
fi
set -e
if [ "$code" = 5 ]; then
  echo "test: pytest collected no test" >&2
  exit 1
fi

# GitHub's runners give containers a private cgroup namespace: the docker tests of process
# tracking, leftovers and the cancel journey's process check run again on an engine of our own
# that does so (scripts/setup/docker-private-up.sh), then it stops. The shared engine is left alone.
if [ "${ACP_JOURNEYS_SKIP_DOCKER:-}" != "1" ] && [ "${ACP_JOURNEYS_SKIP_PRIVATE_CGROUPNS:-}" != "1" ]; then
  runner="${ACP_JOURNEYS_RUNNER_IMAGE:-acp-journeys/runner:dev}"
  trap 'scripts/setup/docker-private-up.sh down || true' EXIT
  private_host="$(scripts/setup/docker-private-up.sh up acp-journeys/base:bookworm "$runner")"
  set +e
  DOCKER_HOST="$private_host" ACP_JOURNEYS_RUNNER_IMAGE="$runner" ACP_JOURNEYS_TEST_IMAGE="$runner" \
    .venv/bin/python -m pytest -q -p no:cacheprovider \
    "tests/launch/test_docker_launch.py::test_a_double_forked_setsid_daemon_is_found_and_killed" \
    "tests/launch/test_docker_launch.py::test_the_mcp_relay_reaches_the_runner_and_counts_as_a_leftover" \
    "tests/launch/test_docker_launch.py::test_a_runner_in_a_container_shares_the_mcp_socket_through_a_named_volume" \
    "tests/fixture_tables/test_fixture_verdicts_docker.py::test_fixture_verdict_is_the_same_in_containers[leave-sleep]" \
    "tests/fixture_tables/test_fixture_verdicts_docker.py::test_fixture_verdict_is_the_same_in_containers[no-tool-call]" \
    "tests/fixture_tables/test_fixture_verdicts_docker.py::test_fixture_verdict_is_the_same_in_containers[leave-daemon]" \
    "tests/launch/test_docker_launch.py::test_a_daemon_named_as_our_holder_is_a_leftover" \
    "tests/fixture_tables/test_fixture_verdicts_docker.py::test_fixture_verdict_is_the_same_in_containers[disguised-daemon]" \
    "tests/action/test_action.py::test_end_to_end_a_cancelled_run_stops_the_journeys_cleanly"
  private_code=$?
  set -e
  echo "test: the private-cgroupns session exited $private_code" >&2
  [ "$code" != 0 ] || code=$private_code
fi
exit "$code"
