"""``migrate`` (issue 11): an older contract, probe or record upgraded to the newest stamp where that is
mechanical, and refused, with the reason, where it is not. The reference stored the skill-defect chain at both
the old stamps (``chains/``) and the new ones (``latest/chains/``): migrating the old must give the new."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.canonical import serialize_artifact
from evalquality_core.migrate import MigrationRefusal, migrate_document
from tests.conftest import CONFORMANCE


def _load(relative: str) -> Any:
    path = CONFORMANCE / relative
    if not path.is_file():
        pytest.skip(f"conformance data absent: {path}")
    return json.loads(path.read_text(encoding="utf-8"))


def test_contract_5_migrates_to_the_reference_contract_7() -> None:
    assert migrate_document(_load("chains/skill-defect/eval-contract.json")) == _load(
        "latest/chains/skill-defect/eval-contract.json")


def test_contract_4_gains_pairs_on_steps_and_sibling_groups() -> None:
    """Every v4 corpus contract with an inventory migrates; satisfied-declarations lands on the reference's v7."""
    migrated = migrate_document(_load("corpus-dev/contracts/satisfied-declarations.json"))
    assert migrated == _load("latest/corpus-dev/contracts/satisfied-declarations.json")


def test_probe_5_migrates_to_the_reference_probe_6() -> None:
    assert migrate_document(_load("chains/skill-defect/probe.json")) == _load("latest/chains/skill-defect/probe.json")


def test_record_5_gains_interface_ids_and_body_encoding() -> None:
    old = _load("chains/skill-defect/sealed-run-record.json")
    migrated = migrate_document(old, contract=_load("chains/skill-defect/eval-contract.json"))
    reference = _load("latest/chains/skill-defect/sealed-run-record.json")
    for observation in reference["observations"]:
        observation["callInputs"]["bodyEncoding"] = None
    assert migrated["schemaVersion"] == 8
    assert "invalidReason" not in migrated
    assert migrated["observations"] == reference["observations"]
    assert migrated["contractDigest"] == old["contractDigest"]  # a record keeps the digests it was sealed with


def test_record_4_gains_arguments_and_artifact_ids() -> None:
    migrated = migrate_document(_load("worked-example/sealed-run-record.json"),
                                contract=_load("worked-example/eval-contract.json"))
    assert {o["interfaceId"] for o in migrated["observations"]} == {"notes-api"}
    assert all(o["callInputs"]["arguments"] is None for o in migrated["observations"])
    quotes = [q for f in migrated["findings"] for q in f.get("quotedEvidence", [])]
    assert quotes and all(q["artifactId"] is None for q in quotes)


def test_newest_stamps_come_back_unchanged() -> None:
    for relative in ("latest/chains/skill-defect/eval-contract.json", "latest/chains/skill-defect/probe.json"):
        assert migrate_document(_load(relative)) == _load(relative)


def test_an_operation_two_interfaces_declare_is_refused() -> None:
    contract = _load("chains/skill-defect/eval-contract.json")
    twin = json.loads(json.dumps(contract["permittedInterfaces"][0]))
    twin["logicalId"] = "skill-runner-two"
    contract["permittedInterfaces"].append(twin)
    with pytest.raises(MigrationRefusal) as caught:
        migrate_document(contract)
    assert caught.value.artifact_path == "EvalContract.interactionPlan[stepId=frontend-case]"
    assert "interfaces skill-runner, skill-runner-two all declare it" in caught.value.detail


def test_a_record_before_7_needs_its_contract_and_a_non_null_invalid_reason_is_refused() -> None:
    record = _load("chains/skill-defect/sealed-run-record.json")
    with pytest.raises(MigrationRefusal, match="give the contract it was sealed against"):
        migrate_document(record)
    record["invalidReason"] = "the sandbox leaked"
    with pytest.raises(MigrationRefusal, match="non-null invalidReason"):
        migrate_document(record, contract=_load("chains/skill-defect/eval-contract.json"))


def test_the_cli_writes_the_migrated_file_and_refuses_in_one_line(tmp_path: Path) -> None:
    source = CONFORMANCE / "chains/skill-defect/eval-contract.json"
    if not source.is_file():
        pytest.skip(f"conformance data absent: {source}")
    out = tmp_path / "contract-7.json"
    command = [sys.executable, "-m", "evalquality_core", "migrate", "--in", str(source), "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == serialize_artifact(_load("latest/chains/skill-defect/eval-contract.json"))
    record = CONFORMANCE / "chains/skill-defect/sealed-run-record.json"
    refused = subprocess.run([sys.executable, "-m", "evalquality_core", "migrate", "--in", str(record)],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 4
    assert refused.stdout == ""
    assert refused.stderr.startswith("eval-quality: migration-refused: SealedRunRecord.observations: ")
    assert refused.stderr.count("\n") == 1
