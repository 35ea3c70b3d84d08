"""The notes-API worked example end to end as library calls (ingest → score → emit; scoring.md §10), checked
against the reference's own values: ``worked-example/expected.json``, the artifact it emitted for the older
chain (``older-chain/evidence-artifact.v3.json``), and the chains' emitted artifacts and ``expected.json``.
Every expected value is read from those files; none is typed in here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalquality_core.artifacts.base import to_wire
from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.emit.emit import emit, scoring_version_inputs
from evalquality_core.ingest import ingest
from evalquality_core.score.score import ScoreResult, score
from tests.scoring_inputs import Chain, load, reference_chain, worked_example


def _score(chain: Chain) -> tuple[ScoreResult, dict[str, Any]]:
    trial = ingest(chain.record, chain.manifest, chain.configuration, chain.contract)
    result = score(chain.contract, chain.probe, [trial], chain.policy, chain.preflight)
    artifact = emit(
        result,
        chain.contract,
        chain.policy,
        corpus_digest=chain.corpus_digest,
        fixture_digest=chain.preflight.fixture_digest,
        evaluator_configuration_digest=chain.record.evaluator_configuration_digest,
    )
    return result, to_wire(artifact)


@pytest.fixture(scope="module")
def scored(conformance: Path) -> tuple[ScoreResult, dict[str, Any], dict[str, Any], Chain]:
    chain = worked_example(conformance)
    result, artifact = _score(chain)
    return result, artifact, load(conformance / "worked-example" / "expected.json"), chain


def test_every_value_of_expected_json(scored) -> None:
    result, artifact, expected, chain = scored
    assert digest_artifact(chain.contract) == expected["contractDigest"]
    assert artifact["mode"] == expected["mode"]
    assert artifact["contractVerdict"] == expected["contractVerdict"]
    assert artifact["exitCode"] == expected["exitCode"] == result.ladder.exit_code
    assert artifact["verdictBasis"] == expected["verdictBasis"]
    assert len(artifact["outcomes"]) == len(expected["outcomes"])
    for row, want in zip(artifact["outcomes"], expected["outcomes"], strict=True):
        assert row["oracleId"] == want["oracleId"]
        assert row["state"] == want["state"], row["oracleId"]
        assert row["disposition"] == want["disposition"], row["oracleId"]
        assert row["corroboration"] == want["corroboration"], row["oracleId"]
        assert row["selectedObservationIds"] == want["selectedObservationIds"], row["oracleId"]
        assert row["checkResolution"]["resolution"] == want["checkResolution"], row["oracleId"]
        assert row["checkResolution"]["introductionCondition"] == want.get("introductionCondition"), row["oracleId"]
    assert artifact["strength"]["comparable"] == expected["strength"]["comparable"]
    assert artifact["strength"]["vector"] == expected["strength"]["vector"]
    assert artifact["strength"]["note"] == expected["strength"]["note"]
    for key, value in expected["trials"].items():
        assert artifact["trials"][key] == value
    assert [gap["rule"] for gap in artifact["coverageGaps"]] == expected["coverageGapRules"]
    assert artifact["uncitedFindings"] == expected["uncitedFindings"]


def test_shape_and_wording_of_the_reference_artifact(scored, conformance: Path) -> None:
    """Every field the schema-3 artifact shares with ours, at the reference's exact wording."""
    result, artifact, _, _ = scored
    v3 = load(conformance / "worked-example" / "older-chain" / "evidence-artifact.v3.json")
    for key in (
        "runId", "mode", "comparabilityKey", "excludedProbeIds", "exitCode", "verdictBasis", "callerAttestedInputs",
        "uncitedFindings", "coverageGaps", "strength", "remediation", "contractVerdict", "uncitedFindingGaps",
        "systemRecommendationRecorded", "parentDigest", "revisionCount",
    ):
        assert artifact[key] == v3[key], key
    for key, value in v3["trials"].items():
        assert artifact["trials"][key] == value
    shared = ("oracleId", "probeId", "state", "disposition", "resolvedFrom", "corroboration", "selectedObservationIds",
              "checkResolution")
    for ours, theirs in zip(artifact["outcomes"], v3["outcomes"], strict=True):
        assert {k: ours[k] for k in shared} == {k: theirs[k] for k in shared}
    # schema 3 printed the ladder's per-oracle severity; schema 4 prints the probe behaviour's everywhere
    assert [o.severity for o in result.outcomes] == [o["severity"] for o in v3["outcomes"]]
    assert {o["severity"] for o in artifact["outcomes"]} == {"critical"}
    # the scoring version is the plain digest of its inputs (recomputed from the reference's artifact)
    assert digest_artifact(v3["scoringVersionInputs"]) == v3["scoringVersion"]
    assert artifact["scoringVersion"] == digest_artifact(artifact["scoringVersionInputs"])
    assert set(artifact["scoringVersionInputs"]) == set(v3["scoringVersionInputs"])


def test_schema_4_fields(scored) -> None:
    result, artifact, _, chain = scored
    assert artifact["schemaVersion"] == 4
    assert artifact["scoredProbeId"] == chain.probe.probe_id
    assert artifact["trials"]["completedAttempts"] == [chain.record.trial_index]
    assert all(o["trialIndex"] == chain.record.trial_index for o in artifact["outcomes"])
    assert artifact["systemRecommendationNote"] is None
    (reduced,) = artifact["reducedProbeOutcomes"]
    assert reduced["probeId"] == chain.probe.probe_id
    assert reduced["trialVotes"] == [{"trialIndex": 1, "state": "caught"}]
    assert (reduced["validCount"], reduced["caughtCount"], reduced["exercised"], reduced["caught"]) == (1, 1, True, True)
    assert reduced["catchThreshold"] == chain.policy.catch_threshold
    assert result.designated_oracle == "O-001"
    assert result.trials[0].witness is not None and result.trials[0].witness.result == "matched"


def test_recomputed_scoring_version_of_the_newer_chain(scored) -> None:
    """scoring.md §10.10 states the digest it computed for the newer chain's six inputs."""
    _, artifact, _, chain = scored
    inputs = scoring_version_inputs(
        chain.contract,
        corpus_digest=chain.corpus_digest,
        fixture_digest=chain.preflight.fixture_digest,
        evaluator_configuration_digest=digest_artifact(chain.configuration),
        scoring_policy_digest=digest_artifact(chain.policy),
        mode="contract-scoring",
    )
    assert artifact["scoringVersionInputs"] == inputs
    assert artifact["scoringVersion"] == "sha256:40ee4990cf448fc6d3e0771b0194d5d11f4a9f8988151291c4fb49c78cf38257"


@pytest.mark.parametrize("name", ["skill-defect", "workflow-capture"])
def test_reference_chains(conformance: Path, name: str) -> None:
    """Both chains' ``expected.json`` score blocks and their emitted artifacts' shared fields."""
    chain = reference_chain(conformance, name)
    result, artifact = _score(chain)
    want = load(conformance / "chains" / "expected.json")[name]["score"]
    assert artifact["mode"] == want["mode"]
    assert artifact["contractVerdict"] == want["contractVerdict"]
    assert artifact["exitCode"] == want["exitCode"]
    assert artifact["verdictBasis"] == want["verdictBasis"]
    got = [{k: o[k] for k in ("oracleId", "state", "disposition", "corroboration")} for o in artifact["outcomes"]]
    assert got == want["outcomes"]
    assert artifact["strength"]["vector"] == want["strengthVector"]
    assert artifact["strength"]["comparable"] == want["comparable"]
    assert artifact["strength"]["note"] == want["note"]
    if "coverageGaps" in want:
        assert artifact["coverageGaps"] == want["coverageGaps"]
    emitted = load(chain.paths["evidence"])
    for key in ("runId", "comparabilityKey", "coverageGaps", "strength", "verdictBasis", "uncitedFindings",
                "systemRecommendationRecorded", "remediation", "scoringVersionInputs", "scoringVersion"):
        assert artifact[key] == emitted[key], key
    shared = ("oracleId", "probeId", "state", "disposition", "resolvedFrom", "corroboration", "selectedObservationIds",
              "checkResolution")
    for ours, theirs in zip(artifact["outcomes"], emitted["outcomes"], strict=True):
        assert {k: ours[k] for k in shared} == {k: theirs[k] for k in shared}
    assert [o.severity for o in result.outcomes] == [o["severity"] for o in emitted["outcomes"]]


def test_skill_defect_witness_partition(conformance: Path) -> None:
    """chains/README.md: the match is ``matched``; obs-002 satisfies the signature, the backend run obs-001
    lands in the refuting set."""
    chain = reference_chain(conformance, "skill-defect")
    result, _ = _score(chain)
    witness = result.trials[0].witness
    assert witness is not None
    assert (witness.result, witness.satisfying_ids, witness.refuting_ids) == ("matched", ("obs-002",), ("obs-001",))
