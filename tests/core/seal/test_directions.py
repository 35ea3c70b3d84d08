"""The direction prose generator, rule by rule (artifacts.md §4.3), with hand-derived expectations."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.compile.plan_index import PlanIndex
from evalquality_core.faults import StructuralFailure
from evalquality_core.seal.directions import (
    DirectionRenderer,
    SealRefusal,
    ensure_sentence,
    literal_text,
    render_direction_text,
)
from tests.core.compile.cases import API_BASE, CAPTURE_BASE, load, step

HOLD = "The declared polarity expects this relation to hold."


def _direction(targets: list[str], relation: str = "all", **extra: Any) -> dict[str, Any]:
    return {"evidenceTargets": targets, "relation": relation, "polarity": "expects-hold", "scope": None,
            "negativeDomain": None, **extra}


def test_ensure_sentence() -> None:
    assert ensure_sentence("  its items field ") == "Its items field."
    assert ensure_sentence("«quoted» text!") == "«Quoted» text!"
    assert ensure_sentence("42?") == "42?"
    assert ensure_sentence("\u00e9t\u00e9 ok") == "\u00e9T\u00e9 ok."  # the first *ASCII* letter


def test_literal_text_uses_javascript_member_order() -> None:
    assert literal_text({"b": 1, "10": 2, "2": 3}) == '{"2":3,"10":2,"b":1}'
    assert literal_text({"x": [5.0, 1e-7, "é\n"], "01": None, "4294967295": True}) == (
        '{"01":null,"4294967295":true,"x":[5,1e-7,"é\\n"]}'
    )


def test_single_target_and_scope_and_negative_domain(conformance: Path) -> None:
    contract = load(API_BASE)
    text = render_direction_text(
        _direction(["/interactions/list/response-body/items"], "existence", scope=" every item\t",
                   negativeDomain="a list with no items ."),
        PlanIndex(contract),
    )
    assert text == (
        "Its items field from the list things endpoint (with the supplied query limit) is asserted to be present. "
        f"{HOLD} Every item. A list with no items  is treated as a defect."
    )


def test_blank_scope_and_domain_are_dropped_and_custom_relations_are_quoted(conformance: Path) -> None:
    contract = load(API_BASE)
    text = render_direction_text(
        _direction(["/interactions/create/response-status"], "regex", scope="\u3000", negativeDomain=" "),
        PlanIndex(contract),
    )
    assert text == f'Its transport status from the create thing endpoint (with the supplied body name) is asserted to satisfy the declared "regex" condition. {HOLD}'


def test_type_violating_entries_alone_are_rendered(conformance: Path) -> None:
    contract = load(API_BASE)
    step(contract, "malformed-create")["inputBinding"]["query"] = {"limit": {"literal": 3}}
    text = render_direction_text(_direction(["/interactions/malformed-create/response-body"], "existence"), PlanIndex(contract))
    assert text.startswith("The response body you obtained from the create thing endpoint (with a malformed body name value) is")


def test_several_targets_of_one_step_share_one_reference(conformance: Path) -> None:
    contract = load(API_BASE)
    targets = ["/interactions/create/response-body/ok", "/interactions/create/response-body/id",
               "/interactions/create/response-body/ok", "/interactions/create/call-inputs/body/name"]
    text = render_direction_text(_direction(targets), PlanIndex(contract))
    assert text.startswith(
        "The create thing endpoint (with the supplied body name): its id field, its ok field, and the body name "
        "value you sent is asserted to satisfy every declared condition together."
    )


def test_escalation_to_literal_values(conformance: Path) -> None:
    contract = load(API_BASE)
    twin = copy.deepcopy(step(contract, "create"))
    twin["stepId"] = "create-again"
    step(contract, "create")["inputBinding"]["body"]["name"] = {"literal": "a"}
    twin["inputBinding"]["body"]["name"] = {"literal": {"b": 1, "10": 2}}
    contract["interactionPlan"].append(twin)
    text = render_direction_text(
        _direction(["/interactions/create/response-body/id", "/interactions/create-again/response-body/id"]), PlanIndex(contract)
    )
    assert text.startswith(
        'Its id field from the create thing endpoint (with the body name "a") and its id field from the create thing '
        'endpoint (with the body name {"10":2,"b":1}) is asserted'
    )


def test_escalation_to_kind(conformance: Path) -> None:
    contract = load(API_BASE)
    twin = copy.deepcopy(step(contract, "create"))
    twin["stepId"] = "create-again"
    twin["inputBinding"]["body"]["name"] = {"literal": "x"}
    contract["interactionPlan"].append(twin)
    text = render_direction_text(
        _direction(["/interactions/create/response-body/id", "/interactions/create-again/response-body/id"]), PlanIndex(contract)
    )
    assert "(with the stated body name)" in text and "(with the supplied body name)" in text


def test_identical_siblings_are_irreducible(conformance: Path) -> None:
    contract = load(API_BASE)
    twin = copy.deepcopy(step(contract, "create"))
    twin["stepId"] = "create-again"
    contract["interactionPlan"].append(twin)
    with pytest.raises(StructuralFailure) as caught:
        render_direction_text(
            _direction(["/interactions/create/response-body/id", "/interactions/create-again/response-body/id"]),
            PlanIndex(contract),
        )
    assert (caught.value.code, caught.value.artifact_path) == (
        "irreducible-step-reference",
        "EvalContract.interactionPlan[operationId=create-thing]",
    )


def test_temporal_pair_puts_call_inputs_first(conformance: Path) -> None:
    contract = load(API_BASE)  # list.after == "create"
    text = render_direction_text(
        _direction(["/interactions/list/response-body/items", "/interactions/create/call-inputs/body/name"], "containment"),
        PlanIndex(contract),
    )
    assert text.startswith(
        "The body name value you sent to the create thing endpoint (with the supplied body name), compared with its "
        "items field from the list things endpoint (with the supplied query limit) is asserted to contain the declared member."
    )


def test_capture_expansion_at_the_literal_level(conformance: Path) -> None:
    contract = load(CAPTURE_BASE)
    twin = copy.deepcopy(step(contract, "read-back"))
    twin["stepId"] = "read-back-2"
    twin["after"] = None
    # At the kind level both read "the path id you obtained earlier"; only the literal level, which
    # expands each capture into the step it came from, tells them apart.
    twin["inputBinding"]["path"]["id"] = {"captured": "/interactions/reset/response-body/seededName"}
    contract["interactionPlan"].append(twin)
    text = DirectionRenderer(PlanIndex(contract)).evidence_references(
        ["/interactions/read-back/response-body/thing", "/interactions/read-back-2/response-body/thing"]
    )
    assert text == (
        "its thing field from the get thing endpoint (with the path id you obtained as its id field from the create "
        'thing endpoint (with the body name "a thing the run created")) and its thing field from the get thing endpoint '
        '(with the path id you obtained as its seededName field from the reset things endpoint (with the body seedName "alpha"))'
    )


def test_unknown_step_is_a_seal_refusal(conformance: Path) -> None:
    with pytest.raises(SealRefusal):
        render_direction_text(_direction(["/interactions/ghost/response-body"]), PlanIndex(load(API_BASE)))


def _capture_twins() -> dict[str, Any]:
    contract = load(CAPTURE_BASE)
    twin = copy.deepcopy(step(contract, "read-back"))
    twin["stepId"] = "read-back-2"
    twin["after"] = None
    twin["inputBinding"]["path"]["id"] = {"captured": "/interactions/reset/response-body/seededName"}
    contract["interactionPlan"].append(twin)
    return contract


_TWIN_TARGETS = ["/interactions/read-back/response-body/thing", "/interactions/read-back-2/response-body/thing"]


def test_a_suppressed_expansion_retries_with_the_larger_budget(conformance: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import evalquality_core.seal.directions as directions

    expected = DirectionRenderer(PlanIndex(_capture_twins())).evidence_references(_TWIN_TARGETS)
    monkeypatch.setattr(directions, "DEFAULT_BUDGET", 0)
    assert DirectionRenderer(PlanIndex(_capture_twins())).evidence_references(_TWIN_TARGETS) == expected
    monkeypatch.setattr(directions, "RETRY_BUDGET", 0)
    with pytest.raises(StructuralFailure) as caught:
        DirectionRenderer(PlanIndex(_capture_twins())).evidence_references(_TWIN_TARGETS)
    assert caught.value.code == "irreducible-step-reference"
