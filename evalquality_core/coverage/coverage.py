"""``coverage_gaps(contract)``: one gap record per relevant, unsatisfied AD-20 rule (scoring.md §6).

A gap's severity is the highest severity among all the contract's behaviours (contract-level and
oracle-blind). Nothing here raises: a gap is data, and it never blocks compilation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalquality_core.artifacts.base import to_wire
from evalquality_core.coverage.rules import COVERAGE_RULES, coverage_context
from evalquality_core.registries import SEVERITIES, Severity


@dataclass(frozen=True)
class UnsatisfiedRule:
    """An unsatisfied rule as emitted on the evidence artifact."""

    rule: str
    relevance_predicate: str
    satisfaction_predicate: str
    satisfied: bool
    severity: Severity

    def to_wire(self) -> dict[str, Any]:
        """The emitted ``coverageGaps[]`` object."""
        return {
            "rule": self.rule,
            "relevancePredicate": self.relevance_predicate,
            "satisfactionPredicate": self.satisfaction_predicate,
            "satisfied": self.satisfied,
            "severity": self.severity,
        }


def _wire(contract: Any) -> Mapping[str, Any]:
    return contract if isinstance(contract, Mapping) else to_wire(contract)


def highest_severity(contract: Any) -> Severity:
    """The highest behaviour severity of a contract (``low`` if it somehow declares none)."""
    levels = [SEVERITIES.index(b["severity"]) for b in _wire(contract)["behaviors"]]
    return SEVERITIES[max(levels)] if levels else "low"


def coverage_gaps(contract: Any) -> list[UnsatisfiedRule]:
    """Evaluate the seven rules in order over a contract (model or wire object)."""
    wire = _wire(contract)
    ctx = coverage_context(wire)
    severity = highest_severity(wire)
    return [
        UnsatisfiedRule(rule.id, rule.relevance_predicate, rule.satisfaction_predicate, False, severity)
        for rule in COVERAGE_RULES
        if rule.relevance(ctx) and not rule.satisfaction(ctx)
    ]
