#!/usr/bin/env bash
# The full real-agent run: every agent of a registry (by default the snapshot of the public
# registry in tests/data/registry/snapshot, or SOURCE) through `acp-journeys registry`, local
# mode, with the install cache under build/registry-cache (a rerun only runs the journeys).
# Not in CI: it installs each agent from npm or PyPI (hundreds of MB) and takes minutes per
# agent. Its table goes in docs/registry.md, each verdict checked to be the agent's own doing.
#   scripts/by-hand/registry-real-agents.sh [SOURCE] [OUT]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source="${1:-$here/tests/data/registry/snapshot}"
out="${2:-$here/build/registry-real}"
python="${PYTHON:-$here/.venv/bin/python}"
"$python" -m acp_journeys registry "$source" --out "$out" --cache "$here/build/registry-cache" --jobs 1
"$python" - "$out/summary.json" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
print(f"| agent | version | status | passed | failures, or why | install s | run s |  ({summary['date']})")
print("|---|---|---|---|---|---|---|")
for r in summary["agents"]:
    fails = "; ".join(f"{j}: {', '.join(v['failures'])}" for j, v in r["journeys"].items() if v["failures"])
    print(f"| {r['id']} | {r['version']} | {r['status']} | {r['passed']}/{r['total'] or 7} | {fails or r['reason']} "
          f"| {r['install_s'] or ''} | {r['run_s'] or ''} |")
PY
