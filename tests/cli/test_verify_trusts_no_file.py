"""`verify` trusts no file: whatever the file holds, it gives a verdict from the evidence (exit 0
or 1) or says why it cannot (exit 2, one message) within seconds; never a traceback, never a hang.
The same for `report` and for `--baseline` files. And `run` writes its result whatever the agent
sent, or says it could not (runner-error, exit 2) with the verdicts still printed.
"""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acp_journeys import cli
from acp_journeys.output.bounded_file import MAX_RESULT_BYTES
from conftest import AGENTS, reference_agent, run_journeys
from test_fixture_verdicts import ALL


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> dict:
    """A real result of all 7 journeys, every one passing."""
    outcome = run_journeys(reference_agent(), tmp_path_factory.mktemp("whole"))
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    return outcome.result


def verify(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "acp_journeys", "verify", *args], capture_output=True,
                         text=True, timeout=timeout)
    assert time.monotonic() - started < timeout
    assert "Traceback" not in out.stderr, out.stderr
    return out


def write(tmp_path: Path, data: object, name: str = "r.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def failures_of(out: subprocess.CompletedProcess, journey: str) -> str:
    return next(line for line in out.stdout.splitlines() if line.startswith(journey + " "))


# --- evidence that cannot show a pass -------------------------------------------------------------


def test_a_journey_with_only_its_id_as_evidence_fails_evidence_incomplete(whole, tmp_path):
    data = copy.deepcopy(whole)
    data["journeys"][0]["evidence"] = {"journey": "turn-to-end"}
    out = verify(write(tmp_path, data))
    assert out.returncode == 1
    assert "FAIL" in failures_of(out, "turn-to-end") and "evidence-incomplete" in failures_of(out, "turn-to-end")
    assert "#failure-evidence-incomplete" in out.stdout


@pytest.mark.parametrize("cut", ["turns", "processes", "markers"])
def test_empty_turns_processes_or_markers_fail_evidence_incomplete(whole, tmp_path, cut):
    data = copy.deepcopy(whole)
    for journey in data["journeys"]:
        journey["evidence"][cut] = {} if cut == "markers" else []
    out = verify(write(tmp_path, data))
    assert out.returncode == 1
    for journey in ALL:
        if cut == "markers" and journey == "stop-running-turn":
            continue  # it has no marker
        assert "evidence-incomplete" in failures_of(out, journey), out.stdout


def test_a_turn_without_its_answer_fails_evidence_incomplete(whole, tmp_path):
    data = copy.deepcopy(whole)
    data["journeys"][0]["evidence"]["turns"][0]["answered_at"] = None
    assert "evidence-incomplete" in failures_of(verify(write(tmp_path, data)), "turn-to-end")


def test_the_whole_real_result_passes(whole, tmp_path):
    assert verify(write(tmp_path, whole)).returncode == 0


# --- journeys twice, unknown, missing ----------------------------------------------------------------


def test_a_journey_twice_is_a_bad_file(whole, tmp_path):
    data = copy.deepcopy(whole)
    data["journeys"].append(data["journeys"][0])
    out = verify(write(tmp_path, data))
    assert out.returncode == 2 and "turn-to-end appears twice" in out.stderr


def test_an_unknown_journey_is_a_bad_file(whole, tmp_path):
    data = copy.deepcopy(whole)
    data["journeys"][0]["id"] = data["journeys"][0]["evidence"]["journey"] = "no-such-journey"
    out = verify(write(tmp_path, data))
    assert out.returncode == 2 and "unknown journey" in out.stderr


def test_evidence_of_another_journey_is_a_bad_file(whole, tmp_path):
    data = copy.deepcopy(whole)
    data["journeys"][0]["evidence"] = copy.deepcopy(data["journeys"][1]["evidence"])
    assert verify(write(tmp_path, data)).returncode == 2


def test_a_partial_file_names_the_missing_journeys_and_fails(whole, tmp_path):
    data = copy.deepcopy(whole)
    data["journeys"] = data["journeys"][:2]
    path = write(tmp_path, data)
    out = verify(path)
    assert out.returncode == 1
    assert "lacks the journeys image-and-file, stop-running-turn" not in out.stderr
    assert "lacks the journeys follow-up-after-restart, image-and-file, stop-running-turn, " \
           "plan-turn-saved-plan, plan-regular-plan" in out.stderr
    assert verify(path, "--journey", "turn-to-end", "--journey", "follow-up-same-session").returncode == 0
    assert verify(path, "--journey", "turn-to-end", "--journey", "image-and-file").returncode == 1
    baseline = tmp_path / "baseline.yml"
    baseline.write_text("".join(f"- {j}\n" for j in ALL[2:]))
    out = verify(path, "--baseline", str(baseline))
    assert out.returncode == 0, out.stdout + out.stderr


def test_an_unknown_journey_to_accept_is_a_usage_error(whole, tmp_path):
    out = verify(write(tmp_path, whole), "--journey", "nope")
    assert out.returncode == 2 and "unknown journey nope" in out.stderr


# --- files that are no result at all -----------------------------------------------------------------


def _bad_files(tmp_path: Path) -> dict[str, str]:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    deep_valid = tmp_path / "deep-valid.json"
    nested: object = 1
    for _ in range(900):
        nested = [nested]
    deep_valid.write_text(json.dumps({"schema": "acp-journeys/result/1", "x": nested}))
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(MAX_RESULT_BYTES + 1)  # sparse: no disk used
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "folder").mkdir()
    return {"deep": str(deep), "deep-valid": str(deep_valid), "huge": str(huge), "dev-zero": "/dev/zero",
            "fifo": str(fifo), "folder": str(tmp_path / "folder"), "missing": str(tmp_path / "nope.json")}


@pytest.mark.parametrize("kind", ["deep", "deep-valid", "huge", "dev-zero", "fifo", "folder", "missing"])
def test_verify_and_report_refuse_what_is_no_result_at_once(tmp_path, kind):
    path = _bad_files(tmp_path)[kind]
    out = verify(path, timeout=10)
    assert out.returncode == 2 and out.stderr.startswith("acp-journeys: error: "), out.stderr
    report = subprocess.run([sys.executable, "-m", "acp_journeys", "report", path, "--github"],
                            capture_output=True, text=True, timeout=10, env={**os.environ, "GITHUB_TOKEN": ""})
    assert report.returncode == 2 and "Traceback" not in report.stderr


@pytest.mark.parametrize("kind", ["huge", "dev-zero", "fifo", "folder", "missing"])
def test_a_baseline_that_is_no_file_is_refused_at_once(whole, tmp_path, kind):
    path = _bad_files(tmp_path)[kind]
    out = verify(write(tmp_path, whole), "--baseline", path, timeout=10)
    assert out.returncode == 2 and "baseline" in out.stderr


def test_a_deep_baseline_is_refused(whole, tmp_path):
    baseline = tmp_path / "deep.yml"
    baseline.write_text("[" * 5000 + "]" * 5000)
    out = verify(write(tmp_path, whole), "--baseline", str(baseline))
    assert out.returncode == 2


def test_an_unexpected_error_of_ours_is_one_line_and_exit_2(whole, tmp_path, monkeypatch, capsys):
    import acp_journeys.rules.judge

    def broken(result):
        raise RuntimeError("a bug\nof ours")

    monkeypatch.setattr(acp_journeys.rules.judge, "judge_result", broken)
    assert cli.main(["verify", write(tmp_path, whole)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError at " in err and "a bug of ours" in err
    assert "report it" in err


# --- fuzz ----------------------------------------------------------------------------------------------

FUZZ_CASES = 300
FUZZ_SEED = 20261202


def _nodes(value: object, path: tuple = ()):
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _nodes(v, path + (i,))


def _set(data: object, path: tuple, value: object) -> None:
    for key in path[:-1]:
        data = data[key]  # type: ignore[index]
    data[path[-1]] = value  # type: ignore[index]


def _mutate(rng: random.Random, whole: dict) -> bytes:
    data = copy.deepcopy(whole)
    text = json.dumps(data)
    kind = rng.choice(["truncate", "type", "delete", "duplicate", "drop", "nest", "huge-string", "bytes"])
    if kind == "truncate":
        return text[: rng.randrange(len(text))].encode()
    if kind == "bytes":
        raw = bytearray(text.encode())
        for _ in range(rng.randint(1, 20)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        return bytes(raw)
    nodes = [p for p, _ in _nodes(data) if p]
    if kind == "type":
        for _ in range(rng.randint(1, 5)):
            _set(data, rng.choice(nodes), rng.choice([None, True, -1, 1.5, "x", [], {}, [1, "a"], {"a": None},
                                                      "1e999", 10**30]))
            nodes = [p for p, _ in _nodes(data) if p]
    elif kind == "delete":
        path = rng.choice([p for p in nodes if isinstance(p[-1], str)])
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
    elif kind == "duplicate":
        data["journeys"].append(copy.deepcopy(rng.choice(data["journeys"])))
    elif kind == "drop":
        data["journeys"] = rng.sample(data["journeys"], rng.randrange(len(data["journeys"])))
    elif kind == "nest":
        value: object = "x"
        for _ in range(rng.choice([40, 70, 300])):
            value = {"a": value}
        _set(data, rng.choice(nodes), value)
    elif kind == "huge-string":
        _set(data, rng.choice(nodes), "z" * rng.choice([10_000, 5_000_000]))
    return json.dumps(data).encode()


def test_fuzz_verify_never_crashes_nor_hangs(whole, tmp_path, capsys):
    """In-process (one interpreter) to keep it quick: each case returns 0, 1 or 2 within seconds,
    with no exception out of main; a file that passes is judged the same by a second reading."""
    rng = random.Random(FUZZ_SEED)
    path = tmp_path / "fuzz.json"
    codes: dict[int, int] = {}
    for case in range(FUZZ_CASES):
        path.write_bytes(_mutate(rng, whole))
        started = time.monotonic()
        code = cli.main(["verify", str(path)])
        assert time.monotonic() - started < 5, f"case {case} took too long"
        assert code in (0, 1, 2), f"case {case}: exit {code}"
        err = capsys.readouterr().err
        assert "internal error" not in err, f"case {case}: {err}"
        codes[code] = codes.get(code, 0) + 1
    assert codes.get(1, 0) > 0 and codes.get(2, 0) > 0  # the mutations do reach both outcomes


# --- run: JSON nested 300 deep, and a result it cannot write ---------------------------------------------


def test_an_answer_nested_300_deep_is_clipped_and_the_run_passes(tmp_path):
    outcome = run_journeys([sys.executable, str(AGENTS / "deep_json_agent.py")], tmp_path,
                           "--journey", "turn-to-end")
    assert outcome.code == 0, outcome.stderr
    request = outcome.result["journeys"][0]["evidence"]["requests"][0]
    assert request["method"] == "session/new" and "nested deeper than" in request["result"]
    assert verify(str(outcome.path), "--journey", "turn-to-end").returncode == 0


def test_a_result_that_cannot_be_written_is_a_runner_error_with_the_verdicts_printed(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    outcome = run_journeys(reference_agent(), tmp_path, "--journey", "turn-to-end",
                           "-o", str(blocker / "result.json"))
    assert outcome.code == 2
    assert "turn-to-end" in outcome.stdout and "PASS" in outcome.stdout
    assert "runner-error" in outcome.stderr and "could not be written" in outcome.stderr


def test_when_masking_changes_a_verdict_run_reports_the_files_verdict(whole, tmp_path):
    """A secret that straddles a marker in the reply (contrived) changes what the judge compares;
    then run reports the verdict of the masked file, which is what verify finds."""
    from acp_journeys.output import result_file
    from acp_journeys.output.redact import Redactor
    from acp_journeys.rules.evidence import RunResult
    from acp_journeys.rules.judge import judge_result

    data = copy.deepcopy(whole)
    evidence = data["journeys"][0]["evidence"]
    marker = evidence["markers"]["reply"]
    evidence["turns"][0]["reply_text"] = "Sure: " + marker
    recorded = judge_result(RunResult.model_validate(data))
    assert recorded.journeys[0].verdict == "pass"
    redactor = Redactor()
    redactor.add(": " + marker[:4])
    masked = result_file.masked_and_judged(recorded, redactor)
    assert [f.id for f in masked.journeys[0].failures] == ["reply-missing-marker"]
    result_file.write(masked, str(tmp_path / "r.json"))
    again = judge_result(result_file.read(str(tmp_path / "r.json")))
    assert [(j.id, j.verdict, [f.id for f in j.failures]) for j in again.journeys] == \
        [(j.id, j.verdict, [f.id for f in j.failures]) for j in masked.journeys]
