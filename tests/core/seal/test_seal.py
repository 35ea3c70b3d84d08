"""Seal against the reference's briefs, byte for byte, and seal's own refusals and invariances."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.artifacts.base import to_wire
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.canonical import canonical_bytes, digest_artifact, serialize_artifact
from evalquality_core.compile import compile_contract
from evalquality_core.faults import RuntimeFault, StructuralFailure
from evalquality_core.seal import audit_brief_scripting, seal, seal_contract
from tests.core.compile.cases import API_BASE, CONFORMANCE, load


def _chain_seals() -> list[tuple[str, str, str]]:
    """``(chain, contract file, expected brief digest)`` from chains/expected.json."""
    path = CONFORMANCE / "chains" / "expected.json"
    if not path.is_file():
        return []
    found = []
    for name, chain in json.loads(path.read_text()).items():
        if not isinstance(chain, dict) or "seal" not in chain:
            continue
        digest = next(v for k, v in chain["seal"].items() if k.startswith("briefDigest"))
        found.append((name, chain["compile"]["input"].split(" ")[0], digest))
    return found


def test_compile_seal_example_byte_for_byte(conformance: Path) -> None:
    folder = conformance / "corpus-dev" / "compile-seal-example"
    brief = seal_contract((folder / "contract.json").read_bytes())
    assert serialize_artifact(to_wire(brief)) == (folder / "brief.json").read_bytes()
    assert brief.contract_digest == "sha256:7ca80def8afa456f9afa171dbdbe7be9c7c9c9b799cf7bedfa5f6a0db71cd0a9"


@pytest.mark.parametrize(("chain", "contract", "brief_digest"), _chain_seals(), ids=lambda x: x if "/" not in x else "")
def test_chain_brief(chain: str, contract: str, brief_digest: str, conformance: Path) -> None:
    brief = to_wire(seal_contract((conformance / "chains" / contract).read_bytes()))
    assert digest_artifact(brief) == brief_digest
    stored = conformance / "chains" / json.loads((conformance / "chains/expected.json").read_text())[chain]["seal"]["brief"]
    # The stored briefs are pretty-printed; their canonical form is what the CLI writes.
    assert canonical_bytes(brief) == canonical_bytes(json.loads(stored.read_text()))


def test_worked_example_older_chain_brief(conformance: Path) -> None:
    # Stamped contract 3, which compile refuses (we read 4 and 5); the core seal still reproduces
    # the brief the reference wrote for it, contractDigest 10aa58… included (artifacts.md §1.6).
    folder = conformance / "worked-example" / "older-chain"
    contract = EvalContract.model_validate(json.loads((folder / "eval-contract.v3.json").read_text()), by_alias=True, by_name=False)
    brief = to_wire(seal(contract))
    assert brief["contractDigest"] == "sha256:10aa580f94fb3b1b252c24b7ca7186da737498e9f35cfc6150b97a8afbcc4bc9"
    assert canonical_bytes(brief) == canonical_bytes(json.loads((folder / "brief.v2.json").read_text()))
    with pytest.raises(RuntimeFault) as caught:
        compile_contract(json.loads((folder / "eval-contract.v3.json").read_text()))
    assert caught.value.code == "schema-version-mismatch"


def _refusal(contract: dict[str, Any]) -> RuntimeFault:
    with pytest.raises(RuntimeFault) as caught:
        seal_contract(contract)
    assert caught.value.code == "schema-parse-failure"
    assert caught.value.artifact_path == "EvalContract"
    assert caught.value.detail.startswith("the contract compiles but cannot be sealed: ")
    return caught.value


def test_zero_oracles_compile_but_cannot_be_sealed(conformance: Path) -> None:
    contract = load(API_BASE)
    contract["oracles"] = []
    compile_contract(contract)
    _refusal(contract)


def test_empty_evidence_targets_compile_but_cannot_be_sealed(conformance: Path) -> None:
    contract = load(API_BASE)
    contract["oracles"][0]["direction"]["evidenceTargets"] = []
    compile_contract(contract)
    assert "no evidence targets" in _refusal(contract).detail


def test_duplicate_oracle_ids_cannot_be_sealed(conformance: Path) -> None:
    contract = load(API_BASE)
    contract["oracles"][1]["id"] = "O-001"
    compile_contract(contract)
    assert '"O-001"' in _refusal(contract).detail


def test_seal_compiles_first_with_the_same_strictness(conformance: Path) -> None:
    contract = load(API_BASE)
    contract["interactionPlan"][0]["inputBinding"]["body"]["colour"] = {"matcher": "any"}
    with pytest.raises(StructuralFailure):
        seal_contract(contract)
    seal_contract(contract, strict_inputs=False)


def test_brief_excludes_everything_but_its_fields(conformance: Path) -> None:
    brief = to_wire(seal_contract(load(API_BASE)))
    assert set(brief) == {
        "schemaVersion", "parentDigest", "revisionCount", "contractDigest", "behaviors", "directions",
        "permittedInterfaces", "scopedResources", "principals", "budgets", "safetyLimits", "probeStepBound",
    }
    text = json.dumps(brief)
    for secret in ("/interactions/", "expected-things", "create-witness-a", "Reconciles the whole list", "stepId"):
        assert secret not in text
    assert brief["parentDigest"] is None and brief["revisionCount"] == 0
    assert brief["permittedInterfaces"] == [{"logicalId": "thing-api", "kind": "api"}]


def test_principals_are_sorted_names(conformance: Path) -> None:
    contract = load(API_BASE)
    contract["testData"]["principals"] = {"zed": {"kind": "user"}, "ada": {"kind": "admin"}}
    assert to_wire(seal_contract(contract))["principals"] == ["ada", "zed"]


def test_brief_is_invariant_under_permutation_except_contract_digest(conformance: Path) -> None:
    contract = load(API_BASE)
    contract["safetyLimits"] = ["b limit", "a limit", "c limit"]
    baseline = to_wire(seal_contract(contract))
    rng = random.Random(7)
    for _ in range(5):
        shuffled = copy.deepcopy(contract)
        for key in ("oracles", "interactionPlan", "safetyLimits"):
            rng.shuffle(shuffled[key])
        for oracle in shuffled["oracles"]:
            rng.shuffle(oracle["direction"]["evidenceTargets"])
        brief = to_wire(seal_contract(shuffled))
        assert brief["contractDigest"] != baseline["contractDigest"] or shuffled == contract
        assert {**brief, "contractDigest": None} == {**baseline, "contractDigest": None}


def test_scripting_audit_is_separate_and_counts_sequence_markers(conformance: Path) -> None:
    contract = load(API_BASE)
    contract["probeStepBound"] = 1
    contract["oracles"][0]["direction"]["scope"] = "First create, then list, and finally compare."
    brief = seal_contract(contract)  # seal itself never runs the audit (§4.2)
    with pytest.raises(StructuralFailure) as caught:
        audit_brief_scripting(brief)
    assert caught.value.code == "brief-exceeds-scripting-bound"
    assert caught.value.artifact_path == "SealedEvaluatorBrief.directions[oracleId=O-001].text"
    contract["probeStepBound"] = None
    audit_brief_scripting(seal_contract(contract))
