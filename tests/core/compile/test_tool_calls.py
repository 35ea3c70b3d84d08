"""Compile rules for mcp tool-call operations (issue 13, model level) and the pair identity (5.0.0), on the
reference's ``notes-tool-server`` contract (latest/, contract 7), read in place and changed one rule at a time."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from evalquality_core.compile.pipeline import compile_contract
from evalquality_core.faults import StructuralFailure
from tests.conftest import CONFORMANCE

NOTES = CONFORMANCE / "latest/corpus-dev/contracts/notes-tool-server.json"


def notes() -> dict[str, Any]:
    if not NOTES.is_file():
        pytest.skip(f"conformance data absent: {NOTES}")
    return json.loads(NOTES.read_text(encoding="utf-8"))


def _fails(contract: dict[str, Any]) -> StructuralFailure:
    with pytest.raises(StructuralFailure) as caught:
        compile_contract(contract)
    return caught.value


def _read(contract: dict[str, Any], pointer: str) -> dict[str, Any]:
    """O-003 now also checks that ``pointer`` exists (check and direction, so alignment still holds)."""
    oracle = next(o for o in contract["oracles"] if o["id"] == "O-003")
    oracle["check"]["operands"].append({"op": "existence", "operands": [{"pointer": pointer}]})
    oracle["direction"]["evidenceTargets"].append(pointer)
    return contract


def test_notes_tool_server_compiles() -> None:
    compile_contract(notes())


@pytest.mark.parametrize("pointer", [
    "/interactions/create/response-status",
    "/interactions/create/exit-code",
    "/interactions/create/call-inputs/arguments/title",
    "/interactions/create/response-body/noteId",
])
def test_a_tool_calls_evidence_is_reachable(pointer: str) -> None:
    compile_contract(_read(notes(), pointer))


@pytest.mark.parametrize("pointer", [
    "/interactions/create/response-headers/x",
    "/interactions/create/response-headers",
    "/interactions/create/stdout",
    "/interactions/create/stderr/line",
])
def test_headers_and_streams_are_unreachable_on_a_tool_call(pointer: str) -> None:
    failure = _fails(_read(notes(), pointer))
    assert failure.code == "unreachable-check-evidence"
    assert "which a tool call does not produce" in failure.detail


def test_an_artifact_pointer_on_a_tool_call_is_unresolved() -> None:
    failure = _fails(_read(notes(), "/interactions/create/artifact/report/x"))
    assert failure.code == "unresolved-artifact-reference"
    assert "is a tool call, which writes no artifact" in failure.detail


def test_duplicate_signatures_are_compared_within_a_family() -> None:
    """Two tools of one name collide; a tool whose name reads like an HTTP signature does not collide with HTTP."""
    contract = notes()
    tools = contract["permittedInterfaces"][0]["operations"]
    tools[1]["toolName"] = tools[0]["toolName"]
    failure = _fails(contract)
    assert failure.code == "duplicate-operation-signature"
    assert 'signature "search_notes"' in failure.detail
    mixed = notes()
    api = json.loads((CONFORMANCE / "latest/corpus-dev/contracts/satisfied-declarations.json").read_text())
    http = api["permittedInterfaces"][0]
    signature = f"{http['operations'][0]['method']} {http['operations'][0]['pathTemplate']}"
    mixed["permittedInterfaces"][0]["operations"][0]["toolName"] = signature
    http = copy.deepcopy(http)
    for operation in http["operations"]:
        operation["sensitivityWitness"] = None
        for channel in operation["requestShape"].values():
            channel.update(requiredKeys=[], permittedKeys=[], types={})
    mixed["permittedInterfaces"].append(http)
    compile_contract(mixed)


def test_a_step_naming_an_interface_that_does_not_declare_its_operation_is_unreachable() -> None:
    contract = notes()
    contract["interactionPlan"][0]["interfaceId"] = "another-server"
    failure = _fails(contract)
    assert failure.code == "unreachable-check-evidence"
    assert failure.artifact_path == "EvalContract.interactionPlan[stepId=search].interfaceId"


def test_undeclared_arguments_and_witness_channel() -> None:
    contract = notes()
    contract["interactionPlan"][1]["inputBinding"]["arguments"]["colour"] = {"literal": "red"}
    failure = _fails(contract)
    assert (failure.code, failure.artifact_path) == (
        "undeclared-mandatory-input", 'EvalContract.interactionPlan[stepId=create].inputBinding.arguments["colour"]')
    witness = notes()
    witness["permittedInterfaces"][0]["operations"][0]["sensitivityWitness"]["channel"] = "query"
    assert _fails(witness).code == "malformed-operator-expression"


def test_captured_read_back_from_the_structured_result() -> None:
    """``captured`` from a tool call reads its structured result (``response-body``), not a stream."""
    contract = notes()
    read_back = contract["interactionPlan"][4]
    read_back["inputBinding"]["arguments"]["query"] = {"captured": "/interactions/create/stdout/noteId"}
    assert _fails(contract).code in ("unreachable-check-evidence", "captured-channel-undeclared")


def test_mcp_before_contract_6_is_refused_by_compile() -> None:
    """Contract 4/5: api-shaped mcp is refused as the reference of that era did."""
    contract = json.loads((CONFORMANCE / "corpus-dev/contracts/satisfied-declarations.json").read_text())
    contract["permittedInterfaces"][0]["kind"] = "mcp"
    failure = _fails(contract)
    assert failure.code == "unsupported-interface-kind"
    assert "compiles from contract schemaVersion 6" in failure.detail
