"""Walking Expression trees (artifacts.md §2.3): nodes, leaf operands, and their paths.

A connective's operands are expressions; an operator's operands are leaf operands (``pointer``,
``literal`` or ``referenceSet``); a quantifier has a ``collection`` operand and a ``predicate``.
Each visit carries the quantifiers it sits inside (innermost last), which is what the bound-element,
nesting and alignment checks need. Paths read ``…check.operands[1].predicate.operands[0]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from evalquality_core.registries import CONNECTIVES, QUANTIFIERS

Json = dict[str, Any]


@dataclass(frozen=True)
class ExpressionVisit:
    """One expression node, where it is, and the quantifier nodes whose predicate holds it."""

    node: Json
    path: str
    enclosing: tuple[Json, ...]


@dataclass(frozen=True)
class OperandVisit:
    """One leaf operand of an operator (or a quantifier's collection) with its owner and position."""

    operand: Json
    path: str
    owner: Json
    position: int | None  # index in ``operands``; None for a quantifier's collection
    enclosing: tuple[Json, ...]


def is_expression(value: Any) -> bool:
    """True for an expression node (an object with an ``op``)."""
    return isinstance(value, dict) and "op" in value


def iter_expressions(expr: Any, path: str, enclosing: tuple[Json, ...] = ()) -> Iterator[ExpressionVisit]:
    """Every expression node, depth first, parents before children."""
    if not is_expression(expr):
        return
    yield ExpressionVisit(expr, path, enclosing)
    op = expr.get("op")
    if op in QUANTIFIERS:
        yield from iter_expressions(expr.get("predicate"), f"{path}.predicate", (*enclosing, expr))
    elif op in CONNECTIVES:
        for i, child in enumerate(expr.get("operands") or []):
            yield from iter_expressions(child, f"{path}.operands[{i}]", enclosing)


def iter_operands(expr: Any, path: str) -> Iterator[OperandVisit]:
    """Every leaf operand (and quantifier collection) in the tree, in document order."""
    for visit in iter_expressions(expr, path):
        node = visit.node
        op = node.get("op")
        if op in QUANTIFIERS:
            collection = node.get("collection")
            if isinstance(collection, dict):
                yield OperandVisit(collection, f"{visit.path}.collection", node, None, visit.enclosing)
        elif op not in CONNECTIVES:
            for i, operand in enumerate(node.get("operands") or []):
                if isinstance(operand, dict):
                    yield OperandVisit(operand, f"{visit.path}.operands[{i}]", node, i, visit.enclosing)


def iter_pointers(expr: Any, path: str) -> Iterator[OperandVisit]:
    """Every pointer operand in the tree."""
    for visit in iter_operands(expr, path):
        if isinstance(visit.operand.get("pointer"), str):
            yield visit


def substitute_bound(pointer: str, enclosing: tuple[Json, ...]) -> str | None:
    """Replace a leading ``@`` by the innermost enclosing quantifier's collection pointer (``@/``
    alone becomes that pointer itself).

    Applied repeatedly, so a collection that is itself ``@…`` resolves through its own enclosing
    quantifier. ``None`` when there is no quantifier (or no pointer collection) to bind to.
    """
    stack = list(enclosing)
    while pointer.startswith("@"):
        if not stack:
            return None
        quantifier = stack.pop()
        collection = quantifier.get("collection") or {}
        base = collection.get("pointer")
        if not isinstance(base, str):
            return None
        # A bare "@/" is the bound element itself, i.e. the collection pointer; a longer tail
        # stays RFC 6901-encoded and is appended.
        pointer = base if pointer == "@/" else base + pointer[1:]
    return pointer


def oracle_checks(contract: Json) -> Iterator[tuple[Json, Json, str]]:
    """``(oracle, check, path)`` for every oracle whose check is not null, in contract order."""
    for oracle in contract.get("oracles") or []:
        check = oracle.get("check")
        if is_expression(check):
            yield oracle, check, f"EvalContract.oracles[id={oracle.get('id')}].check"


def witness_relations(contract: Json) -> Iterator[tuple[int, int, Json, Json, str]]:
    """``(i, j, operation, relation, path)`` for every sensitivity witness relation."""
    for i, interface in enumerate(contract.get("permittedInterfaces") or []):
        for j, operation in enumerate(interface.get("operations") or []):
            witness = operation.get("sensitivityWitness")
            if isinstance(witness, dict) and is_expression(witness.get("relation")):
                path = f"EvalContract.permittedInterfaces[{i}].operations[{j}].sensitivityWitness.relation"
                yield i, j, operation, witness["relation"], path
