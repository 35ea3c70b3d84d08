"""Multi-call legs (issue 34), pure core: the plan, the reducer and the compiler over the json-server
suite the integration tests run for real (tests/integration/suites/json-server). Expected values come
from docs/reference/multi-call-legs.md, not from the code's output."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from evalquality_core.compile.pipeline import compile_contract
from evalquality_core.faults import StructuralFailure
from evalquality_core.preflight.plan import plan_preflight
from evalquality_core.preflight.reduce import reduce_preflight_wire
from tasks.leg_cache import leg_cache_key

SUITE = Path(__file__).resolve().parents[2] / "integration" / "suites" / "json-server"


def _suite() -> tuple[dict, dict, dict]:
    contract = json.loads((SUITE / "contract.json").read_text())
    return contract, json.loads((SUITE / "probes" / "P-001.json").read_text()), json.loads((SUITE / "probes" / "P-002.json").read_text())


def _operation(contract: dict, operation_id: str) -> dict:
    return next(op for op in contract["permittedInterfaces"][0]["operations"] if op["operationId"] == operation_id)


def test_a_witness_calls_ride_in_its_request_so_the_leg_key_covers_each_call() -> None:
    contract, _, noop = _suite()
    plan = plan_preflight(contract, [noop], "r", clean_witness_legs=True)
    fault = plan.leg("noop-delete-leg")
    twin = plan.leg("noop-delete-leg-clean")
    assert [call.call_id for call in fault.calls] == ["noop-delete-read-back"]
    assert [call["operationId"] for call in fault.request["calls"]] == ["get-post"]
    assert twin.request["calls"] == fault.request["calls"]  # the twin makes the witness's own calls
    # The key changes when only a call's inputs change.
    other = copy.deepcopy(dict(fault.request))
    other["calls"][0]["channels"]["path"]["id"] = "2"
    assert leg_cache_key(fault.request, {}, "d", "t") != leg_cache_key(other, {}, "d", "t")
    # A one-call leg's request has no "calls" key: its key is what it always was.
    assert "calls" not in plan.leg("get-post-witness-a").request


def test_a_call_on_another_interface_or_an_undeclared_operation_is_refused_at_its_path() -> None:
    contract, _, noop = _suite()
    bad = copy.deepcopy(noop)
    bad["defects"][0]["manifestationWitness"]["calls"][0]["interfaceId"] = "elsewhere"
    with pytest.raises(StructuralFailure) as raised:
        plan_preflight(contract, [bad], "r")
    assert raised.value.code == "unreachable-check-evidence"
    assert raised.value.artifact_path == "Probe[probeId=P-002].defects[defectId=D-002].manifestationWitness.calls[0].interfaceId"
    bad["defects"][0]["manifestationWitness"]["calls"][0].update(interfaceId="posts", operationId="put-post")
    with pytest.raises(StructuralFailure) as raised:
        plan_preflight(contract, [bad], "r")
    assert raised.value.artifact_path.endswith("manifestationWitness.calls[0].operationId")


def _api(leg: str, operation: str, status: int, body: object) -> dict:
    return {"kind": "api", "probeId": leg, "interfaceId": "posts", "operationId": operation, "status": status,
            "headers": {}, "body": {"kind": "json", "value": body}}


def delete_observations(plan, fault_read_status: int, twin_read_status: int) -> list[dict]:  # type: ignore[no-untyped-def]
    """What json-server answers each leg of a P-002 plan (docs/reference/multi-call-legs.md): a DELETE
    answers {} whatever it did; its read-back call tells (``fault_read_status`` on the fault leg)."""
    answers = {
        "get-post-witness-a": _api("get-post-witness-a", "get-post", 200, {"id": 1, "title": "hello"}),
        "get-post-witness-b": _api("get-post-witness-b", "get-post", 200, {"id": 2, "title": "world"}),
        "patch-post-witness-a": _api("patch-post-witness-a", "patch-post", 200, {"id": 1, "title": "alpha"}),
        "patch-post-witness-b": _api("patch-post-witness-b", "patch-post", 200, {"id": 1, "title": "beta"}),
    }
    result = []
    for leg in plan.legs:
        if leg.leg_id in answers:
            result.append(answers[leg.leg_id])
        elif leg.operation_id == "get-post":  # control observe legs
            result.append(_api(leg.leg_id, "get-post", 200, {"id": 1, "title": "hello"}))
        else:
            remaining = [{"id": 2, "title": "world"}] if leg.inputs["path"]["id"] == "1" else [{"id": 1, "title": "hello"}]
            call = leg.calls[0]
            if call.operation_id == "list-posts":
                answer = _api(call.call_id, "list-posts", 200, remaining)
            else:
                status = fault_read_status if leg.purpose == "seeded-fault" else twin_read_status
                answer = _api(call.call_id, "get-post", status, {"id": 1, "title": "hello"} if status == 200 else {})
            result.append({**_api(leg.leg_id, "delete-post", 200, {}), "calls": [answer]})
    return result


def test_the_read_back_call_decides_fired_and_scoped() -> None:
    contract, _, noop = _suite()
    plan = plan_preflight(contract, [noop], "r", clean_witness_legs=True)

    def observations(fault_read_status: int, twin_read_status: int) -> list[dict]:
        return delete_observations(plan, fault_read_status, twin_read_status)

    def outcome(verdict: dict, kind: str) -> str:
        return next(check["outcome"] for check in verdict["checks"] if check["kind"] == kind)

    caught = reduce_preflight_wire(plan, observations(200, 404))
    assert outcome(caught, "seeded-fault-fired") == "satisfied" and outcome(caught, "seeded-faults-scoped") == "satisfied"
    assert outcome(caught, "input-sensitivity") != "failed" and caught["passed"]
    # The same no-op on the clean twin: the witness does not tell the defect from clean behaviour.
    holds_clean = reduce_preflight_wire(plan, observations(200, 200))
    assert outcome(holds_clean, "seeded-faults-scoped") == "failed"
    # The delete really removed the post in the fault leg: the witness does not fire.
    missed = reduce_preflight_wire(plan, observations(404, 404))
    assert outcome(missed, "seeded-fault-fired") == "failed"


def test_delete_by_path_compiles_and_a_witness_relation_may_read_its_legs_calls() -> None:
    contract, _, _ = _suite()
    compile_contract(contract)
    # A state-changing operation that declares body keys is still witnessed on its body only (AD-10).
    patch_on_path = copy.deepcopy(contract)
    _operation(patch_on_path, "patch-post")["sensitivityWitness"]["channel"] = "path"
    with pytest.raises(StructuralFailure) as raised:
        compile_contract(patch_on_path)
    assert raised.value.code == "malformed-operator-expression"
    # A relation naming a call no leg makes is unreachable evidence.
    stray = copy.deepcopy(contract)
    _operation(stray, "delete-post")["sensitivityWitness"]["relation"]["operands"][0]["operands"][0]["pointer"] = (
        "/interactions/after-delete-c/response-body"
    )
    with pytest.raises(StructuralFailure) as raised:
        compile_contract(stray)
    assert raised.value.code == "unreachable-check-evidence" and "after-delete-c" in raised.value.detail
    # A call whose inputs omit the operation's required path id.
    missing = copy.deepcopy(contract)
    _operation(missing, "delete-post")["sensitivityWitness"]["legs"][0]["calls"][0]["operationId"] = "get-post"
    with pytest.raises(StructuralFailure) as raised:
        compile_contract(missing)
    assert raised.value.code == "undeclared-mandatory-input"
    assert raised.value.artifact_path.endswith("sensitivityWitness.legs[0].calls[0]")
