"""The AD-21 ladders (scoring.md §4): one case per row with its exact basis sentence, a census that fails
when a row, rung or verdict is never reached, and the exit-code / ``--strict`` rules of §4.3."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evalquality_core.score.ladder import (
    ALL_ROWS,
    CONTRACT_LADDER,
    PRODUCTION_LADDER,
    RUNGS,
    EvidenceIntegrity,
    LadderCoverageGap,
    LadderFinding,
    LadderInputs,
    LineageFlags,
    cli_exit_code,
    ladder_for,
    resolve_ladder,
)
from evalquality_core.score.outcome import OutcomeDecision, ScoredOutcome


def outcome(oracle: str, state: str, severity: str = "material", conditions: tuple[str, ...] = (),
            waiver: str | None = None, check: str | None = "true") -> ScoredOutcome:
    decision = OutcomeDecision("r", 0, waiver, "c", state, "agrees", None, (), conditions)  # type: ignore[arg-type]
    return ScoredOutcome(oracle, 1, "P-001", decision, severity, "held", check, None, ())  # type: ignore[arg-type]


CLEAN = LadderInputs(
    outcomes=[outcome("O-001", "caught")],
    preflight_passed=True,
    invalidated_attempts=0,
    severity_floor="material",
    re_execution_cap=2,
    confidence_threshold=0.7,
    minimum_trial_count=1,
    completed_trials=1,
    evaluator_recommendation="PASS",
)

# row id → (changes to CLEAN, expected basis, mode)
ROW_CASES: dict[str, tuple[dict, list[str], str]] = {
    "invalidating-state": ({"outcomes": [outcome("O-002", "judge-error")]}, ["oracle O-002 resolved judge-error"], "contract-scoring"),
    "failed-preflight": ({"preflight_passed": False}, ["pre-flight verdict did not pass"], "contract-scoring"),
    "isolation-manifest-violation": (
        {"integrity": EvidenceIntegrity(isolation_violation=("isolation manifest absent",))},
        ["isolation manifest violation: isolation manifest absent"], "contract-scoring"),
    "re-execution-cap-breach": ({"invalidated_attempts": 3}, ["3 invalidated attempts exceeded the re-execution cap of 2"], "contract-scoring"),
    "disposition-missing": (
        {"outcomes": [outcome("O-003", "confirmed", conditions=("disposition-missing",))]},
        ["oracle O-003 is required and carries no disposition"], "contract-scoring"),
    "required-check-unresolved": (
        {"outcomes": [outcome("O-004", "confirmed", check=None)]},
        ["oracle O-004 is required and its check never resolved"], "contract-scoring"),
    "selector-ambiguity": (
        {"outcomes": [outcome("O-005", "infrastructure-error", conditions=("selector-ambiguity",))]},
        ["oracle O-005 resolved infrastructure-error", "oracle O-005: selector ambiguity"], "contract-scoring"),
    "unwitnessed-claim": (
        {"outcomes": [outcome("O-006", "caught", conditions=("unwitnessed-detection-claim",))]},
        ["oracle O-006: unwitnessed detection claim"], "contract-scoring"),
    "unwitnessed-quotation": ({"unwitnessed_quotations": [("F-001", "response-body")]},
                              ["finding F-001: unwitnessed quotation on channel response-body"], "contract-scoring"),
    "duplicate-record-identifier": (
        {"integrity": EvidenceIntegrity(duplicate_record_identifiers=(("observation", "obs-1", 2),))},
        ['duplicate observation identifier "obs-1" (2 occurrences)'], "contract-scoring"),
    "dangling-citation": (
        {"integrity": EvidenceIntegrity(dangling_citations=(("F-002", ("obs-8", "obs-9")),))},
        ["finding F-002 cites unresolved observation(s): obs-8, obs-9"], "contract-scoring"),
    "dangling-disposition-citation": (
        {"integrity": EvidenceIntegrity(dangling_disposition_citations=(("O-001", ("obs-7",)),))},
        ["oracle O-001 disposition cites unresolved observation(s): obs-7"], "contract-scoring"),
    "forbidden-input-not-withheld": (
        {"integrity": EvidenceIntegrity(forbidden_inputs_admitted=("source-code", "human-labels"))},
        ["forbidden input admitted rather than withheld: source-code",
         "forbidden input admitted rather than withheld: human-labels"], "contract-scoring"),
    "cross-artifact-disagreement": (
        {"integrity": EvidenceIntegrity(cross_artifact_disagreements=(("runId", "a", "b"),))},
        ['record and manifest disagree on runId: record "a", manifest "b"'], "contract-scoring"),
    "evaluator-configuration-absent": (
        {"integrity": EvidenceIntegrity(evaluator_configuration_absent=1)}, ["evaluator configuration absent"], "contract-scoring"),
    "evaluator-configuration-digest-mismatch": (
        {"integrity": EvidenceIntegrity(evaluator_configuration_digest_mismatches=(("sha256:a", "sha256:b"),))},
        ['evaluator configuration digest mismatch: declared "sha256:a", computed "sha256:b"'], "contract-scoring"),
    "judge-result-unscored": (
        {"integrity": EvidenceIntegrity(judge_results_unscored=(("R-001", "RC-002"),))},
        ["judge result unscored: rubric R-001 criterion RC-002"], "contract-scoring"),
    "trial-set-field-disagreement": (
        {"integrity": EvidenceIntegrity(trial_set_disagreements=('runId: trial 1 = "a", trial 2 = "b"',))},
        ['trial-set field disagreement: runId: trial 1 = "a", trial 2 = "b"'], "contract-scoring"),
    "behavioural-failure-at-or-above-floor": (
        {"outcomes": [outcome("O-004", "abstained", "material")]},
        ["oracle O-004 resolved abstained at or above the severity floor"], "contract-scoring"),
    "evidence-incomplete": ({"integrity": EvidenceIntegrity(reported_incomplete=True)}, ["evidence reported incomplete"], "contract-scoring"),
    "evidence-over-truncated": ({"integrity": EvidenceIntegrity(over_truncated=True)},
                                ["evidence truncated past its disclosed bound"], "contract-scoring"),
    "evidence-unavailable": ({"integrity": EvidenceIntegrity(unavailable=True)}, ["evidence unavailable"], "contract-scoring"),
    "evidence-internally-inconsistent": ({"integrity": EvidenceIntegrity(internally_inconsistent=True)},
                                         ["evidence internally inconsistent"], "contract-scoring"),
    "lineage-chain-inconsistent": ({"lineage": LineageFlags(no_gap=False)},
                                   ["presented lineage chain is internally inconsistent"], "contract-scoring"),
    "evaluator-recommendation-fail": ({"evaluator_recommendation": "FAIL"}, ["evaluator recommendation FAIL"], "production"),
    "behavioural-failure-below-floor": ({"outcomes": [outcome("O-005", "missed", "low")]},
                                        ["oracle O-005 resolved missed below the severity floor"], "contract-scoring"),
    "coverage-gap-at-or-above-floor": (
        {"coverage_gaps": [LadderCoverageGap("malformed-input", False, "critical"), LadderCoverageGap("whole-body", False, "low")]},
        ["coverage gap malformed-input unsatisfied at or above the severity floor"], "contract-scoring"),
    "finding-confidence-below-threshold": (
        {"findings": [LadderFinding("F-004", "observation", "O-001", 0.5), LadderFinding("F-005", "defect", "O-001", 0.7)]},
        ["finding F-004 confidence 0.5 below the policy threshold"], "contract-scoring"),
    "uncited-defect-finding": (
        {"findings": [LadderFinding("F-006", "defect", None, 0.9), LadderFinding("F-007", "observation", None, 0.9)]},
        ["finding F-006: defect finding citing no oracle"], "contract-scoring"),
    "below-minimum-trial-count": ({"minimum_trial_count": 3}, ["1 completed trials below the declared minimum of 3"], "contract-scoring"),
    "oracle-unreached": ({"outcomes": [outcome("O-005", "unreached", "low")]}, ["oracle O-005 resolved unreached"], "contract-scoring"),
    "evaluator-recommendation-concerns": ({"evaluator_recommendation": "CONCERNS"},
                                          ["evaluator recommendation CONCERNS"], "production"),
    "waiver-honoured": ({"outcomes": [outcome("O-007", "not-applicable", waiver="waiver-honoured")]},
                        ["oracle O-007 waived (not-applicable)"], "contract-scoring"),
}


@pytest.mark.parametrize("row", ALL_ROWS, ids=lambda r: r.id)
def test_each_row_fires_with_its_basis(row) -> None:
    changes, basis, mode = ROW_CASES[row.id]
    result = resolve_ladder(ladder_for(mode), replace(CLEAN, **changes))  # type: ignore[arg-type]
    assert row.id in result.fired_rows
    assert result.rung == row.rung
    assert list(result.basis) == basis


def test_clean_inputs_pass_with_an_empty_basis() -> None:
    result = resolve_ladder(CONTRACT_LADDER, CLEAN)
    assert (result.rung, result.verdict, result.exit_code, result.basis, result.strict_promotable) == (
        "PASS", "PASS", 0, (), True)


def test_verdicts_and_exit_codes_per_rung() -> None:
    cases = {
        "Invalid": ("failed-preflight", None, 3),
        "FAIL": ("evidence-unavailable", "FAIL", 2),
        "CONCERNS": ("uncited-defect-finding", "CONCERNS", 0),
        "WAIVED": ("waiver-honoured", "WAIVED", 0),
    }
    for rung, (row, verdict, code) in cases.items():
        changes, _, mode = ROW_CASES[row]
        r = resolve_ladder(ladder_for(mode), replace(CLEAN, **changes))  # type: ignore[arg-type]
        assert (r.rung, r.verdict, r.exit_code) == (rung, verdict, code)


def test_higher_rung_masks_lower_and_a_rung_concatenates_rows_in_row_order() -> None:
    inputs = replace(
        CLEAN,
        outcomes=[outcome("O-004", "abstained"), outcome("O-005", "unreached", "low")],
        minimum_trial_count=3,
        coverage_gaps=[LadderCoverageGap("malformed-input", False, "critical")],
    )
    r = resolve_ladder(CONTRACT_LADDER, inputs)
    assert r.verdict == "FAIL" and r.basis == ("oracle O-004 resolved abstained at or above the severity floor",)
    r2 = resolve_ladder(CONTRACT_LADDER, replace(inputs, outcomes=[outcome("O-005", "unreached", "low")]))
    assert r2.basis == (
        "coverage gap malformed-input unsatisfied at or above the severity floor",
        "1 completed trials below the declared minimum of 3",
        "oracle O-005 resolved unreached",
    )


def test_contract_ladder_never_promotes_the_evaluator_recommendation() -> None:
    r = resolve_ladder(CONTRACT_LADDER, replace(CLEAN, evaluator_recommendation="FAIL"))
    assert r.verdict == "PASS"
    assert {row.id for row in PRODUCTION_LADDER} - {row.id for row in CONTRACT_LADDER} == {
        "evaluator-recommendation-fail", "evaluator-recommendation-concerns"}


def test_strict_promotes_concerns_unless_only_evidence_conditions_fired() -> None:
    evidence_only = resolve_ladder(
        CONTRACT_LADDER, replace(CLEAN, minimum_trial_count=3, outcomes=[outcome("O-5", "unreached")]))
    assert evidence_only.verdict == "CONCERNS" and not evidence_only.strict_promotable
    assert cli_exit_code(evidence_only, strict=True) == 0
    mixed = resolve_ladder(
        CONTRACT_LADDER, replace(CLEAN, minimum_trial_count=3, findings=[LadderFinding("F-1", "defect", None, 1)]))
    assert mixed.strict_promotable and cli_exit_code(mixed, strict=True) == 1
    assert cli_exit_code(mixed, strict=False) == 0 and mixed.exit_code == 0
    fail = resolve_ladder(CONTRACT_LADDER, replace(CLEAN, integrity=EvidenceIntegrity(unavailable=True)))
    assert cli_exit_code(fail, strict=True) == 2


def test_census_every_row_rung_and_verdict_is_reached() -> None:
    fired: set[str] = set()
    rungs: set[str] = set()
    for changes, _, mode in ROW_CASES.values():
        r = resolve_ladder(ladder_for(mode), replace(CLEAN, **changes))  # type: ignore[arg-type]
        fired.update(r.fired_rows)
        rungs.add(r.rung)
    rungs.add(resolve_ladder(CONTRACT_LADDER, CLEAN).rung)
    assert fired == {row.id for row in ALL_ROWS}
    assert rungs == set(RUNGS)
    assert set(ROW_CASES) == {row.id for row in ALL_ROWS}


def test_operation_identifier_collision_row_is_gone() -> None:
    """5.0.0: the pair identity retired the AD-21 row operation-identifier-collision."""
    assert "operation-identifier-collision" not in {row.id for row in ALL_ROWS}
