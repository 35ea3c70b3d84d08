"""Expression legality (artifacts.md §2.3, §3.1 #8–#12).

Every expression the contract declares is checked: oracle checks first, then each operation's
sensitivity-witness relation (whose pointers root at the witness's own legs, so they resolve to
that operation, never through the plan). #8 operand kinds per position (the table of §2.3) and the
reference sets an operator reads; #9 the regular-expression subset (valid, anchored over the whole
pattern, no backreference, no lookbehind); #10 a quantifier over a declared non-array; #11
quantifier nesting; #12 reference-set resolution. ECMA-262 validity (#9) is approximated by
compiling with Python's ``re`` after rewriting ``(?<name>`` to ``(?P<name>`` and ``\\k<name>`` to
``(?P=name)``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.compile.check_tree import (
    iter_expressions,
    iter_operands,
    oracle_checks,
    substitute_bound,
)
from evalquality_core.compile.plan_index import Json, OperationRef, PlanIndex, iter_operations
from evalquality_core.compile.pointers import parse_interaction_pointer
from evalquality_core.faults import StructuralFailure
from evalquality_core.registries import QUANTIFIERS

_POINTER, _LITERAL, _REFERENCE_SET = "pointer", "literal", "referenceSet"
#: Legal operand kinds per operator and position (§2.3); quantifier collections are pointers.
OPERAND_KINDS: dict[str, tuple[frozenset[str], ...]] = {
    "equality": (frozenset({_POINTER, _LITERAL}), frozenset({_POINTER, _LITERAL})),
    "deep-equality": (frozenset({_POINTER, _LITERAL}), frozenset({_POINTER, _LITERAL})),
    "containment": (frozenset({_POINTER}), frozenset({_POINTER, _LITERAL, _REFERENCE_SET})),
    "existence": (frozenset({_POINTER}),),
    "absence": (frozenset({_POINTER}),),
    "regex": (frozenset({_POINTER}),),
    "set-membership": (frozenset({_POINTER}), frozenset({_LITERAL, _REFERENCE_SET})),
    "ordering": (frozenset({_POINTER}),),
    "count-tolerance": (frozenset({_POINTER}),),
    "shape": (frozenset({_POINTER}),),
    "covers-by-key": (frozenset({_REFERENCE_SET}), frozenset({_POINTER})),
}
_MALFORMED = "malformed-operator-expression"
_IDENTIFIER_KEY = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


@dataclass(frozen=True)
class ExpressionSite:
    """One declared expression, its path, and how its pointers' steps resolve to operations."""

    expression: Json
    path: str
    operation_for: Callable[[str], OperationRef | None]


def expression_sites(contract: Json) -> Iterator[ExpressionSite]:
    """Oracle checks (through the plan), then witness relations (through their own legs)."""
    index = PlanIndex(contract)
    for _, check, path in oracle_checks(contract):
        yield ExpressionSite(check, path, index.operation_of_step)
    for i, j, ref in iter_operations(contract):
        witness = ref.operation.get("sensitivityWitness")
        if not isinstance(witness, dict) or not isinstance(witness.get("relation"), dict):
            continue
        legs = [leg.get("legId") for leg in witness.get("legs") or []]

        def leg_operation(step_id: str, legs: list[str] = legs, ref: OperationRef = ref) -> OperationRef | None:
            return ref if step_id in legs else None

        path = f"EvalContract.permittedInterfaces[{i}].operations[{j}].sensitivityWitness.relation"
        yield ExpressionSite(witness["relation"], path, leg_operation)


def _kind(operand: Json) -> str | None:
    kinds = [k for k in (_POINTER, _LITERAL, _REFERENCE_SET) if k in operand]
    return kinds[0] if len(kinds) == 1 else None


def _reference_sets(contract: Json) -> dict[str, Json]:
    sets = contract.get("referenceSets")
    return sets if isinstance(sets, dict) else {}


def _member_path(set_id: str, index: int, key: str) -> str:
    tail = f".{key}" if _IDENTIFIER_KEY.match(key) else f"[{json.dumps(key, ensure_ascii=False)}]"
    return f"EvalContract.referenceSets[id={set_id}].members[{index}]{tail}"


def _check_covers_set(node: Json, sets: dict[str, Json]) -> None:
    """covers-by-key reads ``expectedKey`` on every member; values must be distinct (by digest)."""
    operands = node.get("operands") or []
    set_id = operands[0].get(_REFERENCE_SET) if operands and isinstance(operands[0], dict) else None
    if set_id not in sets:
        return  # not a reference set (#8's) or undeclared (#12's)
    key = str(node.get("expectedKey"))
    seen: set[str] = set()
    for m, member in enumerate(sets[set_id].get("members") or []):
        path = _member_path(set_id, m, key)
        if key not in member:
            raise StructuralFailure(
                _MALFORMED, path, f'referenceSet "{set_id}" has a member carrying no expectedKey "{key}" (AD-4)'
            )
        digest = digest_artifact(member[key])
        if digest in seen:
            raise StructuralFailure(_MALFORMED, path, f'referenceSet "{set_id}" repeats expectedKey "{key}" for covers-by-key (AD-4)')
        seen.add(digest)


def _check_membership_set(operand: Json, path: str, sets: dict[str, Json]) -> None:
    """set-membership reads a reference set by its one declared key, on every member."""
    set_id = operand.get(_REFERENCE_SET)
    if set_id not in sets:
        return
    keys = sets[set_id].get("keys") or []
    if len(keys) != 1:
        raise StructuralFailure(
            _MALFORMED, path, f'referenceSet "{set_id}" declares {len(keys)} keys, and set-membership reads exactly one (AD-4, AD-26)'
        )
    for m, member in enumerate(sets[set_id].get("members") or []):
        if keys[0] not in member:
            raise StructuralFailure(
                _MALFORMED,
                _member_path(set_id, m, keys[0]),
                f'referenceSet "{set_id}" has a member carrying no key "{keys[0]}", which set-membership reads (AD-4, AD-26)',
            )


def check_operand_legality(contract: Json) -> None:
    """#8: operand kinds per position; ``ordering`` over ``call-inputs``; the reference sets that
    ``set-membership`` (exactly one key, on every member) and ``covers-by-key`` (``expectedKey`` on
    every member, values distinct by digest) read. Unresolved set ids are left to #12."""
    sets = _reference_sets(contract)
    for site in expression_sites(contract):
        covered: set[int] = set()
        for visit in iter_operands(site.expression, site.path):
            op = visit.owner.get("op")
            if op == "covers-by-key" and id(visit.owner) not in covered:
                covered.add(id(visit.owner))
                _check_covers_set(visit.owner, sets)
            kind = _kind(visit.operand)
            if visit.position is None:  # a quantifier's collection
                if kind != _POINTER:
                    raise StructuralFailure(_MALFORMED, visit.path, f'"{op}" does not accept a {kind} operand at position collection (AD-4, AD-26)')
                continue
            allowed = OPERAND_KINDS.get(str(op), ())
            if visit.position >= len(allowed) or kind not in allowed[visit.position]:
                raise StructuralFailure(
                    _MALFORMED, visit.path, f'"{op}" does not accept a {kind} operand at position {visit.position} (AD-4, AD-26)'
                )
            if op == "ordering" and kind == _POINTER and not visit.operand[_POINTER].startswith("@"):
                target = parse_interaction_pointer(visit.operand[_POINTER])
                if target is not None and target.channel == "call-inputs":
                    raise StructuralFailure(_MALFORMED, visit.path, '"ordering" accepts observed output only, never call-inputs (AD-4)')
            if op == "set-membership" and visit.position == 1:
                _check_membership_set(visit.operand, visit.path, sets)


_BACKREFERENCE = re.compile(r"\\(?:[1-9][0-9]*|k<[^>]+>)")
_LOOKBEHIND = re.compile(r"\(\?<[=!]")


def _escaped(pattern: str, index: int) -> bool:
    backslashes = 0
    while index - 1 - backslashes >= 0 and pattern[index - 1 - backslashes] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _top_level_alternation(pattern: str) -> bool:
    depth, in_class = 0, False
    for index, char in enumerate(pattern):
        if _escaped(pattern, index):
            continue
        if char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif in_class:
            continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
    return False


def regex_defect(pattern: str) -> str | None:
    """Why ``pattern`` is outside the oracle regex subset (§3.1 #9), or ``None``.

    In order: not a valid pattern; not anchored over the whole expression (no leading ``^``, no
    unescaped trailing ``$``, or a top-level ``|``); a backreference; a lookbehind. The last two
    are searched in the raw pattern text, as the reference does.
    """
    try:
        translated = re.sub(r"\(\?<([A-Za-z_][A-Za-z0-9_]*)>", r"(?P<\1>", pattern)
        re.compile(re.sub(r"\\k<([A-Za-z_][A-Za-z0-9_]*)>", r"(?P=\1)", translated))
    except (re.error, RecursionError, OverflowError):
        return "is not a syntactically valid ECMA-262 pattern"
    if not pattern.startswith("^") or not pattern.endswith("$") or _escaped(pattern, len(pattern) - 1):
        return "is not anchored over the whole expression"
    if _top_level_alternation(pattern):
        return "is not anchored over the whole expression"
    if _BACKREFERENCE.search(pattern):
        return "carries a backreference"
    if _LOOKBEHIND.search(pattern):
        return "carries a lookbehind"
    return None


def check_regex_constructs(contract: Json) -> None:
    """#9: every ``regex`` pattern is valid, anchored, and free of the refused constructs."""
    for site in expression_sites(contract):
        for visit in iter_expressions(site.expression, site.path):
            if visit.node.get("op") == "regex":
                pattern = visit.node.get("pattern")
                defect = regex_defect(pattern) if isinstance(pattern, str) else "is not a string"
                if defect is not None:
                    raise StructuralFailure(
                        _MALFORMED, f"{visit.path}.pattern", f'regex pattern "{pattern}" {defect}, a rejected construct (AD-4)'
                    )


#: Declared types a quantifier may not range over (everything but ``array``).
_NON_ARRAY_TYPES = frozenset({"string", "number", "boolean", "object", "null"})


def check_quantifier_over_non_collection(contract: Json) -> None:
    """#10 ``quantifier-over-non-collection``: a quantifier's collection (after ``@`` substitution)
    reads the operation's described channel one key deep, and that key is declared a non-array.
    The declared type wins over any collection location that contradicts it."""
    for site in expression_sites(contract):
        for visit in iter_expressions(site.expression, site.path):
            if visit.node.get("op") not in QUANTIFIERS:
                continue
            pointer = (visit.node.get("collection") or {}).get("pointer")
            resolved = substitute_bound(pointer, visit.enclosing) if isinstance(pointer, str) else None
            target = None if resolved is None else parse_interaction_pointer(resolved)
            if target is None or len(target.tail) != 1:
                continue
            operation = site.operation_for(target.step_id)
            if operation is None:
                continue
            described = target.channel == operation.descriptor_channel and (
                target.channel != "artifact" or target.artifact_id == operation.descriptor_artifact
            )
            declared = (operation.response_descriptor.get("types") or {}).get(target.tail[0])
            if described and declared in _NON_ARRAY_TYPES:
                raise StructuralFailure(
                    "quantifier-over-non-collection",
                    f"{visit.path}.collection",
                    f'"{resolved}" is declared "{declared}" by operation "{operation.operation_id}", not a collection (AD-4)',
                )


def check_quantifier_nesting(contract: Json) -> None:
    """#11 ``quantifier-nesting-exceeded``: a quantifier, or a ``covers-by-key``, inside a
    quantifier's predicate."""
    for site in expression_sites(contract):
        for visit in iter_expressions(site.expression, site.path):
            op = visit.node.get("op")
            if visit.enclosing and op in QUANTIFIERS:
                raise StructuralFailure(
                    "quantifier-nesting-exceeded",
                    visit.path,
                    "a quantifier appears inside another quantifier's predicate; quantifiers may not nest more than one level (AD-4)",
                )
            if visit.enclosing and op == "covers-by-key":
                raise StructuralFailure(
                    "quantifier-nesting-exceeded",
                    visit.path,
                    "covers-by-key appears inside a quantifier's predicate, where it may never nest (AD-4)",
                )


def check_reference_set_resolution(contract: Json) -> None:
    """#12 ``unresolved-reference-set``: a ``{referenceSet}`` operand, in an oracle check or a
    witness relation, names an id ``referenceSets`` does not declare."""
    sets = _reference_sets(contract)
    for site in expression_sites(contract):
        for visit in iter_operands(site.expression, site.path):
            set_id = visit.operand.get(_REFERENCE_SET)
            if _REFERENCE_SET in visit.operand and set_id not in sets:
                raise StructuralFailure(
                    "unresolved-reference-set", visit.path, f'referenceSet "{set_id}" is not declared on the contract (AD-26)'
                )
