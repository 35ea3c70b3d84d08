"""Property tests of three-valued resolution, over real expressions resolved against generated observations.

Leaves read ``/interactions/s/response-body/k<i>`` with ``equality(…, 1)``: the generated body value 1 makes
the leaf true, 2 (or a missing key) false, and ``[]`` insufficient-evidence (empty-collection).

De Morgan, stated honestly: ``all`` is Kleene conjunction but ``any`` is deliberately weaker than
disjunction (scoring.md §1.5: any insufficient child makes it insufficient), so ``not(all(a, b))`` and
``any(not a, not b)`` agree on every two-valued input and, under insufficient evidence, never give opposite
definite answers; they differ only where one operand is false and another insufficient (left ``true``,
right ``insufficient-evidence``).
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evalquality_core.evaluate import resolve_check

from .factories import context, leaf, lit, observation, ptr

KEYS = [f"k{i}" for i in range(4)]
LEAF_VALUE = {1: "true", 2: "false"}

bodies = st.fixed_dictionaries(
    {},
    optional={key: st.sampled_from([1, 2, []]) for key in KEYS},
)


def leaf_on(key: str) -> dict[str, Any]:
    return leaf("equality", ptr(f"/interactions/s/response-body/{key}"), lit(1))


leaves = st.sampled_from(KEYS).map(leaf_on)
expressions = st.recursive(
    leaves,
    lambda children: st.one_of(
        children.map(lambda c: {"op": "not", "operands": [c]}),
        st.lists(children, min_size=2, max_size=3).map(lambda cs: {"op": "all", "operands": cs}),
        st.lists(children, min_size=2, max_size=3).map(lambda cs: {"op": "any", "operands": cs}),
    ),
    max_leaves=8,
)


def resolve(expression: dict[str, Any], body: dict[str, Any]) -> str:
    ctx = context({"s": observation("obs-1", 1, "op", body=body)})
    return resolve_check(expression, ctx).resolution


def negate(expression: dict[str, Any]) -> dict[str, Any]:
    return {"op": "not", "operands": [expression]}


@settings(max_examples=300, deadline=None)
@given(a=expressions, b=expressions, body=bodies)
def test_de_morgan_under_insufficient_evidence(
    a: dict[str, Any], b: dict[str, Any], body: dict[str, Any]
) -> None:
    left = resolve(negate({"op": "all", "operands": [a, b]}), body)
    right = resolve({"op": "any", "operands": [negate(a), negate(b)]}, body)
    ra, rb = resolve(a, body), resolve(b, body)
    if "insufficient-evidence" not in (ra, rb):
        assert left == right
    else:
        assert {left, right} != {"true", "false"}  # never opposite definite answers
        if left != right:
            assert (left, right) == ("true", "insufficient-evidence")
            assert "false" in (ra, rb)
    # the dual law fails in the mirrored way: not(any) is never more decisive than all(not, not)
    dual_left = resolve(negate({"op": "any", "operands": [a, b]}), body)
    dual_right = resolve({"op": "all", "operands": [negate(a), negate(b)]}, body)
    assert {dual_left, dual_right} != {"true", "false"}


def test_de_morgan_every_three_valued_pair() -> None:
    # Exhaustive over the nine combinations, with leaves whose values are fixed by the body.
    by_value = {"true": 1, "false": 2, "insufficient-evidence": []}
    for va, vb in itertools.product(by_value, repeat=2):
        body = {"k0": by_value[va], "k1": by_value[vb]}
        a, b = leaf_on("k0"), leaf_on("k1")
        left = resolve(negate({"op": "all", "operands": [a, b]}), body)
        right = resolve({"op": "any", "operands": [negate(a), negate(b)]}, body)
        if {va, vb} == {"false", "insufficient-evidence"}:
            assert (left, right) == ("true", "insufficient-evidence")
        else:
            assert left == right, (va, vb)


@settings(max_examples=200, deadline=None)
@given(x=expressions, body=bodies)
def test_not_is_an_involution(x: dict[str, Any], body: dict[str, Any]) -> None:
    assert resolve(negate(negate(x)), body) == resolve(x, body)


@settings(max_examples=200, deadline=None)
@given(operands=st.lists(expressions, min_size=2, max_size=4), body=bodies, data=st.data())
def test_all_and_any_are_commutative(operands: list[dict[str, Any]], body: dict[str, Any], data: Any) -> None:
    shuffled = data.draw(st.permutations(operands))
    for op in ("all", "any"):
        assert resolve({"op": op, "operands": operands}, body) == resolve(
            {"op": op, "operands": shuffled}, body
        )


predicates = st.recursive(
    st.sampled_from(
        [
            leaf("existence", ptr("@/id")),
            leaf("absence", ptr("@/id")),
            leaf("equality", ptr("@/id"), lit("a")),
            leaf("count-tolerance", ptr("@/"), expected=0, tolerance=0, relative=False),
        ]
    ),
    lambda children: st.one_of(
        children.map(lambda c: {"op": "not", "operands": [c]}),
        st.lists(children, min_size=2, max_size=3).map(lambda cs: {"op": "any", "operands": cs}),
    ),
    max_leaves=4,
)
# Bodies whose "items" is empty, missing, not an array, or null: nothing to examine.
nothing_bodies = st.one_of(
    st.just({"items": []}),
    st.just({}),
    st.just({"items": None}),
    st.builds(
        lambda v: {"items": v}, st.one_of(st.integers(), st.text(), st.dictionaries(st.text(), st.integers()))
    ),
)


@settings(max_examples=200, deadline=None)
@given(predicate=predicates, body=nothing_bodies, quantifier=st.sampled_from(["for-all", "for-any"]))
def test_quantifier_over_an_empty_collection_never_certifies(
    predicate: dict[str, Any], body: dict[str, Any], quantifier: str
) -> None:
    expression = {
        "op": quantifier,
        "collection": ptr("/interactions/s/response-body/items"),
        "predicate": predicate,
    }
    ctx = context({"s": observation("obs-1", 1, "op", body=body)})
    result = resolve_check(expression, ctx)
    assert result.resolution != "true"
    assert (result.resolution, result.introduction_condition) == ("insufficient-evidence", "empty-collection")
    # and negating it cannot certify either
    assert resolve_check(negate(expression), ctx).resolution == "insufficient-evidence"


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(
        st.fixed_dictionaries({}, optional={"id": st.sampled_from(["a", "b"])}), min_size=1, max_size=5
    )
)
def test_quantifiers_fold_their_elements(items: list[dict[str, Any]]) -> None:
    predicate = leaf("equality", ptr("@/id"), lit("a"))
    ctx = context({"s": observation("obs-1", 1, "op", body={"items": items})})
    over = ptr("/interactions/s/response-body/items")
    expected = [item.get("id") == "a" for item in items]
    for_all = resolve_check({"op": "for-all", "collection": over, "predicate": predicate}, ctx)
    for_any = resolve_check({"op": "for-any", "collection": over, "predicate": predicate}, ctx)
    assert [c.resolution == "true" for c in for_all.children] == expected
    assert (for_all.resolution == "true", for_any.resolution == "true") == (all(expected), any(expected))


pages = st.one_of(
    st.just(None),  # the page key is missing: an absent collection
    st.lists(
        st.fixed_dictionaries({}, optional={"retractedAt": st.one_of(st.none(), st.text(max_size=3))}),
        max_size=4,
    ),
)


@settings(max_examples=200, deadline=None)
@given(page=pages)
def test_soft_delete_spellings_agree_on_populated_empty_and_absent_pages(page: list[Any] | None) -> None:
    """The pair that motivated the empty-collection invariant: both spellings give the same answer."""
    body = {} if page is None else {"page": page}
    collection = ptr("/interactions/s/response-body/page")
    for_all = {"op": "for-all", "collection": collection, "predicate": leaf("absence", ptr("@/retractedAt"))}
    not_for_any = negate(
        {"op": "for-any", "collection": collection, "predicate": leaf("existence", ptr("@/retractedAt"))}
    )
    left, right = resolve(for_all, body), resolve(not_for_any, body)
    assert left == right
    if not page:
        assert left == "insufficient-evidence"
