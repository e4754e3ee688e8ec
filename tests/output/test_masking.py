"""Real runs with --env values: masking never changes the verdict, and no secret leaves the run.

The property over every fixture agent is checked on each fixture's recorded result
(masking_property.py, called from test_fixture_verdicts.py); these runs check the whole path once.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import AGENTS, reference_agent, run_journeys
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


ZOO = "sk-live-Zq81mW4xT7pL0vR2"


def _every_output(tmp_path, outcome) -> tuple[dict[str, str], subprocess.CompletedProcess]:
    """Every text that the run and its reports made: result.json, JUnit, the HTML page (of
    `report --html`), verify's and run's stdout and stderr."""
    checked = verify(outcome.path, "--journey", "turn-to-end", "--junit", str(tmp_path / "verify-junit.xml"))
    html = subprocess.run([sys.executable, "-m", "acp_journeys", "report", str(outcome.path), "--html",
                           str(tmp_path / "report.html")], capture_output=True, text=True, timeout=60)
    assert html.returncode == 0, html.stderr
    return {"result.json": outcome.path.read_text(), "junit": (tmp_path / "junit.xml").read_text(),
            "verify junit": (tmp_path / "verify-junit.xml").read_text(),
            "html": (tmp_path / "report.html").read_text(), "run stdout": outcome.stdout,
            "run stderr": outcome.stderr, "verify stdout": checked.stdout, "verify stderr": checked.stderr,
            "report": html.stdout + html.stderr}, checked


def _run_with_the_secret(tmp_path, fixture: str, *extra: str):
    outcome = run_journeys(reference_agent(fixture), tmp_path, "--journey", "turn-to-end", "--transcripts",
                           f"--env=ZOO_SECRET={ZOO}", "--junit", str(tmp_path / "junit.xml"), *extra)
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    outputs, checked = _every_output(tmp_path, outcome)
    # verify gives exactly run's verdict: masking changed nothing that the judge reads.
    assert checked.returncode == outcome.code and "do not match" not in checked.stderr, checked.stderr
    assert [(j["id"], j["verdict"]) for j in outcome.result["journeys"]] == [("turn-to-end", "pass")]
    return outcome, outputs


def _frame_texts(result: dict) -> list[str]:
    """The decoded strings of every kept frame of the agent's."""
    out = []
    for frame in result["journeys"][0]["transcript"]:
        if frame["direction"] == "from-agent":
            stack = [json.loads(frame["text"])]
            while stack:
                node = stack.pop()
                if isinstance(node, str):
                    out.append(node)
                elif isinstance(node, dict):
                    stack.extend([*node.keys(), *node.values()])
                elif isinstance(node, list):
                    stack.extend(node)
    return out


def test_a_secret_split_over_two_chunks_is_masked_in_each(tmp_path):
    outcome, outputs = _run_with_the_secret(tmp_path, "split-secret")
    first, second = ZOO[:len(ZOO) // 2], ZOO[len(ZOO) // 2:]
    texts = _frame_texts(outcome.result)
    assert any(t.endswith("; the key is ***") for t in texts), texts  # each half masked where it stood
    assert any(t.startswith("***, as you asked") for t in texts), texts
    for name, text in outputs.items():
        for piece in (ZOO, first, second):
            assert piece not in text, f"{piece} shows in {name}"


def test_a_json_escaped_secret_in_a_raw_frame_is_masked(tmp_path):
    outcome, outputs = _run_with_the_secret(tmp_path, "escaped-secret")
    raw = [f["text"] for f in outcome.result["journeys"][0]["transcript"] if "the key is" in f["text"]]
    assert raw and all("the key is ***" in line for line in raw), raw
    for name, text in outputs.items():
        for piece in (ZOO, ZOO[1:], "\\u0073k-live"):
            assert piece not in text, f"{piece} shows in {name}"
    assert not [t for t in _frame_texts(outcome.result) if ZOO in t]
