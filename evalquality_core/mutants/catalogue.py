"""The operator catalogue as data: each operator's name (what ``--operators`` takes), its
``mutatorName`` in the mutation-testing report, and what it does.

Kept apart from :mod:`.operators` (which needs libcst, about 0.12 s to import) so the CLI can show
and check operator names without loading libcst: every ``eval-quality`` call builds the ``mutants
generate`` help from this table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Operator:
    """One row of the catalogue."""

    name: str
    mutator_name: str
    does: str


#: The catalogue, in report order. Names are the ``--operators`` vocabulary.
CATALOGUE: tuple[Operator, ...] = (
    Operator("arithmetic", "ArithmeticOperator", "+ <-> -, * <-> /, // -> /, % -> *, ** -> * (also in augmented assignments)"),
    Operator("comparison", "EqualityOperator", "== <-> !=, < <-> <=, > <-> >=, is <-> is not, in <-> not in"),
    Operator("boolean", "LogicalOperator", "and <-> or; `not x` -> `x`"),
    Operator("constant", "BooleanLiteral", "True <-> False"),
    Operator("number", "NumberLiteral", "an integer or float literal n -> n + 1"),
    Operator("string", "StringLiteral", "a string literal s -> 'XX' + s + 'XX' (docstrings excepted)"),
    Operator("return-value", "ReturnValue", "`return x` -> `return None`"),
    Operator("statement-deletion", "StatementDeletion", "a call statement or augmented assignment -> `pass`"),
    Operator("assignment", "AssignmentValue", "`x = value` -> `x = None`"),
    Operator("condition", "ConditionalExpression", "the test of an if, while or conditional expression -> True, and -> False"),
    Operator("loop", "ZeroIterationLoop", "`for x in xs` -> `for x in []`"),
    Operator("break-continue", "BreakContinue", "break <-> continue"),
)
OPERATOR_NAMES: tuple[str, ...] = tuple(operator.name for operator in CATALOGUE)
MUTATOR_NAMES: dict[str, str] = {operator.name: operator.mutator_name for operator in CATALOGUE}


class UnknownOperator(ValueError):
    """An ``--operators`` name the catalogue does not hold (the message lists the known ones)."""


def parse_operator_names(names: Sequence[str] | None) -> tuple[str, ...]:
    """The operators asked for (default: the whole catalogue, in catalogue order); refuses an unknown one."""
    if not names:
        return OPERATOR_NAMES
    unknown = sorted(set(names) - set(OPERATOR_NAMES))
    if unknown:
        raise UnknownOperator(f"unknown operator(s) {', '.join(unknown)}; known: {', '.join(OPERATOR_NAMES)}")
    return tuple(name for name in OPERATOR_NAMES if name in set(names))
