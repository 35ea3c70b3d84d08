"""Three-valued resolution (scoring.md §1.5): folds, the empty-collection rule and its exemptions, faults."""

from __future__ import annotations

from typing import Any

import pytest

from evalquality_core.evaluate import CheckResult, fold_all, fold_any, fold_not, resolve_check, satisfies
from evalquality_core.faults import RuntimeFault

from .factories import context, leaf, lit, observation, ptr

T, F, IE = "true", "false", "insufficient-evidence"

LIST = observation(
    "obs-1",
    1,
    "list-notes",
    body={"notes": [], "full": [{"id": "a"}, {"id": "b"}], "title": "x", "ok": True},
)
# The step "collection" declares /notes and /missing as collection locations; "plain" declares nothing.
COLLECTIONS = frozenset({("collection", ("notes",)), ("collection", ("missing",))})
CTX = context(
    {"collection": LIST, "plain": LIST, "gone": None},
    collections=COLLECTIONS,
    reference_sets={
        "empty": {"keys": ["id"], "members": []},
        "ids": {"keys": ["id"], "members": [{"id": "a"}, {"id": "b"}]},
    },
)
EMPTY = {"resolution": IE, "introductionCondition": "empty-collection", "children": []}

TRUE_LEAF = leaf("equality", ptr("/interactions/plain/response-body/ok"), lit(True))
FALSE_LEAF = leaf("equality", ptr("/interactions/plain/response-body/ok"), lit(False))
IE_LEAF = leaf("equality", ptr("/interactions/plain/response-body/notes"), lit("x"))
BY_VALUE = {T: TRUE_LEAF, F: FALSE_LEAF, IE: IE_LEAF}


def resolve(expression: dict[str, Any]) -> dict[str, Any]:
    return resolve_check(expression, CTX).to_wire()


@pytest.mark.parametrize(("value", "expected"), [(T, F), (F, T), (IE, IE)])
def test_not(value: str, expected: str) -> None:
    assert fold_not(value) == expected  # type: ignore[arg-type]
    assert resolve({"op": "not", "operands": [BY_VALUE[value]]})["resolution"] == expected


ALL_ANY = [
    # a, b, all, any — `any` is weaker than disjunction: one insufficient branch poisons it
    (T, T, T, T),
    (T, F, F, T),
    (F, F, F, F),
    (T, IE, IE, IE),
    (F, IE, F, IE),
    (IE, IE, IE, IE),
]


@pytest.mark.parametrize(("a", "b", "conj", "disj"), ALL_ANY)
def test_all_and_any_folds(a: str, b: str, conj: str, disj: str) -> None:
    assert fold_all([a, b]) == conj  # type: ignore[list-item]
    assert fold_any([a, b]) == disj  # type: ignore[list-item]
    tree = resolve({"op": "all", "operands": [BY_VALUE[a], BY_VALUE[b]]})
    assert tree["resolution"] == conj
    assert tree["introductionCondition"] is None  # fold nodes never carry the condition
    assert resolve({"op": "any", "operands": [BY_VALUE[a], BY_VALUE[b]]})["resolution"] == disj


def test_evaluation_is_total_no_short_circuit() -> None:
    tree = resolve({"op": "all", "operands": [FALSE_LEAF, IE_LEAF, TRUE_LEAF]})
    assert [child["resolution"] for child in tree["children"]] == [F, IE, T]
    assert tree["children"][1]["introductionCondition"] == "empty-collection"


NEEDS_MEMBER = [
    leaf("equality", ptr("/interactions/plain/response-body/notes"), lit([])),
    leaf("deep-equality", ptr("/interactions/plain/response-body/notes"), lit([])),
    leaf("containment", ptr("/interactions/plain/response-body/full"), lit([])),
    leaf("containment", ptr("/interactions/plain/response-body/full"), {"referenceSet": "empty"}),
    leaf("regex", ptr("/interactions/plain/response-body/notes"), pattern="^.*$"),
    leaf("set-membership", ptr("/interactions/plain/response-body/title"), {"referenceSet": "empty"}),
    leaf("set-membership", ptr("/interactions/plain/response-body/title"), lit([])),
    leaf("ordering", ptr("/interactions/plain/response-body/notes"), key="id", order="ascending"),
    leaf(
        "shape",
        ptr("/interactions/plain/response-body/notes"),
        descriptor={"requiredKeys": [], "permittedKeys": [], "types": {}},
    ),
]


@pytest.mark.parametrize("expression", NEEDS_MEMBER, ids=lambda e: e["op"])
def test_present_empty_array_trips_a_needs_member_operator(expression: dict[str, Any]) -> None:
    assert resolve(expression) == EMPTY


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (leaf("existence", ptr("/interactions/plain/response-body/notes")), T),
        (leaf("absence", ptr("/interactions/plain/response-body/notes")), F),
        (
            leaf(
                "count-tolerance",
                ptr("/interactions/plain/response-body/notes"),
                expected=0,
                tolerance=0,
                relative=False,
            ),
            T,
        ),
        (
            leaf(
                "count-tolerance",
                ptr("/interactions/plain/response-body/notes"),
                expected=2,
                tolerance=1,
                relative=False,
            ),
            F,
        ),
    ],
    ids=["existence", "absence", "count-tolerance-true", "count-tolerance-false"],
)
def test_total_operators_answer_over_a_present_empty_array(expression: dict[str, Any], expected: str) -> None:
    assert resolve(expression) == {"resolution": expected, "introductionCondition": None, "children": []}


@pytest.mark.parametrize(
    "op_extra",
    [
        ("existence", {}),
        ("absence", {}),
        ("count-tolerance", {"expected": 0, "tolerance": 0, "relative": False}),
    ],
    ids=lambda p: p[0],
)
def test_absent_declared_collection_trips_even_total_operators(op_extra: tuple[str, dict[str, Any]]) -> None:
    op, extra = op_extra
    assert resolve(leaf(op, ptr("/interactions/collection/response-body/missing"), **extra)) == EMPTY
    # the same ABSENT pointer on a step whose operation declares no collection there is a plain answer
    plain = resolve(leaf(op, ptr("/interactions/plain/response-body/missing"), **extra))
    assert plain["introductionCondition"] is None


def test_absent_collection_rule_reads_only_response_body_and_exact_tails() -> None:
    # a deeper tail than the declared location is not the collection
    assert (
        resolve(leaf("existence", ptr("/interactions/collection/response-body/missing/0")))["resolution"] == F
    )
    # a declared step with nothing bound: the collection pointer is ABSENT and still denotes the collection
    unbound = context({"collection": None}, collections=COLLECTIONS)
    check = leaf("existence", ptr("/interactions/collection/response-body/notes"))
    assert resolve_check(check, unbound).to_wire() == EMPTY
    # an undeclared step never denotes a collection
    undeclared = context({}, collections=COLLECTIONS)
    assert resolve_check(check, undeclared).resolution == F


def test_covers_by_key_own_rule() -> None:
    actual_full = ptr("/interactions/plain/response-body/full")
    actual_empty = ptr("/interactions/plain/response-body/notes")
    keys = {"expectedKey": "id", "actualKey": "id"}
    assert resolve(leaf("covers-by-key", {"referenceSet": "ids"}, actual_full, **keys))["resolution"] == T
    assert resolve(leaf("covers-by-key", {"referenceSet": "ids"}, actual_empty, **keys)) == EMPTY
    assert resolve(leaf("covers-by-key", {"referenceSet": "empty"}, actual_full, **keys)) == EMPTY
    # ABSENT actual falls through to the operator's false (a missing collection is a detected defect)
    missing = ptr("/interactions/collection/response-body/missing")
    assert resolve(leaf("covers-by-key", {"referenceSet": "ids"}, missing, **keys))["resolution"] == F


@pytest.mark.parametrize("quantifier", ["for-all", "for-any"])
@pytest.mark.parametrize(
    "collection",
    [
        "/interactions/plain/response-body/notes",  # empty
        "/interactions/plain/response-body/nothing",  # ABSENT
        "/interactions/plain/response-body/title",  # not an array
        "/interactions/gone/response-body/notes",  # unbound step
    ],
)
def test_quantifier_over_nothing_is_insufficient(quantifier: str, collection: str) -> None:
    expression = {
        "op": quantifier,
        "collection": ptr(collection),
        "predicate": leaf("existence", ptr("@/id")),
    }
    assert resolve(expression) == EMPTY


def test_quantifier_iterates_elements_in_order() -> None:
    predicate = leaf("equality", ptr("@/id"), lit("b"))
    over = ptr("/interactions/plain/response-body/full")
    for_all = resolve({"op": "for-all", "collection": over, "predicate": predicate})
    for_any = resolve({"op": "for-any", "collection": over, "predicate": predicate})
    assert [c["resolution"] for c in for_all["children"]] == [F, T]
    assert (for_all["resolution"], for_any["resolution"]) == (F, T)
    assert for_all["introductionCondition"] is None


@pytest.mark.parametrize(
    ("resolution", "polarity", "expected"),
    [
        (T, "expects-hold", True),
        (F, "expects-hold", False),
        (F, "expects-violation", True),
        (T, "expects-violation", False),
        (IE, "expects-hold", False),
        (IE, "expects-violation", False),
        (None, "expects-hold", False),
        (None, "expects-violation", False),
    ],
)
def test_polarity_satisfaction(resolution: str | None, polarity: str, expected: bool) -> None:
    assert satisfies(resolution, polarity) is expected  # type: ignore[arg-type]


def test_operator_faults_propagate_out_of_the_whole_tree() -> None:
    nested = leaf("regex", ptr("/interactions/plain/response-body/title"), pattern="^(a+)+$")
    with pytest.raises(RuntimeFault) as caught:
        resolve({"op": "all", "operands": [TRUE_LEAF, {"op": "not", "operands": [nested]}]})
    assert caught.value.code == "budget-exhausted"
    assert caught.value.artifact_path == "EvalContract.oracles[id=O-001].check"


def test_unknown_op_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        resolve({"op": "xor", "operands": []})


def test_check_result_wire_shape() -> None:
    node = CheckResult("true", None, (CheckResult("insufficient-evidence", "empty-collection"),))
    assert node.to_wire() == {
        "resolution": "true",
        "introductionCondition": None,
        "children": [EMPTY],
    }
