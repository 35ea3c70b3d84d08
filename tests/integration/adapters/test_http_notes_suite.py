"""The notes-api suite (an HTTP service as the system under test), live: each of its three seeded
defects is caught on its own channel by its own oracle, the silent write only by the read-back
oracle, and a weakened contract without that oracle misses it; stored trials are what the
reference evaluator writes through the service adapter (a re-run gives the same bytes)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.evaluate.pointers import as_wire
from evalquality_core.pipeline import run_score
from evalquality_core.suite.evaluator import load_suite, preflight_probe, write_trial
from evalquality_core.suite.load import tree_digest
from tests.corpus.conftest import POLICY, SUITES, read

SUITE = SUITES / "notes-api"
TRIALS = (1, 2, 3)

pytestmark = pytest.mark.slow


def _weakened(contract: dict[str, Any]) -> dict[str, Any]:
    """The contract with its read-back oracle removed; the read-back step stays in the plan."""
    copy_ = copy.deepcopy(contract)
    copy_["oracles"] = [o for o in copy_["oracles"] if o["id"] != "O-001"]
    for behaviour in copy_["behaviors"]:
        if behaviour["id"] == "B-001":
            behaviour["oracles"] = []
    return copy_


def _live_score(contract: dict[str, Any], probe_id: str, tmp_path: Path) -> Any:
    suite = load_suite(SUITE)
    suite = type(suite)(suite.name, suite.root, contract, suite.probes, suite.choices, suite.baseline_steps, suite.targets_text)
    verdict = preflight_probe(suite, probe_id)
    records, manifest, configuration = [], None, None
    for index in TRIALS:
        trial = tmp_path / f"trial-{index}"
        records.append(write_trial(suite, probe_id, index, trial, contract=contract, reference_root=tmp_path))
        manifest = manifest or read(trial / "isolation-manifest.json")
        configuration = configuration or read(trial / "evaluator-configuration.json")
    return run_score(contract, suite.probes[probe_id], records, read(POLICY), verdict,
                     corpus_digest=tree_digest(SUITE / "system"), isolation_manifest=manifest,
                     evaluator_configuration=configuration)


@pytest.mark.parametrize(("probe_id", "oracle"), [("P-001", "O-001"), ("P-002", "O-005"), ("P-003", "O-006")])
def test_each_defect_is_caught_live_by_its_own_oracle(probe_id: str, oracle: str, tmp_path: Path) -> None:
    run = _live_score(read(SUITE / "contract.json"), probe_id, tmp_path)
    artifact = as_wire(run.artifact)
    assert artifact["strength"]["vector"]["defect"] == {"caught": 1, "exercised": 1, "rate": 1}
    caught = {o["oracleId"] for o in artifact["outcomes"] if o["state"] == "caught"}
    assert oracle in caught
    if probe_id == "P-001":
        assert caught == {"O-001"}  # the silent write: only the read-back sees it


def test_weakened_contract_without_read_back_oracle_misses_the_silent_write(tmp_path: Path) -> None:
    run = _live_score(_weakened(read(SUITE / "contract.json")), "P-001", tmp_path)
    artifact = as_wire(run.artifact)
    assert artifact is not None, run.ladder
    assert artifact["strength"]["vector"]["defect"] == {"caught": 0, "exercised": 1, "rate": 0}
    assert "caught" not in {o["state"] for o in artifact["outcomes"]}


def test_stored_trials_are_what_the_reference_evaluator_writes(tmp_path: Path) -> None:
    relative = Path("trials") / "P-001" / "trial-2"
    write_trial(load_suite(SUITE), "P-001", 2, tmp_path / relative, reference_root=tmp_path)
    stored = SUITE / relative
    for name in sorted(p.name for p in stored.iterdir()):
        assert (tmp_path / relative / name).read_bytes() == (stored / name).read_bytes(), name
