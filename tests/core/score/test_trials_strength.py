"""Votes, trial-set reduction, the strength block, comparability and dominance (scoring.md §5)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from evalquality_core.artifacts.base import to_wire
from evalquality_core.score.strength import (
    ProbeStrengthInput,
    comparability_key,
    compare_dominance,
    is_comparable,
    reduction_problems,
    strength_denominator,
    strength_note,
    strength_vector,
)
from evalquality_core.score.trials import Vote, reduce_trial_set, trial_vote
from tests.scoring_inputs import load


def test_vote_prefers_designated_then_invalidating_then_first() -> None:
    states = [("O-001", "confirmed"), ("O-002", "infrastructure-error"), ("O-003", "caught")]
    assert trial_vote(1, states, "O-003") == Vote(1, "caught")
    assert trial_vote(2, states, None) == Vote(2, "infrastructure-error")
    assert trial_vote(3, [("O-001", "confirmed"), ("O-002", "caught")], None) == Vote(3, "confirmed")
    assert trial_vote(4, [], "O-001") is None


def test_reduction_by_division_strictly_above_the_threshold() -> None:
    votes = [Vote(1, "caught"), Vote(2, "missed"), Vote(3, "judge-error"), Vote(4, "unreached")]
    r = reduce_trial_set(votes, 0.5)
    assert (r.valid_count, r.caught_count, r.exercised, r.caught) == (2, 1, True, False)  # 1/2 is not > 0.5
    assert [(a.attempt, a.reason) for a in r.invalidated_attempts] == [(3, "judge-error")]
    assert reduce_trial_set(votes, 0.49).caught is True
    only_unvoted = reduce_trial_set([Vote(1, "not-applicable")], 0.5)
    assert (only_unvoted.exercised, only_unvoted.caught, only_unvoted.valid_count) == (False, False, 0)
    with pytest.raises(ValueError):
        reduce_trial_set(votes, 1.5)
    with pytest.raises(ValueError):
        reduce_trial_set([Vote(1, "bogus")], 0.5)  # type: ignore[arg-type]


def test_vector_excludes_canaries_clean_controls_and_unqualified() -> None:
    caught = reduce_trial_set([Vote(1, "caught")], 0.5)
    missed = reduce_trial_set([Vote(1, "missed")], 0.5)
    unexercised = reduce_trial_set([Vote(1, "not-applicable")], 0.5)
    vector = strength_vector([
        ProbeStrengthInput("P-001", "defect", False, True, caught),
        ProbeStrengthInput("P-002", "defect", False, True, missed),
        ProbeStrengthInput("P-003", "defect", False, True, unexercised),
        ProbeStrengthInput("P-004", "canary", False, True, caught),
        ProbeStrengthInput("P-005", "zero-action", True, True, caught),
        ProbeStrengthInput("P-006", "gameability", False, False, caught),
    ])
    assert vector["defect"] is not None and to_wire(vector["defect"]) == {"caught": 1, "exercised": 2, "rate": 0.5}
    assert vector["gameability"] is None and vector["zero-action"] is None
    only_unexercised = strength_vector([ProbeStrengthInput("P-003", "zero-action", False, True, unexercised)])
    assert only_unexercised["zero-action"] is not None and only_unexercised["zero-action"].rate is None


def test_note_and_denominator_sentences() -> None:
    assert strength_denominator(3) == "unique qualified probe identifiers exercised per class, across 3 completed trials"
    assert strength_note(1, 3, 3, []) == "1 admitted probe over 3 completed trials."
    assert strength_note(2, 1, 3, ["O-005", "O-006"]) == (
        "2 admitted probe over 1 completed trial. Below the declared minimum of 3. O-005, O-006 resolved unreached. "
        "The vector is reported and marked non-comparable."
    )
    assert is_comparable(3, 3, []) and not is_comparable(3, 3, ["O-1"]) and not is_comparable(2, 3, [])


def test_comparability_key_of_the_worked_example(conformance: Path) -> None:
    v3 = load(conformance / "worked-example" / "older-chain" / "evidence-artifact.v3.json")
    key = comparability_key(v3["scoringVersionInputs"]["scoringPolicyDigest"], ["P-001"])
    assert key == v3["comparabilityKey"]


def _artifact(probe: str, caught: bool, *, comparable: bool = True, severity: str = "critical") -> dict:
    """A minimal self-consistent one-probe artifact (the fields dominance reads)."""
    state = "caught" if caught else "missed"
    return {
        "comparabilityKey": "sha256:" + "a" * 64,
        "scoredProbeId": probe,
        "strength": {"comparable": comparable, "vector": {
            "defect": {"caught": int(caught), "exercised": 1, "rate": int(caught)}, "gameability": None, "zero-action": None}},
        "trials": {"invalidatedAttempts": []},
        "outcomes": [{"oracleId": "O-001", "trialIndex": 1, "probeId": probe, "state": state}],
        "reducedProbeOutcomes": [{
            "probeId": probe, "severity": severity, "exercised": True, "caught": caught, "catchThreshold": 0.5,
            "trialVotes": [{"trialIndex": 1, "state": state}], "validCount": 1, "caughtCount": int(caught),
            "invalidatedAttempts": []}],
    }


def test_dominance() -> None:
    a, b = _artifact("P-001", True), _artifact("P-001", False)
    assert reduction_problems(a) == [] and reduction_problems(b) == []
    assert compare_dominance(a, b, "material") == "a-dominates-b"
    assert compare_dominance(b, a, "material") == "b-dominates-a"
    assert compare_dominance(a, copy.deepcopy(a), "material") == "equivalent"
    assert compare_dominance(a, _artifact("P-001", False, comparable=False), "material") == "incomparable"
    other_key = _artifact("P-001", False) | {"comparabilityKey": "sha256:" + "b" * 64}
    assert compare_dominance(a, other_key, "material") == "incomparable"
    inconsistent = copy.deepcopy(b)
    inconsistent["reducedProbeOutcomes"][0]["caughtCount"] = 1  # claims a catch its outcomes never show
    assert reduction_problems(inconsistent)
    assert compare_dominance(a, inconsistent, "material") == "incomparable"


def test_severity_floor_blocks_a_dominance_that_misses_what_the_other_caught() -> None:
    # a wins on rate, but b caught probe P-002 (critical) that a never caught
    a = _artifact("P-001", True)
    b = _artifact("P-001", False)
    b["reducedProbeOutcomes"].append({**a["reducedProbeOutcomes"][0], "probeId": "P-002"})
    b["outcomes"].append({"oracleId": "O-001", "trialIndex": 1, "probeId": "P-002", "state": "caught"})
    assert compare_dominance(a, b, "material") == "incomparable"
    # below the floor the miss does not block
    b["reducedProbeOutcomes"][1]["severity"] = "low"
    assert compare_dominance(a, b, "material") == "a-dominates-b"
