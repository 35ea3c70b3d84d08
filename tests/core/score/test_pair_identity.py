"""The (interfaceId, operationId) pair (5.0.0) in scoring: selection, the witness match, the finding map, the
designated oracle (7.2.0) and qualification of a tool-call signature. Built from the v7 skill-defect chain
(read in place) with a second interface declaring the same operation id."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from evalquality_core.artifacts.base import read_artifact
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.compile.pipeline import compile_contract
from evalquality_core.evaluate.selection import base_candidates
from evalquality_core.score.qualification import qualify_probe
from evalquality_core.score.score import designate_oracle
from evalquality_core.score.witness import map_findings, match_witness, resolve_home_operation
from evalquality_core.seal.seal import seal_contract
from tests.conftest import CONFORMANCE

CHAIN = CONFORMANCE / "latest" / "chains" / "skill-defect"


def _load(name: str) -> Any:
    path = CHAIN / name
    if not path.is_file():
        pytest.skip(f"conformance data absent: {path}")
    return json.loads(path.read_text(encoding="utf-8"))


def twin_contract() -> dict[str, Any]:
    """The chain's contract plus interface ``other-runner`` declaring ``run-skill`` too (another executable)."""
    contract = _load("eval-contract.json")
    twin = copy.deepcopy(contract["permittedInterfaces"][0])
    twin["logicalId"] = "other-runner"
    operation = twin["operations"][0]
    operation["invocation"]["executable"] = "other-runner"
    for leg in operation["sensitivityWitness"]["legs"]:
        leg["legId"] = "other-" + leg["legId"]
    relation = json.dumps(operation["sensitivityWitness"]["relation"])
    for leg in contract["permittedInterfaces"][0]["operations"][0]["sensitivityWitness"]["legs"]:
        relation = relation.replace(f"/interactions/{leg['legId']}/", f"/interactions/other-{leg['legId']}/")
    operation["sensitivityWitness"]["relation"] = json.loads(relation)
    contract["permittedInterfaces"].append(twin)
    return contract


def test_a_shared_operation_id_compiles_and_the_brief_names_the_interface() -> None:
    """Contract 6+: one operation id under two interfaces is two operations; the brief says which."""
    contract = twin_contract()
    compile_contract(contract)
    texts = [d.text for d in seal_contract(contract).directions]
    assert all('the run skill command of interface "skill-runner"' in text for text in texts)


def test_selection_and_witness_read_the_pair() -> None:
    contract, probe, record = twin_contract(), _load("probe.json"), _load("sealed-run-record.json")
    step = contract["interactionPlan"][0]
    assert [o["observationId"] for o in base_candidates(step, record["observations"])] == ["obs-001", "obs-002"]
    home = resolve_home_operation(contract, probe["defectSignature"])
    assert home is not None and home.interface_id == "skill-runner"
    before = match_witness(contract, probe, record["observations"], record["findings"], home)
    assert before.result == "matched" and before.satisfying_ids == ("obs-002",)
    # the same call, observed on the other interface, is not a call of the probe's home operation
    moved = copy.deepcopy(record["observations"])
    for observation in moved:
        observation["interfaceId"] = "other-runner"
    assert base_candidates(step, moved) == []
    after = match_witness(contract, probe, moved, record["findings"], home)
    assert after.result == "unexercised"
    buckets = map_findings(record["findings"], moved, {"P-001": probe}, {"P-001": home})
    assert buckets["mapped"] == () and set(buckets["unmapped"]) == {f["findingId"] for f in record["findings"]
                                                                     if f["findingType"] == "defect"}


def test_the_designated_oracle_is_the_behaviours_under_the_pair() -> None:
    """7.2.0: --designated-oracle is validated against the probe's behaviour, whatever interface its home is."""
    contract, probe = twin_contract(), _load("probe.json")
    assert designate_oracle(contract, probe, None) == "O-002"
    assert designate_oracle(contract, probe, "O-002") == "O-002"


def test_a_tool_call_signature_qualifies_against_its_tool() -> None:
    """McpDefectSignature: qualification finds the home operation by toolName and reads its declarations."""
    contract = read_artifact(EvalContract, json.loads(
        (CONFORMANCE / "latest/corpus-dev/contracts/notes-tool-server.json").read_text(encoding="utf-8")))
    probe = _load("probe.json")
    probe["behaviorId"] = "B-001"
    probe["defects"][0]["behaviorId"] = "B-001"
    probe["defects"][0]["manifestationWitness"] = None
    probe["defectSignature"] = {
        "interfaceKind": "mcp", "toolName": "search_notes", "observableChannel": "response-body",
        "condition": {
            "selector": {"inputBinding": {c: None for c in (
                "path", "query", "header", "body", "argument", "option", "environment", "stdin")} | {
                "arguments": {"query": {"literal": "alpha"}}}},
            "predicate": {"op": "equality", "operands": [
                {"pointer": "/interactions/observed/response-body/ok"}, {"literal": True}]},
        },
    }
    home = resolve_home_operation(contract, probe["defectSignature"])
    assert home is not None and home.operation_id == "search-notes"
    assert qualify_probe(probe, home).qualified
    probe["defectSignature"]["condition"]["selector"]["inputBinding"]["arguments"] = {"nope": {"literal": 1}}
    codes = {f.code for f in qualify_probe(probe, home).failures}
    assert "condition-selector-key-undeclared" in codes
    probe["defectSignature"]["condition"]["selector"]["inputBinding"]["arguments"] = None
    probe["defectSignature"]["observableChannel"] = "stdout"
    codes = {f.code for f in qualify_probe(probe, home).failures}
    assert "condition-text-channel-on-api" in codes
