"""The OPERATORS table: the eleven AD-4 leaf operators as rows, each two-valued (scoring.md §1.4).

An operator sees already-resolved operands (JSON values or ABSENT) and answers ``True``/``False``; it is
called only after the empty-collection interception of scoring.md §1.5, which lives in ``resolution.py``
and reads each row's ``needs_member`` flag (the three "total" operators — existence, absence,
count-tolerance — answer over a present ``[]`` themselves). Structural equality is equality of RFC 8785
canonical bytes, so a non-canonicalizable operand raises ``non-canonicalizable-value`` instead of
answering.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from evalquality_core.canonical.json import canonical_bytes
from evalquality_core.evaluate.pointers import ABSENT
from evalquality_core.evaluate.regex import regex_test
from evalquality_core.faults import EvalQualityFault, RuntimeFault
from evalquality_core.registries import Relation

__all__ = [
    "OPERATORS",
    "OPERATORS_BY_ID",
    "OperatorEnvironment",
    "OperatorRow",
    "canonical_equal",
    "json_kind",
]


@dataclass(frozen=True, slots=True)
class OperatorEnvironment:
    """What an operator may read besides its operands: the regex step budget and the fault path."""

    regex_step_budget: int
    artifact_path: str


def json_kind(value: Any) -> str | None:
    """The JSON kind of a value (``string number boolean null array object``); None for ABSENT."""
    if value is ABSENT:
        return None
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _canonical(value: Any, env: OperatorEnvironment) -> bytes:
    try:
        return canonical_bytes(value)
    except EvalQualityFault as fault:
        raise RuntimeFault("non-canonicalizable-value", env.artifact_path, fault.detail) from None


def canonical_equal(a: Any, b: Any, env: OperatorEnvironment) -> bool:
    """Structural equality: equal RFC 8785 serializations (scoring.md §1.1). Neither may be ABSENT."""
    return _canonical(a, env) == _canonical(b, env)


def _existence(operands: Sequence[Any], node: Mapping[str, Any], env: OperatorEnvironment) -> bool:
    return operands[0] is not ABSENT


def _absence(operands: Sequence[Any], node: Mapping[str, Any], env: OperatorEnvironment) -> bool:
    return operands[0] is ABSENT


def _equality(operands: Sequence[Any], node: Mapping[str, Any], env: OperatorEnvironment) -> bool:
    a, b = operands
    if a is ABSENT or b is ABSENT:
        return False
    kind = json_kind(a)
    if kind != json_kind(b):
        return False  # no coercion: 1 vs "1" is false
    if kind in ("array", "object"):
        return canonical_equal(a, b, env)
    return bool(a == b)


def _deep_equality(operands: Sequence[Any], node: Mapping[str, Any], env: OperatorEnvironment) -> bool:
    a, b = operands
    if a is ABSENT or b is ABSENT:
        return False
    return canonical_equal(a, b, env)


def _containment(operands: Sequence[Any], node: Mapping[str, Any], env: OperatorEnvironment) -> bool:
    container, candidate = operands
    if container is ABSENT:
        return False
    if isinstance(candidate, list):
        # A reference-set members list and an array literal are indistinguishable: subset test.
        if not isinstance(container, list):
            return False
        held = {_canonical(element, env) for element in container}
        return all(_canonical(element, env) in held for element in candidate)
    if candidate is ABSENT:
        return False
    if isinstance(container, str):
        return isinstance(candidate, str) and candidate in container
    if isinstance(container, list):
        wanted = _canonical(candidate, env)
        return any(_canonical(element, env) == wanted for element in container)
    return False


def _set_membership(operands: Sequence[Any], node: Mapping[str, Any], env: OperatorEnvironment) -> bool:
    value, members = operands
    if value is ABSENT or not isinstance(members, list):
        return False
    wanted = _canonical(value, env)
    return any(_canonical(member, env) == wanted for member in members)


def _regex(operands: Sequence[Any], node: Mapping[str, Any], env: OperatorEnvironment) -> bool:
    return regex_test(operands[0], node["pattern"], env.regex_step_budget, env.artifact_path)


def _utf16_key(text: str) -> bytes:
    # ECMA compares strings by UTF-16 code unit; big-endian UTF-16 bytes order the same way.
    return text.encode("utf-16-be", "surrogatepass")


def _ordering(operands: Sequence[Any], node: Mapping[str, Any], env: OperatorEnvironment) -> bool:
    collection = operands[0]
    if not isinstance(collection, list):
        return False
    key, descending = node["key"], node["order"] == "descending"
    for left, right in zip(collection, collection[1:], strict=False):
        if not (isinstance(left, Mapping) and isinstance(right, Mapping) and key in left and key in right):
            return False
        a, b = left[key], right[key]
        kinds = (json_kind(a), json_kind(b))
        if kinds == ("number", "number"):
            pass
        elif kinds == ("string", "string"):
            a, b = _utf16_key(a), _utf16_key(b)
        else:
            return False
        if (a < b) if descending else (a > b):
            return False
    return True


def _count_tolerance(operands: Sequence[Any], node: Mapping[str, Any], env: OperatorEnvironment) -> bool:
    collection = operands[0]
    if not isinstance(collection, list):
        return False
    expected, tolerance = node["expected"], node["tolerance"]
    # Exact arithmetic: unrounded expected × tolerance / 100 (scoring.md §1.4).
    allowed = Fraction(expected * tolerance, 100) if node["relative"] else Fraction(tolerance)
    return abs(len(collection) - expected) <= allowed


def _shape(operands: Sequence[Any], node: Mapping[str, Any], env: OperatorEnvironment) -> bool:
    value = operands[0]
    if not isinstance(value, Mapping):
        return False
    descriptor = node["descriptor"]
    if any(key not in value for key in descriptor["requiredKeys"]):
        return False
    # Required keys are not implicitly permitted: a self-contradictory descriptor is unsatisfiable.
    permitted = set(descriptor["permittedKeys"])
    if any(key not in permitted for key in value):
        return False
    for key, declared in descriptor["types"].items():
        if declared is not None and key in value and json_kind(value[key]) != declared:
            return False
    return True


def _covers_by_key(operands: Sequence[Any], node: Mapping[str, Any], env: OperatorEnvironment) -> bool:
    expected, actual = operands
    if expected is ABSENT or actual is ABSENT or not isinstance(actual, list):
        return False
    expected_key, actual_key = node["expectedKey"], node["actualKey"]
    slots: dict[Any, int] = {}
    for position, element in enumerate(actual):
        if isinstance(element, Mapping) and actual_key in element:
            slot: Any = _canonical(element[actual_key], env)
        else:
            slot = ("unkeyed", position)  # still counts toward cardinality, never matched
        if slot in slots:
            return False
        slots[slot] = position
    if not isinstance(expected, list):
        return False
    for element in expected:
        if not (isinstance(element, Mapping) and expected_key in element):
            return False
        slot = _canonical(element[expected_key], env)
        if slot not in slots:
            return False
        del slots[slot]
    return not slots


Evaluate = Callable[[Sequence[Any], Mapping[str, Any], OperatorEnvironment], bool]


@dataclass(frozen=True, slots=True)
class OperatorRow:
    """One AD-4 leaf operator.

    ``arity`` is the operand tuple length; ``needs_member`` says a present empty array (or ``{literal: []}``)
    operand makes the leaf ``insufficient-evidence`` before ``evaluate`` runs (scoring.md §1.5 newest
    rule); ``own_empty_rule`` marks covers-by-key, whose emptiness rule is its own (§1.4).
    """

    op: Relation
    arity: int
    needs_member: bool
    own_empty_rule: bool
    evaluate: Evaluate


#: The eleven leaf operators, in the registry's order (scoring.md §1.4).
OPERATORS: tuple[OperatorRow, ...] = (
    OperatorRow("equality", 2, True, False, _equality),
    OperatorRow("deep-equality", 2, True, False, _deep_equality),
    OperatorRow("containment", 2, True, False, _containment),
    OperatorRow("existence", 1, False, False, _existence),
    OperatorRow("absence", 1, False, False, _absence),
    OperatorRow("regex", 1, True, False, _regex),
    OperatorRow("set-membership", 2, True, False, _set_membership),
    OperatorRow("ordering", 1, True, False, _ordering),
    OperatorRow("count-tolerance", 1, False, False, _count_tolerance),
    OperatorRow("shape", 1, True, False, _shape),
    OperatorRow("covers-by-key", 2, False, True, _covers_by_key),
)

OPERATORS_BY_ID: Mapping[str, OperatorRow] = {row.op: row for row in OPERATORS}
