"""Emit (scoring.md §9.1) and run-wide aggregation (§5.5): mode branches, refusals, canonical output."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.aggregate.aggregate import aggregate_strength
from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.evidence import EvidenceArtifact
from evalquality_core.canonical.json import serialize_artifact
from evalquality_core.emit.emit import emit
from evalquality_core.faults import AggregationRefusal
from evalquality_core.ingest import ingest
from evalquality_core.pipeline import CorpusRootRequired, run_score
from evalquality_core.score.score import score
from tests.scoring_inputs import Chain, worked_example


def _emit(chain: Chain, records: list[Any] | None = None) -> dict[str, Any]:
    trials = [ingest(r, chain.manifest, chain.configuration) for r in (records or [chain.record])]
    result = score(chain.contract, chain.probe, trials, chain.policy, chain.preflight)
    return to_wire(emit(result, chain.contract, chain.policy, corpus_digest=chain.corpus_digest,
                        fixture_digest=chain.preflight.fixture_digest,
                        evaluator_configuration_digest=chain.record.evaluator_configuration_digest))


@pytest.fixture(scope="module")
def chain(conformance: Path) -> Chain:
    return worked_example(conformance)


def test_production_mode_promotes_the_recommendation_and_prints_the_production_fields(chain: Chain) -> None:
    record = to_wire(chain.record) | {"mode": "production"}
    artifact = _emit(chain, [record])
    assert artifact["productionVerdict"] == "FAIL"
    assert artifact["verdictBasis"] == [
        "oracle O-004 resolved abstained at or above the severity floor",
        "evaluator recommendation FAIL",
    ]
    assert artifact["scoringVersionInputs"]["mode"] == "production"
    for key in ("contractVerdict", "uncitedFindingGaps", "systemRecommendationRecorded", "systemRecommendationNote"):
        assert key not in artifact


def test_emit_refuses_the_invalid_rung(chain: Chain) -> None:
    trial = ingest(chain.record, None, chain.configuration)
    result = score(chain.contract, chain.probe, [trial], chain.policy, chain.preflight)
    assert result.ladder.verdict is None
    assert result.ladder.basis == ("isolation manifest violation: isolation manifest absent",)
    with pytest.raises(ValueError):
        emit(result, chain.contract, chain.policy, corpus_digest=chain.corpus_digest,
             fixture_digest=chain.preflight.fixture_digest, evaluator_configuration_digest=chain.record.evaluator_configuration_digest)


def test_failed_preflight_is_invalid(chain: Chain) -> None:
    trial = ingest(chain.record, chain.manifest, chain.configuration)
    failed = to_wire(chain.preflight) | {"passed": False}
    result = score(chain.contract, chain.probe, [trial], chain.policy, failed)
    assert result.ladder.basis == ("pre-flight verdict did not pass",)


def test_uncited_defect_finding_gap_row(chain: Chain) -> None:
    record = to_wire(chain.record)
    record["findings"][0] = record["findings"][0] | {"oracleId": None}
    artifact = _emit(chain, [record])
    f1 = record["findings"][0]
    (gap,) = artifact["uncitedFindingGaps"]
    assert (gap["findingId"], gap["observationIds"], gap["severity"]) == ("F-001", f1["observationIds"], f1["severity"])
    assert [(q["channel"], q["quote"]) for q in gap["quotedEvidence"]] == [
        (q["channel"], q["quote"]) for q in f1["quotedEvidence"]]
    assert artifact["uncitedFindings"] == ["F-001", "F-003"]


def test_round_trip_through_the_reader_and_canonical_bytes(chain: Chain) -> None:
    artifact = _emit(chain)
    again = to_wire(read_artifact(EvidenceArtifact, artifact))
    assert again == artifact
    data = serialize_artifact(artifact)
    assert data.endswith(b"\n") and data.count(b"\n") == 1


def test_run_score_needs_a_corpus_for_private_references(chain: Chain) -> None:
    with pytest.raises(CorpusRootRequired):
        run_score(chain.contract, chain.probe, [chain.record], chain.policy, chain.preflight,
                  corpus_digest=chain.corpus_digest, isolation_manifest=chain.manifest,
                  evaluator_configuration=chain.configuration)


def test_aggregate_over_one_artifact(chain: Chain) -> None:
    artifact = _emit(chain)
    aggregate = to_wire(aggregate_strength([artifact], {"defect": 1.0}, chain.policy, engine_version="0.1.0"))
    assert aggregate["classes"]["defect"] == {"caught": 1, "exercised": 1, "rate": 1, "eligible": 1, "comparable": False}
    assert aggregate["floorDecisions"]["defect"] == {"floor": 1.0, "decision": "does-not-meet", "basis": "not-comparable"}
    assert aggregate["inputs"][0]["probeClass"] == "defect"
    assert aggregate["scoringVersion"] == artifact["scoringVersion"]
    assert aggregate["aggregateAttestedInputs"] == ["evidenceSetCompleteness", "probeClass"]


INCONSISTENT = {
    "scoringVersion": lambda a: a.update(scoringVersion="sha256:" + "0" * 64),
    "excludedProbeIds": lambda a: a.update(excludedProbeIds=["P-002"]),
    "comparabilityKey": lambda a: a.update(comparabilityKey="sha256:" + "0" * 64),
    "comparable": lambda a: a["strength"].update(comparable=True),
    "two classes": lambda a: a["strength"]["vector"].update(gameability={"caught": 0, "exercised": 0, "rate": None}),
    "class entry": lambda a: a["strength"]["vector"].update(defect={"caught": 0, "exercised": 1, "rate": 0}),
    "reduction": lambda a: a["reducedProbeOutcomes"][0].update(caughtCount=2),
}


@pytest.mark.parametrize("case", INCONSISTENT)
def test_aggregate_refuses_an_inconsistent_artifact(chain: Chain, case: str) -> None:
    artifact = copy.deepcopy(_emit(chain))
    INCONSISTENT[case](artifact)
    with pytest.raises(AggregationRefusal) as refused:
        aggregate_strength([artifact], {}, chain.policy, engine_version="0.1.0")
    assert refused.value.code == "strength-input-inconsistent"
    assert refused.value.artifact_path == "EvidenceArtifact[0]"


def test_aggregate_refuses_disagreeing_inputs(chain: Chain) -> None:
    artifact = _emit(chain)
    other_policy = to_wire(chain.policy) | {"minimumTrialCount": 4}
    with pytest.raises(AggregationRefusal) as refused:
        aggregate_strength([artifact], {}, other_policy, engine_version="0.1.0")
    assert refused.value.code == "strength-inputs-disagree"
    with pytest.raises(AggregationRefusal) as twice:
        aggregate_strength([artifact, artifact], {}, chain.policy, engine_version="0.1.0")
    assert twice.value.code == "strength-inputs-disagree" and "a probe counts once" in twice.value.detail


def test_result_is_frozen(chain: Chain) -> None:
    trial = ingest(chain.record, chain.manifest, chain.configuration)
    result = score(chain.contract, chain.probe, [trial], chain.policy, chain.preflight)
    with pytest.raises(AttributeError):
        result.completed = 2  # type: ignore[misc]
    assert replace(result, completed=1) == result
