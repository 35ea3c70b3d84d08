"""Refusals for every artifact kind: stamp first, then unknown keys, wrong enums, wrong types.

Each case mutates one real conformance document and checks the fault code and the path it names.
The version-gated keys (record 4/5/6, verdict 1/2, evidence 3/4 and its two modes) are checked both
ways: a key the stamp lacks is refused, a key the stamp carries is required.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.artifacts import (
    EvalContract,
    EvaluatorConfiguration,
    EvidenceArtifact,
    IsolationManifest,
    PreflightVerdict,
    PrivateArtifactManifest,
    Probe,
    ScoringPolicy,
    SealedEvaluatorBrief,
    SealedRunRecord,
    StrengthAggregate,
    read_artifact,
    to_wire,
)
from evalquality_core.faults import RuntimeFault

BASES: dict[type, str] = {
    EvalContract: "worked-example/eval-contract.json",
    SealedEvaluatorBrief: "corpus-dev/compile-seal-example/brief.json",
    Probe: "worked-example/probe.json",
    SealedRunRecord: "worked-example/sealed-run-record.json",
    IsolationManifest: "worked-example/reconstructed-inputs/isolation-manifest.json",
    EvaluatorConfiguration: "worked-example/reconstructed-inputs/evaluator-configuration.json",
    ScoringPolicy: "worked-example/reconstructed-inputs/scoring-policy.json",
    PreflightVerdict: "chains/skill-defect/preflight-verdict.json",
    EvidenceArtifact: "chains/skill-defect/evidence-artifact.json",
}


def _load(conformance: Path, relative: str) -> dict[str, Any]:
    value = json.loads((conformance / relative).read_text(encoding="utf-8"))
    assert isinstance(value, dict)
    return copy.deepcopy(value)


def _refused(model: type, document: Any) -> RuntimeFault:
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(model, document)
    return caught.value


@pytest.mark.parametrize("model", list(BASES), ids=lambda m: m.__name__)
def test_unknown_top_level_key(conformance: Path, model: type) -> None:
    """An unknown key is refused, naming it."""
    document = _load(conformance, BASES[model])
    document["surplus"] = True
    fault = _refused(model, document)
    assert (fault.code, fault.artifact_path) == ("schema-parse-failure", f"{model.ARTIFACT_NAME}.surplus")


@pytest.mark.parametrize("model", list(BASES), ids=lambda m: m.__name__)
def test_wrong_stamp_is_refused_before_the_shape(conformance: Path, model: type) -> None:
    """A stamp the model does not read is schema-version-mismatch, even on a malformed body."""
    document = _load(conformance, BASES[model])
    document["schemaVersion"] = 99
    document["surplus"] = True
    fault = _refused(model, document)
    assert (fault.code, fault.artifact_path) == ("schema-version-mismatch", f"{model.ARTIFACT_NAME}.schemaVersion")


@pytest.mark.parametrize("model", list(BASES), ids=lambda m: m.__name__)
def test_missing_stamp_and_non_object(conformance: Path, model: type) -> None:
    """No stamp at all, or a non-numeric one, is a parse failure at the root (issue 10: the stamp is
    part of the shape; schema-version-mismatch is for a number we do not read), as is a non-object."""
    document = _load(conformance, BASES[model])
    del document["schemaVersion"]
    fault = _refused(model, document)
    assert (fault.code, fault.artifact_path) == ("schema-parse-failure", model.ARTIFACT_NAME)
    document["schemaVersion"] = "1"
    fault = _refused(model, document)
    assert (fault.code, fault.artifact_path) == ("schema-parse-failure", model.ARTIFACT_NAME)
    fault = _refused(model, [document])
    assert (fault.code, fault.artifact_path) == ("schema-parse-failure", model.ARTIFACT_NAME)


@pytest.mark.parametrize("model", list(BASES), ids=lambda m: m.__name__)
def test_wrong_lineage_types(conformance: Path, model: type) -> None:
    """parentDigest must be a digest or null; revisionCount a non-negative integer (not a string or bool)."""
    document = _load(conformance, BASES[model])
    document["parentDigest"] = "sha256:xyz"
    assert _refused(model, document).artifact_path == f"{model.ARTIFACT_NAME}.parentDigest"
    document = _load(conformance, BASES[model])
    document["revisionCount"] = True
    assert _refused(model, document).artifact_path == f"{model.ARTIFACT_NAME}.revisionCount"


ENUM_AND_TYPE_CASES: list[tuple[type, str, Any, str]] = [
    (SealedEvaluatorBrief, "permittedInterfaces.0.kind", "grpc", "permittedInterfaces[0].kind"),
    (SealedEvaluatorBrief, "interactionPlan", [], "interactionPlan"),
    (SealedEvaluatorBrief, "probeStepBound", -1, "probeStepBound"),
    (SealedRunRecord, "mode", "rehearsal", "mode"),
    (SealedRunRecord, "trialIndex", 0, "trialIndex"),
    (SealedRunRecord, "findings.0.findingType", "rumour", "findings[0]"),
    (SealedRunRecord, "findings.0.confidence", 1.5, "findings[0].confidence"),
    (SealedRunRecord, "observations.0.sequence", 0, "observations[0].sequence"),
    (SealedRunRecord, "observations.0.stdout", {"kind": "binary"}, "observations[0].stdout"),
    (SealedRunRecord, "resourceUse.costUsd", 0.02, "resourceUse.costUsd"),
    (IsolationManifest, "forbiddenInputAccounting.repository.withheld", "yes",
     "forbiddenInputAccounting.repository.withheld"),
    (IsolationManifest, "resourceCeilings.maxCostUsd", "0", "resourceCeilings.maxCostUsd"),
    (IsolationManifest, "resourceCeilings.maxWallClockMinutes", 0, "resourceCeilings.maxWallClockMinutes"),
    (EvaluatorConfiguration, "trialIndex", 1, "trialIndex"),
    (EvaluatorConfiguration, "seed", 1.5, "seed"),
    (ScoringPolicy, "severityFloor", "high", "severityFloor"),
    (ScoringPolicy, "catchThreshold", 2, "catchThreshold"),
    (ScoringPolicy, "minimumTrialCount", 0, "minimumTrialCount"),
    (PreflightVerdict, "checks.0.kind", "smoke-test", "checks[0].kind"),
    (PreflightVerdict, "checks.0.outcome", "passed", "checks[0].outcome"),
    (EvidenceArtifact, "contractVerdict", "MAYBE", "contractVerdict"),
    (EvidenceArtifact, "outcomes.0.state", "lost", "outcomes[0].state"),
    (EvidenceArtifact, "strength.vector.zero-action", {"caught": 1}, "strength.vector.zero-action.exercised"),
    (EvidenceArtifact, "remediation.capSource", "computed", "remediation.capSource"),
]


def _set(document: Any, dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = document
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    node[int(last) if last.isdigit() else last] = value


@pytest.mark.parametrize(("model", "where", "value", "path"), ENUM_AND_TYPE_CASES)
def test_wrong_enum_or_type(conformance: Path, model: type, where: str, value: Any, path: str) -> None:
    """A wrong enum member or wrong type is refused at its path."""
    document = _load(conformance, BASES[model])
    _set(document, where, value)
    fault = _refused(model, document)
    assert (fault.code, fault.artifact_path) == ("schema-parse-failure", f"{model.ARTIFACT_NAME}.{path}")


# --- Version- and mode-gated keys -------------------------------------------------------------


def test_record_v4_refuses_v5_keys_and_v6_needs_no_invalid_reason(conformance: Path) -> None:
    """Record 4 has no callInputs.arguments; record 6 has no invalidReason; record 5 needs both."""
    v4 = _load(conformance, "worked-example/sealed-run-record.json")
    v4["observations"][0]["callInputs"]["arguments"] = None
    assert "callInputs.arguments is not a key" in str(_refused(SealedRunRecord, v4))
    v5 = _load(conformance, "chains/skill-defect/sealed-run-record.json")
    del v5["invalidReason"]
    assert "invalidReason is required" in str(_refused(SealedRunRecord, v5))
    v5 = _load(conformance, "chains/skill-defect/sealed-run-record.json")
    del v5["findings"][0]["quotedEvidence"][0]["artifactId"]
    assert "quotedEvidence[0].artifactId is required" in str(_refused(SealedRunRecord, v5))
    v6 = _load(conformance, "chains/tutorial-workflow/sealed-run-record.json")
    v6["invalidReason"] = None
    assert "invalidReason is not a key" in str(_refused(SealedRunRecord, v6))


def test_record_restamped_keeps_its_keys(conformance: Path) -> None:
    """A v5 record re-stamped 6 (minus invalidReason) reads and writes the v6 key set."""
    v5 = _load(conformance, "chains/skill-defect/sealed-run-record.json")
    v5["schemaVersion"] = 6
    del v5["invalidReason"]
    record = read_artifact(SealedRunRecord, v5)
    assert record.invalid_reason is None and "invalidReason" not in to_wire(record)


def test_verdict_interface_id_by_stamp(conformance: Path) -> None:
    """Verdict 1 checks have no interfaceId; verdict 2 checks require it (null with operationId null)."""
    v1 = _load(conformance, "chains/skill-defect/preflight-verdict.json")
    v2 = copy.deepcopy(v1)
    v2["schemaVersion"] = 2
    assert "interfaceId is required" in str(_refused(PreflightVerdict, v2))
    for check in v2["checks"]:
        check["interfaceId"] = None if check["operationId"] is None else "skill-runner"
    assert to_wire(read_artifact(PreflightVerdict, v2)) == v2
    v1["checks"][0]["interfaceId"] = "skill-runner"
    assert "interfaceId is not a key" in str(_refused(PreflightVerdict, v1))


def test_evidence_v4_keys_and_mode_branches(conformance: Path) -> None:
    """Evidence 4 requires its four new keys; each mode admits only its own verdict keys."""
    v3 = _load(conformance, "chains/skill-defect/evidence-artifact.json")
    v4 = copy.deepcopy(v3)
    v4["schemaVersion"] = 4
    assert "scoredProbeId is required" in str(_refused(EvidenceArtifact, v4))
    v4["scoredProbeId"] = "P-001"
    v4["trials"]["completedAttempts"] = [1]
    v4["reducedProbeOutcomes"] = [
        {
            "probeId": "P-001",
            "severity": "material",
            "exercised": True,
            "caught": True,
            "catchThreshold": 0.5,
            "trialVotes": [{"trialIndex": 1, "state": "caught"}],
            "validCount": 1,
            "caughtCount": 1,
            "invalidatedAttempts": [],
        }
    ]
    for outcome in v4["outcomes"]:
        outcome["trialIndex"] = 1
    assert to_wire(read_artifact(EvidenceArtifact, v4)) == v4
    v4["scoredProbeId"] = None
    assert "must not be null" in str(_refused(EvidenceArtifact, v4))

    production = copy.deepcopy(v3)
    production["mode"] = "production"
    assert "contractVerdict is not a key" in str(_refused(EvidenceArtifact, production))
    for key in ("contractVerdict", "uncitedFindingGaps", "systemRecommendationRecorded", "systemRecommendationNote"):
        del production[key]
    assert "productionVerdict is required" in str(_refused(EvidenceArtifact, production))
    production["productionVerdict"] = "CONCERNS"
    assert to_wire(read_artifact(EvidenceArtifact, production)) == production


# --- Kinds with no conformance document ---------------------------------------------------------

DIGEST = "sha256:" + "ab" * 32


def _aggregate() -> dict[str, Any]:
    """A StrengthAggregate written from scoring.md §5.5 (no conformance document of this kind exists)."""
    return {
        "schemaVersion": 1,
        "parentDigest": None,
        "revisionCount": 0,
        "engineVersion": "0.1.0",
        "mode": "contract-scoring",
        "scoringVersion": DIGEST,
        "scoringPolicyDigest": DIGEST,
        "comparabilityKey": DIGEST,
        "basis": "measured",
        "minimumTrialCount": 3,
        "callerAttestedInputs": ["corpusDigest", "evaluatorConfigurationDigest", "fixtureDigest", "mode"],
        "aggregateAttestedInputs": ["evidenceSetCompleteness", "probeClass"],
        "inputs": [{"probeId": "P-001", "probeClass": "defect", "runId": "r-1", "artifactDigest": DIGEST}],
        "classes": {
            "defect": {"caught": 1, "exercised": 1, "rate": 1, "eligible": 1, "comparable": False},
            "gameability": None,
            "zero-action": None,
        },
        "floorDecisions": {
            "defect": {"floor": 0.75, "decision": "does-not-meet", "basis": "not-comparable"},
            "gameability": {"floor": None, "decision": "undeclared", "basis": "no-floor-declared"},
            "zero-action": {"floor": 0.5, "decision": "does-not-meet", "basis": "no-eligible-probe"},
        },
    }


def test_strength_aggregate_reads_and_refuses() -> None:
    """The aggregate round-trips; a decision paired with another decision's basis is refused."""
    document = _aggregate()
    assert to_wire(read_artifact(StrengthAggregate, document)) == document
    document["floorDecisions"]["defect"] = {"floor": 0.75, "decision": "meets", "basis": "rate-below-floor"}
    fault = _refused(StrengthAggregate, document)
    assert fault.artifact_path == "StrengthAggregate.floorDecisions.defect.basis"
    document = _aggregate()
    document["inputs"] = []
    assert _refused(StrengthAggregate, document).artifact_path == "StrengthAggregate.inputs"


def test_private_artifact_manifest() -> None:
    """The private manifest round-trips and refuses an unknown artifact kind."""
    entry = {
        "privateRef": "opaque:x",
        "digest": DIGEST,
        "artifactKind": "raw-trace",
        "publicSafeRunId": None,
        "sanitizationPolicy": None,
    }
    document = {"schemaVersion": 1, "parentDigest": None, "revisionCount": 0, "entries": [entry]}
    assert to_wire(read_artifact(PrivateArtifactManifest, document)) == document
    entry["artifactKind"] = "secret"
    assert _refused(PrivateArtifactManifest, document).artifact_path == (
        "PrivateArtifactManifest.entries[0].artifactKind"
    )


def test_evidence_quotes_keep_the_record_key_set(conformance: Path) -> None:
    """An uncited-finding gap copies a quote from a record of any stamp: with or without artifactId."""
    evidence = _load(conformance, "chains/skill-defect/evidence-artifact.json")
    record_4_quote = {"quote": '"title":"Revised"', "channel": "response-body"}
    record_6_quote = {"quote": "0", "channel": "exit-code", "artifactId": None}
    evidence["uncitedFindingGaps"] = [
        {"findingId": "F-001", "observationIds": ["obs-1"], "quotedEvidence": [record_4_quote, record_6_quote],
         "severity": "material"}
    ]
    assert to_wire(read_artifact(EvidenceArtifact, evidence)) == evidence
