"""The seven AD-20 rules (scoring.md §6) against the reference's development corpus.

Each corpus contract is named after the rule cell it occupies. The reference's coverage-corpus test
states, per rule, which contract occupies each of four declaration states — ``absent`` (relevant,
unsatisfied: the declaration is missing), ``explicitly-empty`` (not relevant, vacuously satisfied),
``witnessed`` (relevant, satisfied) and ``unwitnessed`` (relevant, unsatisfied). The cells below are
that table, restricted to the contracts the conformance folder carries (four of the reference's
nineteen — split-indicator-oracle, empty-sibling-groups, unaddressed-parameter-sibling,
no-state-change-marker — are not in it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalquality_core.coverage.coverage import coverage_gaps, highest_severity
from evalquality_core.coverage.rules import COVERAGE_RULES, addresses, check_nodes, coverage_context
from tests.scoring_inputs import load

STATE_VERDICTS = {
    "absent": (True, False),
    "explicitly-empty": (False, True),
    "witnessed": (True, True),
    "unwitnessed": (True, False),
}
CELLS: dict[str, list[tuple[str, str]]] = {
    "success-indicator-separation": [
        ("absent", "absent-success-indicator"), ("explicitly-empty", "empty-channel-roles"),
        ("witnessed", "satisfied-declarations"),
    ],
    "whole-body": [
        ("absent", "no-operation-inventory"), ("explicitly-empty", "single-required-response-key"),
        ("witnessed", "satisfied-declarations"), ("unwitnessed", "per-key-split-oracles"),
    ],
    "malformed-input": [
        ("absent", "no-operation-inventory"), ("explicitly-empty", "empty-request-shapes"),
        ("witnessed", "satisfied-declarations"), ("unwitnessed", "no-type-violating-step"),
    ],
    "per-record": [
        ("absent", "absent-collection-locations"), ("explicitly-empty", "empty-collection-locations"),
        ("witnessed", "satisfied-declarations"), ("unwitnessed", "no-collection-quantifier"),
    ],
    "sibling-cross-check": [("absent", "absent-sibling-groups"), ("witnessed", "satisfied-declarations")],
    "omission-and-completeness": [
        ("absent", "absent-collection-locations"), ("explicitly-empty", "unnamed-reference-set"),
        ("witnessed", "satisfied-declarations"), ("unwitnessed", "wrong-cardinality-form"),
    ],
    "state-change-read-back": [
        ("absent", "no-operation-inventory"), ("witnessed", "satisfied-declarations"),
        ("unwitnessed", "no-read-back-relation"),
    ],
}
#: The reference's collateral notes: these contracts keep these other rules witnessed.
COLLATERAL_WITNESSED = [
    ("per-key-split-oracles", "success-indicator-separation"),
    ("no-read-back-relation", "sibling-cross-check"),
    ("no-collection-quantifier", "omission-and-completeness"),
    ("wrong-cardinality-form", "per-record"),
]
RULES = {rule.id: rule for rule in COVERAGE_RULES}


def _contract(conformance: Path, name: str) -> dict:
    return load(conformance / "corpus-dev" / "contracts" / f"{name}.json")


@pytest.mark.parametrize(
    ("rule", "state", "name"), [(rule, state, name) for rule, cells in CELLS.items() for state, name in cells]
)
def test_cell(conformance: Path, rule: str, state: str, name: str) -> None:
    ctx = coverage_context(_contract(conformance, name))
    assert (RULES[rule].relevance(ctx), RULES[rule].satisfaction(ctx)) == STATE_VERDICTS[state]


@pytest.mark.parametrize(("name", "rule"), COLLATERAL_WITNESSED)
def test_collateral_rules_stay_witnessed(conformance: Path, name: str, rule: str) -> None:
    ctx = coverage_context(_contract(conformance, name))
    assert (RULES[rule].relevance(ctx), RULES[rule].satisfaction(ctx)) == (True, True)


def test_satisfied_declarations_has_no_gap_and_every_rule_relevant(conformance: Path) -> None:
    contract = _contract(conformance, "satisfied-declarations")
    ctx = coverage_context(contract)
    assert all(rule.relevance(ctx) for rule in COVERAGE_RULES)
    assert coverage_gaps(contract) == []


def test_no_rule_is_both_irrelevant_and_unsatisfied(conformance: Path) -> None:
    for path in sorted((conformance / "corpus-dev" / "contracts").glob("*.json")):
        ctx = coverage_context(load(path))
        for rule in COVERAGE_RULES:
            assert rule.relevance(ctx) or rule.satisfaction(ctx), (path.name, rule.id)


def test_gap_records_are_emitted_in_rule_order_with_the_highest_severity(conformance: Path) -> None:
    contract = _contract(conformance, "no-operation-inventory")
    gaps = coverage_gaps(contract)
    order = [rule.id for rule in COVERAGE_RULES]
    assert [g.rule for g in gaps] == sorted((g.rule for g in gaps), key=order.index)
    assert all(g.severity == highest_severity(contract) and g.satisfied is False for g in gaps)
    assert gaps[0].to_wire() == {
        "rule": gaps[0].rule,
        "relevancePredicate": f"{gaps[0].rule}-relevance",
        "satisfactionPredicate": f"{gaps[0].rule}-satisfaction",
        "satisfied": False,
        "severity": highest_severity(contract),
    }


def test_worked_example_gaps_match_the_reference(conformance: Path) -> None:
    """scoring.md §10.8: exactly three gaps, in rule order (read from the reference's emitted artifact)."""
    contract = load(conformance / "worked-example" / "eval-contract.json")
    v3 = load(conformance / "worked-example" / "older-chain" / "evidence-artifact.v3.json")
    assert [g.to_wire() for g in coverage_gaps(contract)] == v3["coverageGaps"]


def test_bound_element_substitution_and_addressing() -> None:
    check = {
        "op": "for-all",
        "collection": {"pointer": "/interactions/list/response-body/items"},
        "predicate": {
            "op": "all",
            "operands": [
                {"op": "existence", "operands": [{"pointer": "@/status"}]},
                {"op": "equality", "operands": [{"pointer": "@/"}, {"literal": 1}]},
            ],
        },
    }
    nodes = check_nodes(check)
    assert nodes[0].collection_pointer == "/interactions/list/response-body/items"
    leaves = [n.operand_pointers for n in nodes if n.operand_pointers]
    assert leaves == [("/interactions/list/response-body/items/status",), ("/interactions/list/response-body/items",)]
    assert addresses("/interactions/a/response-body/ok", "/interactions/a")
    assert not addresses("/interactions/ab/response-body", "/interactions/a")


# ---- success-indicator-separation: 6.0.1 scalar command answers, 7.1.0 listed oracles --------------


def _scalar_cli(conformance: Path, *, listed: bool, stdout_op: str = "equality") -> dict:
    """The v7 skill-defect contract whose command answers a scalar (no success indicator, no roles), plus an
    oracle O-003 pairing exit code 0 with a match of the whole stdout at the plan's one step."""
    contract = load(conformance / "latest/chains/skill-defect/eval-contract.json")
    descriptor = contract["permittedInterfaces"][0]["operations"][0]["responseDescriptor"]
    descriptor["successIndicator"], descriptor["channelRoles"] = None, None
    step = "/interactions/frontend-case"
    check = {"op": "all", "operands": [
        {"op": "equality", "operands": [{"pointer": f"{step}/exit-code"}, {"literal": 0}]},
        {"op": stdout_op, "operands": [{"pointer": f"{step}/stdout"}, {"literal": {"selected": []}}]},
    ]}
    contract["oracles"].append({"id": "O-003", "polarity": "expects-hold", "commentary": None, "check": check,
                                "direction": {"evidenceTargets": [f"{step}/exit-code", f"{step}/stdout"],
                                              "relation": "all", "polarity": "expects-hold", "scope": None,
                                              "negativeDomain": None}})
    if listed:
        contract["behaviors"][0]["oracles"].append("O-003")
    return contract


def _sis(contract: dict) -> tuple[bool, bool]:
    rule = next(r for r in COVERAGE_RULES if r.id == "success-indicator-separation")
    context = coverage_context(contract)
    return rule.relevance(context), rule.satisfaction(context)


def test_a_scalar_command_answer_is_separated_by_exit_code_and_whole_stdout(conformance: Path) -> None:
    """6.0.1: exit code 0 and an exact (or deep) match of the whole stdout, by one listed oracle."""
    if not (conformance / "latest").is_dir():
        pytest.skip("conformance/latest absent")
    assert _sis(_scalar_cli(conformance, listed=True)) == (True, True)
    assert _sis(_scalar_cli(conformance, listed=True, stdout_op="deep-equality")) == (True, True)


def test_the_scalar_branch_needs_a_listed_oracle_and_an_exact_match(conformance: Path) -> None:
    """7.1.0: an oracle no behaviour lists does not count; a containment is not an exact match."""
    if not (conformance / "latest").is_dir():
        pytest.skip("conformance/latest absent")
    assert _sis(_scalar_cli(conformance, listed=False)) == (True, False)
    assert _sis(_scalar_cli(conformance, listed=True, stdout_op="containment")) == (True, False)
