"""The check grammar: our Expression union agrees with the reference's published Expression schema.

Hypothesis builds expression-shaped JSON, well formed or not (random ops, arities, operand kinds,
extra keys); for each, whether our model accepts it must equal whether the reference's published
``#/$defs/Expression`` accepts it, and an accepted value must round-trip exactly.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import TypeAdapter, ValidationError

from evalquality_core.artifacts.expression import (
    BOUND_ELEMENT_POINTER_PATTERN,
    INTERACTION_POINTER_PATTERN,
    Expression,
    ForAny,
    SetMembership,
)
from evalquality_core.registries import RELATIONS
from tests.conftest import CONFORMANCE

EXPRESSION = TypeAdapter(Expression)

POINTERS = [
    "/interactions/create/response-body/id",
    "/interactions/create/response-status",
    "/interactions/run/exit-code",
    "/interactions/run/stdout",
    "/interactions/run/call-inputs/option/skill",
    "/interactions/run/artifact/report/a~1b",
    "@/",
    "@/name",
    "/interactions/run/exit-code/extra",  # scalar channel with a tail: refused
    "/interactions/Run/stdout",  # not a slug: refused
    "/x",
    "@",
    "",
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)

operands = st.one_of(
    st.builds(lambda p: {"pointer": p}, st.sampled_from(POINTERS)),
    st.builds(lambda v: {"literal": v}, json_values),
    st.builds(lambda s: {"referenceSet": s}, st.sampled_from(["expected-things", "Bad Name"])),
    st.just({"pointer": "/interactions/a/stdout", "literal": 1}),
    st.just({}),
)

OPS = list(RELATIONS) + ["xor"]


def test_tool_call_channel_is_in_our_grammar_only() -> None:
    """``call-inputs/arguments`` (contract 6+) is ours; the published v4 schema predates it, so the
    comparison below leaves it out."""
    pointer = {"op": "existence", "operands": [{"pointer": "/interactions/run/call-inputs/arguments/q"}]}
    assert EXPRESSION.validate_python(pointer) is not None
    assert not _published_expression().is_valid(pointer)


ARITY = {
    "equality": 2, "deep-equality": 2, "containment": 2, "existence": 1, "absence": 1, "regex": 1,
    "set-membership": 2, "ordering": 1, "count-tolerance": 1, "shape": 1, "covers-by-key": 2,
}
VALID_OPERANDS = st.one_of(
    st.builds(lambda p: {"pointer": p}, st.sampled_from(POINTERS[:8])),
    st.builds(lambda v: {"literal": v}, json_values),
    st.just({"referenceSet": "expected-things"}),
)


def _expressions() -> st.SearchStrategy[dict[str, Any]]:
    """Mostly well-formed trees (so both answers are common), with one kind of flaw now and then."""

    def node(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        def build(draw: Any) -> dict[str, Any]:
            flawed = draw(st.integers(0, 3)) == 0
            op = draw(st.sampled_from(OPS if flawed else RELATIONS))
            pool = operands if flawed else VALID_OPERANDS
            value: dict[str, Any] = {"op": op}
            if op in ("not", "all", "any"):
                low = 1 if op == "not" else 2
                high = 1 if op == "not" else 3
                size = draw(st.integers(0, 3)) if flawed else draw(st.integers(low, high))
                value["operands"] = draw(st.lists(children, min_size=size, max_size=size))
            elif op in ("for-all", "for-any"):
                value["collection"] = draw(pool)
                value["predicate"] = draw(children)
            else:
                size = draw(st.integers(0, 3)) if flawed else ARITY.get(op, 1)
                value["operands"] = draw(st.lists(pool, min_size=size, max_size=size))
                if op == "set-membership" and not flawed and size == 2:
                    value["operands"][1] = draw(
                        st.sampled_from([{"referenceSet": "expected-things"}, {"literal": ["a", 1]}])
                    )
            extras = {
                "regex": {"pattern": draw(st.sampled_from(["^a$", "a", "^[0-9]+$"]))},
                "ordering": {"key": "id", "order": draw(st.sampled_from(["ascending", "descending", "sideways"]))},
                "count-tolerance": {"expected": draw(st.integers(-1, 3)), "tolerance": 0, "relative": False},
                "shape": {"descriptor": {"requiredKeys": ["a"], "permittedKeys": [], "types": {"a": "string"}}},
                "covers-by-key": {"expectedKey": "id", "actualKey": draw(st.sampled_from(["id", "key", ""]))},
            }
            if op in extras and (not flawed or draw(st.booleans())):
                value.update(extras[op])
            if flawed and draw(st.booleans()):
                value["surplus"] = 1
            return value

        return st.composite(build)()

    leaf = st.builds(lambda p: {"op": "existence", "operands": [{"pointer": p}]}, st.sampled_from(POINTERS))
    return st.recursive(leaf, node, max_leaves=5)


@cache
def _published_expression() -> Draft202012Validator:
    schema = json.loads((CONFORMANCE / "schemas" / "eval-contract.schema.json").read_text(encoding="utf-8"))
    return Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/Expression"})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_expressions())
def test_we_accept_exactly_what_the_published_expression_schema_accepts(value: dict[str, Any]) -> None:
    """Acceptance agrees with the reference's schema both ways; accepted values round-trip."""
    if not CONFORMANCE.is_dir():
        pytest.skip("conformance data absent")
    theirs = _published_expression().is_valid(value)
    try:
        parsed = EXPRESSION.validate_python(value)
    except ValidationError:
        ours = False
    else:
        ours = True
        assert EXPRESSION.dump_python(parsed, mode="json", by_alias=True) == value
    assert ours == theirs, value


@pytest.mark.parametrize(
    ("pointer", "pattern", "ok"),
    [
        ("/interactions/s/response-body", INTERACTION_POINTER_PATTERN, True),
        ("/interactions/s/response-body/a/~0b", INTERACTION_POINTER_PATTERN, True),
        ("/interactions/s/response-body/a~2", INTERACTION_POINTER_PATTERN, False),
        ("/interactions/s/response-status/0", INTERACTION_POINTER_PATTERN, False),
        ("/interactions/s/call-inputs/stdin", INTERACTION_POINTER_PATTERN, True),
        ("/interactions/s/artifact/report", INTERACTION_POINTER_PATTERN, True),
        ("/interactions/s/artifact", INTERACTION_POINTER_PATTERN, False),
        ("@/", BOUND_ELEMENT_POINTER_PATTERN, True),
        ("@", BOUND_ELEMENT_POINTER_PATTERN, False),
    ],
)
def test_pointer_grammar(pointer: str, pattern: str, ok: bool) -> None:
    """artifacts.md §2.1 pointer grammars, as regular expressions."""
    import re

    assert bool(re.fullmatch(pattern.removeprefix("^").removesuffix("$"), pointer)) is ok


def test_set_membership_second_operand_is_narrowed() -> None:
    """set-membership's set is a reference set or a non-empty literal array, never a pointer."""
    good = {"op": "set-membership", "operands": [{"pointer": "@/"}, {"literal": ["a"]}]}
    assert isinstance(EXPRESSION.validate_python(good), SetMembership)
    for second in ({"literal": []}, {"literal": "a"}, {"pointer": "@/x"}):
        with pytest.raises(ValidationError):
            EXPRESSION.validate_python({"op": "set-membership", "operands": [{"pointer": "@/"}, second]})


def test_quantifier_has_no_operands_key() -> None:
    """for-any carries collection and predicate only."""
    value = {
        "op": "for-any",
        "collection": {"pointer": "/interactions/run/stdout/selected"},
        "predicate": {"op": "existence", "operands": [{"pointer": "@/"}]},
    }
    assert isinstance(EXPRESSION.validate_python(value), ForAny)
    with pytest.raises(ValidationError):
        EXPRESSION.validate_python({**value, "operands": []})
