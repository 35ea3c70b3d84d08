"""One case table per OPERATORS row (scoring.md §1.4), plus a census that every row answers both ways."""

from __future__ import annotations

from typing import Any

import pytest

from evalquality_core.evaluate import ABSENT, OPERATORS, OPERATORS_BY_ID
from evalquality_core.evaluate.operators import OperatorEnvironment
from evalquality_core.faults import RuntimeFault
from evalquality_core.registries import OPERATORS as REGISTRY_OPERATORS

ENV = OperatorEnvironment(regex_step_budget=1_000_000, artifact_path="EvalContract.oracles[id=O-001].check")
SHAPE = {"requiredKeys": ["id"], "permittedKeys": ["id", "title"], "types": {"id": "string", "title": None}}

# (op, operands, node extras, expected)
CASES: list[tuple[str, list[Any], dict[str, Any], bool]] = [
    ("existence", [None], {}, True),  # null is present
    ("existence", [[]], {}, True),
    ("existence", [ABSENT], {}, False),
    ("absence", [ABSENT], {}, True),
    ("absence", [None], {}, False),
    ("equality", [1, 1.0], {}, True),
    ("equality", ["Original", "Original"], {}, True),
    ("equality", [{"b": 1, "a": [1]}, {"a": [1], "b": 1}], {}, True),
    ("equality", [1, "1"], {}, False),  # no coercion
    ("equality", [True, 1], {}, False),  # boolean is not number
    ("equality", [ABSENT, None], {}, False),
    ("equality", ["Original", "Revised"], {}, False),
    ("deep-equality", [[1, {"x": None}], [1, {"x": None}]], {}, True),
    ("deep-equality", [[1, 2], [2, 1]], {}, False),
    ("deep-equality", [ABSENT, ABSENT], {}, False),
    ("containment", ["hello world", "lo w"], {}, True),
    ("containment", [[1, {"a": 1}], {"a": 1}], {}, True),
    ("containment", [[1, 2, 3], [3, 1]], {}, True),  # array candidate: subset test
    ("containment", [[1, 2], [1, 4]], {}, False),
    ("containment", ["abc", [1]], {}, False),  # array candidate needs array container
    ("containment", [{"a": 1}, "a"], {}, False),  # object container
    ("containment", [ABSENT, "a"], {}, False),
    ("containment", ["abc", ABSENT], {}, False),
    ("containment", ["abc", 1], {}, False),
    ("set-membership", ["b", ["a", "b"]], {}, True),
    ("set-membership", [{"k": 1}, [{"k": 1}]], {}, True),
    ("set-membership", ["c", ["a", "b"]], {}, False),
    ("set-membership", [ABSENT, ["a"]], {}, False),
    ("regex", ["n-12", None], {"pattern": "^n-[0-9]+$"}, True),
    ("regex", ["x-12", None], {"pattern": "^n-[0-9]+$"}, False),
    ("regex", [12, None], {"pattern": "^[0-9]+$"}, False),  # not a string
    ("regex", [ABSENT, None], {"pattern": "^.*$"}, False),
    ("ordering", [[{"n": 1}, {"n": 1}, {"n": 3}]], {"key": "n", "order": "ascending"}, True),
    ("ordering", [[{"n": "b"}, {"n": "a"}]], {"key": "n", "order": "descending"}, True),
    ("ordering", [[{"n": 5}]], {"key": "n", "order": "ascending"}, True),
    ("ordering", [[{"n": 2}, {"n": 1}]], {"key": "n", "order": "ascending"}, False),
    ("ordering", [[{"n": 1}, {"n": "2"}]], {"key": "n", "order": "ascending"}, False),  # mixed kinds
    ("ordering", [[{"n": 1}, {"m": 2}]], {"key": "n", "order": "ascending"}, False),  # key missing
    ("ordering", [{"n": 1}], {"key": "n", "order": "ascending"}, False),  # not an array
    # UTF-16 code-unit order: U+FF5E sorts after the surrogate pair of U+1F600.
    ("ordering", [[{"n": "\U0001f600"}, {"n": "\uff5e"}]], {"key": "n", "order": "ascending"}, True),
    ("count-tolerance", [[1, 2, 3]], {"expected": 3, "tolerance": 0, "relative": False}, True),
    ("count-tolerance", [[]], {"expected": 0, "tolerance": 0, "relative": False}, True),
    ("count-tolerance", [[1, 2]], {"expected": 4, "tolerance": 50, "relative": True}, True),  # allowed 2
    ("count-tolerance", [[1]], {"expected": 3, "tolerance": 33, "relative": True}, False),  # allowed 0.99
    ("count-tolerance", [[1, 2]], {"expected": 3, "tolerance": 33, "relative": True}, False),
    ("count-tolerance", [{"a": 1}], {"expected": 1, "tolerance": 5, "relative": False}, False),
    ("shape", [{"id": "n-1", "title": 3}], {"descriptor": SHAPE}, True),  # null type: undeclared kind
    ("shape", [{"id": "n-1", "extra": 1}], {"descriptor": SHAPE}, False),
    ("shape", [{"title": "t"}], {"descriptor": SHAPE}, False),
    ("shape", [{"id": 1}], {"descriptor": SHAPE}, False),
    ("shape", [[{"id": "n"}]], {"descriptor": SHAPE}, False),
    # a required key not permitted makes the descriptor unsatisfiable
    (
        "shape",
        [{"id": "x"}],
        {"descriptor": {"requiredKeys": ["id"], "permittedKeys": [], "types": {}}},
        False,
    ),
    (
        "covers-by-key",
        [[{"k": "a"}, {"k": "b"}], [{"id": "b"}, {"id": "a"}]],
        {"expectedKey": "k", "actualKey": "id"},
        True,
    ),
    (
        "covers-by-key",
        [[{"k": "a"}], [{"id": "a"}, {"id": "a"}]],
        {"expectedKey": "k", "actualKey": "id"},
        False,
    ),
    (
        "covers-by-key",
        [[{"k": "a"}], [{"id": "a"}, {"other": 1}]],
        {"expectedKey": "k", "actualKey": "id"},
        False,
    ),
    (
        "covers-by-key",
        [[{"k": "a"}, {"k": "b"}], [{"id": "a"}]],
        {"expectedKey": "k", "actualKey": "id"},
        False,
    ),
    ("covers-by-key", [[{"x": "a"}], [{"id": "a"}]], {"expectedKey": "k", "actualKey": "id"}, False),
    ("covers-by-key", [[{"k": "a"}], ABSENT], {"expectedKey": "k", "actualKey": "id"}, False),
    ("covers-by-key", [[{"k": "a"}], {"id": "a"}], {"expectedKey": "k", "actualKey": "id"}, False),
]


@pytest.mark.parametrize(("op", "operands", "extra", "expected"), CASES)
def test_operator_row(op: str, operands: list[Any], extra: dict[str, Any], expected: bool) -> None:
    row = OPERATORS_BY_ID[op]
    node = {"op": op, "operands": [{} for _ in operands], **extra}
    assert row.evaluate(operands, node, ENV) is expected


def test_every_row_is_covered_both_ways() -> None:
    answered = {(op, expected) for op, _, _, expected in CASES}
    for row in OPERATORS:
        assert (row.op, True) in answered and (row.op, False) in answered, row.op


def test_table_is_the_registry_closed_set() -> None:
    assert tuple(row.op for row in OPERATORS) == REGISTRY_OPERATORS
    assert {row.op for row in OPERATORS if not row.needs_member} == {
        "existence",
        "absence",
        "count-tolerance",
        "covers-by-key",
    }
    assert [row.op for row in OPERATORS if row.own_empty_rule] == ["covers-by-key"]


def test_non_canonicalizable_operand_is_a_fault_not_false() -> None:
    with pytest.raises(RuntimeFault) as caught:
        OPERATORS_BY_ID["deep-equality"].evaluate([2**60, 2**60], {"op": "deep-equality"}, ENV)
    assert caught.value.code == "non-canonicalizable-value"
    assert caught.value.artifact_path == ENV.artifact_path
