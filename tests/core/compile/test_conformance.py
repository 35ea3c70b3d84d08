"""Compile against the reference's own data: the dev corpus's expected results and the chains'.

Expectations are read from the conformance JSON files at collection time, never restated here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.brief import SealedEvaluatorBrief
from evalquality_core.canonical import canonical_bytes, digest_artifact, digest_bytes, serialize_artifact
from evalquality_core.compile import compile_contract
from evalquality_core.faults import RuntimeFault, StructuralFailure
from evalquality_core.seal import seal_contract
from tests.core.compile.cases import CONFORMANCE


def _entries() -> list[dict[str, Any]]:
    path = CONFORMANCE / "corpus-dev" / "expected-compile.json"
    return json.loads(path.read_text())["entries"] if path.is_file() else []


def _chain_compiles() -> list[tuple[str, dict[str, Any]]]:
    path = CONFORMANCE / "chains" / "expected.json"
    if not path.is_file():
        return []
    found = []
    for name, chain in json.loads(path.read_text()).items():
        if isinstance(chain, dict) and "compile" in chain:
            found.append((name, chain["compile"]))
    return found


def _outcome(data: bytes) -> tuple[str, str | None]:
    try:
        compile_contract(data)
    except (StructuralFailure, RuntimeFault) as failure:
        return failure.code, failure.artifact_path
    return "compiles", None


def test_expected_compile_file_is_read(conformance: Path) -> None:
    assert len(_entries()) == len(json.loads((conformance / "corpus-dev/expected-compile.json").read_text())["entries"]) > 0


@pytest.mark.parametrize("entry", _entries(), ids=lambda e: e["path"])
def test_dev_corpus_entry(entry: dict[str, Any], conformance: Path) -> None:
    data = (conformance / "corpus-dev" / entry["path"]).read_bytes()
    assert digest_bytes(data) == entry["fileSha256"]
    if entry["kind"] == "sealed-evaluator-brief":
        # A brief is not a contract: "compiles" here means it is a valid brief, and that it is exactly
        # what our seal writes for the contract beside it.
        assert entry["expect"] == "compiles"
        read_artifact(SealedEvaluatorBrief, json.loads(data))
        contract = (conformance / "corpus-dev" / Path(entry["path"]).parent / "contract.json").read_bytes()
        assert serialize_artifact(to_wire(seal_contract(contract))) == data
        return
    code, path = _outcome(data)
    assert code == entry["expect"]
    if code == "compiles":
        # Corpus files are canonical JSON plus a newline, so compile must give the same bytes back.
        assert serialize_artifact(to_wire(compile_contract(data))) == data
    else:
        assert path is not None and path.startswith("EvalContract.")


@pytest.mark.parametrize(("chain", "expected"), _chain_compiles(), ids=lambda x: x if isinstance(x, str) else "")
def test_chain_compile_expectations(chain: str, expected: dict[str, Any], conformance: Path) -> None:
    source = expected["input"].split(" ")[0]
    data = (conformance / "chains" / source).read_bytes()
    model = compile_contract(data)
    assert expected["exitCode"] == 0
    assert digest_artifact(model) == expected["contractDigest"]
    broken_files = {n: b for n, b in expected.items() if isinstance(b, dict) and n.endswith(".json")}
    assert len(broken_files) == (2 if chain == "tutorial-workflow" else 0)
    for name, broken in broken_files.items():
        with pytest.raises(StructuralFailure) as caught:
            compile_contract((conformance / "chains" / Path(source).parent / name).read_bytes())
        assert broken["exitCode"] == 4
        failure = caught.value
        assert f"eval-quality: {failure.code}: {failure.artifact_path}: {failure.detail}" == broken["stderr"]


def test_compile_is_idempotent_on_every_conformance_contract(conformance: Path) -> None:
    contracts = sorted((conformance / "corpus-dev" / "contracts").glob("*.json"))
    contracts += [conformance / "chains" / c for c in ("skill-defect/eval-contract.json", "workflow-capture/eval-contract.json")]
    compiled = 0
    for path in contracts:
        try:
            once = compile_contract(path.read_bytes())
        except StructuralFailure:
            continue
        twice = compile_contract(once)
        thrice = compile_contract(json.loads(serialize_artifact(to_wire(once))))
        assert canonical_bytes(to_wire(twice)) == canonical_bytes(to_wire(once)) == canonical_bytes(to_wire(thrice))
        assert digest_artifact(once) == digest_artifact(json.loads(path.read_bytes()))
        compiled += 1
    assert compiled >= 17


def test_wrong_schema_version_is_a_runtime_fault_before_the_shape(conformance: Path) -> None:
    value = json.loads((conformance / "corpus-dev/contracts/satisfied-declarations.json").read_bytes())
    value["schemaVersion"] = 8
    value["unknownKey"] = True
    with pytest.raises(RuntimeFault) as caught:
        compile_contract(value)
    assert (caught.value.code, caught.value.artifact_path) == ("schema-version-mismatch", "EvalContract.schemaVersion")


def test_unknown_key_is_a_schema_parse_failure(conformance: Path) -> None:
    value = json.loads((conformance / "corpus-dev/contracts/satisfied-declarations.json").read_bytes())
    value["unknownKey"] = True
    with pytest.raises(RuntimeFault) as caught:
        compile_contract(value)
    assert caught.value.code == "schema-parse-failure"
