"""The temporal clause and the plan's scripting bound (artifacts.md §3.1 #19, #20; AD-39).

``after`` is one level deep only: a step may follow a step that follows nothing. The scripting bound
keeps a plan small enough that an evaluator cannot be handed a script: reasons are tried in the
order of §3.1 #20 and the first that matches is reported. Edges to steps that do not resolve
(undeclared, or declared twice) are ignored, as AD-39 makes a dangling ``after`` permissive.
"""

from __future__ import annotations

from evalquality_core.compile.plan_index import Json, PlanIndex
from evalquality_core.faults import StructuralFailure

#: The bound's limits (§3.1 #20).
MAX_ANCHORED_PER_STEP = 2
MAX_MULTI_ANCHOR_STEPS = 2
MAX_PAIR_COMPONENTS = 4
MAX_STEPS = 16


def check_nested_temporal_clause(contract: Json) -> None:
    """#19 ``nested-temporal-clause``: a step's ``after`` names a step that itself has a resolvable ``after``."""
    index = PlanIndex(contract)
    for step in contract.get("interactionPlan") or []:
        anchor = index.step(step.get("after")) if step.get("after") is not None else None
        if anchor is not None and anchor.get("after") is not None and index.step(anchor["after"]) is not None:
            raise StructuralFailure(
                "nested-temporal-clause",
                f"EvalContract.interactionPlan[stepId={step.get('stepId')}].after",
                f'names step "{anchor.get("stepId")}", which itself carries a temporal clause; a chain may not nest '
                "more than one level (AD-39)",
            )


def _plan_metrics(contract: Json) -> tuple[bool, int, int, int, int]:
    """(nested chain?, widest anchor, anchors of two or more, two-step components, step count).

    Steps are counted by position, not id: ids may repeat in a valid document, and two steps sharing
    an id are still two steps (a repeated id simply resolves as no anchor).
    """
    steps = list(contract.get("interactionPlan") or [])
    index = PlanIndex(contract)
    position = {id(step): k for k, step in enumerate(steps)}

    def parent(step: Json) -> Json | None:
        after = step.get("after")
        return None if after is None else index.step(after)

    nested = False
    children: dict[int, int] = {}
    adjacency: dict[int, set[int]] = {k: set() for k in range(len(steps))}
    for k, step in enumerate(steps):
        anchor = parent(step)
        if anchor is None:
            continue
        nested = nested or parent(anchor) is not None
        p = position[id(anchor)]
        children[p] = children.get(p, 0) + 1
        adjacency[k].add(p)
        adjacency[p].add(k)
    pairs, seen = 0, set()
    for k in range(len(steps)):
        if k in seen:
            continue
        size, stack = 0, [k]
        seen.add(k)
        while stack:
            node = stack.pop()
            size += 1
            for neighbour in adjacency[node] - seen:
                seen.add(neighbour)
                stack.append(neighbour)
        pairs += size == 2
    widest = max(children.values(), default=0)
    shared = sum(1 for n in children.values() if n >= 2)
    return nested, widest, shared, pairs, len(steps)


def check_scripting_bound(contract: Json) -> None:
    """#20 ``plan-exceeds-scripting-bound`` at ``EvalContract.interactionPlan``, first reason of: a
    nested chain; a step anchoring more than 2 steps; more than 2 steps anchoring 2 or more; more
    than 4 two-step components; more than 16 steps. A metric exactly at its bound is legal."""
    nested, widest, shared, pairs, count = _plan_metrics(contract)
    if nested:
        reason = "its deepest temporal chain exceeds the one-level bound"
    elif widest > MAX_ANCHORED_PER_STEP:
        reason = f"one step anchors {widest} other steps, past the width bound of {MAX_ANCHORED_PER_STEP}"
    elif shared > MAX_MULTI_ANCHOR_STEPS:
        reason = f"{shared} steps each anchor more than one other step, past the bound of {MAX_MULTI_ANCHOR_STEPS}"
    elif pairs > MAX_PAIR_COMPONENTS:
        reason = f"{pairs} mutually disjoint two-step pairs appear in one plan, past the bound of {MAX_PAIR_COMPONENTS}"
    elif count > MAX_STEPS:
        reason = f"the plan declares {count} steps, past the bound of {MAX_STEPS}"
    else:
        return
    raise StructuralFailure("plan-exceeds-scripting-bound", "EvalContract.interactionPlan", f"{reason} (AD-39)")
