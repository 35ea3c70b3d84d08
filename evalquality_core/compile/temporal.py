"""The temporal clause and the plan's scripting bound (artifacts.md §3.1 #19, #20; AD-39).

``after`` is one level deep only: a step may follow a step that follows nothing. The scripting bound
keeps a plan small enough that an evaluator cannot be handed a script: reasons are tried in the
order of §3.1 #20 and the first that matches is reported. Edges to steps that do not resolve
(undeclared, or declared twice) are ignored, as AD-39 makes a dangling ``after`` permissive.
"""

from __future__ import annotations

from collections import Counter

from evalquality_core.compile.plan_index import Json, PlanIndex
from evalquality_core.compile.strings import utf16_sorted
from evalquality_core.faults import StructuralFailure

#: The bound's limits (§3.1 #20).
MAX_ANCHORED_PER_STEP = 2
MAX_MULTI_ANCHOR_STEPS = 2
MAX_PAIR_COMPONENTS = 4
MAX_STEPS = 16


def _after_edges(contract: Json) -> list[tuple[str, str]]:
    index = PlanIndex(contract)
    edges = []
    for step in contract.get("interactionPlan") or []:
        after = step.get("after")
        if after is not None and index.step(after) is not None:
            edges.append((step.get("stepId"), after))
    return edges


def check_nested_temporal_clause(contract: Json) -> None:
    """#19 ``nested-temporal-clause``: a step's ``after`` names a step that itself has a resolvable ``after``."""
    index = PlanIndex(contract)
    for step in contract.get("interactionPlan") or []:
        anchor = index.step(step.get("after")) if step.get("after") is not None else None
        if anchor is not None and anchor.get("after") is not None and index.step(anchor["after"]) is not None:
            raise StructuralFailure(
                "nested-temporal-clause",
                f"EvalContract.interactionPlan[stepId={step.get('stepId')}].after",
                f'step "{step.get("stepId")}" comes after "{anchor.get("stepId")}", which itself comes after "{anchor["after"]}"',
            )


def _pair_components(step_ids: list[str], edges: list[tuple[str, str]]) -> int:
    parent = {step_id: step_id for step_id in step_ids}

    def find(node: str) -> str:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for a, b in edges:
        if a in parent and b in parent:
            parent[find(a)] = find(b)
    sizes = Counter(find(step_id) for step_id in step_ids)
    return sum(1 for size in sizes.values() if size == 2)


def check_scripting_bound(contract: Json) -> None:
    """#20 ``plan-exceeds-scripting-bound``: a nested chain; a step anchoring more than 2 steps;
    more than 2 steps anchoring 2 or more; more than 4 two-step components; more than 16 steps."""
    steps = contract.get("interactionPlan") or []
    edges = _after_edges(contract)
    anchored = {after for _, after in edges}
    for step_id, after in edges:
        if step_id in anchored:
            raise StructuralFailure(
                "plan-exceeds-scripting-bound",
                f"EvalContract.interactionPlan[stepId={step_id}].after",
                f'step "{step_id}" both anchors a step and comes after "{after}": a nested chain',
            )
    counts = Counter(after for _, after in edges)
    for anchor in utf16_sorted(counts):
        if counts[anchor] > MAX_ANCHORED_PER_STEP:
            raise StructuralFailure(
                "plan-exceeds-scripting-bound",
                f"EvalContract.interactionPlan[stepId={anchor}]",
                f'step "{anchor}" anchors {counts[anchor]} steps, more than {MAX_ANCHORED_PER_STEP}',
            )
    multi = [anchor for anchor, n in counts.items() if n >= 2]
    if len(multi) > MAX_MULTI_ANCHOR_STEPS:
        raise StructuralFailure(
            "plan-exceeds-scripting-bound",
            "EvalContract.interactionPlan",
            f"{len(multi)} steps each anchor two or more steps, more than {MAX_MULTI_ANCHOR_STEPS}",
        )
    step_ids = list(dict.fromkeys(step.get("stepId") for step in steps))
    pairs = _pair_components(step_ids, edges)
    if pairs > MAX_PAIR_COMPONENTS:
        raise StructuralFailure(
            "plan-exceeds-scripting-bound",
            "EvalContract.interactionPlan",
            f"{pairs} connected components of exactly two steps, more than {MAX_PAIR_COMPONENTS}",
        )
    if len(steps) > MAX_STEPS:
        raise StructuralFailure(
            "plan-exceeds-scripting-bound",
            "EvalContract.interactionPlan",
            f"{len(steps)} steps, more than {MAX_STEPS}",
        )
