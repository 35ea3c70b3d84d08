"""``score(...)``: a whole trial set of one probe → ``ScoreResult`` (scoring.md §3–§6, §8).

Composes the modules of this package, in this order per trial (trials ordered by ``trialIndex``):
select every plan step, match the probe's signature (AD-40), bucket the defect findings, then per oracle
in declaration order resolve its check, decide its outcome (AD-33) and attach its ladder severity. Then
one vote per trial, the trial-set reduction, the strength vector, the coverage gaps, and the verdict
ladder of the run's mode (read off the first trial, never derived). Inputs are models or wire objects;
the trials are ingest's ``ValidatedObservations``. Runtime faults from check resolution propagate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalquality_core.artifacts.base import to_wire
from evalquality_core.artifacts.evidence import ClassStrength
from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.coverage.coverage import UnsatisfiedRule, coverage_gaps
from evalquality_core.evaluate import (
    as_wire,
    resolution_context,
    resolve_check,
    select_for_oracle,
    select_plan,
)
from evalquality_core.ingest import ValidatedObservations
from evalquality_core.registries import SEVERITIES, RunMode, Severity
from evalquality_core.score.ladder import (
    EvidenceIntegrity,
    LadderCoverageGap,
    LadderFinding,
    LadderInputs,
    LadderResult,
    ladder_for,
    resolve_ladder,
)
from evalquality_core.score.outcome import (
    CitedFinding,
    JudgeConduct,
    OutcomeInputs,
    RecordedDisposition,
    ScoredOutcome,
    Waiver,
    decide_outcome,
)
from evalquality_core.score.qualification import Qualification, qualify_probe
from evalquality_core.score.strength import (
    ProbeStrengthInput,
    comparability_key,
    is_comparable,
    strength_denominator,
    strength_note,
    strength_vector,
)
from evalquality_core.score.trials import TrialSetResult, Vote, reduce_trial_set, trial_vote
from evalquality_core.score.witness import (
    HomeOperation,
    WitnessMatch,
    map_findings,
    match_witness,
    resolve_home_operation,
)

_ORACLE_ID = r"^O-[0-9]{3,}$"


class DesignatedOracleError(ValueError):
    """A caller-designated oracle that is malformed, undeclared, or not listed by the probe's behaviour."""


def designate_oracle(contract: Any, probe: Any, requested: str | None) -> str | None:
    """The AD-40 designated oracle (§3.2): the caller's, validated; else the behaviour's single oracle."""
    c, p = as_wire(contract), as_wire(probe)
    behaviour = next((b for b in c["behaviors"] if b["id"] == p["behaviorId"]), None)
    listed = list(behaviour["oracles"]) if behaviour else []
    if requested is not None:
        declared = {o["id"] for o in c["oracles"]}
        if not re.match(_ORACLE_ID, requested) or requested not in declared or requested not in listed:
            raise DesignatedOracleError(
                f'--designated-oracle "{requested}" must be an oracle the contract declares and behavior '
                f"{p['behaviorId']} lists (listed: {', '.join(listed) if listed else 'none'})"
            )
        return requested
    return listed[0] if len(listed) == 1 else None


@dataclass(frozen=True)
class TrialScore:
    """One trial's scored part."""

    trial_index: int
    outcomes: tuple[ScoredOutcome, ...]
    witness: WitnessMatch | None
    vote: Vote | None


@dataclass(frozen=True)
class ScoredStrength:
    """The emitted strength block (§5.3)."""

    denominator: str
    basis: Literal["measured", "reconstructed"]
    vector: Mapping[str, ClassStrength | None]
    comparable: bool
    note: str

    def to_wire(self) -> dict[str, Any]:
        """``{denominator, basis, vector, comparable, note}``."""
        return {
            "denominator": self.denominator,
            "basis": self.basis,
            "vector": {k: (None if v is None else to_wire(v)) for k, v in self.vector.items()},
            "comparable": self.comparable,
            "note": self.note,
        }


@dataclass(frozen=True)
class ScoreResult:
    """Everything ``emit`` and the CLI need from one scored trial set."""

    mode: RunMode
    run_id: str
    evaluator_recommendation: str
    probe_id: str
    probe_severity: Severity
    designated_oracle: str | None
    qualification: Qualification
    admitted_probe_ids: tuple[str, ...]
    excluded_probe_ids: tuple[str, ...]
    trials: tuple[TrialScore, ...]
    outcomes: tuple[ScoredOutcome, ...]
    reduction: TrialSetResult
    completed: int
    completed_attempts: tuple[int, ...]
    strength: ScoredStrength
    coverage_gaps: tuple[UnsatisfiedRule, ...]
    #: Ids of every finding with ``oracleId: null``, each trial's sorted, concatenated across trials.
    uncited_findings: tuple[str, ...]
    #: Uncited defect findings as ``{findingId, observationIds, quotedEvidence, severity}``, by id.
    uncited_finding_gaps: tuple[Mapping[str, Any], ...]
    scoring_policy_digest: str
    comparability_key: str
    catch_threshold: float
    declared_minimum: int
    ladder: LadderResult


def behaviour_severity(contract: Mapping[str, Any], behaviour_id: str) -> Severity:
    """The severity of a behaviour, ``low`` when undeclared (§3.9)."""
    return next((b["severity"] for b in contract["behaviors"] if b["id"] == behaviour_id), "low")


def _oracle_severity(contract: Mapping[str, Any], oracle_id: str) -> Severity:
    levels = [SEVERITIES.index(b["severity"]) for b in contract["behaviors"] if oracle_id in b["oracles"]]
    return SEVERITIES[max(levels)] if levels else "low"


def _only(items: list[Any]) -> Any | None:
    return items[0] if len(items) == 1 else None


def _trial_set_disagreements(contract_digest: str, trials: Sequence[ValidatedObservations]) -> list[str]:
    out = [
        f'contractDigest: trial {t.trial_index} = "{t.contract_digest}", supplied EvalContract = "{contract_digest}"'
        for t in trials
        if t.contract_digest != contract_digest
    ]
    if trials:
        first = trials[0]
        for name in ("evaluator_configuration_digest", "mode", "evaluator_recommendation", "run_id"):
            wire = {"evaluator_configuration_digest": "evaluatorConfigurationDigest", "mode": "mode",
                    "evaluator_recommendation": "evaluatorRecommendation", "run_id": "runId"}[name]
            for t in trials[1:]:
                if getattr(t, name) != getattr(first, name):
                    out.append(
                        f'{wire}: trial {first.trial_index} = "{getattr(first, name)}", '
                        f'trial {t.trial_index} = "{getattr(t, name)}"'
                    )
        seen: set[int] = set()
        for t in trials:
            if t.trial_index in seen:
                out.append(f"trialIndex: duplicate value {t.trial_index}")
            seen.add(t.trial_index)
    return out


def _integrity(trials: Sequence[ValidatedObservations], disagreements: list[str]) -> EvidenceIntegrity:
    """Route every ingest condition of every trial to its ladder list (§7.1), in trial order."""
    dup: list[tuple[str, str, int]] = []
    dangling: list[tuple[str, tuple[str, ...]]] = []
    dangling_disp: list[tuple[str, tuple[str, ...]]] = []
    forbidden: list[str] = []
    cross: list[tuple[str, str, str]] = []
    absent = 0
    mismatch: list[tuple[str, str]] = []
    judge: list[tuple[str, str]] = []
    violations: list[str] = []
    for t in trials:
        violations.extend(t.isolation_violation)
        for c in t.conditions:
            p = c.payload
            match c.kind:
                case "duplicate-record-identifier":
                    dup.append((p["subject"], p["identifier"], p["occurrences"]))
                case "dangling-citation":
                    dangling.append((p["findingId"], tuple(p["unresolvedObservationIds"])))
                case "dangling-disposition-citation":
                    dangling_disp.append((p["oracleId"], tuple(p["unresolvedObservationIds"])))
                case "forbidden-input-not-withheld":
                    forbidden.extend(p["inputs"])
                case "cross-artifact-disagreement":
                    cross.append((p["field"], str(p["recordValue"]), str(p["manifestValue"])))
                case "evaluator-configuration-absent":
                    absent += 1
                case "evaluator-configuration-digest-mismatch":
                    mismatch.append((p["declaredDigest"], p["computedDigest"]))
                case "judge-result-unscored":
                    judge.append((p["rubricId"], p["criterionId"]))
                # unwitnessed-quotation and the isolation kinds reach the ladder through their own lists
    return EvidenceIntegrity(
        isolation_violation=tuple(violations),
        duplicate_record_identifiers=tuple(dup),
        dangling_citations=tuple(dangling),
        dangling_disposition_citations=tuple(dangling_disp),
        forbidden_inputs_admitted=tuple(forbidden),
        cross_artifact_disagreements=tuple(cross),
        evaluator_configuration_absent=absent,
        evaluator_configuration_digest_mismatches=tuple(mismatch),
        judge_results_unscored=tuple(judge),
        trial_set_disagreements=tuple(disagreements),
    )


def _score_trial(
    contract: Mapping[str, Any],
    probe: Mapping[str, Any],
    trial: ValidatedObservations,
    *,
    home: HomeOperation | None,
    qualified: bool,
    designated: str | None,
    regex_budget: int,
    waiver: Waiver,
    judge_conduct: JudgeConduct,
    evaluation_fault: bool,
) -> TrialScore:
    signed = not probe["expectedClean"] and probe.get("defectSignature") is not None
    # A witness exists only for a signed, non-clean probe that passed the gate (§3.8): a rejected probe
    # lands on row 3 anyway, and its predicate was never shown to be evaluable.
    witness = (
        match_witness(contract, probe, trial.observations, trial.findings, home) if signed and qualified else None
    )
    buckets = map_findings(trial.findings, trial.observations, {probe["probeId"]: probe}, {probe["probeId"]: home})
    bucket_of = {fid: bucket for bucket, ids in buckets.items() for fid in ids}
    plan = select_plan(contract, trial.observations)
    outcomes: list[ScoredOutcome] = []
    for oracle in contract["oracles"]:
        oid = oracle["id"]
        disposition = _only([d for d in trial.dispositions if d["oracleId"] == oid])
        cited = _only([f for f in trial.findings if f["findingType"] == "defect" and f["oracleId"] == oid])
        check = oracle.get("check")
        selection = select_for_oracle(contract, plan, check)
        tree = None
        if check is not None:
            ctx = resolution_context(contract, plan.bound, regex_budget, f"EvalContract.oracles[id={oid}].check")
            tree = resolve_check(check, ctx)
        own_witness = witness if oid == designated else None
        inputs = OutcomeInputs(
            required=True,
            disposition=None
            if disposition is None
            else RecordedDisposition(disposition["disposition"], tuple(disposition["observationIds"])),
            cited_finding=None
            if cited is None
            else CitedFinding(cited["findingId"], bucket_of.get(cited["findingId"], "dangling"), cited["severity"]),
            witness=None if own_witness is None else own_witness.result,
            selections=tuple(s.result for s in selection.selections),
            selector_ambiguity=selection.selector_ambiguity,
            check_resolution=None if tree is None else tree.resolution,
            polarity=oracle["polarity"],
            probe_class=probe["probeClass"],
            expected_clean=probe["expectedClean"],
            probe_signed=signed,
            probe_qualified=qualified,
            waiver=waiver,
            judge_conduct=judge_conduct,
            evaluation_fault=evaluation_fault,
        )
        decision = decide_outcome(inputs)
        severity = (
            cited["severity"]
            if cited is not None and decision.resolved_from == cited["findingId"]
            else _oracle_severity(contract, oid)
        )
        selected = [i for s in selection.selections for i in s.matched_ids]
        if own_witness is not None:
            selected += own_witness.observation_ids
        outcomes.append(
            ScoredOutcome(
                oracle_id=oid,
                trial_index=trial.trial_index,
                probe_id=probe["probeId"],
                decision=decision,
                severity=severity,
                disposition=None if disposition is None else disposition["disposition"],
                check_resolution=None if tree is None else tree.resolution,
                check_tree=tree,
                selected_observation_ids=tuple(dict.fromkeys(selected)),
            )
        )
    vote = trial_vote(trial.trial_index, [(o.oracle_id, o.state) for o in outcomes], designated)
    return TrialScore(trial.trial_index, tuple(outcomes), witness, vote)


def score(
    contract: Any,
    probe: Any,
    trials: Sequence[ValidatedObservations],
    policy: Any,
    preflight_verdict: Any,
    *,
    designated_oracle: str | None = None,
    waiver: Waiver = "none",
    evaluation_fault: bool = False,
) -> ScoreResult:
    """Score a whole trial set (one ingested record per trial) of one probe against its contract.

    ``designated_oracle`` is the caller's choice (validated: ``DesignatedOracleError``); without it the
    probe behaviour's single oracle is designated. The CLI passes waiver ``none`` and no evaluation fault.
    """
    c, p, pol, pre = as_wire(contract), as_wire(probe), as_wire(policy), as_wire(preflight_verdict)
    ordered = sorted(trials, key=lambda t: t.trial_index)
    designated = designate_oracle(c, p, designated_oracle)
    signed = not p["expectedClean"] and p.get("defectSignature") is not None
    home = resolve_home_operation(c, p["defectSignature"]) if signed else None
    qualification = qualify_probe(p, home)
    judge_conduct = _judge_conduct(c, ordered)
    trial_scores = tuple(
        _score_trial(
            c,
            p,
            t,
            home=home,
            qualified=qualification.qualified,
            designated=designated,
            regex_budget=pol["regexMatchStepBudget"],
            waiver=waiver,
            judge_conduct=judge_conduct,
            evaluation_fault=evaluation_fault,
        )
        for t in ordered
    )
    outcomes = tuple(o for ts in trial_scores for o in ts.outcomes)
    votes = [ts.vote for ts in trial_scores if ts.vote is not None]
    reduction = reduce_trial_set(votes, pol["catchThreshold"])
    completed = len(ordered)
    admitted = (p["probeId"],) if qualification.qualified else ()
    excluded = () if qualification.qualified else (p["probeId"],)
    minimum = pol["minimumTrialCount"]
    strength = _scored_strength(p, qualification, reduction, outcomes, completed, minimum)
    gaps = tuple(coverage_gaps(c))
    mode: RunMode = ordered[0].mode if ordered else "production"  # type: ignore[assignment]
    recommendation = ordered[0].evaluator_recommendation if ordered else "PASS"
    uncited, uncited_gaps = _uncited_findings(ordered)
    policy_digest = digest_artifact(pol)
    ladder_inputs = _ladder_inputs(c, pol, pre, ordered, outcomes, reduction, recommendation, gaps)
    ladder = resolve_ladder(ladder_for(mode), ladder_inputs)
    return ScoreResult(
        mode=mode,
        run_id=ordered[0].run_id if ordered else "",
        evaluator_recommendation=recommendation,
        probe_id=p["probeId"],
        probe_severity=behaviour_severity(c, p["behaviorId"]),
        designated_oracle=designated,
        qualification=qualification,
        admitted_probe_ids=admitted,
        excluded_probe_ids=excluded,
        trials=trial_scores,
        outcomes=outcomes,
        reduction=reduction,
        completed=completed,
        completed_attempts=tuple(t.trial_index for t in ordered),
        strength=strength,
        coverage_gaps=gaps,
        uncited_findings=uncited,
        uncited_finding_gaps=uncited_gaps,
        scoring_policy_digest=policy_digest,
        comparability_key=comparability_key(policy_digest, admitted),
        catch_threshold=pol["catchThreshold"],
        declared_minimum=minimum,
        ladder=ladder,
    )


def _judge_conduct(c: Mapping[str, Any], ordered: Sequence[ValidatedObservations]) -> JudgeConduct:
    """``absent`` without rubrics, ``malformed`` when a trial's judge result went unscored, else ``conforming``."""
    if not c.get("rubrics"):
        return "absent"
    if any(cond.kind == "judge-result-unscored" for t in ordered for cond in t.conditions):
        return "malformed"
    return "conforming"


def _scored_strength(
    p: Mapping[str, Any], qualification: Qualification, reduction: Any, outcomes: Sequence[ScoredOutcome],
    completed: int, minimum: int,
) -> ScoredStrength:
    """The probe's strength block (§5.3): its one-probe vector, denominator, comparability and note."""
    admitted = 1 if qualification.qualified else 0
    unreached = [o.oracle_id for o in outcomes if o.state == "unreached"]
    vector = strength_vector(
        [ProbeStrengthInput(p["probeId"], p["probeClass"], p["expectedClean"], qualification.qualified, reduction)]
    )
    return ScoredStrength(
        denominator=strength_denominator(completed),
        basis="measured",
        vector=vector,
        comparable=is_comparable(completed, minimum, unreached),
        note=strength_note(admitted, completed, minimum, unreached),
    )


def _uncited_findings(ordered: Sequence[ValidatedObservations]) -> tuple[tuple[str, ...], tuple[dict[str, Any], ...]]:
    """The findings that cite no oracle (ids, per trial in id order) and the defect ones among them as gaps."""
    all_findings = [f for t in ordered for f in t.findings]
    uncited = tuple(
        fid for t in ordered for fid in sorted(f["findingId"] for f in t.findings if f["oracleId"] is None)
    )
    uncited_gaps = tuple(
        sorted(
            (
                {
                    "findingId": f["findingId"],
                    "observationIds": list(f["observationIds"]),
                    "quotedEvidence": [dict(q) for q in f["quotedEvidence"]],
                    "severity": f["severity"],
                }
                for f in all_findings
                if f["findingType"] == "defect" and f["oracleId"] is None
            ),
            key=lambda g: g["findingId"],
        )
    )
    return uncited, uncited_gaps


def _ladder_inputs(
    c: Mapping[str, Any], pol: Mapping[str, Any], pre: Mapping[str, Any], ordered: Sequence[ValidatedObservations],
    outcomes: Sequence[ScoredOutcome], reduction: Any, recommendation: Any, gaps: Sequence[UnsatisfiedRule],
) -> LadderInputs:
    """Everything the verdict ladder's rows read, from the scored trial set."""
    all_findings = [f for t in ordered for f in t.findings]
    return LadderInputs(
        outcomes=outcomes,
        preflight_passed=bool(pre["passed"]),
        invalidated_attempts=len(reduction.invalidated_attempts),
        severity_floor=pol["severityFloor"],
        re_execution_cap=pol["reExecutionCap"],
        confidence_threshold=pol["confidenceThreshold"],
        minimum_trial_count=pol["minimumTrialCount"],
        completed_trials=len(ordered),
        evaluator_recommendation=recommendation,  # type: ignore[arg-type]
        unwitnessed_quotations=[(q.finding_id, q.channel) for t in ordered for q in t.unwitnessed_quotations],
        findings=[
            LadderFinding(f["findingId"], f["findingType"], f["oracleId"], f["confidence"]) for f in all_findings
        ],
        coverage_gaps=[LadderCoverageGap(g.rule, g.satisfied, g.severity) for g in gaps],
        integrity=_integrity(ordered, _trial_set_disagreements(digest_artifact(c), ordered)),
    )
