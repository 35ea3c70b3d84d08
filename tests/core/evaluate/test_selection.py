"""Selection (scoring.md §2): the worked example's §10.4 table, binding kinds, cardinality and ambiguity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.evaluate import (
    addressed_steps,
    binding_deep_equal,
    binding_order,
    select_for_oracle,
    select_plan,
)

from .factories import observation


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def worked(conformance: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    folder = conformance / "worked-example"
    return load(folder / "eval-contract.json"), load(folder / "sealed-run-record.json")


def test_worked_example_selection_table(worked: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """scoring.md §10.4, row by row."""
    contract, record = worked
    plan = select_plan(contract, record["observations"])
    table = {s.step_id: (s.result, s.matched_ids, s.bound_id, s.ambiguous) for s in plan.steps.values()}
    assert table == {
        "baseline-read": ("several", ("obs-001", "obs-004"), "obs-001", False),  # lowest sequence under any
        "write": ("one", ("obs-003",), "obs-003", False),  # obs-005 has no title key
        "read-back": ("one", ("obs-004",), "obs-004", False),  # floor = write's sequence 3
        "collection": ("one", ("obs-002",), "obs-002", False),
        "malformed-write": ("none", (), None, False),  # no observation carries a tags key
    }
    assert list(plan.steps) == [step["stepId"] for step in contract["interactionPlan"]]


def test_worked_example_addressed_steps_follow_plan_order(
    worked: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    contract, record = worked
    plan = select_plan(contract, record["observations"])
    oracles = {oracle["id"]: oracle for oracle in contract["oracles"]}
    # O-001 reads read-back first and write second; selections come out in plan order.
    o1 = select_for_oracle(contract, plan, oracles["O-001"]["check"])
    assert o1.addressed_step_ids == ("write", "read-back")
    assert [s.bound_id for s in o1.selections] == ["obs-003", "obs-004"]
    assert not o1.selector_ambiguity
    assert select_for_oracle(contract, plan, oracles["O-004"]["check"]).addressed_step_ids == ("collection",)
    assert addressed_steps(contract, None) == ()


def test_array_position_is_never_read(worked: tuple[dict[str, Any], dict[str, Any]]) -> None:
    contract, record = worked
    forward = select_plan(contract, record["observations"])
    backward = select_plan(contract, list(reversed(record["observations"])))
    assert {k: v.matched_ids for k, v in forward.steps.items()} == {
        k: v.matched_ids for k, v in backward.steps.items()
    }


def step(
    step_id: str, operation: str = "op", *, after: str | None = None, cardinality: str = "any", **bind: Any
) -> dict[str, Any]:
    binding = {"path": None, "query": None, "header": None, "body": None}
    binding.update(bind)
    return {
        "stepId": step_id,
        "operationId": operation,
        "inputBinding": binding,
        "after": after,
        "cardinality": cardinality,
    }


def contract_of(*steps: dict[str, Any], types: dict[str, str | None] | None = None) -> dict[str, Any]:
    shape = {"requiredKeys": [], "permittedKeys": [], "types": {}}
    operation = {
        "operationId": "op",
        "requestShape": {
            "path": shape,
            "query": shape,
            "header": shape,
            "body": {**shape, "types": types or {}},
        },
        "responseDescriptor": {"collectionLocations": None},
    }
    other = {**operation, "operationId": "other"}
    return {
        "interactionPlan": list(steps),
        "permittedInterfaces": [{"logicalId": "svc", "kind": "api", "operations": [operation, other]}],
        "referenceSets": None,
        "oracles": [],
    }


def obs(observation_id: str, sequence: int, operation: str = "op", **body: Any) -> dict[str, Any]:
    return observation(
        observation_id, sequence, operation, call_inputs={"body": body or None}, body={"id": f"id-{sequence}"}
    )


def test_several_under_single_valued_cardinality_is_ambiguous() -> None:
    contract = contract_of(
        step("one", cardinality="exactly-one"), step("most", cardinality="at-most-one"), step("any")
    )
    plan = select_plan(contract, [obs("b", 2), obs("a", 1)])
    for step_id in ("one", "most"):
        selection = plan.steps[step_id]
        assert (selection.result, selection.ambiguous, selection.bound) == ("several", True, None)
    assert (plan.steps["any"].ambiguous, plan.steps["any"].bound_id) == (False, "a")
    check = {"op": "existence", "operands": [{"pointer": "/interactions/one/response-body"}]}
    assert select_for_oracle(contract, plan, check).selector_ambiguity


def test_sequence_ties_break_on_observation_id() -> None:
    plan = select_plan(contract_of(step("s")), [obs("obs-b", 1), obs("obs-a", 1)])
    assert plan.steps["s"].matched_ids == ("obs-a", "obs-b")


def test_after_floor_is_strict_and_dangling_after_is_permissive() -> None:
    contract = contract_of(
        step("first", "other", cardinality="exactly-one"),
        step("later", after="first"),
        step("dangling", after="not-a-step"),
    )
    plan = select_plan(contract, [obs("x1", 1), obs("anchor", 2, "other"), obs("x3", 3)])
    assert plan.steps["later"].matched_ids == ("x3",)
    assert plan.steps["dangling"].matched_ids == ("x1", "x3")


def test_unsatisfiable_anchor_selects_none() -> None:
    contract = contract_of(step("first", "other", cardinality="exactly-one"), step("later", after="first"))
    none_anchor = select_plan(contract, [obs("x1", 1)])
    assert none_anchor.steps["later"].result == "none"
    ambiguous_anchor = select_plan(contract, [obs("o1", 1, "other"), obs("o2", 2, "other"), obs("x3", 3)])
    assert ambiguous_anchor.steps["later"].result == "none"


def test_literal_binding_is_deep_equality_without_coercion() -> None:
    contract = contract_of(step("s", body={"flag": {"literal": True}, "tags": {"literal": {"a": [1, 2]}}}))
    observations = [
        obs("coerced", 1, flag=1, tags={"a": [1, 2]}),
        obs("reordered", 2, flag=True, tags={"a": [2, 1]}),
        obs("match", 3, tags={"a": [1, 2]}, flag=True),
    ]
    assert select_plan(contract, observations).steps["s"].matched_ids == ("match",)
    assert binding_deep_equal({"a": 1, "b": [None]}, {"b": [None], "a": 1})
    assert not binding_deep_equal({"a": 1}, {"a": 1, "b": 2})
    assert not binding_deep_equal(1, True)


def test_matcher_any_and_principal_need_only_presence() -> None:
    contract = contract_of(step("s", body={"name": {"matcher": "any"}, "owner": {"principal": "alice"}}))
    observations = [
        obs("both", 1, name=None, owner="zed"),
        obs("missing", 2, name="x"),
        observation("no-body", 3, "op"),
    ]
    assert select_plan(contract, observations).steps["s"].matched_ids == ("both",)


def test_type_violating_matcher() -> None:
    contract = contract_of(
        step("violating", body={"count": {"matcher": "type-violating"}}),
        step("undeclared", body={"other": {"matcher": "type-violating"}}),
        types={"count": "number", "other": None},
    )
    observations = [obs("ok-type", 1, count=3, other="x"), obs("wrong-type", 2, count="3", other=1)]
    plan = select_plan(contract, observations)
    assert plan.steps["violating"].matched_ids == ("wrong-type",)
    assert plan.steps["undeclared"].matched_ids == ()  # cannot prove a violation of an unstated type


def test_captured_binding_resolves_from_the_earlier_step() -> None:
    contract = contract_of(
        step("create", "other", cardinality="exactly-one"),
        step(
            "read",
            cardinality="exactly-one",
            body={"id": {"captured": "/interactions/create/response-body/id"}},
        ),
    )
    observations = [
        obs("read-early", 1, id="id-2"),  # before the captured source: below the floor
        obs("create", 2, "other"),
        obs("read-wrong", 3, id="id-9"),
        obs("read-right", 4, id="id-2"),
    ]
    plan = select_plan(contract, observations)
    captured = plan.captured[("read", "body", "id")]
    assert (captured.status, captured.value, captured.observation_id, captured.sequence) == (
        "resolved",
        "id-2",
        "create",
        2,
    )
    assert plan.steps["read"].matched_ids == ("read-right",)


@pytest.mark.parametrize(
    ("sources", "status"),
    [([], "absent"), ([obs("c1", 1, "other"), obs("c2", 2, "other")], "ambiguous")],
)
def test_unresolved_capture_selects_none(sources: list[dict[str, Any]], status: str) -> None:
    contract = contract_of(
        step("create", "other", cardinality="exactly-one"),
        step("read", body={"id": {"captured": "/interactions/create/response-body/id"}}),
    )
    plan = select_plan(contract, [*sources, obs("r", 5, id="id-1")])
    assert plan.captured[("read", "body", "id")].status == status
    assert plan.steps["read"].result == "none"


def test_capture_walking_off_the_body_never_matches() -> None:
    contract = contract_of(
        step("create", "other"),
        step("read", body={"id": {"captured": "/interactions/create/response-body/missing"}}),
    )
    plan = select_plan(contract, [obs("c", 1, "other"), obs("r", 2, id=None)])
    assert plan.captured[("read", "body", "id")].status == "resolved"
    assert plan.steps["read"].result == "none"


def test_binding_order_tiers_and_cycles() -> None:
    plan = [
        step("b", after="a"),
        step("a"),
        step("c", body={"x": {"captured": "/interactions/b/response-body/id"}}),
        step("self", after="self"),
        step("loop1", after="loop2"),
        step("loop2", after="loop1"),
        step("downstream", after="loop1"),
    ]
    order = binding_order(plan)
    assert order.tiers == (("a",), ("b",), ("c",))
    assert order.cyclic == ("self", "loop1", "loop2", "downstream")


def test_workflow_capture_chain_selects_by_captured_value(conformance: Path) -> None:
    folder = conformance / "chains" / "workflow-capture"
    contract, record = load(folder / "eval-contract.json"), load(folder / "sealed-run-record.json")
    plan = select_plan(contract, record["observations"])
    assert plan.captured[("read-back", "path", "id")].observation_id == "obs-create"
    bound = {step_id: selection.bound_id for step_id, selection in plan.steps.items()}
    assert bound == {
        "create": "obs-create",
        "read-back": "obs-read-back",
        "reset": "obs-reset",
        "reset-read-back": "obs-reset-read-back",
        "malformed-create": "obs-malformed-create",
        "malformed-read": "obs-malformed-read",
        "malformed-reset": "obs-malformed-reset",
    }
