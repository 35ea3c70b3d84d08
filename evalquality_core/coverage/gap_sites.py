"""Which operation (or sibling group) is behind a coverage gap: the sites ``eval-quality explain`` names.

The emitted gap record carries no site (scoring.md §6: "the reasons exist for diagnostics only"), so this
is diagnostics. Every operation rule (all but ``sibling-cross-check``) is a conjunction over operations
(§6.1 "Sites and iteration"), so an operation is behind a gap exactly when the rule, evaluated over that
one operation (the plan, the oracles and the other operations left as they are, so a read-back step
still finds its read operation), is relevant and unsatisfied. ``sibling-cross-check`` reads only
``siblingGroups``, so its site is the groups. An operation is named the way its interface calls it:
``<operationId> (<METHOD> <pathTemplate>)``, ``<operationId> (tool <toolName>)`` or
``<operationId> (command <executable> <subcommand …>)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from evalquality_core.artifacts.base import to_wire
from evalquality_core.coverage.rules import COVERAGE_RULES, CoverageContext, Operation, coverage_context

__all__ = ["describe_operation", "gap_sites"]

#: The rules that read no operation (their site is the contract's ``siblingGroups``).
CONTRACT_LEVEL_RULES: frozenset[str] = frozenset({"sibling-cross-check"})


def describe_operation(operation: Operation) -> str:
    """``<operationId> (<how the interface calls it>)``, as a user reads it off the contract."""
    wire = operation.wire
    if "toolName" in wire:
        how = f"tool {wire['toolName']}"
    elif "invocation" in wire:
        invocation = wire["invocation"]
        how = "command " + " ".join([invocation["executable"], *invocation["subcommandPath"]])
    else:
        how = f"{wire['method']} {wire['pathTemplate']}"
    return f"{operation.operation_id} ({how}, interface {operation.interface_id})"


def _sibling_site(ctx: CoverageContext) -> list[str]:
    groups = ctx.contract.get("siblingGroups")
    if groups is None:
        return ["siblingGroups is null (declare the groups, or {\"operations\": [], \"parameters\": []} for none)"]
    sites = []
    for group in groups.get("operations") or []:
        names = [member if isinstance(member, str) else member["operationId"] for member in group]
        sites.append("operation group " + ", ".join(names))
    for group in groups.get("parameters") or []:
        sites.append("parameter group " + ", ".join(group))
    return sites


def gap_sites(contract: Any, rule_id: str) -> list[str]:
    """The sites behind ``rule_id``'s gap in ``contract`` (model or wire), described; ``[]`` when it has none.

    An unknown rule is a ``KeyError``."""
    rule = {row.id: row for row in COVERAGE_RULES}[rule_id]
    wire: Mapping[str, Any] = contract if isinstance(contract, Mapping) else to_wire(contract)
    ctx = coverage_context(wire)
    if rule_id in CONTRACT_LEVEL_RULES:
        return _sibling_site(ctx) if rule.relevance(ctx) and not rule.satisfaction(ctx) else []
    if not ctx.operations:
        return ["the contract declares no operation"]
    sites = []
    for operation in ctx.operations:
        alone = replace(ctx, operations=(operation,))
        if rule.relevance(alone) and not rule.satisfaction(alone):
            sites.append(describe_operation(operation))
    return sites
