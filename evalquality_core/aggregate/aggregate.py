"""``aggregate_strength(evidence, floors, policy)``: one run's per-probe evidence → StrengthAggregate (§5.5).

Each evidence artifact scores one probe. Every input is first checked against itself
(``strength-input-inconsistent``: its reduction, scoring version, exclusions, comparability key,
comparable flag and class vector must agree with what the artifact itself says), then the inputs are
checked against the supplied policy and each other (``strength-inputs-disagree``). Both refusals are
``AggregationRefusal`` (CLI exit 4). The aggregate pools unique probe ids per class and decides each
declared floor; an undeclared floor is recorded, never assumed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalquality_core.artifacts.base import read_artifact
from evalquality_core.artifacts.strength import StrengthAggregate
from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.evaluate import as_wire
from evalquality_core.faults import AggregationRefusal, RuntimeFault
from evalquality_core.score.strength import (
    VECTOR_CLASSES,
    comparability_key,
    is_comparable,
    reduction_problems,
)

#: What the aggregation takes on trust and cannot verify (AD-32), sorted.
AGGREGATE_ATTESTED_INPUTS: tuple[str, ...] = ("evidenceSetCompleteness", "probeClass")
#: The schema version of the aggregate we write.
STRENGTH_AGGREGATE_SCHEMA_VERSION = 1
_EVIDENCE_PATH = "EvidenceArtifact"
#: States only a clean control resolves (AD-33): such an artifact carries no class vector.
_CLEAN_CONTROL_ONLY = ("passed-clean-control", "false-positive")


@dataclass(frozen=True)
class _Input:
    path: str
    artifact: Mapping[str, Any]
    probe_id: str
    probe_class: str | None
    reduced: Mapping[str, Any]
    digest: str


def _inconsistent(path: str, detail: str) -> AggregationRefusal:
    return AggregationRefusal("strength-input-inconsistent", path, detail)


def _disagree(path: str, detail: str) -> AggregationRefusal:
    return AggregationRefusal("strength-inputs-disagree", path, detail)


def _rate(caught: int, exercised: int) -> float | int | None:
    if exercised == 0:
        return None
    rate = caught / exercised
    return int(rate) if rate.is_integer() else rate


def _verify(artifact: Mapping[str, Any], index: int) -> _Input:
    path = f"{_EVIDENCE_PATH}[{index}]"
    problems = reduction_problems(artifact)
    if problems:
        raise _inconsistent(path, problems[0])
    probe_id = artifact["scoredProbeId"]
    reduced = next(r for r in artifact["reducedProbeOutcomes"] if r["probeId"] == probe_id)
    if artifact["scoringVersion"] != digest_artifact(artifact["scoringVersionInputs"]):
        raise _inconsistent(path, f"scoringVersion is not the digest of its scoringVersionInputs ({probe_id})")
    if artifact["excludedProbeIds"]:
        raise _inconsistent(
            path,
            f"excludedProbeIds names {', '.join(artifact['excludedProbeIds'])}, but a scored probe is admitted ({probe_id})",
        )
    policy_digest = artifact["scoringVersionInputs"]["scoringPolicyDigest"]
    if artifact["comparabilityKey"] != comparability_key(policy_digest, [probe_id]):
        raise _inconsistent(
            path, f"comparabilityKey is not the digest of its scoring policy digest and its scored probe ({probe_id})"
        )
    unreached = [o["oracleId"] for o in artifact["outcomes"] if o["state"] == "unreached"]
    trials = artifact["trials"]
    if artifact["strength"]["comparable"] != is_comparable(trials["completed"], trials["declaredMinimum"], unreached):
        raise _inconsistent(path, f"strength.comparable disagrees with its trials and outcomes ({probe_id})")
    vector = artifact["strength"]["vector"]
    classes = [c for c in VECTOR_CLASSES if vector.get(c) is not None]
    if len(classes) > 1:
        raise _inconsistent(
            path, f"strength.vector names {' and '.join(classes)}, but one artifact scores one probe ({probe_id})"
        )
    probe_class = classes[0] if classes else None
    if probe_class is not None:
        if any(o["state"] in _CLEAN_CONTROL_ONLY for o in artifact["outcomes"]):
            raise _inconsistent(
                path,
                f"strength.vector.{probe_class} counts a probe whose outcomes are a clean control's, "
                f"which stays outside every class ({probe_id})",
            )
        exercised = 1 if reduced["exercised"] else 0
        caught = 1 if reduced["exercised"] and reduced["caught"] else 0
        actual = vector[probe_class]
        if (actual["caught"], actual["exercised"], actual["rate"]) != (caught, exercised, _rate(caught, exercised)):
            raise _inconsistent(
                path, f"strength.vector.{probe_class} is not what the probe's own reduction yields ({probe_id})"
            )
    return _Input(path, artifact, probe_id, probe_class, reduced, digest_artifact(artifact))


def _require_one(inputs: Sequence[_Input], what: str, read: Any) -> Any:
    head = inputs[0]
    expected = read(head)
    for item in inputs:
        value = read(item)
        if value != expected:
            raise _disagree(
                item.path,
                f"{what} {value} ({item.probe_id}) differs from {expected} ({head.probe_id}): the artifacts are not one run",
            )
    return expected


def _decide(floor: float | None, aggregated: Mapping[str, Any] | None) -> dict[str, Any]:
    if floor is None:
        return {"floor": None, "decision": "undeclared", "basis": "no-floor-declared"}
    if aggregated is None:
        basis = "no-eligible-probe"
    elif not aggregated["comparable"]:
        basis = "not-comparable"
    elif aggregated["rate"] is None:
        basis = "no-exercised-probe"
    elif aggregated["exercised"] < aggregated["eligible"]:
        basis = "unexercised-probe"  # an unreached probe must not drop out of the floor's claim
    elif aggregated["rate"] >= floor:
        return {"floor": floor, "decision": "meets", "basis": "rate-meets-floor"}
    else:
        basis = "rate-below-floor"
    return {"floor": floor, "decision": "does-not-meet", "basis": basis}


def check_floors(floors: Any, path: str = "StrengthFloors") -> dict[str, float]:
    """Validate a floors object: keys among the three classes, values numbers in [0, 1] (else exit 5)."""
    if not isinstance(floors, Mapping):
        raise RuntimeFault("schema-parse-failure", path, "floors must be an object")
    for key, value in floors.items():
        if key not in VECTOR_CLASSES:
            raise RuntimeFault("schema-parse-failure", f"{path}.{key}", f'unknown class "{key}"')
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise RuntimeFault("schema-parse-failure", f"{path}.{key}", "a floor is a number in [0, 1]")
    return dict(floors)


def aggregate_strength(
    evidence_list: Sequence[Any], floors: Mapping[str, float], policy: Any, *, engine_version: str
) -> StrengthAggregate:
    """Aggregate one run's evidence artifacts (models or wire objects) against per-class floors.

    Raises ``AggregationRefusal`` (``strength-input-inconsistent`` / ``strength-inputs-disagree``).
    """
    if not evidence_list:
        raise ValueError("aggregate_strength needs at least one evidence artifact")
    pol = as_wire(policy)
    inputs = [_verify(as_wire(a), i) for i, a in enumerate(evidence_list)]
    policy_digest = digest_artifact(pol)
    for item in inputs:
        svi = item.artifact["scoringVersionInputs"]
        if svi["scoringPolicyDigest"] != policy_digest:
            raise _disagree(
                item.path,
                f"scoringPolicyDigest {svi['scoringPolicyDigest']} ({item.probe_id}) is not the digest "
                f"{policy_digest} of the scoring policy supplied",
            )
        declared = item.artifact["trials"]["declaredMinimum"]
        if declared != pol["minimumTrialCount"]:
            raise _disagree(
                item.path,
                f"trials.declaredMinimum {declared} ({item.probe_id}) is not the supplied policy's "
                f"minimumTrialCount {pol['minimumTrialCount']}",
            )
        if item.reduced["catchThreshold"] != pol["catchThreshold"]:
            raise _disagree(
                item.path,
                f"catchThreshold {item.reduced['catchThreshold']} ({item.probe_id}) is not the supplied policy's "
                f"catchThreshold {pol['catchThreshold']}",
            )
    seen: dict[str, _Input] = {}
    for item in inputs:
        if item.probe_id in seen:
            raise _disagree(item.path, f"probe {item.probe_id} is also scored by {seen[item.probe_id].path}: a probe counts once")
        seen[item.probe_id] = item
    scoring_version = _require_one(inputs, "scoringVersion", lambda i: i.artifact["scoringVersion"])
    basis = _require_one(inputs, "strength.basis", lambda i: i.artifact["strength"]["basis"])
    _require_one(inputs, "callerAttestedInputs", lambda i: json.dumps(sorted(i.artifact["callerAttestedInputs"])))
    head = inputs[0]
    classes: dict[str, dict[str, Any] | None] = {}
    for cls in VECTOR_CLASSES:
        members = [i for i in inputs if i.probe_class == cls]
        if not members:
            classes[cls] = None
            continue
        exercised = sum(1 for m in members if m.reduced["exercised"])
        caught = sum(1 for m in members if m.reduced["exercised"] and m.reduced["caught"])
        classes[cls] = {
            "caught": caught,
            "exercised": exercised,
            "rate": _rate(caught, exercised),
            "eligible": len(members),
            "comparable": all(m.artifact["strength"]["comparable"] for m in members),
        }
    ordered = sorted(inputs, key=lambda i: i.probe_id)
    wire = {
        "schemaVersion": STRENGTH_AGGREGATE_SCHEMA_VERSION,
        "parentDigest": None,
        "revisionCount": 0,
        "engineVersion": engine_version,
        "mode": head.artifact["scoringVersionInputs"]["mode"],
        "scoringVersion": scoring_version,
        "scoringPolicyDigest": policy_digest,
        "comparabilityKey": comparability_key(policy_digest, [i.probe_id for i in ordered]),
        "basis": basis,
        "minimumTrialCount": pol["minimumTrialCount"],
        "callerAttestedInputs": sorted(head.artifact["callerAttestedInputs"]),
        "aggregateAttestedInputs": list(AGGREGATE_ATTESTED_INPUTS),
        "inputs": [
            {"probeId": i.probe_id, "probeClass": i.probe_class, "runId": i.artifact["runId"], "artifactDigest": i.digest}
            for i in ordered
        ],
        "classes": classes,
        "floorDecisions": {cls: _decide(floors.get(cls), classes[cls]) for cls in VECTOR_CLASSES},
    }
    return read_artifact(StrengthAggregate, wire)
