"""Expression legality (artifacts.md §2.3, §3.1 #8–#12).

#8 operand kinds per position (the table of §2.3) and the reference-set shape an operator needs;
#9 the regular-expression subset an oracle may use (anchored, no top-level alternation, no
backreference, no lookbehind); #10 a quantifier over a declared non-array; #11 quantifier nesting;
#12 reference-set resolution. ECMA-262 validity (#9) is approximated by compiling with Python's
``re`` after rewriting ``(?<name>`` to ``(?P<name>``: the two grammars agree on every construct the
other #9 rules leave legal except a few escapes, which we accept as the simplest reading.
"""

from __future__ import annotations

import re

from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.compile.check_tree import (
    iter_expressions,
    iter_operands,
    oracle_checks,
    substitute_bound,
    witness_relations,
)
from evalquality_core.compile.plan_index import Json, PlanIndex
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


def _kind(operand: Json) -> str | None:
    kinds = [k for k in (_POINTER, _LITERAL, _REFERENCE_SET) if k in operand]
    return kinds[0] if len(kinds) == 1 else None


def _reference_sets(contract: Json) -> dict[str, Json]:
    sets = contract.get("referenceSets")
    return sets if isinstance(sets, dict) else {}


def check_operand_legality(contract: Json) -> None:
    """#8: operand kinds per position; ``ordering`` over ``call-inputs``; the reference sets that
    ``set-membership`` (exactly one key, on every member) and ``covers-by-key`` (``expectedKey`` on
    every member, values distinct by digest) read. Unresolved set ids are left to #12."""
    sets = _reference_sets(contract)
    for _, check, path in oracle_checks(contract):
        for visit in iter_operands(check, path):
            op = visit.owner.get("op")
            kind = _kind(visit.operand)
            if visit.position is None:  # a quantifier's collection
                if kind != _POINTER:
                    raise StructuralFailure(_MALFORMED, visit.path, f"the collection of {op} must be a pointer, not {kind}")
                continue
            allowed = OPERAND_KINDS.get(str(op), ())
            if visit.position >= len(allowed) or kind not in allowed[visit.position]:
                raise StructuralFailure(
                    _MALFORMED, visit.path, f"{op} does not accept a {kind} operand at position {visit.position}"
                )
            if op == "ordering" and kind == _POINTER:
                target = parse_interaction_pointer(visit.operand[_POINTER])
                if target is not None and target.channel == "call-inputs":
                    raise StructuralFailure(_MALFORMED, visit.path, "ordering cannot read a call-inputs pointer")
            set_id = visit.operand.get(_REFERENCE_SET)
            if kind != _REFERENCE_SET or set_id not in sets:
                continue
            members = sets[set_id].get("members") or []
            if op == "set-membership":
                keys = sets[set_id].get("keys") or []
                if len(keys) != 1:
                    raise StructuralFailure(
                        _MALFORMED, visit.path, f'set-membership reads reference set "{set_id}", which declares {len(keys)} keys, not 1'
                    )
                for m, member in enumerate(members):
                    if keys[0] not in member:
                        raise StructuralFailure(
                            _MALFORMED, visit.path, f'member {m} of reference set "{set_id}" lacks its key "{keys[0]}"'
                        )
            if op == "covers-by-key":
                expected_key = visit.owner.get("expectedKey")
                seen: set[str] = set()
                for m, member in enumerate(members):
                    if expected_key not in member:
                        raise StructuralFailure(
                            _MALFORMED, visit.path, f'member {m} of reference set "{set_id}" lacks expectedKey "{expected_key}"'
                        )
                    digest = digest_artifact(member[expected_key])
                    if digest in seen:
                        raise StructuralFailure(
                            _MALFORMED, visit.path, f'reference set "{set_id}" repeats an expectedKey "{expected_key}" value at member {m}'
                        )
                    seen.add(digest)


def regex_defect(pattern: str) -> str | None:
    """Why ``pattern`` is outside the oracle regex subset (§3.1 #9), or ``None``."""
    if not pattern.startswith("^"):
        return "does not start with ^"
    body = pattern[1:-1] if len(pattern) >= 2 else ""
    escapes = len(body) - len(body.rstrip("\\"))  # an odd run of backslashes escapes the $
    if len(pattern) < 2 or not pattern.endswith("$") or escapes % 2 == 1:
        return "does not end with an unescaped $"
    depth, in_class, i = 0, False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            following = pattern[i + 1 : i + 2]
            if not in_class and (following in tuple("123456789") or pattern.startswith("k<", i + 1)):
                return "uses a backreference"
            i += 2
            continue
        if in_class:
            if char == "]":
                in_class = False
        elif char == "[":
            in_class = True
        elif char == "(":
            if pattern.startswith("(?<=", i) or pattern.startswith("(?<!", i):
                return "uses a lookbehind"
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return "has a top-level alternation"
        i += 1
    try:
        re.compile(re.sub(r"\(\?<([A-Za-z_][A-Za-z0-9_]*)>", r"(?P<\1>", pattern))
    except (re.error, RecursionError, OverflowError) as exc:
        return f"is not a valid regular expression ({exc})"
    return None


def check_regex_constructs(contract: Json) -> None:
    """#9: every ``regex`` pattern is anchored, valid, and free of the refused constructs."""
    for _, check, path in oracle_checks(contract):
        for visit in iter_expressions(check, path):
            if visit.node.get("op") == "regex":
                pattern = visit.node.get("pattern")
                defect = regex_defect(pattern) if isinstance(pattern, str) else "is not a string"
                if defect is not None:
                    raise StructuralFailure(_MALFORMED, f"{visit.path}.pattern", f"regex pattern {defect}")


_NON_ARRAY_TYPES = frozenset({"string", "number", "boolean", "object", "null"})


def check_quantifier_over_non_collection(contract: Json) -> None:
    """#10 ``quantifier-over-non-collection``: a quantifier's collection (after ``@`` substitution)
    reads the operation's descriptor channel one key deep, and that key is declared a non-array."""
    index = PlanIndex(contract)
    for _, check, path in oracle_checks(contract):
        for visit in iter_expressions(check, path):
            if visit.node.get("op") not in QUANTIFIERS:
                continue
            pointer = (visit.node.get("collection") or {}).get("pointer")
            if not isinstance(pointer, str):
                continue
            resolved = substitute_bound(pointer, visit.enclosing)
            target = None if resolved is None else parse_interaction_pointer(resolved)
            if target is None or len(target.tail) != 1:
                continue
            operation = index.operation_of_step(target.step_id)
            if operation is None:
                continue
            on_descriptor = target.channel == operation.descriptor_channel and (
                target.channel != "artifact" or target.artifact_id == operation.descriptor_artifact
            )
            declared = (operation.response_descriptor.get("types") or {}).get(target.tail[0])
            if on_descriptor and declared in _NON_ARRAY_TYPES:
                raise StructuralFailure(
                    "quantifier-over-non-collection",
                    f"{visit.path}.collection",
                    f'{visit.node.get("op")} ranges over "{resolved}", which the response descriptor declares "{declared}", not an array',
                )


def check_quantifier_nesting(contract: Json) -> None:
    """#11 ``quantifier-nesting-exceeded``: a quantifier, or a ``covers-by-key``, inside a
    quantifier's predicate."""
    for _, check, path in oracle_checks(contract):
        for visit in iter_expressions(check, path):
            op = visit.node.get("op")
            if visit.enclosing and (op in QUANTIFIERS or op == "covers-by-key"):
                raise StructuralFailure(
                    "quantifier-nesting-exceeded", visit.path, f"{op} stands inside the predicate of a quantifier"
                )


def check_reference_set_resolution(contract: Json) -> None:
    """#12 ``unresolved-reference-set``: a ``{referenceSet}`` operand, in an oracle check or a
    witness relation, names an id ``referenceSets`` does not declare."""
    sets = _reference_sets(contract)
    trees = [(check, path) for _, check, path in oracle_checks(contract)]
    trees += [(relation, path) for _, _, _, relation, path in witness_relations(contract)]
    for tree, path in trees:
        for visit in iter_operands(tree, path):
            set_id = visit.operand.get(_REFERENCE_SET)
            if _REFERENCE_SET in visit.operand and set_id not in sets:
                raise StructuralFailure(
                    "unresolved-reference-set", visit.path, f'reference set "{set_id}" is not declared in referenceSets'
                )
