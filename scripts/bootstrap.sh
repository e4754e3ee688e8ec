#!/usr/bin/env bash
# Creates .venv (when missing) and installs acp-journeys into it, editable, with the test extras
# when asked: `scripts/bootstrap.sh test`. Idempotent; safe on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "bootstrap: acp-journeys needs Python 3.11 or newer ($python is older or missing)" >&2
  exit 2
fi
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv"
  "$python" -m venv .venv
fi
extras=""
[ "${1:-}" = "test" ] && extras="[test]"
echo "bootstrap: installing acp-journeys${extras} into .venv"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}" 2>&1 \
  | grep -v "^WARNING: Location" || true
.venv/bin/python -c 'import acp_journeys' || { echo "bootstrap: the install failed" >&2; exit 2; }
