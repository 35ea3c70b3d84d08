"""The AD-33 outcome decision as data: invalidating conditions, the state ladder, waivers, corroboration.

scoring.md §3.3–§3.5. Every table is a tuple of frozen rows carrying the spec's ids; ``decide_outcome``
evaluates Stage A (every condition, sorted by id), Stage B (first matching state row), Stage C (waiver,
then corroboration). The states come from the evaluator's findings, dispositions and the AD-40 witness
match; the check resolution is only a corroboration signal (AD-33), except that ``insufficient-evidence``
lands on ``abstained`` (AD-4).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from evalquality_core.registries import (
    CheckResolution,
    Corroboration,
    Disposition,
    OutcomeState,
    Polarity,
    ProbeClass,
    Severity,
)

FindingBucket = Literal["mapped", "unmapped", "signatureless", "dangling"]
WitnessResult = Literal["matched", "manifested-unclaimed", "not-triggered", "unexercised", "unwitnessed-claim", "vacuous"]
SelectionResult = Literal["none", "one", "several"]
Waiver = Literal["none", "applied-condition-met", "applied-condition-unmet", "expired"]
JudgeConduct = Literal["absent", "conforming", "malformed"]

#: scoring.md §3.1 groups.
INVALIDATING_STATES: tuple[OutcomeState, ...] = ("oracle-error", "judge-error", "infrastructure-error")
BEHAVIOURAL_FAILURE_STATES: tuple[OutcomeState, ...] = ("missed", "abstained", "bypassed", "false-positive")
UNVOTED_STATES: tuple[OutcomeState, ...] = ("not-applicable", "unreached")
VOTED_STATES: tuple[OutcomeState, ...] = (
    "caught",
    "confirmed",
    "missed",
    "abstained",
    "bypassed",
    "passed-clean-control",
    "false-positive",
)
#: Only ``missed`` is waivable (§3.5).
WAIVABLE_STATES: tuple[OutcomeState, ...] = ("missed",)


@dataclass(frozen=True)
class RecordedDisposition:
    """The one disposition the record carries for an oracle (§3.2)."""

    disposition: Disposition
    observation_ids: tuple[str, ...]


@dataclass(frozen=True)
class CitedFinding:
    """The single defect finding citing the oracle, with its §3.7 bucket."""

    finding_id: str
    bucket: FindingBucket
    severity: Severity


@dataclass(frozen=True)
class OutcomeInputs:
    """Everything the decision reads for one (oracle, trial), as §3.2 fills it."""

    required: bool
    disposition: RecordedDisposition | None
    cited_finding: CitedFinding | None
    #: The AD-40 witness result, present only for the designated oracle of a signed probe.
    witness: WitnessResult | None
    selections: tuple[SelectionResult, ...]
    selector_ambiguity: bool
    check_resolution: CheckResolution | None
    polarity: Polarity
    probe_class: ProbeClass | None
    expected_clean: bool | None
    probe_signed: bool | None
    probe_qualified: bool | None
    waiver: Waiver
    judge_conduct: JudgeConduct
    evaluation_fault: bool


# ---- helper predicates of §3.4 -------------------------------------------------------------------


def _cites(i: OutcomeInputs) -> bool:
    return i.cited_finding is not None


def _bucket(i: OutcomeInputs) -> FindingBucket | None:
    return None if i.cited_finding is None else i.cited_finding.bucket


def _w(result: WitnessResult) -> Callable[[OutcomeInputs], bool]:
    return lambda i: i.witness == result


def _examined_nothing(i: OutcomeInputs) -> bool:
    return i.check_resolution == "insufficient-evidence"


def _all_none(i: OutcomeInputs) -> bool:
    return bool(i.selections) and all(s == "none" for s in i.selections)


def _some_selected(i: OutcomeInputs) -> bool:
    return any(s != "none" for s in i.selections)


def check_satisfies(resolution: CheckResolution | None, polarity: Polarity) -> bool:
    """§1.5 polarity: ``true`` under expects-hold, ``false`` under expects-violation; never otherwise."""
    if resolution is None or resolution == "insufficient-evidence":
        return False
    return resolution == ("true" if polarity == "expects-hold" else "false")


# ---- Stage A ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InvalidatingCondition:
    """A row of §3.3: an id, its prose, and the predicate that makes it hold."""

    id: str
    holds_when: str
    holds: Callable[[OutcomeInputs], bool]


INVALIDATING_CONDITIONS: tuple[InvalidatingCondition, ...] = (
    InvalidatingCondition("evaluation-fault", "evaluationFault", lambda i: i.evaluation_fault),
    InvalidatingCondition("judge-malformed", "judgeConduct = malformed", lambda i: i.judge_conduct == "malformed"),
    InvalidatingCondition(
        "unqualified-probe-in-sealed-set",
        "a probe is present and probeQualified = false",
        lambda i: i.probe_class is not None and i.probe_qualified is False,
    ),
    InvalidatingCondition(
        "dangling-probe-citation", "cited finding bucket = dangling", lambda i: _bucket(i) == "dangling"
    ),
    InvalidatingCondition(
        "unwitnessed-detection-claim", "witness result = unwitnessed-claim", _w("unwitnessed-claim")
    ),
    InvalidatingCondition("vacuous-signature", "witness result = vacuous", _w("vacuous")),
    InvalidatingCondition("selector-ambiguity", "selectorAmbiguity", lambda i: i.selector_ambiguity),
    InvalidatingCondition(
        "canary-non-detection",
        "class canary, some selection is not none, and no defect finding cites the oracle",
        lambda i: i.probe_class == "canary" and _some_selected(i) and not _cites(i),
    ),
    InvalidatingCondition(
        "unsupported-disposition",
        "disposition held or violated with empty observationIds",
        lambda i: i.disposition is not None
        and i.disposition.disposition in ("held", "violated")
        and not i.disposition.observation_ids,
    ),
    InvalidatingCondition(
        "disposition-missing", "required and disposition = null", lambda i: i.required and i.disposition is None
    ),
)


# ---- Stage B ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutcomeRule:
    """A row of the §3.4 state ladder (first match wins)."""

    number: int
    id: str
    guard: str
    state: OutcomeState
    #: Whether the state resolves from the cited finding (``resolvedFrom`` = its id).
    resolves_from_finding: bool
    holds: Callable[[OutcomeInputs], bool]


def _not_clean(i: OutcomeInputs) -> bool:
    return i.expected_clean is not True


OUTCOME_RULES: tuple[OutcomeRule, ...] = (
    OutcomeRule(1, "evaluation-fault", "evaluationFault", "oracle-error", False, lambda i: i.evaluation_fault),
    OutcomeRule(
        2, "judge-malformed", "judgeConduct = malformed", "judge-error", False, lambda i: i.judge_conduct == "malformed"
    ),
    OutcomeRule(
        3,
        "probe-unqualified",
        "probeClass non-null and probeQualified = false",
        "infrastructure-error",
        False,
        lambda i: i.probe_class is not None and i.probe_qualified is False,
    ),
    OutcomeRule(
        4, "finding-dangling-probe", "bucket = dangling", "infrastructure-error", True, lambda i: _bucket(i) == "dangling"
    ),
    OutcomeRule(
        5, "witness-unwitnessed-claim", "W(unwitnessed-claim)", "infrastructure-error", False, _w("unwitnessed-claim")
    ),
    OutcomeRule(6, "witness-vacuous", "W(vacuous)", "infrastructure-error", False, _w("vacuous")),
    OutcomeRule(
        7, "selector-ambiguous", "selectorAmbiguity", "infrastructure-error", False, lambda i: i.selector_ambiguity
    ),
    OutcomeRule(
        8,
        "witness-unexercised",
        "W(unexercised) and expectedClean is not true",
        "not-applicable",
        False,
        lambda i: i.witness == "unexercised" and _not_clean(i),
    ),
    OutcomeRule(
        9,
        "steps-unreached",
        "(witness = null or W(not-triggered)) and every selection is none",
        "unreached",
        False,
        lambda i: (i.witness is None or i.witness == "not-triggered") and _all_none(i),
    ),
    OutcomeRule(
        10,
        "zero-action-detected",
        "class zero-action, expectedClean = false, W(matched)",
        "caught",
        False,
        lambda i: i.probe_class == "zero-action" and i.expected_clean is False and i.witness == "matched",
    ),
    OutcomeRule(
        11,
        "clean-control-false-positive",
        "expectedClean = true and cites",
        "false-positive",
        True,
        lambda i: i.expected_clean is True and _cites(i),
    ),
    OutcomeRule(
        12,
        "clean-control-passed",
        "expectedClean = true and not examinedNothing",
        "passed-clean-control",
        False,
        lambda i: i.expected_clean is True and not _examined_nothing(i),
    ),
    OutcomeRule(
        13, "canary-detected", "class canary and cites", "caught", True, lambda i: i.probe_class == "canary" and _cites(i)
    ),
    OutcomeRule(
        14,
        "canary-undetected",
        "class canary, some selection is not none, not cites",
        "infrastructure-error",
        False,
        lambda i: i.probe_class == "canary" and _some_selected(i) and not _cites(i),
    ),
    OutcomeRule(
        15,
        "witness-matched",
        "W(matched) and expectedClean is not true",
        "caught",
        False,
        lambda i: i.witness == "matched" and _not_clean(i),
    ),
    OutcomeRule(
        16,
        "witness-manifested-unclaimed",
        "W(manifested-unclaimed) and expectedClean is not true",
        "missed",
        False,
        lambda i: i.witness == "manifested-unclaimed" and _not_clean(i),
    ),
    OutcomeRule(
        17,
        "oracle-cited-defect",
        "witness = null and bucket = mapped",
        "caught",
        True,
        lambda i: i.witness is None and _bucket(i) == "mapped",
    ),
    OutcomeRule(
        18, "check-insufficient-evidence", "examinedNothing", "abstained", False, _examined_nothing
    ),
    OutcomeRule(19, "witness-not-triggered", "W(not-triggered)", "confirmed", False, _w("not-triggered")),
    OutcomeRule(20, "outcome-clear", "none of the rows above", "confirmed", False, lambda i: True),
)


# ---- Stage C ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WaiverRule:
    """A §3.5 waiver row: applies to a waivable provisional state under one waiver value."""

    id: str
    waiver: Waiver
    from_state: OutcomeState
    to_state: OutcomeState


WAIVER_RULES: tuple[WaiverRule, ...] = (
    WaiverRule("waiver-honoured", "applied-condition-met", "missed", "not-applicable"),
    WaiverRule("waiver-bypassed", "applied-condition-unmet", "missed", "bypassed"),
)


@dataclass(frozen=True)
class CorroborationRule:
    """A §3.5 corroboration row: decided after the final state, first match wins."""

    number: int
    id: str
    holds_when: str
    holds: Callable[[OutcomeInputs, OutcomeState], bool]
    value: Callable[[OutcomeInputs], Corroboration]


def _unsupported(i: OutcomeInputs) -> bool:
    d = i.disposition
    return d is not None and d.disposition in ("held", "violated") and not d.observation_ids


def _contradicts(i: OutcomeInputs) -> bool:
    d = i.disposition
    if d is None:
        return False
    if d.disposition == "violated":
        return not _cites(i)
    return _cites(i)  # held or not-attempted while a defect finding cites the oracle


def _satisfies(i: OutcomeInputs) -> bool:
    return check_satisfies(i.check_resolution, i.polarity)


CORROBORATION_RULES: tuple[CorroborationRule, ...] = (
    CorroborationRule(
        1,
        "disposition-unsupported",
        "disposition held/violated with empty observationIds",
        lambda i, s: _unsupported(i),
        lambda i: "disagrees",
    ),
    CorroborationRule(
        2,
        "disposition-contradicts-evidence",
        "violated and not cites; or held/not-attempted and cites",
        lambda i, s: _contradicts(i),
        lambda i: "disagrees",
    ),
    CorroborationRule(
        3,
        "citation-declined",
        "bucket is unmapped or signatureless",
        lambda i, s: _bucket(i) in ("unmapped", "signatureless"),
        lambda i: "disagrees",
    ),
    CorroborationRule(
        4,
        "examined-nothing",
        "examinedNothing (disagrees if cites, else agrees)",
        lambda i, s: _examined_nothing(i),
        lambda i: "disagrees" if _cites(i) else "agrees",
    ),
    CorroborationRule(
        5,
        "never-ran",
        "final state unreached, or checkResolution = null",
        lambda i, s: s == "unreached" or i.check_resolution is None,
        lambda i: "not-evaluable",
    ),
    CorroborationRule(
        6,
        "check-confirms-silence",
        "check satisfies and not cites",
        lambda i, s: _satisfies(i) and not _cites(i),
        lambda i: "agrees",
    ),
    CorroborationRule(
        7,
        "check-confirms-finding",
        "check does not satisfy and cites",
        lambda i, s: not _satisfies(i) and _cites(i),
        lambda i: "agrees",
    ),
    CorroborationRule(
        8,
        "check-and-findings-diverge",
        "satisfies = cites",
        lambda i, s: _satisfies(i) == _cites(i),
        lambda i: "disagrees",
    ),
)


@dataclass(frozen=True)
class OutcomeDecision:
    """What §3.5 records on a resolution (selected observation ids are added by ``score``)."""

    rule: str
    rule_number: int
    waiver_rule: str | None
    corroboration_rule: str
    state: OutcomeState
    corroboration: Corroboration
    resolved_from: str | None
    declined_finding_ids: tuple[str, ...]
    invalidating_conditions: tuple[str, ...]


def invalidating_conditions(inputs: OutcomeInputs) -> tuple[str, ...]:
    """Stage A: every condition that holds, sorted by id."""
    return tuple(sorted(c.id for c in INVALIDATING_CONDITIONS if c.holds(inputs)))


def decide_outcome(inputs: OutcomeInputs) -> OutcomeDecision:
    """Stages A, B and C of scoring.md §3 for one (oracle, trial)."""
    conditions = invalidating_conditions(inputs)
    row = next(r for r in OUTCOME_RULES if r.holds(inputs))  # row 20 always holds: the ladder is total
    state: OutcomeState = row.state
    waiver_rule: str | None = None
    for w in WAIVER_RULES:
        if state == w.from_state and inputs.waiver == w.waiver:
            state, waiver_rule = w.to_state, w.id
            break
    corroboration_row = next((c for c in CORROBORATION_RULES if c.holds(inputs, state)), None)
    if corroboration_row is None:  # rows 6–8 are exhaustive over (satisfies, cites); unreachable
        raise AssertionError("corroboration table is not total")
    cited = inputs.cited_finding
    resolved_from = cited.finding_id if (row.resolves_from_finding and cited is not None) else None
    declined = (
        (cited.finding_id,)
        if cited is not None and resolved_from is None and cited.bucket in ("unmapped", "signatureless")
        else ()
    )
    return OutcomeDecision(
        rule=row.id,
        rule_number=row.number,
        waiver_rule=waiver_rule,
        corroboration_rule=corroboration_row.id,
        state=state,
        corroboration=corroboration_row.value(inputs),
        resolved_from=resolved_from,
        declined_finding_ids=declined,
        invalidating_conditions=conditions,
    )


@dataclass(frozen=True)
class ScoredOutcome:
    """One decided (oracle, trial): the decision plus what the ladder and emit read (§3.5, §3.9, §9.1)."""

    oracle_id: str
    trial_index: int
    probe_id: str | None
    decision: OutcomeDecision
    #: The ladder severity of §3.9 (cited finding's, else highest listing behaviour's, else low).
    severity: Severity
    #: The recorded disposition value, or None when none/ambiguous (emit prints ``not-attempted``).
    disposition: Disposition | None
    #: Root resolution of the check, None when the oracle has no check.
    check_resolution: CheckResolution | None
    #: The recorded check tree (the evaluate package's resolution node), None when no check.
    check_tree: object | None
    selected_observation_ids: tuple[str, ...]

    @property
    def state(self) -> OutcomeState:
        """The final state."""
        return self.decision.state
