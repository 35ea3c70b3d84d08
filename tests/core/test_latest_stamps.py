"""``../shared/conformance/latest/`` reproduced through the library (issue 11): the reference's newest stored
data (contract 7, probe 6, sealed run record 7, pre-flight verdict 2, evidence artifact 4), read in place.

Every expected value is read from the reference's own files there (``expected-compile.json``, the stored brief,
``chains/skill-defect/expected.json`` and ``evidence-artifact.json``); none is typed in here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.brief import SealedEvaluatorBrief
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.artifacts.evidence import EvidenceArtifact
from evalquality_core.artifacts.isolation import IsolationManifest
from evalquality_core.artifacts.preflight_verdict import PreflightVerdict
from evalquality_core.artifacts.probe import Probe
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.artifacts.scoring_policy import ScoringPolicy
from evalquality_core.canonical import digest_artifact, serialize_artifact
from evalquality_core.compile.pipeline import compile_contract
from evalquality_core.emit.emit import emit
from evalquality_core.faults import RuntimeFault, StructuralFailure
from evalquality_core.ingest import ingest
from evalquality_core.pipeline import preflight_from_observations
from evalquality_core.score.score import score
from evalquality_core.seal.seal import seal_contract
from tests.conftest import CONFORMANCE

LATEST = CONFORMANCE / "latest"
CHAIN = LATEST / "chains" / "skill-defect"


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def latest() -> Path:
    """The latest/ folder; skipped, saying why, only where it is absent."""
    if not LATEST.is_dir():
        pytest.skip(f"conformance data absent: {LATEST}")
    return LATEST


def _entries() -> list[dict[str, Any]]:
    path = LATEST / "corpus-dev" / "expected-compile.json"
    if not path.is_file():
        return []
    return [entry for entry in _load(path)["entries"] if entry["kind"] == "contract"]


def test_expected_compile_lists_every_contract(latest: Path) -> None:
    """21 contract entries: the 20 corpus contracts and the compile-seal example (README of latest/)."""
    entries = _entries()
    assert len(entries) == 21
    assert {entry["schemaVersion"] for entry in entries} == {7}
    assert sum(entry["expect"] != "compiles" for entry in entries) == 2


@pytest.mark.parametrize("entry", _entries(), ids=lambda e: e["path"])
def test_every_contract_compiles_as_the_index_says(latest: Path, entry: dict[str, Any]) -> None:
    """`expected-compile.json` in full: compiles, or the named structural failure (strict inputs)."""
    raw = (latest / "corpus-dev" / entry["path"]).read_bytes()
    if entry["expect"] == "compiles":
        compiled = compile_contract(raw)
        # compile returns the contract unchanged, at its own stamp, byte for byte
        assert serialize_artifact(to_wire(compiled)) == raw
        assert compiled.schema_version == 7
    else:
        with pytest.raises(StructuralFailure) as caught:
            compile_contract(raw)
        assert caught.value.code == entry["expect"]


def test_notes_tool_server_is_an_mcp_tool_call_contract_that_seals(latest: Path) -> None:
    """The mcp contract compiles and seals; its directions read as tool calls (issue 13)."""
    raw = (latest / "corpus-dev" / "contracts" / "notes-tool-server.json").read_bytes()
    contract = compile_contract(raw)
    (interface,) = contract.permitted_interfaces
    assert interface.kind == "mcp"
    assert [op.tool_name for op in interface.operations] == ["search_notes", "create_note"]
    brief = seal_contract(raw)
    texts = {d.oracle_id: d.text for d in brief.directions}
    assert texts["O-004"].startswith(
        "The title argument you sent to the create note tool (with the supplied title argument), compared with "
        "its topMatch.title field from the search notes tool (with the supplied query argument)"
    )
    assert "endpoint" not in " ".join(texts.values())
    assert all("arguments query" not in text and "arguments title" not in text for text in texts.values())


def test_compile_seal_example_brief_is_byte_identical(latest: Path) -> None:
    """`seal` of the v7 example writes the reference's brief byte for byte, with its contractDigest."""
    folder = latest / "corpus-dev" / "compile-seal-example"
    brief = seal_contract((folder / "contract.json").read_bytes())
    expected = (folder / "brief.json").read_bytes()
    assert serialize_artifact(to_wire(brief)) == expected
    assert brief.contract_digest == json.loads(expected)["contractDigest"]


# ---- the skill-defect chain ----------------------------------------------------------------------


def test_chain_artifacts_read_and_round_trip(latest: Path) -> None:
    """Each stored artifact of the chain reads at its newest stamp and goes back to the wire unchanged."""
    for model, name in [
        (EvalContract, "eval-contract.json"),
        (Probe, "probe.json"),
        (SealedRunRecord, "sealed-run-record.json"),
        (PreflightVerdict, "preflight-verdict.json"),
        (SealedEvaluatorBrief, "brief.json"),
        (EvidenceArtifact, "evidence-artifact.json"),
    ]:
        document = _load(CHAIN / name)
        assert to_wire(read_artifact(model, document)) == document, name


def test_chain_compile_and_seal_digests(latest: Path) -> None:
    expected = _load(CHAIN / "expected.json")
    contract = compile_contract(_load(CHAIN / "eval-contract.json"))
    assert digest_artifact(to_wire(contract)) == expected["compile"]["contractDigest"]
    brief = seal_contract(_load(CHAIN / "eval-contract.json"))
    assert digest_artifact(to_wire(brief)) == expected["seal"]["briefDigest"]
    assert to_wire(brief) == _load(CHAIN / "brief.json")


def test_chain_preflight_reproduces_the_stored_verdict(latest: Path) -> None:
    expected = _load(CHAIN / "expected.json")["preflight"]
    verdict = preflight_from_observations(
        _load(CHAIN / "eval-contract.json"),
        [_load(CHAIN / "probe.json")],
        expected["runId"],
        _load(CHAIN / "reconstructed-inputs" / "preflight-observations.json"),
    )
    wire = to_wire(verdict)
    assert wire["passed"] is expected["passed"]
    assert wire["fixtureDigest"] == expected["fixtureDigest"]
    assert wire["checks"] == expected["checks"]
    assert wire == _load(CHAIN / "preflight-verdict.json")


@pytest.fixture(scope="module")
def scored(latest: Path) -> dict[str, Any]:
    inputs = CHAIN / "reconstructed-inputs"
    contract = read_artifact(EvalContract, _load(CHAIN / "eval-contract.json"))
    record = read_artifact(SealedRunRecord, _load(CHAIN / "sealed-run-record.json"))
    preflight = read_artifact(PreflightVerdict, _load(CHAIN / "preflight-verdict.json"))
    policy = read_artifact(ScoringPolicy, _load(inputs / "scoring-policy.json"))
    trial = ingest(
        record,
        read_artifact(IsolationManifest, _load(inputs / "isolation-manifest.json")),
        read_artifact(EvaluatorConfiguration, _load(inputs / "evaluator-configuration.json")),
        contract,
    )
    result = score(contract, read_artifact(Probe, _load(CHAIN / "probe.json")), [trial], policy, preflight)
    expected = _load(CHAIN / "expected.json")["score"]
    artifact = emit(
        result,
        contract,
        policy,
        corpus_digest=expected["inputs"]["corpusDigest"],
        fixture_digest=preflight.fixture_digest,
        evaluator_configuration_digest=record.evaluator_configuration_digest,
    )
    return to_wire(artifact)


def test_chain_score_gives_every_value_of_expected_json(scored: dict[str, Any]) -> None:
    expected = _load(CHAIN / "expected.json")["score"]
    for key in (
        "mode", "contractVerdict", "exitCode", "verdictBasis", "coverageGaps", "reducedProbeOutcomes",
        "strength", "trials", "uncitedFindings", "uncitedFindingGaps", "systemRecommendationRecorded",
        "scoringVersion", "scoringVersionInputs", "comparabilityKey",
    ):
        assert scored[key] == expected[key], key
    assert len(scored["outcomes"]) == len(expected["outcomes"])
    for ours, want in zip(scored["outcomes"], expected["outcomes"], strict=True):
        assert {k: ours[k] for k in want} == want  # expected.json lists a subset of each outcome's fields


def test_chain_score_matches_the_emitted_artifact_field_for_field(scored: dict[str, Any]) -> None:
    assert scored == _load(CHAIN / "evidence-artifact.json")


def test_unparseable_probe_in_preflight_is_reported_at_probe(latest: Path) -> None:
    """Issue 10 / preflight-adapter.md §2.6, through the library."""
    probe = _load(CHAIN / "probe.json")
    del probe["rationale"]
    with pytest.raises(RuntimeFault) as caught:
        preflight_from_observations(_load(CHAIN / "eval-contract.json"), [probe], "r", [])
    assert (caught.value.code, caught.value.artifact_path) == ("schema-parse-failure", "Probe")


@pytest.mark.parametrize("stamp", ["7", None, "missing", 7.0])
def test_missing_or_non_numeric_contract_stamp_through_seal_and_preflight(latest: Path, stamp: object) -> None:
    """Issue 10: schema-parse-failure at EvalContract, in seal and pre-flight alike (not a version mismatch)."""
    contract = _load(CHAIN / "eval-contract.json")
    if stamp == "missing":
        del contract["schemaVersion"]
    else:
        contract["schemaVersion"] = stamp
    for call in (
        lambda: seal_contract(contract),
        lambda: compile_contract(contract),
        lambda: preflight_from_observations(contract, [_load(CHAIN / "probe.json")], "r", []),
    ):
        with pytest.raises(RuntimeFault) as caught:
            call()
        assert (caught.value.code, caught.value.artifact_path) == ("schema-parse-failure", "EvalContract")
