"""Scoring the stored trials with our score: the notes suite catches every defect probe it has an
oracle for, the review suite's exit-code probes are caught, the artifact-channel probes are refused
by qualification, and a weakened notes contract without its read-back oracle misses the silent write."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.evaluate.pointers import as_wire
from evalquality_core.pipeline import run_score
from evalquality_core.suite.evaluator import load_suite, preflight_probe, write_trial
from evalquality_core.suite.load import tree_digest
from tests.corpus.conftest import POLICY, SUITE_NAMES, SUITES, probe_ids, read

TRIALS = (1, 2, 3)


def _trial_files(suite: str, probe_id: str) -> tuple[Path, list[Path]]:
    base = SUITES / suite / "trials" / probe_id
    return base, [base / f"trial-{i}" for i in TRIALS]


def score_stored(suite: str, probe_id: str, contract: Any | None = None) -> Any:
    """run_score over the three stored trials of one probe, with their pre-flight verdict."""
    base, trials = _trial_files(suite, probe_id)
    return run_score(
        contract or read(SUITES / suite / "contract.json"),
        read(SUITES / suite / "probes" / f"{probe_id}.json"),
        [read(t / "sealed-run-record.json") for t in trials],
        read(POLICY),
        read(base / "preflight-verdict.json"),
        corpus_digest=tree_digest(SUITES / suite / "trials"),
        isolation_manifest=read(trials[0] / "isolation-manifest.json"),
        evaluator_configuration=read(trials[0] / "evaluator-configuration.json"),
    )


def _codes(run: Any) -> list[str]:
    return [failure.code for failure in run.qualification.failures]


@pytest.mark.parametrize("suite", SUITE_NAMES)
def test_stored_trials_are_three_per_probe_and_ingest_cleanly(suite: str) -> None:
    for probe_id in probe_ids(suite):
        base, trials = _trial_files(suite, probe_id)
        assert read(base / "preflight-verdict.json")["passed"] is True, f"{suite} {probe_id}"
        records = [read(t / "sealed-run-record.json") for t in trials]
        assert [r["trialIndex"] for r in records] == [1, 2, 3]
        assert len({r["runId"] for r in records}) == 1


@pytest.mark.parametrize("probe_id", probe_ids("notes"))
def test_notes_stored_trials_catch_every_probe_the_contract_has_an_oracle_for(probe_id: str) -> None:
    run = score_stored("notes", probe_id)
    assert _codes(run) == []
    artifact = as_wire(run.artifact)
    probe = read(SUITES / "notes" / "probes" / f"{probe_id}.json")
    vector = artifact["strength"]["vector"]
    assert artifact["trials"]["completed"] == 3 and artifact["strength"]["comparable"] is True
    if probe["expectedClean"]:
        assert {o["state"] for o in artifact["outcomes"]} == {"passed-clean-control"}
        assert vector == {"defect": None, "gameability": None, "zero-action": None}
    else:
        assert vector[probe["probeClass"]] == {"caught": 1, "exercised": 1, "rate": 1}, artifact["verdictBasis"]


def test_the_silent_write_scores_caught_through_the_cli(tmp_path: Path) -> None:
    probe_id = "P-001"
    base, trials = _trial_files("notes", probe_id)
    records = [arg for t in trials for arg in ("--record", str(t / "sealed-run-record.json"))]
    out = tmp_path / "evidence-artifact.json"
    result = subprocess.run(
        [sys.executable, "-m", "evalquality_core", "score", *records,
         "--contract", str(SUITES / "notes" / "contract.json"),
         "--probe", str(SUITES / "notes" / "probes" / f"{probe_id}.json"),
         "--preflight-verdict", str(base / "preflight-verdict.json"), "--policy", str(POLICY),
         "--isolation-manifest", str(trials[0] / "isolation-manifest.json"),
         "--evaluator-configuration", str(trials[0] / "evaluator-configuration.json"),
         "--corpus-digest", tree_digest(SUITES / "notes" / "trials"), "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    artifact = read(out)
    assert artifact["strength"]["vector"]["defect"] == {"caught": 1, "exercised": 1, "rate": 1}
    assert ("O-001", "caught") in {(o["oracleId"], o["state"]) for o in artifact["outcomes"]}


@pytest.mark.parametrize("probe_id", probe_ids("review")[:6])
def test_review_defect_probes_with_exit_code_signatures_are_caught(probe_id: str) -> None:
    run = score_stored("review", probe_id)
    assert _codes(run) == []
    assert as_wire(run.artifact)["strength"]["vector"]["defect"] == {"caught": 1, "exercised": 1, "rate": 1}


@pytest.mark.parametrize(("suite", "probe_id"), [("review", "P-007"), ("trace", "P-001"), ("trace", "P-002")])
def test_artifact_signatures_are_refused_by_qualification(suite: str, probe_id: str) -> None:
    run = score_stored(suite, probe_id)
    assert "condition-artifact-channel-contract-local" in _codes(run)
    assert run.artifact is None and run.ladder.exit_code == 3


def test_trace_gate_probe_with_a_stdout_signature_qualifies_and_is_caught() -> None:
    """trace P-003 states its plant on stdout (response side): it qualifies, is exercised, and is caught."""
    run = score_stored("trace", "P-003")
    assert _codes(run) == []
    artifact = as_wire(run.artifact)
    assert artifact["strength"]["vector"]["defect"] == {"caught": 1, "exercised": 1, "rate": 1}


@pytest.mark.parametrize(("suite", "probe_id"), [("review", "P-008"), ("trace", "P-004")])
def test_clean_controls_pass_clean(suite: str, probe_id: str) -> None:
    artifact = as_wire(score_stored(suite, probe_id).artifact)
    assert {o["state"] for o in artifact["outcomes"]} == {"passed-clean-control"}


def weakened(contract: dict[str, Any]) -> dict[str, Any]:
    """The notes contract with its read-back oracle removed; the read-back step stays in the plan."""
    copy_ = copy.deepcopy(contract)
    copy_["oracles"] = [o for o in copy_["oracles"] if o["id"] != "O-001"]
    for behaviour in copy_["behaviors"]:
        if behaviour["id"] == "B-001":
            behaviour["oracles"] = []
    return copy_


def _live_score(contract: dict[str, Any], tmp_path: Path) -> Any:
    suite = load_suite(SUITES / "notes")
    suite = type(suite)(suite.name, suite.root, contract, suite.probes, suite.choices, suite.baseline_steps, suite.targets_text)
    verdict = preflight_probe(suite, "P-001")
    records, manifest, configuration = [], None, None
    for index in TRIALS:
        trial = tmp_path / f"trial-{index}"
        records.append(write_trial(suite, "P-001", index, trial, contract=contract, reference_root=tmp_path))
        manifest = manifest or read(trial / "isolation-manifest.json")
        configuration = configuration or read(trial / "evaluator-configuration.json")
    return run_score(contract, suite.probes["P-001"], records, read(POLICY), verdict,
                     corpus_digest=tree_digest(SUITES / "notes" / "system"),
                     isolation_manifest=manifest, evaluator_configuration=configuration)


def test_full_contract_catches_the_silent_write_when_run_live(tmp_path: Path) -> None:
    run = _live_score(read(SUITES / "notes" / "contract.json"), tmp_path)
    assert as_wire(run.artifact)["strength"]["vector"]["defect"] == {"caught": 1, "exercised": 1, "rate": 1}


def test_weakened_contract_without_read_back_oracle_misses_the_silent_write(tmp_path: Path) -> None:
    run = _live_score(weakened(read(SUITES / "notes" / "contract.json")), tmp_path)
    artifact = as_wire(run.artifact)
    assert artifact is not None, run.ladder
    defect = artifact["strength"]["vector"]["defect"]
    assert defect == {"caught": 0, "exercised": 1, "rate": 0}, defect  # exercised (the read-back ran) and missed
    assert "caught" not in {o["state"] for o in artifact["outcomes"]}


@pytest.mark.parametrize(("suite", "probe_id"), [("notes", "P-001"), ("review", "P-007"), ("trace", "P-004")])
def test_stored_trials_are_what_the_reference_evaluator_writes(suite: str, probe_id: str, tmp_path: Path) -> None:
    """Stored trials are produced by the evaluator, never typed: a re-run writes the same bytes."""
    relative = Path("trials") / probe_id / "trial-2"
    write_trial(load_suite(SUITES / suite), probe_id, 2, tmp_path / relative, reference_root=tmp_path)
    stored = SUITES / suite / "trials" / probe_id / "trial-2"
    names = sorted(p.name for p in stored.iterdir())
    assert names == ["actions.jsonl", "evaluator-configuration.json", "isolation-manifest.json", "sealed-run-record.json"]
    for name in names:
        assert (tmp_path / relative / name).read_bytes() == (stored / name).read_bytes(), name
