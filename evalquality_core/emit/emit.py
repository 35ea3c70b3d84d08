"""``emit(...)``: a scored trial set → the EvidenceArtifact (schema 4; scoring.md §9.1).

Every emit is a lineage root. ``scoringVersion`` is the plain artifact digest of the six
``scoringVersionInputs`` (verified against the reference's committed artifact, whose value a tagged
composite digest would not reproduce). Outcome rows carry the probe behaviour's severity (schema 4)
while the ladder kept the per-oracle severity. Nothing is minted on the Invalid rung: emit refuses it.
"""

from __future__ import annotations

from typing import Any

from evalquality_core.artifacts.base import read_artifact
from evalquality_core.artifacts.evidence import EvidenceArtifact
from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.evaluate import as_wire
from evalquality_core.score.score import ScoreResult

#: The schema version we write.
EVIDENCE_SCHEMA_VERSION = 4
#: Inputs the caller attests rather than the pipeline computing them (§9.1).
CALLER_ATTESTED_INPUTS: tuple[str, ...] = ("corpusDigest", "fixtureDigest", "evaluatorConfigurationDigest", "mode")


def scoring_version_inputs(
    contract: Any,
    *,
    corpus_digest: str,
    fixture_digest: str,
    evaluator_configuration_digest: str,
    scoring_policy_digest: str,
    mode: str,
) -> dict[str, Any]:
    """The six scoring-version inputs."""
    return {
        "contractSchemaVersion": as_wire(contract)["schemaVersion"],
        "corpusDigest": corpus_digest,
        "fixtureDigest": fixture_digest,
        "evaluatorConfigurationDigest": evaluator_configuration_digest,
        "scoringPolicyDigest": scoring_policy_digest,
        "mode": mode,
    }


def evidence_wire(
    result: ScoreResult,
    contract: Any,
    policy: Any,
    *,
    corpus_digest: str,
    fixture_digest: str,
    evaluator_configuration_digest: str,
) -> dict[str, Any]:
    """The artifact as a wire object (the fields of §9.1 for the run's mode)."""
    if result.ladder.verdict is None:
        raise ValueError("no evidence artifact is minted on the Invalid rung")
    c, pol = as_wire(contract), as_wire(policy)
    inputs = scoring_version_inputs(
        c,
        corpus_digest=corpus_digest,
        fixture_digest=fixture_digest,
        evaluator_configuration_digest=evaluator_configuration_digest,
        scoring_policy_digest=result.scoring_policy_digest,
        mode=result.mode,
    )
    invalidated = [{"attempt": a.attempt, "reason": a.reason} for a in result.reduction.invalidated_attempts]
    artifact: dict[str, Any] = {
        "schemaVersion": EVIDENCE_SCHEMA_VERSION,
        "parentDigest": None,
        "revisionCount": 0,
        "runId": result.run_id,
        "mode": result.mode,
        "scoringVersionInputs": inputs,
        "scoringVersion": digest_artifact(inputs),
        "comparabilityKey": result.comparability_key,
        "excludedProbeIds": list(result.excluded_probe_ids),
        "scoredProbeId": result.probe_id,
        "exitCode": result.ladder.exit_code,
        "verdictBasis": list(result.ladder.basis),
        "callerAttestedInputs": list(CALLER_ATTESTED_INPUTS),
        "trials": {
            "declaredMinimum": result.declared_minimum,
            "completed": result.completed,
            "completedAttempts": list(result.completed_attempts),
            "invalidatedAttempts": invalidated,
        },
        "outcomes": [
            {
                "oracleId": o.oracle_id,
                "trialIndex": o.trial_index,
                "probeId": o.probe_id,
                "state": o.state,
                "severity": result.probe_severity,
                "disposition": o.disposition or "not-attempted",
                "resolvedFrom": o.decision.resolved_from,
                "corroboration": o.decision.corroboration,
                "selectedObservationIds": list(o.selected_observation_ids),
                "checkResolution": None if o.check_tree is None else o.check_tree.to_wire(),  # type: ignore[attr-defined]
            }
            for o in result.outcomes
        ],
        "reducedProbeOutcomes": [
            {
                "probeId": result.probe_id,
                "severity": result.probe_severity,
                "exercised": result.reduction.exercised,
                "caught": result.reduction.caught,
                "catchThreshold": result.catch_threshold,
                "trialVotes": [{"trialIndex": v.trial_index, "state": v.state} for v in result.reduction.trial_votes],
                "validCount": result.reduction.valid_count,
                "caughtCount": result.reduction.caught_count,
                "invalidatedAttempts": invalidated,
            }
        ],
        "uncitedFindings": list(result.uncited_findings),
        "coverageGaps": [g.to_wire() for g in result.coverage_gaps],
        "strength": result.strength.to_wire(),
        "remediation": {
            "revisionCount": c["revisionCount"],
            "cap": pol["remediationCap"],
            "capSource": "caller-attested",
            # score presents no chain beyond the contract itself, so the chain is declared consistent
            "lineageChain": {"lengthConsistent": True, "noRepeatedDigest": True, "noGap": True},
        },
    }
    if result.mode == "production":
        artifact["productionVerdict"] = result.ladder.verdict
    else:
        artifact["contractVerdict"] = result.ladder.verdict
        artifact["uncitedFindingGaps"] = [dict(g) for g in result.uncited_finding_gaps]
        artifact["systemRecommendationRecorded"] = result.evaluator_recommendation
        artifact["systemRecommendationNote"] = None
    return artifact


def emit(
    result: ScoreResult,
    contract: Any,
    policy: Any,
    *,
    corpus_digest: str,
    fixture_digest: str,
    evaluator_configuration_digest: str,
) -> EvidenceArtifact:
    """Mint the EvidenceArtifact of a scored (non-Invalid) trial set, schema-validated and frozen.

    ``evaluator_configuration_digest`` is caller-attested: pass the record's declaration, which ingest
    has already checked against the recomputed configuration digest.
    """
    wire = evidence_wire(
        result,
        contract,
        policy,
        corpus_digest=corpus_digest,
        fixture_digest=fixture_digest,
        evaluator_configuration_digest=evaluator_configuration_digest,
    )
    artifact = read_artifact(EvidenceArtifact, wire)
    if artifact.mode != result.mode:  # emit re-checks the mode against the assessment's (§9.1)
        raise ValueError(f"artifact mode {artifact.mode} differs from the assessment mode {result.mode}")
    return artifact
