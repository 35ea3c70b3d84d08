"""EvalContract against every conformance contract: read, exact round trip, digests the reference pinned."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.canonical import digest_artifact
from evalquality_core.faults import RuntimeFault, StructuralFailure
from tests.conftest import CONFORMANCE

CONTRACTS = sorted(
    str(p.relative_to(CONFORMANCE))
    for pattern in (
        "corpus-dev/contracts/*.json",
        "corpus-dev/compile-seal-example/contract.json",
        "worked-example/eval-contract.json",
        "chains/*/eval-contract.json",
        "chains/tutorial-workflow/broken-*.json",
        "chains/tutorial-workflow/captured-read-back.json",
        "chains/tutorial-skill/checklist-selection.json",
    )
    for p in CONFORMANCE.glob(pattern)
)


def _load(conformance: Path, relative: str) -> object:
    return json.loads((conformance / relative).read_text(encoding="utf-8"))


def test_every_contract_kind_is_found() -> None:
    """The glob found the corpus (17), the seal example, the worked example, 3 chains and 4 tutorial files."""
    if not CONFORMANCE.is_dir():
        pytest.skip("conformance data absent")
    assert len(CONTRACTS) == 26


@pytest.mark.parametrize("relative", CONTRACTS)
def test_contract_reads_and_round_trips_exactly(conformance: Path, relative: str) -> None:
    """Parsing adds and drops nothing: the wire form equals the document, so digests agree."""
    document = _load(conformance, relative)
    contract = read_artifact(EvalContract, document)
    assert to_wire(contract) == document
    assert contract.schema_version == document["schemaVersion"]


def test_worked_example_digest(conformance: Path) -> None:
    """The reference's record pins this digest for the worked-example contract (conformance README)."""
    contract = read_artifact(EvalContract, _load(conformance, "worked-example/eval-contract.json"))
    assert digest_artifact(to_wire(contract)) == (
        "sha256:8791efa67a20cbfdea0aad892b64696216362b07dc25d32351e8a0fbe2ac748e"
    )


@pytest.mark.parametrize(
    ("relative", "pinned_by"),
    [
        ("chains/skill-defect/eval-contract.json", "chains/skill-defect/sealed-run-record.json"),
        ("chains/workflow-capture/eval-contract.json", "chains/workflow-capture/sealed-run-record.json"),
        ("chains/tutorial-workflow/eval-contract.json", "chains/tutorial-workflow/sealed-run-record.json"),
        ("corpus-dev/compile-seal-example/contract.json", "corpus-dev/compile-seal-example/brief.json"),
    ],
)
def test_chain_contract_digest_equals_the_pinned_digest(conformance: Path, relative: str, pinned_by: str) -> None:
    """A parsed contract digests to the contractDigest its record or brief pins."""
    contract = read_artifact(EvalContract, _load(conformance, relative))
    pinned = _load(conformance, pinned_by)
    assert isinstance(pinned, dict)
    assert digest_artifact(to_wire(contract)) == pinned["contractDigest"]


def test_versions() -> None:
    """Contracts 4 to 7 are read; what we write is the newest of those (issue 11)."""
    assert EvalContract.ACCEPTED_SCHEMA_VERSIONS == (4, 5, 6, 7)
    assert EvalContract.WRITTEN_SCHEMA_VERSION == 7
    assert EvalContract.ARTIFACT_NAME == "EvalContract"


def _satisfied(conformance: Path) -> dict:
    document = _load(conformance, "corpus-dev/contracts/satisfied-declarations.json")
    assert isinstance(document, dict)
    return copy.deepcopy(document)


@pytest.mark.parametrize("stamp", [3, 8, 9007199254740991])
def test_other_stamps_are_refused_before_the_shape(conformance: Path, stamp: object) -> None:
    """A number we do not read is schema-version-mismatch even when the shape is also wrong."""
    document = _satisfied(conformance)
    document["schemaVersion"] = stamp
    document["unknownKey"] = 1
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(EvalContract, document)
    assert caught.value.code == "schema-version-mismatch"
    assert caught.value.artifact_path == "EvalContract.schemaVersion"


@pytest.mark.parametrize("stamp", ["4", True, None, 4.5, "missing"])
def test_missing_or_non_numeric_stamp_is_a_parse_failure(conformance: Path, stamp: object) -> None:
    """Issue 10: a missing or non-numeric stamp is schema-parse-failure at EvalContract, not a mismatch."""
    document = _satisfied(conformance)
    if stamp == "missing":
        del document["schemaVersion"]
    else:
        document["schemaVersion"] = stamp
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(EvalContract, document)
    assert caught.value.code == "schema-parse-failure"
    assert caught.value.artifact_path == "EvalContract"


def test_mcp_api_shaped_form_is_read(conformance: Path) -> None:
    """The v4 schema's mcp interface is api-shaped; that form is read."""
    document = _satisfied(conformance)
    document["permittedInterfaces"][0]["kind"] = "mcp"
    assert to_wire(read_artifact(EvalContract, document)) == document


def test_mcp_tool_call_form_is_unsupported_interface_kind(conformance: Path) -> None:
    """At contract 4/5 a tool-call operation (toolName) is unsupported-interface-kind, outranking shape errors."""
    document = _satisfied(conformance)
    interface = document["permittedInterfaces"][0]
    interface["kind"] = "mcp"
    interface["operations"][1] = {
        "descriptorChannel": {"kind": "structured-result"},
        "operationId": "search-notes",
        "toolName": "search_notes",
        "requestShape": {"arguments": {"permittedKeys": [], "requiredKeys": [], "types": {}}},
    }
    document["interactionPlan"][0]["inputBinding"] = {"arguments": {"query": {"literal": "alpha"}}}
    with pytest.raises(StructuralFailure) as caught:
        read_artifact(EvalContract, document)
    assert caught.value.code == "unsupported-interface-kind"
    assert caught.value.artifact_path == "EvalContract"
    assert "search_notes" in str(caught.value)
    assert "schemaVersion 4" in str(caught.value)


def test_tool_call_form_under_a_non_mcp_kind_is_a_parse_failure(conformance: Path) -> None:
    """Only an mcp interface recognises the tool-call form; under api it is just a wrong shape."""
    document = _satisfied(conformance)
    document["permittedInterfaces"][0]["operations"][0]["toolName"] = "x"
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(EvalContract, document)
    assert caught.value.code == "schema-parse-failure"
    assert caught.value.artifact_path == "EvalContract.permittedInterfaces[0].operations[0].toolName"


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda d: d.__setitem__("extra", 1), "EvalContract.extra"),
        (lambda d: d["behaviors"][0].__setitem__("severity", "high"), "EvalContract.behaviors[0].severity"),
        (lambda d: d["budgets"].__setitem__("maxToolCalls", "20"), "EvalContract.budgets.maxToolCalls"),
        (lambda d: d["budgets"].__setitem__("maxCostUsd", "1.0.0"), "EvalContract.budgets.maxCostUsd"),
        (lambda d: d.__delitem__("fixtureReset"), "EvalContract.fixtureReset"),
        (lambda d: d.__setitem__("behaviors", []), "EvalContract.behaviors"),
        (
            lambda d: d["interactionPlan"][0]["inputBinding"].__setitem__("body", {}),
            "EvalContract.interactionPlan[0].inputBinding.body",
        ),
        (
            lambda d: d["interactionPlan"][0].__setitem__("cardinality", "many"),
            "EvalContract.interactionPlan[0].cardinality",
        ),
        (
            lambda d: d["permittedInterfaces"][0].__setitem__("kind", "grpc"),
            "EvalContract.permittedInterfaces[0]",
        ),
        (
            lambda d: d["permittedInterfaces"][0]["operations"][0].__setitem__("pathTemplate", "/things/:id"),
            "EvalContract.permittedInterfaces[0].operations[0].pathTemplate",
        ),
        (
            lambda d: d["oracles"][0]["direction"]["evidenceTargets"].append("/interactions/x/nowhere"),
            "EvalContract.oracles[0].direction.evidenceTargets[1]",
        ),
        (lambda d: d["oracles"][0]["check"].__setitem__("op", "xor"), "EvalContract.oracles[0].check"),
        (lambda d: d["waivers"].append({"id": "W-002", "rule": None, "rationale": None, "condition": None,
                                        "approval": None, "expiresAt": "2026-02-29T00:00:00Z"}),
         "EvalContract.waivers[1].expiresAt"),
    ],
)
def test_refusals_name_the_path(conformance: Path, mutate, path: str) -> None:
    """Unknown keys, wrong enums, wrong types, missing keys: schema-parse-failure at the offending path."""
    document = _satisfied(conformance)
    mutate(document)
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(EvalContract, document)
    assert caught.value.code == "schema-parse-failure"
    assert caught.value.artifact_path == path


CONTRACT_KEYS = [
    "parentDigest", "revisionCount", "contractId", "sourceSpecDigest", "behaviors", "oracles", "rubrics",
    "waivers", "permittedInterfaces", "referenceSets", "siblingGroups", "interactionPlan", "scopedResources",
    "forbiddenInputs", "testData", "budgets", "safetyLimits", "requiredEvidence", "probeStepBound", "fixtureReset",
]


@pytest.mark.parametrize("key", CONTRACT_KEYS)
def test_every_top_level_key_is_required(conformance: Path, key: str) -> None:
    """No defaults: dropping any of the spec's top-level keys (artifacts.md §2.2) is refused at that key."""
    document = _satisfied(conformance)
    assert set(document) == {"schemaVersion", *CONTRACT_KEYS}
    del document[key]
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(EvalContract, document)
    assert (caught.value.code, caught.value.artifact_path) == ("schema-parse-failure", f"EvalContract.{key}")
