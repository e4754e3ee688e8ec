"""Real runs with --env values: masking never changes the verdict, and no secret leaves the run.

The property over every fixture agent is checked on each fixture's recorded result
(masking_property.py, called from test_fixture_verdicts.py); these runs check the whole path once.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import AGENTS, run_journeys
from test_fixture_verdicts import ALL

SHORT_VALUES = {"A": "true", "B": "false", "C": "1", "D": "0", "E": "null", "F": "json", "G": "plan",
                "H": "default", "I": "REPLY"}


def verify(path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acp_journeys", "verify", str(path), *args],
                          capture_output=True, text=True, timeout=60)


def test_values_that_read_like_json_or_our_words_change_no_verdict(tmp_path):
    env = [f"--env={name}={value}" for name, value in SHORT_VALUES.items()]
    outcome = run_journeys([sys.executable, str(AGENTS / "leaky_agent.py")], tmp_path, *env)
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    assert [j["verdict"] for j in outcome.result["journeys"]] == ["pass"] * len(ALL)
    checked = verify(outcome.path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "do not match" not in checked.stderr
    raw = outcome.result["journeys"][0]["evidence"]["processes"][0]["initialize_raw"]
    assert json.loads(raw)["result"]["agentCapabilities"]["loadSession"] is True


def test_a_token_the_agent_prints_is_in_no_output(tmp_path):
    token = "sk-live-Q7mZ3xR9pL2wK8vN"
    outcome = run_journeys([sys.executable, str(AGENTS / "leaky_agent.py"), f"--note={token}"], tmp_path,
                           "--journey", "turn-to-end", "--journey", "image-and-file", "--transcripts",
                           f"--env=LEAKED_TOKEN={token}", "--junit", str(tmp_path / "junit.xml"))
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    text = outcome.path.read_text()
    assert "starting with token ***" in text  # the agent did print it, and it was masked
    checked = verify(outcome.path, "--journey", "turn-to-end", "--journey", "image-and-file")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for output in (text, outcome.stdout, outcome.stderr, checked.stdout, checked.stderr,
                   (tmp_path / "junit.xml").read_text()):
        assert token not in output
