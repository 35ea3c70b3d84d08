"""Check resolution against what the reference emitted: every oracle's recorded ``checkResolution`` tree.

The emitted evidence artifacts (skill-defect: cli; workflow-capture: api with capture; the worked example's
older chain, whose outcome rows are shared with the newer chain) carry each oracle's full resolution tree.
We select and resolve from the contract and record alone and must produce the same trees. The selected
observation ids of each oracle's addressed steps must appear, in order, at the head of the emitted
``selectedObservationIds`` (the tail holds witness candidates, which score adds).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.evaluate import resolution_context, resolve_check, select_for_oracle, select_plan

CHAINS = {
    "skill-defect": (
        "chains/skill-defect/eval-contract.json",
        "chains/skill-defect/sealed-run-record.json",
        "chains/skill-defect/evidence-artifact.json",
    ),
    "workflow-capture": (
        "chains/workflow-capture/eval-contract.json",
        "chains/workflow-capture/sealed-run-record.json",
        "chains/workflow-capture/evidence-artifact.json",
    ),
    "worked-example": (
        "worked-example/eval-contract.json",
        "worked-example/sealed-run-record.json",
        "worked-example/older-chain/evidence-artifact.v3.json",
    ),
}


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_resolution_trees_match_the_emitted_artifact(conformance: Path, chain: str) -> None:
    contract_path, record_path, evidence_path = CHAINS[chain]
    contract, record = load(conformance / contract_path), load(conformance / record_path)
    emitted = {row["oracleId"]: row for row in load(conformance / evidence_path)["outcomes"]}
    plan = select_plan(contract, record["observations"])
    checked = 0
    for oracle in contract["oracles"]:
        row = emitted.get(oracle["id"])
        if row is None or oracle["check"] is None:
            continue
        context = resolution_context(
            contract, plan.bound, 1_000_000, f"EvalContract.oracles[id={oracle['id']}].check"
        )
        assert resolve_check(oracle["check"], context).to_wire() == row["checkResolution"], oracle["id"]
        selection = select_for_oracle(contract, plan, oracle["check"])
        bound = [s.bound_id for s in selection.selections if s.bound_id is not None]
        assert row["selectedObservationIds"][: len(bound)] == bound, oracle["id"]
        checked += 1
    assert checked == len(emitted)


def test_worked_example_expected_resolutions(conformance: Path) -> None:
    """scoring.md §10.6 / expected.json: root resolutions, O-004's empty collection, O-005 unbound."""
    folder = conformance / "worked-example"
    contract, record = load(folder / "eval-contract.json"), load(folder / "sealed-run-record.json")
    expected = {row["oracleId"]: row for row in load(folder / "expected.json")["outcomes"]}
    plan = select_plan(contract, record["observations"])
    for oracle in contract["oracles"]:
        context = resolution_context(contract, plan.bound, 1_000_000, "EvalContract.oracles.check")
        result = resolve_check(oracle["check"], context)
        row = expected[oracle["id"]]
        assert result.resolution == row["checkResolution"], oracle["id"]
        assert result.introduction_condition == row.get("introductionCondition"), oracle["id"]
