"""Every stamp we read, through one model per artifact (issue 11): round trips at each stamp, the keys and forms
each stamp carries (refused at the others), raw bodies (contract 7, probe 6) and record 8's ``bodyEncoding``.

No stored record 8, raw-body contract or probe exists (latest/README.md), so those documents are built here
from stored ones by the 6.0.0 rules; every other document is read in place from the conformance folder.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.artifacts.probe import Probe
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.faults import RuntimeFault, StructuralFailure
from tests.conftest import CONFORMANCE


def _load(relative: str) -> Any:
    path = CONFORMANCE / relative
    if not path.is_file():
        pytest.skip(f"conformance data absent: {path}")
    return json.loads(path.read_text(encoding="utf-8"))


def _refused(model: type, document: Any) -> RuntimeFault:
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(model, document)
    return caught.value


def record_8(record_7: dict[str, Any]) -> dict[str, Any]:
    """A record 7 re-stamped 8: every observation's call inputs gain ``bodyEncoding: null`` (6.0.0)."""
    record = copy.deepcopy(record_7)
    record["schemaVersion"] = 8
    for observation in record["observations"]:
        observation["callInputs"]["bodyEncoding"] = None
    return record


def raw_contract(body: dict[str, Any]) -> dict[str, Any]:
    """The v7 satisfied-declarations contract with ``body`` as the first witness leg's body of create-thing."""
    contract = _load("latest/corpus-dev/contracts/satisfied-declarations.json")
    leg = contract["permittedInterfaces"][0]["operations"][0]["sensitivityWitness"]["legs"][0]
    leg["inputs"]["body"] = body
    return contract


RAW = {"kind": "raw", "base64": "eyJuYW1lIjoiYSJ9", "contentType": "application/json"}


# ---- round trips at every stamp ------------------------------------------------------------------

CONTRACTS_BY_STAMP = {
    4: "corpus-dev/contracts/satisfied-declarations.json",
    5: "chains/skill-defect/eval-contract.json",
    7: "latest/chains/skill-defect/eval-contract.json",
}
RECORDS_BY_STAMP = {
    4: "worked-example/sealed-run-record.json",
    5: "chains/skill-defect/sealed-run-record.json",
    7: "latest/chains/skill-defect/sealed-run-record.json",
}


@pytest.mark.parametrize("stamp", [4, 5, 6, 7])
def test_contract_round_trips_at_every_stamp(stamp: int) -> None:
    """Read at its stamp, written back at its stamp, byte-identical (contract 6 is a re-stamped 7: same shape)."""
    document = _load(CONTRACTS_BY_STAMP.get(stamp, CONTRACTS_BY_STAMP[7]))
    document["schemaVersion"] = stamp
    model = read_artifact(EvalContract, document)
    assert model.schema_version == stamp
    assert to_wire(model) == document


@pytest.mark.parametrize("stamp", [4, 5, 6, 7, 8])
def test_record_round_trips_at_every_stamp(stamp: int) -> None:
    if stamp == 6:
        document = _load(RECORDS_BY_STAMP[5])
        document["schemaVersion"] = 6
        del document["invalidReason"]  # 6 drops it
    elif stamp == 8:
        document = record_8(_load(RECORDS_BY_STAMP[7]))
    else:
        document = _load(RECORDS_BY_STAMP[stamp])
    model = read_artifact(SealedRunRecord, document)
    assert model.schema_version == stamp
    assert to_wire(model) == document


@pytest.mark.parametrize("relative", ["chains/skill-defect/probe.json", "latest/chains/skill-defect/probe.json"])
def test_probe_round_trips_at_5_and_6(relative: str) -> None:
    document = _load(relative)
    assert to_wire(read_artifact(Probe, document)) == document


def test_we_write_the_newest_stamps() -> None:
    assert (EvalContract.WRITTEN_SCHEMA_VERSION, Probe.WRITTEN_SCHEMA_VERSION, SealedRunRecord.WRITTEN_SCHEMA_VERSION) == (7, 6, 8)


# ---- the pair identity (5.0.0) -------------------------------------------------------------------


def test_a_step_without_interface_id_is_refused_from_contract_6() -> None:
    document = _load(CONTRACTS_BY_STAMP[7])
    del document["interactionPlan"][0]["interfaceId"]
    fault = _refused(EvalContract, document)
    assert fault.code == "schema-parse-failure"
    assert "interactionPlan[0].interfaceId is required at schemaVersion 7" in fault.detail


def test_a_step_with_interface_id_is_refused_before_contract_6() -> None:
    document = _load(CONTRACTS_BY_STAMP[5])
    document["interactionPlan"][0]["interfaceId"] = "skill-runner"
    assert "is not a key at schemaVersion 5" in _refused(EvalContract, document).detail


def test_sibling_members_follow_the_stamp() -> None:
    document = _load("latest/corpus-dev/contracts/notes-tool-server.json")
    pair = document["siblingGroups"]["operations"][0]
    document["siblingGroups"]["operations"][0] = [member["operationId"] for member in pair]
    assert "is an {interfaceId, operationId} pair at schemaVersion 7" in _refused(EvalContract, document).detail
    older = _load(CONTRACTS_BY_STAMP[4])
    older["siblingGroups"]["operations"][0] = [{"interfaceId": "thing-api", "operationId": "create-thing"}] * 2
    assert "is an operation id at schemaVersion 4" in _refused(EvalContract, older).detail


def test_tool_call_operations_follow_the_stamp() -> None:
    """A tool call at contract 4/5 is unsupported-interface-kind; an api-shaped mcp operation at 6+ is refused."""
    document = _load("latest/corpus-dev/contracts/notes-tool-server.json")
    document["schemaVersion"] = 5
    with pytest.raises(StructuralFailure) as caught:
        read_artifact(EvalContract, document)
    assert caught.value.code == "unsupported-interface-kind"
    api_shaped = _load(CONTRACTS_BY_STAMP[7])
    api_shaped["permittedInterfaces"] = [{"kind": "mcp", "logicalId": "m", "operations": _load(
        "latest/corpus-dev/contracts/satisfied-declarations.json")["permittedInterfaces"][0]["operations"][:1]}]
    assert "the api-shaped form is read at 4 and 5 only" in _refused(EvalContract, api_shaped).detail


def test_record_7_observations_carry_interface_id() -> None:
    document = _load(RECORDS_BY_STAMP[7])
    del document["observations"][0]["interfaceId"]
    assert "observations[0].interfaceId is required at schemaVersion 7" in _refused(SealedRunRecord, document).detail
    older = _load(RECORDS_BY_STAMP[5])
    older["observations"][0]["interfaceId"] = "skill-runner"
    assert "observations[0].interfaceId is not a key at schemaVersion 5" in _refused(SealedRunRecord, older).detail


# ---- raw bodies (6.0.0) --------------------------------------------------------------------------


@pytest.mark.parametrize("base64", ["", "eyJuYW1lIjoiYSJ9", "QQ==", "QUI=", "+/+/"])
def test_a_canonical_raw_body_is_read_at_contract_7(base64: str) -> None:
    """The empty string is a zero-byte body; padding with zero pad bits is canonical."""
    document = raw_contract({**RAW, "base64": base64})
    assert to_wire(read_artifact(EvalContract, document)) == document


@pytest.mark.parametrize("base64", ["QR==", "QUJ=", "QQ", "QQ=", "Q===", "eyJ uYW1l", "QQ==QQ=="])
def test_a_non_canonical_base64_is_refused(base64: str) -> None:
    fault = _refused(EvalContract, raw_contract({**RAW, "base64": base64}))
    assert fault.code == "schema-parse-failure"
    assert fault.artifact_path.endswith("legs[0].inputs.body.base64")


@pytest.mark.parametrize("content_type", ["", "json", "application/json\r\nX: y", "a b/c"])
def test_a_malformed_content_type_is_refused(content_type: str) -> None:
    fault = _refused(EvalContract, raw_contract({**RAW, "contentType": content_type}))
    assert fault.artifact_path.endswith("legs[0].inputs.body.contentType")


def test_a_raw_body_is_refused_before_contract_7_and_probe_6() -> None:
    document = raw_contract(RAW)
    document["schemaVersion"] = 6
    assert "a raw body arrives at schemaVersion 7" in _refused(EvalContract, document).detail
    probe = _load("chains/skill-defect/probe.json")
    probe["defects"][0]["manifestationWitness"]["inputs"] = {"path": {}, "query": {}, "header": {}, "body": RAW}
    assert "a raw body arrives at probe schemaVersion 6" in _refused(Probe, probe).detail
    probe["schemaVersion"] = 6
    assert to_wire(read_artifact(Probe, probe)) == probe


# ---- record 8 --------------------------------------------------------------------------------------


def test_record_8_requires_body_encoding_and_7_refuses_it() -> None:
    document = record_8(_load(RECORDS_BY_STAMP[7]))
    del document["observations"][1]["callInputs"]["bodyEncoding"]
    assert "observations[1].callInputs.bodyEncoding is required at schemaVersion 8" in _refused(
        SealedRunRecord, document).detail
    seven = _load(RECORDS_BY_STAMP[7])
    seven["observations"][0]["callInputs"]["bodyEncoding"] = None
    assert "is not a key at schemaVersion 7" in _refused(SealedRunRecord, seven).detail


def test_record_8_raw_call_and_duplicate_content_type() -> None:
    document = record_8(_load(RECORDS_BY_STAMP[7]))
    inputs = document["observations"][0]["callInputs"]
    inputs.update(bodyEncoding="raw", body={"base64": "eyJ9"}, header={"Content-Type": "text/plain"})
    assert to_wire(read_artifact(SealedRunRecord, document)) == document
    inputs["header"] = {"Content-Type": "text/plain", "content-type": "application/json"}
    assert "names Content-Type more than once" in _refused(SealedRunRecord, document).detail
    inputs["header"] = {"Content-Type": "text/plain"}
    inputs["body"] = {"title": "x"}
    assert "body of a raw call is" in _refused(SealedRunRecord, document).detail


# ---- probe 6: tool-call signatures -----------------------------------------------------------------


def tool_call_probe(stamp: int) -> dict[str, Any]:
    probe = _load("latest/chains/skill-defect/probe.json")
    probe["schemaVersion"] = stamp
    signature = probe["defectSignature"]
    del signature["invocation"]
    signature.update(interfaceKind="mcp", toolName="search_notes", observableChannel="response-body")
    signature["condition"]["predicate"] = {"op": "existence", "operands": [
        {"pointer": "/interactions/observed/response-body/matches"}]}
    probe["defects"][0]["manifestationWitness"] = None
    return probe


def test_a_tool_call_signature_is_read_at_probe_6_only() -> None:
    probe = tool_call_probe(6)
    model = read_artifact(Probe, probe)
    assert model.defect_signature is not None and model.defect_signature.tool_name == "search_notes"
    assert to_wire(model) == probe
    with pytest.raises(StructuralFailure) as caught:
        read_artifact(Probe, tool_call_probe(5))
    assert caught.value.code == "unsupported-interface-kind"


def test_stamp_path_names_the_artifact(tmp_path: Path) -> None:
    """A number we do not read names `<Artifact>.schemaVersion`; a non-number names the artifact itself."""
    record = _load(RECORDS_BY_STAMP[7])
    record["schemaVersion"] = 9
    assert _refused(SealedRunRecord, record).artifact_path == "SealedRunRecord.schemaVersion"
    record["schemaVersion"] = "8"
    assert (_refused(SealedRunRecord, record).code, _refused(SealedRunRecord, record).artifact_path) == (
        "schema-parse-failure", "SealedRunRecord")
