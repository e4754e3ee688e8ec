"""`merge`: the result.json files of a matrix's jobs become one result, judged like one run.

The end-to-end cases split real runs of the reference agent (sound, and with a defect) over
`--journey` subsets, as matrix jobs would, and check `verify` on the merged file against the
verdict of the fixture table (one run of all 7). The refusals are checked on built results.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from acp_journeys.rules.evidence import ProtocolTier, RunResult, Tiers
from acp_journeys.rules.judge import judge_result
from acp_journeys.rules.merge import MergeError, merge_results, missing_journeys
from conftest import reference_agent, run_cli, run_journeys
from sample_results import all_pass, journey, run
from test_fixture_verdicts import ALL, EXPECTED

SPLIT = (ALL[:3], ALL[3:5], ALL[5:])


def _split_runs(tmp_path: Path, agent: list[str]) -> list[Path]:
    paths = []
    for n, subset in enumerate(SPLIT):
        job = tmp_path / f"job{n}"
        job.mkdir()
        outcome = run_journeys(agent, job, *(a for j in subset for a in ("--journey", j)))
        assert outcome.result is not None, outcome.stderr
        assert [j["id"] for j in outcome.result["journeys"]] == list(subset)
        paths.append(outcome.path)
    return paths


@pytest.mark.parametrize("defect", [None, "leave-sleep"])
def test_verify_on_the_merged_runs_gives_the_verdict_of_one_run(tmp_path: Path, defect: str | None) -> None:
    agent = reference_agent(defect) if defect else reference_agent()
    parts = _split_runs(tmp_path, agent)
    merged = tmp_path / "merged.json"
    out = run_cli(["merge", str(merged), *map(str, parts), "--expect", "all"], tmp_path, output="merged.json")
    assert out.code == 0, out.stderr
    assert out.result is not None and [j["id"] for j in out.result["journeys"]] == list(ALL)

    verify = run_cli(["verify", str(merged)], tmp_path, output="merged.json")
    expected = EXPECTED[defect] if defect else {}
    assert verify.code == (1 if expected else 0), verify.stdout + verify.stderr
    assert out.failures() == expected
    assert "do not match their evidence" not in verify.stderr
    assert out.result["verdict"] == ("fail" if expected else "pass")
    assert out.result["passed"] == 7 - len(expected)
    # The evidence is each part's, untouched.
    for path in parts:
        for part_journey in json.loads(path.read_text())["journeys"]:
            mine = next(j for j in out.result["journeys"] if j["id"] == part_journey["id"])
            assert mine["evidence"] == part_journey["evidence"]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acp_journeys", *args], capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def _write(path: Path, result: RunResult) -> str:
    path.write_text(result.model_dump_json(by_alias=True))
    return str(path)


def test_bad_files_exit_2_with_a_message(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.json", run([journey("turn-to-end")]))
    (tmp_path / "notjson.json").write_text("{")
    (tmp_path / "other.json").write_text(json.dumps({"schema": "something/else"}))
    for bad, said in [("missing.json", "no such file"), ("notjson.json", "not JSON"),
                      ("other.json", "not a result of this version"), (".", "a folder, not a result.json")]:
        proc = _cli("merge", "out.json", good, bad, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert said in proc.stderr and "Traceback" not in proc.stderr
        assert not (tmp_path / "out.json").exists()


def test_refuses_duplicated_journeys_and_names_the_files(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.json", run([journey("turn-to-end"), journey("image-and-file")]))
    b = _write(tmp_path / "b.json", run([journey("image-and-file", "fail")]))
    proc = _cli("merge", "out.json", a, b, cwd=tmp_path)
    assert proc.returncode == 2
    assert "journey image-and-file is in both" in proc.stderr and "a.json" in proc.stderr and "b.json" in proc.stderr


def test_a_journey_missing_from_the_matrix_exits_2(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.json", run([journey("turn-to-end")]))
    proc = _cli("merge", "out.json", a, "--expect", "turn-to-end,stop-running-turn", cwd=tmp_path)
    assert proc.returncode == 2 and "no result for stop-running-turn" in proc.stderr
    proc = _cli("merge", "out.json", a, "--expect", "turn-to-end", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = _cli("merge", "out.json", a, "--expect", "no-such-journey", cwd=tmp_path)
    assert proc.returncode == 2 and "unknown journey no-such-journey" in proc.stderr


@pytest.mark.parametrize(("change", "field"), [
    ({"agent_command": ["other-agent", "--acp"]}, "agent command"),
    ({"tool_version": "0.0.9"}, "tool version"),
    ({"subject": {"sha": "b" * 40}}, "subject"),
    ({"subject": {"sha": "a" * 40, "image": "agent:two"}}, "subject"),
    ({"strict": True}, "strict mode"),
    ({"docs_url": "https://elsewhere.test/doc.md"}, "docs URL"),
    ({"timeout_scale": 2.0}, "timeout scale"),
    ({"launch": {"kind": "docker"}}, "launch kind"),
    ({"model_stub": {"requests": 1, "dialects": []}}, "model-stub use"),
])
def test_refuses_parts_of_another_agent_or_condition(change: dict, field: str) -> None:
    base = {"subject": {"sha": "a" * 40, "image": "agent:one"}, "launch": {"kind": "local"}}
    a = run([journey("turn-to-end")], **base)
    b = run([journey("image-and-file")], **base).model_copy(update=change)
    with pytest.raises(MergeError, match=field) as caught:
        merge_results([("a.json", a), ("b.json", b)])
    assert "a.json" in str(caught.value) and "b.json" in str(caught.value)


LOCAL = {"kind": "local", "tracking": "cgroup", "environment": "minimal", "own_home": False, "env": ["ZOO_SECRET"],
         "settings": {"MODEL": "m1"}}
DOCKER = {"kind": "docker", "image": "agent:one", "image_id": "sha256:1", "engine_version": "27.1",
          "api_version": "1.46", "cgroup_version": "2", "cgroup_driver": "systemd", "network": "none",
          "pids_limit": 256, "memory": "1g", "cpus": 2.0, "env": [], "settings": {}, "logins": 0, "agent_dir": None}


@pytest.mark.parametrize(("launch", "change", "said"), [
    (LOCAL, {"settings": {"MODEL": "m2"}}, "settings (--setting): MODEL=m2 vs MODEL=m1"),
    (LOCAL, {"settings": {}}, "settings (--setting): (none) vs MODEL=m1"),
    (LOCAL, {"env": ["ZOO_SECRET", "OTHER"]}, "the names of the --env values: ZOO_SECRET OTHER vs ZOO_SECRET"),
    (LOCAL, {"tracking": "subreaper"}, "process tracking (--tracking): subreaper vs cgroup"),
    (LOCAL, {"environment": "inherited"}, "environment (--inherit-env): inherited vs minimal"),
    (LOCAL, {"own_home": True}, "own home (--isolate-home): true vs false"),
    (LOCAL, {"own_home": 0}, "own home (--isolate-home): 0 vs false"),  # JSON's false is no number
    (LOCAL, {"holder": "per-journey"}, "launch holder: per-journey vs (none)"),  # a new field is a condition
    (DOCKER, {"network": "bridge"}, "network (--network): bridge vs none"),
    (DOCKER, {"image": "agent:two"}, "agent image: agent:two vs agent:one"),
    (DOCKER, {"pids_limit": 512}, "launch pids_limit: 512 vs 256"),
    (DOCKER, {"logins": 1}, "logins (--login): 1 vs 0"),
    (DOCKER, {"nofile": 1024}, "open-files limit: 1024 vs (none)"),
    (DOCKER, {"disk": "10G"}, "disk bound: 10G vs (none)"),
])
def test_refuses_parts_run_under_other_launch_conditions(launch: dict, change: dict, said: str) -> None:
    a = run([journey("turn-to-end")], launch=launch)
    b = run([journey("image-and-file")], launch={**launch, **change})
    with pytest.raises(MergeError) as caught:
        merge_results([("a.json", a), ("b.json", b)])
    assert f"b.json and a.json differ in {said}" in str(caught.value)


def test_the_machine_s_facts_are_no_conditions_and_every_difference_is_named() -> None:
    a = run([journey("turn-to-end")], launch=DOCKER)
    facts = {"image_id": "sha256:2", "engine_version": "28.0", "api_version": "1.47", "cgroup_version": "1",
             "cgroup_driver": "cgroupfs", "disk_note": "the storage driver overlay2 has no size option here"}
    b = run([journey("image-and-file")], launch={**DOCKER, **facts})
    merged = merge_results([("a", a), ("b", b)])
    assert [p["engine_version"] for p in merged.launch["parts"]] == ["27.1", "28.0"]  # kept per part
    c = run([journey("image-and-file")], launch={**DOCKER, "network": "bridge", "settings": {"X": "2"}},
            timeout_scale=2.0)
    with pytest.raises(MergeError) as caught:
        merge_results([("a", a), ("c", c)])
    message = str(caught.value)
    for said in ("timeout scale: 2.0 vs 1.0", "network (--network): bridge vs none", "settings (--setting): X=2 vs (none)"):
        assert said in message, message


def test_real_runs_with_other_settings_or_env_names_are_refused(tmp_path: Path) -> None:
    """Two real jobs of the reference agent, one journey each, with `--setting X=1` and `X=2`
    (and with another --env name): the merge refuses, exits 2 and writes nothing."""
    parts = []
    for n, extra in enumerate((["--setting", "X=1", "--env", "ZOO_SECRET=zoo-value-1"],
                               ["--setting", "X=2", "--env", "ZOO_SECRET=zoo-value-1"],
                               ["--setting", "X=1", "--env", "ZOO_TOKEN=zoo-value-1"])):
        job = tmp_path / f"job{n}"
        job.mkdir()
        outcome = run_journeys(reference_agent(), job, "--journey", ALL[n], *extra)
        assert outcome.code == 0, outcome.stderr
        parts.append(str(outcome.path))
    for other, said in ((parts[1], "settings (--setting): X=2 vs X=1"),
                        (parts[2], "the names of the --env values: ZOO_TOKEN vs ZOO_SECRET")):
        proc = _cli("merge", "out.json", parts[0], other, cwd=tmp_path)
        assert proc.returncode == 2 and said in proc.stderr, proc.stderr
        assert "zoo-value-1" not in proc.stderr and not (tmp_path / "out.json").exists()


@pytest.mark.parametrize(("change", "said"), [
    ({"model_stub": {"requests": "many", "dialects": []}}, 'model_stub.requests is many, not a count'),
    ({"model_stub": {"requests": 1, "dialects": 5}}, "model_stub.dialects is 5, not a list of dialect names"),
    ({"model_stub": {"requests": 1, "dialects": [{"x": 1}]}}, 'model_stub.dialects is [{"x": 1}], not a list'),
    ({"model_stub": {"requests": True}}, "model_stub.requests is true, not a count"),
])
def test_a_field_of_the_wrong_type_is_a_clear_exit_2(tmp_path: Path, change: dict, said: str) -> None:
    stub = {"requests": 1, "dialects": ["openai-chat"]}
    a = _write(tmp_path / "a.json", run([journey("turn-to-end")], model_stub=stub))
    b = _write(tmp_path / "b.json", run([journey("image-and-file")], model_stub=stub).model_copy(update=change))
    proc = _cli("merge", "out.json", a, b, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert f"acp-journeys: error: {b}: {said}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert not (tmp_path / "out.json").exists()


def test_times_with_and_without_an_offset_merge(tmp_path: Path) -> None:
    a = run([journey("turn-to-end")]).model_copy(update={"started_at": "2026-11-05T10:00:05"})
    b = run([journey("image-and-file")]).model_copy(update={"started_at": "2026-11-05T10:00:01+00:00"})
    assert merge_results([("a", a), ("b", b)]).started_at == "2026-11-05T10:00:01+00:00"


def test_a_refusal_quotes_the_parts_text_on_one_line_with_no_workflow_command(tmp_path: Path) -> None:
    from action_harness import workflow_commands

    a = _write(tmp_path / "a.json", run([journey("turn-to-end")], launch=LOCAL))
    hostile = {**LOCAL, "settings": {"MODEL": "m1 ##[error]INJECTED\n::error::X"}}
    b = _write(tmp_path / "b.json", run([journey("image-and-file")], launch=hostile))
    proc = _cli("merge", "out.json", a, b, cwd=tmp_path)
    assert proc.returncode == 2 and "INJECTED" in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and workflow_commands(proc.stderr) == [], proc.stderr


def test_per_job_images_of_one_commit_are_one_subject() -> None:
    sha = "0123456789ab" + "c" * 28
    a = run([journey("turn-to-end")], subject={"sha": sha, "image": "acp-journeys-agent:0123456789ab-x1y2z3"},
            launch={"kind": "docker", "image_id": "sha256:1"})
    b = run([journey("image-and-file")], subject={"sha": sha, "image": "acp-journeys-agent:0123456789ab-q9w8e7"},
            launch={"kind": "docker", "image_id": "sha256:2"})
    merged = merge_results([("a", a), ("b", b)])
    assert merged.subject == {"sha": sha}
    assert [p["image_id"] for p in merged.launch["parts"]] == ["sha256:1", "sha256:2"]
    other = b.model_copy(update={"subject": {"sha": "f" * 40, "image": "acp-journeys-agent:ffffffffffff-q9w8e7"}})
    with pytest.raises(MergeError, match="subject"):
        merge_results([("a", a), ("b", other)])


def test_times_partial_and_model_stub_are_joined() -> None:
    a = run([journey("turn-to-end")], model_stub={"requests": 3, "dialects": ["openai-chat"]}).model_copy(
        update={"started_at": "2026-11-05T10:00:05+00:00", "ended_at": "2026-11-05T10:01:00+00:00"})
    b = run([journey("image-and-file")], partial=True, model_stub={"requests": 2, "dialects": ["anthropic"]}
            ).model_copy(update={"started_at": "2026-11-05T10:00:01+00:00", "ended_at": "2026-11-05T10:02:00+00:00"})
    merged = merge_results([("a", a), ("b", b)])
    assert merged.started_at == "2026-11-05T10:00:01+00:00" and merged.ended_at == "2026-11-05T10:02:00+00:00"
    assert merged.partial and merged.verdict == "fail"  # a stopped job never makes a pass
    assert merged.model_stub == {"requests": 5, "dialects": ["anthropic", "openai-chat"]}


def test_one_part_is_itself_judged_again_and_the_order_is_the_catalog_s() -> None:
    whole = all_pass()
    reversed_parts = [(j.id, whole.model_copy(update={"journeys": [j]})) for j in reversed(whole.journeys)]
    merged = merge_results(reversed_parts)
    assert [j.id for j in merged.journeys] == [j.id for j in whole.journeys]
    # Judged again from the evidence: the verdict of the whole, journey by journey (these built
    # results hold too little evidence for a pass, so that verdict is evidence-incomplete).
    judged = judge_result(whole)
    assert [(j.id, j.verdict, [f.id for f in j.failures]) for j in merged.journeys] == \
        [(j.id, j.verdict, [f.id for f in j.failures]) for j in judged.journeys]
    assert merged.verdict == judged.verdict and merged.passed == judged.passed
    assert missing_journeys(merged, list(ALL)) == []
    with pytest.raises(MergeError, match="nothing to merge"):
        merge_results([])


def _tier_part(tmp_path: Path, name: str, agent: list[str], journeys: tuple[str, ...]) -> RunResult:
    job = tmp_path / name
    job.mkdir()
    outcome = run_journeys(agent, job, "--tier", "protocol", *(a for j in journeys for a in ("--journey", j)))
    assert outcome.result is not None, outcome.stderr
    return RunResult.model_validate(outcome.result)


def test_a_matrix_whose_probes_disagree_gets_the_failing_probe_in_either_order(tmp_path: Path) -> None:
    """Every job of a matrix ran the protocol tier's probe. Two jobs of one agent that is not the
    same every time: the one whose probe fails a MUST decides the merged tier, whichever part comes
    first, and `verify --tier protocol` on the merged file says so (it kept the first part's)."""
    good = _tier_part(tmp_path, "good", reference_agent(), ALL[:3])
    flaky = _tier_part(tmp_path, "flaky", reference_agent("close-keeps-session"), ALL[3:])
    assert good.tiers.protocol.verdict == "pass" and flaky.tiers.protocol.verdict == "fail"
    # One agent under one set of conditions, as the two jobs of a matrix are.
    flaky = flaky.model_copy(update={k: getattr(good, k) for k in ("agent_command", "subject", "launch")})
    for parts in ([("good", good), ("flaky", flaky)], [("flaky", flaky), ("good", good)]):
        merged = merge_results(parts)
        tier = merged.tiers.protocol
        assert tier.verdict == "fail", [(c.id, c.verdict) for c in tier.checks]
        assert [c.id for c in tier.checks if c.verdict == "fail"] == ["session-close"]
        # The same through the files and the CLI: merge, then verify with the tier as the gate.
        files = [_write(tmp_path / f"{name}.json", part) for name, part in parts]
        path = tmp_path / f"merged-{parts[0][0]}.json"
        out = run_cli(["merge", str(path), *files], tmp_path, output=path.name)
        assert out.code == 0 and out.result["tiers"]["protocol"]["verdict"] == "fail", out.stderr
        verify = run_cli(["verify", "--tier", "protocol", str(path)], tmp_path, output=path.name)
        assert verify.code == 1 and "session-close" in verify.stdout, verify.stdout + verify.stderr
    # Both probes pass: the first part's probe, judged with all the journeys.
    both = merge_results([("good", good), ("again", good.model_copy(update={"journeys": flaky.journeys}))])
    assert both.tiers.protocol.verdict == "pass" and both.tiers.protocol.probe == good.tiers.protocol.probe


def test_parts_with_and_without_the_protocol_tier_are_refused() -> None:
    probed = run([journey("turn-to-end")]).model_copy(update={"tiers": Tiers(protocol=ProtocolTier())})
    plain = run([journey("image-and-file")])
    with pytest.raises(MergeError, match=r"protocol tier \(--tier protocol\): false vs true"):
        merge_results([("probed", probed), ("plain", plain)])
