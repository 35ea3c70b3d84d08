"""Captured input bindings (artifacts.md §3.1 #6, #21, #22; §3.2 "captured bindings").

A ``{captured: pointer}`` binding feeds a step an earlier step's observed value. Check #6 asks that
the captured value has a declared scalar type equal to the bound parameter's; #21 that no capture
edge lies on a cycle of capture ∪ ``after`` edges (AD-39); #22 that a capture reads the referenced
operation's descriptor channel only. Captures are visited in plan order, channels in input order,
keys in UTF-16 order, so which one a failure names never depends on map insertion order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from evalquality_core.compile.plan_index import Json, PlanIndex, bound_entries, declared_keys
from evalquality_core.compile.pointers import ARRAY_INDEX_RE, EvidenceTarget, parse_interaction_pointer
from evalquality_core.compile.reachability import SCALAR_TYPES, operation_reason
from evalquality_core.faults import StructuralFailure


@dataclass(frozen=True)
class Capture:
    """One captured binding of a step."""

    step: Json
    channel: str
    key: str
    pointer: str
    target: EvidenceTarget | None

    @property
    def path(self) -> str:
        """``EvalContract.interactionPlan[stepId=S].inputBinding.<channel>["<key>"]``."""
        key = json.dumps(self.key, ensure_ascii=False)
        return f"EvalContract.interactionPlan[stepId={self.step.get('stepId')}].inputBinding.{self.channel}[{key}]"


def captures_of(step: Json) -> list[Capture]:
    """Every captured binding one step declares."""
    found = []
    for channel, key, value in bound_entries(step):
        if isinstance(value, dict) and isinstance(value.get("captured"), str):
            pointer = value["captured"]
            found.append(Capture(step, channel, key, pointer, parse_interaction_pointer(pointer)))
    return found


def _captured_type(target: EvidenceTarget, descriptor: Json, operation_id: str) -> tuple[str | None, str]:
    """The scalar type a captured pointer resolves to, or ``(None, why not)``."""
    channel = target.channel
    if len(target.tail) != 1:
        depth = len(target.tail)
        where = f"the whole {channel}" if depth == 0 else f"a {channel} path {depth} segments deep"
        return None, f"addresses {where}, which declares no scalar to capture"
    key = target.tail[0]
    if ARRAY_INDEX_RE.match(key):
        return None, f"addresses {channel} element {key}, which no declaration gives a type"
    types = descriptor.get("types") or {}
    if key not in types or types[key] is None:
        how = "does not declare" if key not in types else "declares indeterminate"
        return None, f'addresses {channel} field "{key}", whose type operation "{operation_id}" {how}'
    if types[key] not in SCALAR_TYPES:
        return None, f'addresses {channel} field "{key}", which operation "{operation_id}" declares "{types[key]}" rather than a scalar'
    return types[key], ""


def check_captured_reachability(contract: Json) -> None:
    """#6 ``unreachable-check-evidence`` over captured pointers (§3.2, last paragraph).

    The referenced step and operation must resolve; a capture on the descriptor channel must be
    reachable, name exactly one non-index key whose declared type is a scalar, and that type must
    equal the bound parameter's declared type. A bound key the binding step's operation does not
    declare is left to the strict-only #14; an undeclared or ``null`` type on a declared bound key
    fails closed. A capture on another channel is left to #22.
    """
    index = PlanIndex(contract)
    for step in contract.get("interactionPlan") or []:
        for capture in captures_of(step):
            pointer, target = capture.pointer, capture.target
            if target is None:
                raise StructuralFailure(
                    "unreachable-check-evidence", capture.path, f'captured pointer "{pointer}" is not an interaction-rooted pointer'
                )
            referenced = index.step(target.step_id)
            if referenced is None:
                raise StructuralFailure(
                    "unreachable-check-evidence",
                    capture.path,
                    f'captured pointer "{pointer}" names a step the interaction plan does not declare',
                )
            operation = index.operation_for_step(referenced)
            if operation is None:
                raise StructuralFailure(
                    "unreachable-check-evidence",
                    capture.path,
                    f'captured pointer "{pointer}" names step "{target.step_id}", which names operation '
                    f'"{referenced.get("operationId")}", not declared by any permitted interface',
                )
            if target.channel != operation.descriptor_channel:
                continue  # check #22's defect
            reason = operation_reason(target, operation)
            if reason is not None:
                raise StructuralFailure("unreachable-check-evidence", capture.path, f'captured pointer "{pointer}" {reason}')
            captured, why = _captured_type(target, operation.response_descriptor, operation.operation_id)
            if captured is None:
                raise StructuralFailure("unreachable-check-evidence", capture.path, f'captured pointer "{pointer}" {why}')
            own = index.operation_for_step(step)
            shape = None if own is None else own.request_shape(capture.channel)
            if shape is None or capture.key not in declared_keys(shape):
                continue
            types = shape.get("types") or {}
            bound = types.get(capture.key)
            if bound is None:
                how = "does not declare" if capture.key not in types else "declares indeterminate"
                raise StructuralFailure(
                    "unreachable-check-evidence",
                    capture.path,
                    f'captured pointer "{pointer}" resolves to a declared "{captured}", but the step binds '
                    f'{capture.channel} parameter "{capture.key}", whose type operation "{own.operation_id if own else ""}" '
                    f"{how}, so no type equality is decidable",
                )
            if bound != captured:
                raise StructuralFailure(
                    "unreachable-check-evidence",
                    capture.path,
                    f'captured pointer "{pointer}" resolves to a declared "{captured}", which is not the '
                    f'"{bound}" the bound {capture.channel} parameter "{capture.key}" is declared as',
                )


def _components(nodes: list[str], edges: dict[str, list[str]]) -> dict[str, int]:
    """Strongly connected components (iterative Tarjan): node → component number."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    component: dict[str, int] = {}
    counter = 0
    for root in nodes:
        if root in order:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child_index = work.pop()
            if child_index == 0:
                order[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = edges.get(node, [])
            if child_index < len(children):
                work.append((node, child_index + 1))
                child = children[child_index]
                if child not in order:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], order[child])
                continue
            if low[node] == order[node]:
                number = len(set(component.values()))
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component[member] = number
                    if member == node:
                        break
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return component


def check_binding_cycle(contract: Json) -> None:
    """#21 ``binding-cycle``: a capture edge whose two steps share a strongly connected component.

    Nodes are the declared step ids; edges run from a step to the step it captures from and to the
    step its ``after`` names; edges to undeclared steps are dropped. A pure ``after`` cycle is #19's.
    """
    steps = contract.get("interactionPlan") or []
    declared = [step.get("stepId") for step in steps]
    known = set(declared)
    edges: dict[str, list[str]] = {}
    for step in steps:
        for capture in captures_of(step):
            if capture.target is not None and capture.target.step_id in known:
                edges.setdefault(step.get("stepId"), []).append(capture.target.step_id)
        after = step.get("after")
        if after is not None and after in known:
            edges.setdefault(step.get("stepId"), []).append(after)
    component = _components(list(dict.fromkeys(declared)), edges)
    for step in steps:
        for capture in captures_of(step):
            if capture.target is None or capture.target.step_id not in known:
                continue
            if component.get(step.get("stepId")) == component.get(capture.target.step_id):
                raise StructuralFailure(
                    "binding-cycle",
                    capture.path,
                    f'captured pointer "{capture.pointer}" closes a cycle over the capture and temporal-clause '
                    "edges; a captured value has no earlier step to resolve from (AD-39)",
                )


def check_captured_channel(contract: Json) -> None:
    """#22 ``captured-channel-undeclared``: a capture reading another channel than the referenced
    operation's descriptor channel (``response-body`` when the operation does not resolve)."""
    index = PlanIndex(contract)
    for step in contract.get("interactionPlan") or []:
        for capture in captures_of(step):
            if capture.target is None:
                continue
            operation = index.operation_of_step(capture.target.step_id)
            capturable = "response-body" if operation is None else operation.descriptor_channel
            if capture.target.channel == capturable:
                continue
            raise StructuralFailure(
                "captured-channel-undeclared",
                capture.path,
                f'captured pointer "{capture.pointer}" names the {capture.target.channel} channel, which the '
                "referenced operation's response descriptor does not declare (AD-26)",
            )
