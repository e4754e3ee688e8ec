"""Runs at once on one machine never disturb each other.

The session-files folder that Rondar names is one fixed path for every run on the machine; each
run holds a lock on it while its note is there. Four whole suites at once, several rounds, every
journey passing: a run that removed another run's note (or let go of the lock before removing its
own) fails image-and-file with reply-missing-word here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import FAST_SCALE, reference_agent

SUITES_AT_ONCE = 4
ROUNDS = 3


def test_four_suites_at_once_every_journey_passes(tmp_path):
    for round_no in range(ROUNDS):
        procs = []
        for i in range(SUITES_AT_ONCE):
            folder = tmp_path / f"r{round_no}-{i}"
            folder.mkdir()
            env = {**os.environ, "ACP_REFERENCE_AGENT_STATE": str(folder / "agent-state")}
            procs.append((folder, subprocess.Popen(
                [sys.executable, "-m", "acp_journeys", "run", "--timeout-scale", FAST_SCALE, "-q",
                 "-o", str(folder / "result.json"), "--", *reference_agent()],
                cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        for folder, proc in procs:
            out, err = proc.communicate(timeout=300)
            result = json.loads((folder / "result.json").read_text())
            failed = {j["id"]: [f["id"] for f in j["failures"]] for j in result["journeys"] if j["verdict"] != "pass"}
            assert (proc.returncode, failed) == (0, {}), f"round {round_no}: {failed}\n{out}\n{err[-2000:]}"
            assert result["passed"] == 7
