"""The AD-21 verdict ladders as data: PRODUCTION_LADDER and CONTRACT_LADDER (scoring.md §4).

Every row carries its id, rung, prose guard, evidence-condition flag and a ``reasons`` function giving
one basis sentence per firing item. ``resolve_ladder`` evaluates every row of a rung, in the order
Invalid → FAIL → CONCERNS → WAIVED → PASS; the first rung with a firing row wins and its basis is the
concatenation of all its rows' reasons in row order, so no row hides another within a rung. The two
ladders differ only in the production-only evaluator-recommendation rows (contract scoring records the
recommendation of a knowingly defective probe and never promotes it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from evalquality_core.canonical.json import canonical_bytes
from evalquality_core.registries import (
    EXIT_FAIL,
    EXIT_INVALID,
    EXIT_SUCCESS,
    SEVERITIES,
    EvaluatorRecommendation,
    RunMode,
    Severity,
    Verdict,
)
from evalquality_core.score.outcome import BEHAVIOURAL_FAILURE_STATES, INVALIDATING_STATES, ScoredOutcome

Rung = Literal["Invalid", "FAIL", "CONCERNS", "WAIVED", "PASS"]
#: Precedence order of the rungs (§4.1).
RUNGS: tuple[Rung, ...] = ("Invalid", "FAIL", "CONCERNS", "WAIVED", "PASS")
RUNG_EXIT_CODES: dict[Rung, int] = {
    "Invalid": EXIT_INVALID,
    "FAIL": EXIT_FAIL,
    "CONCERNS": EXIT_SUCCESS,
    "WAIVED": EXIT_SUCCESS,
    "PASS": EXIT_SUCCESS,
}


@dataclass(frozen=True)
class LadderFinding:
    """The parts of a finding the CONCERNS rows read."""

    finding_id: str
    finding_type: Literal["defect", "observation", "confirmation"]
    oracle_id: str | None
    confidence: float


@dataclass(frozen=True)
class LadderCoverageGap:
    """A coverage gap as the ladder reads it (§6)."""

    rule: str
    satisfied: bool
    severity: Severity


@dataclass(frozen=True)
class EvidenceIntegrity:
    """Evidence-integrity lists routed from ingest and the trial set (§7.1), plus the four flags of §4.2."""

    isolation_violation: tuple[str, ...] = ()
    #: (subject, identifier, occurrences)
    duplicate_record_identifiers: tuple[tuple[str, str, int], ...] = ()
    #: (finding id, unresolved observation ids)
    dangling_citations: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: (oracle id, unresolved observation ids)
    dangling_disposition_citations: tuple[tuple[str, tuple[str, ...]], ...] = ()
    forbidden_inputs_admitted: tuple[str, ...] = ()
    #: (field, record value, manifest value)
    cross_artifact_disagreements: tuple[tuple[str, str, str], ...] = ()
    evaluator_configuration_absent: int = 0
    #: (declared digest, computed digest)
    evaluator_configuration_digest_mismatches: tuple[tuple[str, str], ...] = ()
    #: (rubric id, criterion id)
    judge_results_unscored: tuple[tuple[str, str], ...] = ()
    trial_set_disagreements: tuple[str, ...] = ()
    reported_incomplete: bool = False
    over_truncated: bool = False
    unavailable: bool = False
    internally_inconsistent: bool = False


@dataclass(frozen=True)
class LineageFlags:
    """The remediation lineage flags (score declares all three true)."""

    length_consistent: bool = True
    no_repeated_digest: bool = True
    no_gap: bool = True


@dataclass(frozen=True)
class LadderInputs:
    """Everything the ladder rows read."""

    outcomes: Sequence[ScoredOutcome]
    preflight_passed: bool
    invalidated_attempts: int
    severity_floor: Severity
    re_execution_cap: int
    confidence_threshold: float
    minimum_trial_count: int
    completed_trials: int
    evaluator_recommendation: EvaluatorRecommendation
    #: (finding id, channel) per unwitnessed quotation, in audit order.
    unwitnessed_quotations: Sequence[tuple[str, str]] = ()
    findings: Sequence[LadderFinding] = ()
    coverage_gaps: Sequence[LadderCoverageGap] = ()
    integrity: EvidenceIntegrity = field(default_factory=EvidenceIntegrity)
    lineage: LineageFlags = field(default_factory=LineageFlags)


@dataclass(frozen=True)
class LadderRow:
    """One row of a verdict ladder."""

    id: str
    rung: Rung
    #: Which ladders carry the row.
    ladders: tuple[RunMode, ...]
    guard: str
    #: True for the evidence conditions a ``--strict`` run never promotes (§4.3).
    evidence_condition: bool
    reasons: Callable[[LadderInputs], list[str]]


@dataclass(frozen=True)
class LadderResult:
    """The resolved ladder (§4.1)."""

    rung: Rung
    verdict: Verdict | None
    exit_code: int
    strict_promotable: bool
    basis: tuple[str, ...]
    #: Ids of the rows that fired on the winning rung, in row order.
    fired_rows: tuple[str, ...]


def at_or_above(severity: str, floor: str) -> bool:
    """index(severity) ≥ index(floor) in SEVERITIES; a value outside the ladder never is."""
    if severity not in SEVERITIES or floor not in SEVERITIES:
        return False
    return SEVERITIES.index(severity) >= SEVERITIES.index(floor)  # type: ignore[arg-type]


def js_number(value: float | int) -> str:
    """A number printed as ECMAScript would (``0.5``, ``1``, ``0.00005``): the RFC 8785 number form."""
    return canonical_bytes(value).decode("ascii")


def _each_state(states: Sequence[str], sentence: str) -> Callable[[LadderInputs], list[str]]:
    return lambda li: [sentence.format(o=o) for o in li.outcomes if o.state in states]


def _each_condition(condition: str, sentence: str) -> Callable[[LadderInputs], list[str]]:
    return lambda li: [
        sentence.format(o=o) for o in li.outcomes if condition in o.decision.invalidating_conditions
    ]


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(ids)


BOTH: tuple[RunMode, ...] = ("production", "contract-scoring")
PRODUCTION_ONLY: tuple[RunMode, ...] = ("production",)

INVALID_ROWS: tuple[LadderRow, ...] = (
    LadderRow(
        "invalidating-state",
        "Invalid",
        BOTH,
        "an outcome in oracle-error, judge-error or infrastructure-error",
        False,
        _each_state(INVALIDATING_STATES, "oracle {o.oracle_id} resolved {o.state}"),
    ),
    LadderRow(
        "failed-preflight",
        "Invalid",
        BOTH,
        "the pre-flight verdict did not pass",
        False,
        lambda li: [] if li.preflight_passed else ["pre-flight verdict did not pass"],
    ),
    LadderRow(
        "isolation-manifest-violation",
        "Invalid",
        BOTH,
        "an isolation violation entry",
        False,
        lambda li: [f"isolation manifest violation: {v}" for v in li.integrity.isolation_violation],
    ),
    LadderRow(
        "re-execution-cap-breach",
        "Invalid",
        BOTH,
        "invalidated attempts exceed the policy reExecutionCap",
        False,
        lambda li: (
            [f"{li.invalidated_attempts} invalidated attempts exceeded the re-execution cap of {li.re_execution_cap}"]
            if li.invalidated_attempts > li.re_execution_cap
            else []
        ),
    ),
    LadderRow(
        "disposition-missing",
        "Invalid",
        BOTH,
        "an outcome with the disposition-missing condition",
        False,
        _each_condition("disposition-missing", "oracle {o.oracle_id} is required and carries no disposition"),
    ),
    LadderRow(
        "required-check-unresolved",
        "Invalid",
        BOTH,
        "a required outcome whose check never resolved",
        False,
        lambda li: [
            f"oracle {o.oracle_id} is required and its check never resolved"
            for o in li.outcomes
            if o.check_resolution is None
        ],
    ),
    LadderRow(
        "selector-ambiguity",
        "Invalid",
        BOTH,
        "an outcome with the selector-ambiguity condition",
        False,
        _each_condition("selector-ambiguity", "oracle {o.oracle_id}: selector ambiguity"),
    ),
    LadderRow(
        "unwitnessed-claim",
        "Invalid",
        BOTH,
        "an outcome with the unwitnessed-detection-claim condition",
        False,
        _each_condition("unwitnessed-detection-claim", "oracle {o.oracle_id}: unwitnessed detection claim"),
    ),
    LadderRow(
        "unwitnessed-quotation",
        "Invalid",
        BOTH,
        "an unwitnessed quotation",
        False,
        lambda li: [f"finding {f}: unwitnessed quotation on channel {c}" for f, c in li.unwitnessed_quotations],
    ),
    LadderRow(
        "duplicate-record-identifier",
        "Invalid",
        BOTH,
        "a duplicate-record-identifier ingest condition",
        False,
        lambda li: [
            f'duplicate {s} identifier "{i}" ({n} occurrences)' for s, i, n in li.integrity.duplicate_record_identifiers
        ],
    ),
    LadderRow(
        "dangling-citation",
        "Invalid",
        BOTH,
        "a dangling-citation ingest condition",
        False,
        lambda li: [
            f"finding {f} cites unresolved observation(s): {_ids(ids)}" for f, ids in li.integrity.dangling_citations
        ],
    ),
    LadderRow(
        "dangling-disposition-citation",
        "Invalid",
        BOTH,
        "a dangling-disposition-citation ingest condition",
        False,
        lambda li: [
            f"oracle {o} disposition cites unresolved observation(s): {_ids(ids)}"
            for o, ids in li.integrity.dangling_disposition_citations
        ],
    ),
    LadderRow(
        "forbidden-input-not-withheld",
        "Invalid",
        BOTH,
        "a floor input admitted rather than withheld",
        False,
        lambda li: [
            f"forbidden input admitted rather than withheld: {i}" for i in li.integrity.forbidden_inputs_admitted
        ],
    ),
    LadderRow(
        "cross-artifact-disagreement",
        "Invalid",
        BOTH,
        "record and manifest disagree on a field",
        False,
        lambda li: [
            f'record and manifest disagree on {f}: record "{r}", manifest "{m}"'
            for f, r, m in li.integrity.cross_artifact_disagreements
        ],
    ),
    LadderRow(
        "evaluator-configuration-absent",
        "Invalid",
        BOTH,
        "no evaluator configuration supplied",
        False,
        lambda li: ["evaluator configuration absent"] * li.integrity.evaluator_configuration_absent,
    ),
    LadderRow(
        "evaluator-configuration-digest-mismatch",
        "Invalid",
        BOTH,
        "the configuration digest disagrees with the record's declaration",
        False,
        lambda li: [
            f'evaluator configuration digest mismatch: declared "{d}", computed "{c}"'
            for d, c in li.integrity.evaluator_configuration_digest_mismatches
        ],
    ),
    LadderRow(
        "judge-result-unscored",
        "Invalid",
        BOTH,
        "a judge result with a null score",
        False,
        lambda li: [
            f"judge result unscored: rubric {r} criterion {c}" for r, c in li.integrity.judge_results_unscored
        ],
    ),
    # 5.0.0 removed the "operation-identifier-collision" row: an observation names the pair
    # (interfaceId, operationId), so an operation id two interfaces share is no longer a collision.
    LadderRow(
        "trial-set-field-disagreement",
        "Invalid",
        BOTH,
        "the trials disagree on an identity field",
        False,
        lambda li: [f"trial-set field disagreement: {d}" for d in li.integrity.trial_set_disagreements],
    ),
)

FAIL_ROWS: tuple[LadderRow, ...] = (
    LadderRow(
        "behavioural-failure-at-or-above-floor",
        "FAIL",
        BOTH,
        "a behavioural failure at or above the severity floor",
        False,
        lambda li: [
            f"oracle {o.oracle_id} resolved {o.state} at or above the severity floor"
            for o in li.outcomes
            if o.state in BEHAVIOURAL_FAILURE_STATES and at_or_above(o.severity, li.severity_floor)
        ],
    ),
    LadderRow(
        "evidence-incomplete",
        "FAIL",
        BOTH,
        "disclosure reportedIncomplete",
        False,
        lambda li: ["evidence reported incomplete"] if li.integrity.reported_incomplete else [],
    ),
    LadderRow(
        "evidence-over-truncated",
        "FAIL",
        BOTH,
        "overTruncated",
        False,
        lambda li: ["evidence truncated past its disclosed bound"] if li.integrity.over_truncated else [],
    ),
    LadderRow(
        "evidence-unavailable",
        "FAIL",
        BOTH,
        "unavailable",
        False,
        lambda li: ["evidence unavailable"] if li.integrity.unavailable else [],
    ),
    LadderRow(
        "evidence-internally-inconsistent",
        "FAIL",
        BOTH,
        "internallyInconsistent",
        False,
        lambda li: ["evidence internally inconsistent"] if li.integrity.internally_inconsistent else [],
    ),
    LadderRow(
        "lineage-chain-inconsistent",
        "FAIL",
        BOTH,
        "not (lengthConsistent and noRepeatedDigest and noGap)",
        False,
        lambda li: (
            []
            if (li.lineage.length_consistent and li.lineage.no_repeated_digest and li.lineage.no_gap)
            else ["presented lineage chain is internally inconsistent"]
        ),
    ),
    LadderRow(
        "evaluator-recommendation-fail",
        "FAIL",
        PRODUCTION_ONLY,
        "recommendation = FAIL",
        False,
        lambda li: ["evaluator recommendation FAIL"] if li.evaluator_recommendation == "FAIL" else [],
    ),
)

CONCERNS_ROWS: tuple[LadderRow, ...] = (
    LadderRow(
        "behavioural-failure-below-floor",
        "CONCERNS",
        BOTH,
        "a behavioural failure below the severity floor",
        False,
        lambda li: [
            f"oracle {o.oracle_id} resolved {o.state} below the severity floor"
            for o in li.outcomes
            if o.state in BEHAVIOURAL_FAILURE_STATES and not at_or_above(o.severity, li.severity_floor)
        ],
    ),
    LadderRow(
        "coverage-gap-at-or-above-floor",
        "CONCERNS",
        BOTH,
        "an unsatisfied coverage gap at or above the severity floor",
        False,
        lambda li: [
            f"coverage gap {g.rule} unsatisfied at or above the severity floor"
            for g in li.coverage_gaps
            if not g.satisfied and at_or_above(g.severity, li.severity_floor)
        ],
    ),
    LadderRow(
        "finding-confidence-below-threshold",
        "CONCERNS",
        BOTH,
        "a finding with confidence below the policy threshold",
        False,
        lambda li: [
            f"finding {f.finding_id} confidence {js_number(f.confidence)} below the policy threshold"
            for f in li.findings
            if f.confidence < li.confidence_threshold
        ],
    ),
    LadderRow(
        "uncited-defect-finding",
        "CONCERNS",
        BOTH,
        "a defect finding citing no oracle",
        False,
        lambda li: [
            f"finding {f.finding_id}: defect finding citing no oracle"
            for f in li.findings
            if f.finding_type == "defect" and f.oracle_id is None
        ],
    ),
    LadderRow(
        "below-minimum-trial-count",
        "CONCERNS",
        BOTH,
        "completed trials below the policy minimumTrialCount",
        True,
        lambda li: (
            [f"{li.completed_trials} completed trials below the declared minimum of {li.minimum_trial_count}"]
            if li.completed_trials < li.minimum_trial_count
            else []
        ),
    ),
    LadderRow(
        "oracle-unreached",
        "CONCERNS",
        BOTH,
        "an outcome in state unreached",
        True,
        _each_state(("unreached",), "oracle {o.oracle_id} resolved unreached"),
    ),
    LadderRow(
        "evaluator-recommendation-concerns",
        "CONCERNS",
        PRODUCTION_ONLY,
        "recommendation = CONCERNS",
        False,
        lambda li: ["evaluator recommendation CONCERNS"] if li.evaluator_recommendation == "CONCERNS" else [],
    ),
)

WAIVED_ROWS: tuple[LadderRow, ...] = (
    LadderRow(
        "waiver-honoured",
        "WAIVED",
        BOTH,
        "an outcome whose waiver rule was waiver-honoured",
        False,
        lambda li: [
            f"oracle {o.oracle_id} waived (not-applicable)"
            for o in li.outcomes
            if o.decision.waiver_rule == "waiver-honoured"
        ],
    ),
)

ALL_ROWS: tuple[LadderRow, ...] = INVALID_ROWS + FAIL_ROWS + CONCERNS_ROWS + WAIVED_ROWS
PRODUCTION_LADDER: tuple[LadderRow, ...] = tuple(r for r in ALL_ROWS if "production" in r.ladders)
CONTRACT_LADDER: tuple[LadderRow, ...] = tuple(r for r in ALL_ROWS if "contract-scoring" in r.ladders)


def ladder_for(mode: RunMode) -> tuple[LadderRow, ...]:
    """The ladder of a mode (fixed before ingest, read off the first trial: AD-21)."""
    return PRODUCTION_LADDER if mode == "production" else CONTRACT_LADDER


def resolve_ladder(rows: Sequence[LadderRow], inputs: LadderInputs) -> LadderResult:
    """First rung with any firing row wins; its basis is every firing row's reasons in row order."""
    for rung in RUNGS[:-1]:
        basis: list[str] = []
        fired: list[LadderRow] = []
        for row in rows:
            if row.rung != rung:
                continue
            reasons = row.reasons(inputs)
            if reasons:
                basis.extend(reasons)
                fired.append(row)
        if fired:
            promotable = not (rung == "CONCERNS" and all(r.evidence_condition for r in fired))
            return LadderResult(
                rung=rung,
                verdict=None if rung == "Invalid" else rung,
                exit_code=RUNG_EXIT_CODES[rung],
                strict_promotable=promotable,
                basis=tuple(basis),
                fired_rows=tuple(r.id for r in fired),
            )
    return LadderResult("PASS", "PASS", EXIT_SUCCESS, True, (), ())


def cli_exit_code(result: LadderResult, *, strict: bool) -> int:
    """The process exit code: the ladder's, except a promotable CONCERNS under ``--strict`` exits 1."""
    if strict and result.verdict == "CONCERNS" and result.strict_promotable:
        return 1
    return result.exit_code
