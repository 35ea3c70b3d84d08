"""The evaluator's strength over generated mutants (issue 18, pure): the seeded stratified trial sample,
one trial's detection, the §5.2 reduction per mutant, and the vector."""

from __future__ import annotations

import pytest

from evalquality_core.mutants.evaluator_strength import (
    choose_trial_sample,
    reduce_mutant_trials,
    trial_judgement,
    trial_strength,
)
from evalquality_core.mutants.select import draw_order


def _rows(killed: int, survived: int, **extra: str) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [{"mutantId": f"m-k{i}", "status": "Killed", "representative": None} for i in range(killed)]
    rows += [{"mutantId": f"m-s{i}", "status": "Survived", "representative": None} for i in range(survived)]
    rows += [{"mutantId": f"m-{status.lower()}", "status": status, "representative": None} for status in extra.values()]
    return rows


def test_the_sample_is_stratified_seeded_and_takes_each_stratum_in_its_draw_order() -> None:
    rows = _rows(3, 17, timeout="Timeout", stillborn="RuntimeError", nocov="NoCoverage")
    chosen = choose_trial_sample(rows, 5, seed=4)
    strata = [verdict for _, verdict in chosen]
    # 5 * 3/20 = 0.75 rounds down to 0, but a non-empty stratum gets one; the rest by share.
    assert strata == ["Killed"] + ["Survived"] * 4
    killed = sorted((r["mutantId"] for r in rows if r["status"] == "Killed"), key=lambda i: draw_order(4, str(i)))
    survived = sorted((r["mutantId"] for r in rows if r["status"] == "Survived"), key=lambda i: draw_order(4, str(i)))
    assert [m for m, _ in chosen] == killed[:1] + survived[:4]
    assert choose_trial_sample(list(reversed(rows)), 5, seed=4) == chosen  # the order of the summary does not matter
    assert choose_trial_sample(rows, 5, seed=5) != chosen  # another seed, another draw
    # Timeout, Stillborn (RuntimeError) and NoCoverage statuses are never drawn; all of both strata when N is large.
    assert {v for _, v in choose_trial_sample(rows, 100, seed=0)} == {"Killed", "Survived"}
    assert len(choose_trial_sample(rows, 100, seed=0)) == 20


def test_proportional_split_and_small_sizes() -> None:
    assert [v for _, v in choose_trial_sample(_rows(10, 10), 4, seed=0)].count("Killed") == 2
    assert [v for _, v in choose_trial_sample(_rows(9, 1), 5, seed=0)].count("Survived") == 1
    assert [v for _, v in choose_trial_sample(_rows(2, 8), 1, seed=0)] == ["Survived"]  # one: the larger stratum
    assert [v for _, v in choose_trial_sample(_rows(0, 8), 3, seed=0)] == ["Survived"] * 3
    with pytest.raises(ValueError, match="at least 1"):
        choose_trial_sample(_rows(1, 1), 0, seed=0)


def test_a_collapsed_observable_mutant_is_represented_by_its_representative() -> None:
    rows = [{"mutantId": "m-a", "status": "Killed", "representative": "m-a"},
            {"mutantId": "m-b", "status": "Killed", "representative": "m-a"},
            {"mutantId": "m-c", "status": "Survived", "representative": None}]
    assert sorted(m for m, _ in choose_trial_sample(rows, 10, seed=0)) == ["m-a", "m-c"]


def test_a_trial_detects_on_a_violated_oracle_or_a_defect_finding() -> None:
    held = [{"oracleId": "O-001", "disposition": "held"}]
    assert not trial_judgement(1, held, [{"findingType": "observation", "oracleId": "O-001"}], "PASS").detected
    assert trial_judgement(1, [{"oracleId": "O-002", "disposition": "violated"}], [], "PASS").violated == ("O-002",)
    cited = trial_judgement(2, held, [{"findingType": "defect", "oracleId": "O-003"}], "FAIL")
    assert cited.detected and cited.cited == ("O-003",)


def test_reduction_is_strict_over_the_catch_threshold_and_drops_faulted_trials() -> None:
    yes = trial_judgement(1, [{"oracleId": "O-001", "disposition": "violated"}], [], "FAIL")
    no = trial_judgement(2, [], [], "PASS")
    half = reduce_mutant_trials("m-1", "Killed", ["O-001"], [yes, no], [(3, "timeout: 60 s")], 0.5)
    assert (half["validCount"], half["caughtCount"], half["caught"], half["evaluatorVerdict"]) == (2, 1, False, "Survived")
    assert half["agrees"] is False and half["invalidatedAttempts"] == [{"attempt": 3, "reason": "timeout: 60 s"}]
    caught = reduce_mutant_trials("m-2", "Survived", [], [yes, yes, no], [], 0.5)
    assert caught["caught"] and caught["evaluatorVerdict"] == "Killed" and caught["agrees"] is False
    nothing = reduce_mutant_trials("m-3", "Survived", [], [], [(1, "exit: 3")], 0.5)
    assert (nothing["exercised"], nothing["evaluatorVerdict"], nothing["agrees"]) == (False, None, None)


def test_the_vector_counts_detection_per_stratum_and_agreement() -> None:
    yes = trial_judgement(1, [{"oracleId": "O-001", "disposition": "violated"}], [], "FAIL")
    no = trial_judgement(1, [], [], "PASS")
    rows = [
        reduce_mutant_trials("m-k1", "Killed", ["O-001"], [yes], [], 0.5),
        reduce_mutant_trials("m-k2", "Killed", ["O-001"], [no], [], 0.5),
        reduce_mutant_trials("m-s1", "Survived", [], [yes], [], 0.5),
        reduce_mutant_trials("m-s2", "Survived", [], [no], [], 0.5),
        reduce_mutant_trials("m-s3", "Survived", [], [], [(1, "refusal: no")], 0.5),
    ]
    vector = trial_strength(rows, {"Killed": 7, "Survived": 40}, size=5, seed=2, trials_per_mutant=1)
    assert vector["detection"]["caught"] == 2 and vector["detection"]["exercised"] == 4
    low, high = vector["detection"]["interval95"]
    assert low < 0.5 < high
    assert vector["byOracleVerdict"]["Killed"]["rate"] == 0.5 and vector["byOracleVerdict"]["Survived"]["exercised"] == 2
    assert (vector["agreement"]["agree"], vector["agreement"]["compared"]) == (2, 4)
    assert vector["agreement"]["evaluatorOnly"] == ["m-s1"] and vector["agreement"]["oracleOnly"] == ["m-k2"]
    assert vector["notExercised"] == ["m-s3"] and vector["sampled"] == {"Killed": 2, "Survived": 3}
    assert vector["population"] == {"Killed": 7, "Survived": 40}
