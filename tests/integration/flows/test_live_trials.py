"""Live trials (issue 14): ``run-trial`` / ``seal-record`` per (suite, probe, trial), through real evaluator commands.

Each test copies the notes suite cut to P-001 (the silent write, caught only by the read-back oracle) and
P-006 (the clean control), three trials each, and runs the real flow with ``trials="live"``: the system is
driven through our adapter in fresh workspaces and every trial's evidence goes to an evaluator command
run through the default-deny adapter. Evaluator commands are real scripts; a counting wrapper appends one
line per call to a marker file, so trial spawns are counted independently of the flow's own counters.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.canonical import scan_json
from evalquality_core.preflight.plan import plan_preflight
from flows.contract_strength import run_contract_strength

PROJECT = Path(__file__).resolve().parents[3]
KEPT = ("P-001", "P-006")
TRIALS = 3 * len(KEPT)

pytestmark = pytest.mark.slow

#: Wraps an evaluator: one marker line per call ("<trial index>"), then the wrapped evaluator's answer.
COUNTING = """
import json, os, subprocess, sys, time
request = sys.stdin.read()
index = json.loads(request)["trialIndex"]
with open({marker!r}, "a") as marker:
    marker.write(f"start {{index}}\\n")
time.sleep({delay})
answer = subprocess.run([sys.executable, *{wrapped!r}], input=request, capture_output=True, text=True).stdout
with open({marker!r}, "a") as marker:
    marker.write(f"end {{index}}\\n")
sys.stdout.write({transform})
"""


def make_corpus(root: Path, name: str = "notes", kept: tuple[str, ...] = KEPT) -> Path:
    """``<root>/corpus`` holding the suite ``name`` cut to ``kept``, and the committed baseline cut alike."""
    source = PROJECT / "corpus"
    corpus = root / "corpus"
    suite = corpus / "suites" / name
    shutil.copytree(source / "suites" / name, suite)
    shutil.copy(source / "scoring-policy.json", corpus / "scoring-policy.json")
    for probe in (suite / "probes").glob("*.json"):
        if probe.stem not in kept:
            probe.unlink()
            shutil.rmtree(suite / "trials" / probe.stem, ignore_errors=True)
    recorded = json.loads((source / "expected-strength.json").read_text())[name]
    recorded["probes"] = {pid: entry for pid, entry in recorded["probes"].items() if pid in kept}
    probes = [json.loads((suite / "probes" / f"{pid}.json").read_text()) for pid in kept]
    legs = len(plan_preflight(json.loads((suite / "contract.json").read_text()), probes, "cut", clean_witness_legs=True).legs)
    for entry in recorded["probes"].values():
        entry["preflightLegs"] = legs
    (corpus / "expected-strength.json").write_text(json.dumps({name: recorded}, indent=2))
    return corpus


def use_evaluator(corpus: Path, tmp: Path, wrapped: list[str], *, delay: float = 0.0, transform: str = "answer",
                  wall_clock: int = 60) -> Path:
    """Declare a counting wrapper around ``wrapped`` as the suite's evaluator command; returns the marker file."""
    marker = tmp / f"calls-{len(list(tmp.glob('calls-*')))}.txt"
    marker.touch()
    script = tmp / f"{marker.stem}.py"
    script.write_text(COUNTING.format(marker=str(marker), delay=delay, wrapped=wrapped, transform=transform))
    settings = corpus / "suites" / "notes" / "suite.toml"
    text = settings.read_text().split("\n[evaluator]")[0]
    settings.write_text(
        text + "\n[evaluator]\n"
        f"argv = [\"{{python}}\", {json.dumps(str(script))}]\n"
        f"wall-clock-seconds = {wall_clock}\nsees-oracle-checks = true\nmodel = {json.dumps(script.name)}\n"
    )
    return marker


REFERENCE = ["-m", "evalquality_core.suite.reference_evaluator"]
ERRING = [str(PROJECT / "corpus" / "evaluators" / "erring.py")]


def calls(marker: Path) -> list[int]:
    """Trial indices the evaluator was started for, in order."""
    return [int(line.split()[1]) for line in marker.read_text().splitlines() if line.startswith("start")]


def ends(marker: Path) -> list[int]:
    return [int(line.split()[1]) for line in marker.read_text().splitlines() if line.startswith("end")]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fresh eval-quality home per test (a fresh night)."""
    monkeypatch.setenv("EVALQUALITY_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("EVALQUALITY_SUITES", raising=False)
    monkeypatch.delenv("EVALQUALITY_STRENGTH_BASELINE", raising=False)
    return tmp_path / "home"


def night(corpus: Path, out: Path, **options):
    return run_contract_strength(
        suites_dir=str(corpus / "suites"), out_dir=str(out), baseline=str(corpus / "expected-strength.json"),
        trials="live", **options,
    )


def test_a_live_night_runs_every_trial_a_second_runs_none_and_fresh_trials_run_new_ones(tmp_path, home):
    corpus = make_corpus(tmp_path)
    marker = use_evaluator(corpus, tmp_path, REFERENCE)
    out = tmp_path / "out"

    first = night(corpus, out)
    # The reference evaluator, run live, reproduces the stored replays' verdicts: the baseline matches.
    assert first.exit_code == 0, first.summary_lines()
    assert sorted(calls(marker)) == [1, 1, 2, 2, 3, 3]
    assert (first.trial_counts["trialsRun"], first.trial_counts["trialsCached"]) == (TRIALS, 0)
    cost = json.loads((out / "preflight-cost.json").read_text())
    assert cost["trials"]["trialsRun"] == TRIALS
    for pid in KEPT:
        for index in (1, 2, 3):
            folder = out / "notes" / "trials" / pid / f"trial-{index}"
            record = SealedRunRecord.model_validate(scan_json((folder / "sealed-run-record.json").read_bytes()),
                                                    by_alias=True)
            assert record.trial_index == index
            assert {f.probe_id for f in record.findings} <= {pid}
            assert record.schema_version == SealedRunRecord.WRITTEN_SCHEMA_VERSION == 8  # issue 11: the flow writes record 8
    assert first.documents["notes"].probes["P-001"].strength.defect.caught == 1

    second = night(corpus, out)
    assert second.exit_code == 0, second.summary_lines()
    assert len(calls(marker)) == TRIALS, "a second night with nothing changed runs no trial"
    assert (second.trial_counts["trialsRun"], second.trial_counts["trialsCached"]) == (0, TRIALS)
    # Answered trials are looked up before submission: the second night creates no run-trial, seal-record
    # or score task run at all (what made a cached night cost as much as a first one).
    from flows.strength_report import HISTORY_FILE
    from tests.integration.flows.test_contract_strength import _task_run_names

    nights = json.loads((out / HISTORY_FILE).read_text())["nights"]
    assert {n.split("/")[0] for n in _task_run_names(nights[0]["flowRunId"])} >= {"trial", "seal", "score"}
    again = _task_run_names(nights[1]["flowRunId"], wait=False)
    assert not {n for n in again if n.split("/")[0] in {"trial", "seal", "score"}}, again

    fresh = night(corpus, out, fresh_trials=True)
    assert fresh.exit_code == 0, fresh.summary_lines()
    assert sorted(calls(marker)[TRIALS:]) == [4, 4, 5, 5, 6, 6], "new trial indices, each run once"
    assert fresh.trial_counts["trialsRun"] == TRIALS
    again = night(corpus, out)  # stays on the fresh sample, all answered
    assert again.trial_counts["trialsRun"] == 0 and len(calls(marker)) == 2 * TRIALS

    # A changed system re-runs exactly its trials: P-001's plant changes (a comment), P-006's system does not.
    mutation_path = corpus / "suites/notes/mutations/store-write-deletion.json"
    mutation = json.loads(mutation_path.read_text())
    mutation["replace"] = "    # the write is gone\n" + mutation["replace"]
    mutation_path.write_text(json.dumps(mutation))
    changed = night(corpus, out)
    assert sorted(calls(marker)[2 * TRIALS:]) == [4, 5, 6] and changed.trial_counts["trialsRun"] == 3
    assert changed.documents["notes"].probes["P-001"].strength.defect.caught == 1


def test_the_erring_evaluator_changes_the_verdicts_it_should(tmp_path, home):
    corpus = make_corpus(tmp_path)
    use_evaluator(corpus, tmp_path, REFERENCE)
    reference = night(corpus, tmp_path / "out-reference")
    assert reference.exit_code == 0, reference.summary_lines()

    marker = use_evaluator(corpus, tmp_path, ERRING)
    erring = night(corpus, tmp_path / "out-erring")
    # A changed evaluator re-runs exactly its trials (its identity is in every trial key).
    assert sorted(calls(marker)) == [1, 1, 2, 2, 3, 3] and erring.trial_counts["trialsRun"] == TRIALS

    # Why: on trials 1 and 3 it skips the read-back, so O-001 is not attempted and the silent write is
    # not reported; only trial 2 catches it. 1 of 3 is not above catchThreshold 0.5: missed.
    assert erring.problems == {}, erring.summary_lines()
    assert erring.documents["notes"].probes["P-001"].verdict is not None, erring.documents["notes"].probes["P-001"].basis
    evidence = scan_json((tmp_path / "out-erring" / "notes" / "evidence-P-001.json").read_bytes())
    votes = {vote["trialIndex"]: vote["state"] for vote in evidence["reducedProbeOutcomes"][0]["trialVotes"]}
    assert votes[2] == "caught" and votes[1] != "caught" and votes[3] != "caught", votes
    assert evidence["reducedProbeOutcomes"][0]["caught"] is False
    strong = reference.documents["notes"]
    weak = erring.documents["notes"]
    assert strong.probes["P-001"].strength.defect.caught == 1 and weak.probes["P-001"].strength.defect.caught == 0
    assert strong.floor_decisions["defect"].decision == "meets"
    assert weak.floor_decisions["defect"].describe() == "does-not-meet (rate-below-floor)"
    assert erring.exit_code == 1
    assert "notes: defect floor decision moved meets (rate-meets-floor) -> does-not-meet (rate-below-floor)" in (
        erring.gate.lines()
    )
    # The clean control is judged alike by both: the erring evaluator only ever under-reports.
    assert weak.probes["P-006"].verdict == strong.probes["P-006"].verdict


# Each reason (refusal, timeout, flood, budget, exit) is a TrialFault in tests/corpus/test_evaluator_protocol.py;
# here one of them goes through the flow: recorded on the probe, and run again the next night.
@pytest.mark.parametrize(("transform", "reason"), [("'not json'", "malformed-answer")])
def test_a_bad_evaluator_answer_is_a_recorded_trial_fault_never_cached(tmp_path, home, transform, reason):
    corpus = make_corpus(tmp_path)
    marker = use_evaluator(corpus, tmp_path, REFERENCE, transform=transform)
    first = night(corpus, tmp_path / "out")
    assert first.trial_counts["trialFaults"] == TRIALS
    for pid in KEPT:
        probe = first.documents["notes"].probes[pid]
        assert probe.verdict is None and probe.exit_code == 3
        assert probe.basis[0].startswith(f"trial 1 fault: {reason}: "), probe.basis
    assert first.exit_code == 1  # both verdicts moved to Invalid
    second = night(corpus, tmp_path / "out")
    assert len(calls(marker)) == 2 * TRIALS, "a fault is never cached: every faulted trial runs again"
    assert second.trial_counts["trialFaults"] == TRIALS


def test_a_killed_live_night_resumes_without_re_running_answered_trials(tmp_path, home):
    corpus = make_corpus(tmp_path)
    marker = use_evaluator(corpus, tmp_path, REFERENCE, delay=0.3)
    env = dict(os.environ, EVALQUALITY_HOME=str(home))
    command = [sys.executable, "-m", "flows.contract_strength", "--trials", "live", "--concurrency", "1",
               "--suites", str(corpus / "suites"), "--out", str(tmp_path / "out"),
               "--baseline", str(corpus / "expected-strength.json")]
    process = subprocess.Popen(command, cwd=PROJECT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while len(ends(marker)) < 3 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert process.poll() is None, "the night ended before it could be killed"
        time.sleep(0.5)  # let the trial that just answered be persisted (at most one more is in flight)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    answered_before = len(ends(marker))
    started_before = len(calls(marker))
    assert 3 <= answered_before < TRIALS

    resumed = subprocess.run(command, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    rerun = len(calls(marker)) - started_before
    # Every trial answered before the kill came from the cache; only the rest ran (one in flight may repeat).
    assert TRIALS - answered_before <= rerun <= TRIALS - answered_before + 1, (answered_before, rerun)
    assert f"{rerun} trials run and {TRIALS - rerun} answered from cache" in resumed.stdout


def _stored(folder: Path) -> dict[str, dict]:
    return {name: json.loads((folder / name).read_text())
            for name in ("sealed-run-record.json", "isolation-manifest.json", "evaluator-configuration.json")}


@pytest.mark.parametrize(("name", "kept"), [("notes-api", ("P-001", "P-005")), ("notes-tools", ("P-001", "P-003"))])
def test_live_trials_drive_http_and_mcp_suites_and_seal_records_that_score_as_the_stored_ones(tmp_path, home, name, kept):
    """``--trials live`` on the HTTP suite (a service started per workspace) and the MCP suite (a tool server
    over stdio): every plan step goes through the suite's adapter, the default evaluator command judges it,
    and each sealed record says what the stored replay says (same requests, observations, dispositions,
    findings), so the gate against the stored night's baseline matches."""
    corpus = make_corpus(tmp_path, name, kept)
    out = tmp_path / "out"
    live = night(corpus, out)
    assert live.problems == {} and live.exit_code == 0, live.summary_lines()
    assert live.trial_counts["trialsRun"] == 3 * len(kept) and live.trial_counts["trialFaults"] == 0
    stored = run_contract_strength(
        suites_dir=str(corpus / "suites"), out_dir=str(tmp_path / "out-stored"),
        baseline=str(corpus / "expected-strength.json"), trials="stored",
    )
    assert stored.exit_code == 0, stored.summary_lines()
    kinds = {interface["kind"] for interface in json.loads((corpus / "suites" / name / "contract.json").read_text())[
        "permittedInterfaces"]}
    assert kinds & {"api", "mcp"}, kinds
    for pid in kept:
        assert live.documents[name].probes[pid].verdict == stored.documents[name].probes[pid].verdict
        assert live.documents[name].probes[pid].strength == stored.documents[name].probes[pid].strength
        for index in (1, 2, 3):
            was = _stored(corpus / "suites" / name / "trials" / pid / f"trial-{index}")
            now = _stored(out / name / "trials" / pid / f"trial-{index}")
            for key in ("conditionArm", "observations", "oracleDispositions", "findings", "evaluatorRecommendation"):
                assert now["sealed-run-record.json"][key] == was["sealed-run-record.json"][key], (pid, index, key)
            # The requests went through the suite's adapter kind (an HTTP call or a tool call, not a command).
            assert now["isolation-manifest.json"]["observedToolCalls"] == was["isolation-manifest.json"][
                "observedToolCalls"]
            assert now["evaluator-configuration.json"]["toolInventory"] == was["evaluator-configuration.json"][
                "toolInventory"]
            actions = (out / name / "trials" / pid / f"trial-{index}" / "actions.jsonl").read_text().splitlines()
            assert actions and {json.loads(line)["kind"] for line in actions} <= kinds
