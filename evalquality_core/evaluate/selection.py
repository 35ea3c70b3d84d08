"""Selection: which observation each plan step binds, and which steps an oracle addresses (scoring.md §2).

``select_plan(contract, observations)`` selects every plan step once per trial, tier by tier in binding
order (so captured values and ``after`` anchors are known before the steps that use them), and reduces
each step to at most one bound observation by its cardinality. ``select_for_oracle`` then lists the steps
an oracle's check addresses — in *plan declaration order*, not pointer order — and whether one of them is
ambiguous (``several`` under a single-valued cardinality → selector ambiguity, an infrastructure error).
Array position in the record is never read: candidates sort by ``sequence``, then ``observationId``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalquality_core.evaluate.bindings import (
    BindingOrder,
    CapturedKey,
    CapturedValue,
    binding_order,
    observation_satisfies_bindings,
)
from evalquality_core.evaluate.pointers import as_wire, channel_root, parse_evidence_pointer, walk
from evalquality_core.evaluate.resolution import step_operation

__all__ = [
    "OracleSelection",
    "PlanSelection",
    "SelectionCount",
    "StepSelection",
    "addressed_steps",
    "base_candidates",
    "select_for_oracle",
    "select_plan",
]

SelectionCount = Literal["none", "one", "several"]


def _count(n: int) -> SelectionCount:
    return "none" if n == 0 else "one" if n == 1 else "several"


@dataclass(frozen=True, slots=True)
class StepSelection:
    """The selection of one plan step in one trial.

    ``result`` counts ``matched_ids`` (the binding-aware matches, by sequence then id); ``bound`` is the
    one observation bound to the step (scoring.md §2.4) or None; ``ambiguous`` is ``several`` under a
    single-valued cardinality (then nothing is bound).
    """

    step_id: str
    cardinality: str
    result: SelectionCount
    matched_ids: tuple[str, ...]
    bound: Mapping[str, Any] | None
    ambiguous: bool

    @property
    def bound_id(self) -> str | None:
        """The bound observation's id, or None."""
        return None if self.bound is None else self.bound["observationId"]


@dataclass(frozen=True, slots=True)
class PlanSelection:
    """Every plan step's selection for one trial, in plan declaration order.

    ``bound`` maps every declared step id to its bound observation (or None) — the map a
    ``ResolutionContext`` reads. ``captured`` holds the resolved captured binding values.
    """

    steps: Mapping[str, StepSelection]
    bound: Mapping[str, Mapping[str, Any] | None]
    captured: Mapping[CapturedKey, CapturedValue]
    order: BindingOrder


@dataclass(frozen=True, slots=True)
class OracleSelection:
    """The steps an oracle addresses (plan order), their selections, and the selector-ambiguity flag."""

    addressed_step_ids: tuple[str, ...]
    selections: tuple[StepSelection, ...]
    selector_ambiguity: bool


def _sort_key(observation: Mapping[str, Any]) -> tuple[int, str]:
    return (observation["sequence"], observation["observationId"])


def base_candidates(
    step: Mapping[str, Any], observations: Iterable[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """scoring.md §2.1: observations of the step's operation, by ``sequence`` then ``observationId``.

    When both the step and an observation name an ``interfaceId`` (newest schemas), they must agree too.
    """
    interface_id = step.get("interfaceId")
    matches = [
        observation
        for observation in observations
        if observation["operationId"] == step["operationId"]
        and (interface_id is None or observation.get("interfaceId") in (None, interface_id))
    ]
    return sorted(matches, key=_sort_key)


def _reduce(step: Mapping[str, Any], matches: Sequence[Mapping[str, Any]]) -> StepSelection:
    """scoring.md §2.4: one → it; several under ``any`` → lowest sequence; several otherwise → ambiguous."""
    cardinality = step["cardinality"]
    result = _count(len(matches))
    ambiguous = result == "several" and cardinality != "any"
    bound = matches[0] if matches and not ambiguous else None
    return StepSelection(
        step_id=step["stepId"],
        cardinality=cardinality,
        result=result,
        matched_ids=tuple(observation["observationId"] for observation in matches),
        bound=bound,
        ambiguous=ambiguous,
    )


def _resolve_captured(
    step: Mapping[str, Any], selected: Mapping[str, StepSelection]
) -> dict[CapturedKey, CapturedValue]:
    """Resolve a step's captured bindings from the already-selected steps they point at (§2.3)."""
    values: dict[CapturedKey, CapturedValue] = {}
    for channel, channel_binding in (step.get("inputBinding") or {}).items():
        for key, binding in (channel_binding or {}).items():
            if "captured" not in binding:
                continue
            parsed = parse_evidence_pointer(binding["captured"])
            source = None if parsed is None else selected.get(parsed.step_id)
            if parsed is None or source is None or source.result == "none":
                value = CapturedValue("absent")
            elif source.ambiguous:
                value = CapturedValue("ambiguous")
            else:
                observation = source.bound
                assert observation is not None
                value = CapturedValue(
                    "resolved",
                    walk(channel_root(observation, parsed.channel, parsed.sub), parsed.tokens),
                    observation["observationId"],
                    observation["sequence"],
                )
            values[(step["stepId"], channel, key)] = value
    return values


def select_plan(contract: Any, observations: Iterable[Any]) -> PlanSelection:
    """Select every plan step of ``contract`` over one trial's ``observations`` (scoring.md §2.2–§2.4).

    ``contract`` is an ``EvalContract`` model or wire dict; ``observations`` are record observations
    (models or wire dicts). Steps left in a binding cycle (compile refuses those) select ``none``.
    """
    wire = as_wire(contract)
    plan: list[Mapping[str, Any]] = list(wire.get("interactionPlan") or [])
    steps_by_id = {step["stepId"]: step for step in plan}
    pool = [as_wire(observation) for observation in observations]
    order = binding_order(plan)
    selected: dict[str, StepSelection] = {}
    captured: dict[CapturedKey, CapturedValue] = {}
    for tier in order.tiers:
        for step_id in tier:
            step = steps_by_id[step_id]
            step_captured = _resolve_captured(step, selected)
            captured.update(step_captured)
            selected[step_id] = _select_step(wire, step, pool, selected, step_captured)
    for step_id in order.cyclic:
        step = steps_by_id[step_id]
        selected[step_id] = StepSelection(step_id, step["cardinality"], "none", (), None, False)
    steps = {step["stepId"]: selected[step["stepId"]] for step in plan}
    return PlanSelection(
        steps=steps,
        bound={step_id: selection.bound for step_id, selection in steps.items()},
        captured=captured,
        order=order,
    )


def _select_step(
    contract: Mapping[str, Any],
    step: Mapping[str, Any],
    pool: Sequence[Mapping[str, Any]],
    selected: Mapping[str, StepSelection],
    step_captured: Mapping[CapturedKey, CapturedValue],
) -> StepSelection:
    """Binding-aware selection of one step (scoring.md §2.2) then its reduction (§2.4)."""
    unsatisfiable = StepSelection(step["stepId"], step["cardinality"], "none", (), None, False)
    floor = 0
    anchor_id = step.get("after")
    if anchor_id is not None and anchor_id in selected:
        # A declared anchor reduced to one observation; none or ambiguous → this step selects none.
        anchor = selected[anchor_id]
        if anchor.bound is None:
            return unsatisfiable
        floor = anchor.bound["sequence"]
    # (A dangling `after` naming an undeclared step imposes no floor.)
    for value in step_captured.values():
        if value.status != "resolved":
            return unsatisfiable
        assert value.sequence is not None
        floor = max(floor, value.sequence)
    operation = step_operation(contract, step)
    matches = [
        observation
        for observation in base_candidates(step, pool)
        if observation["sequence"] > floor
        and observation_satisfies_bindings(observation, step, operation, step_captured)
    ]
    return _reduce(step, matches)


def _collect_pointers(node: Mapping[str, Any], out: list[str]) -> None:
    if node["op"] in ("for-all", "for-any"):
        pointer = node["collection"].get("pointer")
        if pointer is not None:
            out.append(pointer)
        _collect_pointers(node["predicate"], out)
        return
    for operand in node.get("operands") or []:
        if "op" in operand:
            _collect_pointers(operand, out)
        elif "pointer" in operand:
            out.append(operand["pointer"])


def addressed_steps(contract: Any, check: Any) -> tuple[str, ...]:
    """Step ids named by a check's interaction pointers (leaf and quantifier-collection operands), in
    plan declaration order; undeclared ids are dropped, ``@/`` pointers and reference sets ignored (§2.4).

    The step id is the raw second path segment, not unescaped. A ``None`` check addresses nothing.
    """
    if check is None:
        return ()
    pointers: list[str] = []
    _collect_pointers(as_wire(check), pointers)
    named = {p.split("/")[2] for p in pointers if p.startswith("/interactions/") and len(p.split("/")) > 2}
    plan = as_wire(contract).get("interactionPlan") or []
    return tuple(step["stepId"] for step in plan if step["stepId"] in named)


def select_for_oracle(contract: Any, plan_selection: PlanSelection, check: Any) -> OracleSelection:
    """The addressed steps of an oracle's ``check``, their selections, and selector ambiguity (§2.4)."""
    step_ids = addressed_steps(contract, check)
    selections = tuple(plan_selection.steps[step_id] for step_id in step_ids)
    return OracleSelection(step_ids, selections, any(selection.ambiguous for selection in selections))
