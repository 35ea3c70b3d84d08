"""Plan-step input bindings: binding order, per-observation binding satisfaction, captured values.

scoring.md §2.2 (binding satisfaction) and §2.3 (Kahn tiers over capture and ``after`` edges, captured
values keyed by (step, channel, key)). The decision that is not obvious: binding comparison is an
ABSENT-free structural deep-equality that never coerces (``true`` is not ``1``), and a ``matcher: any`` or
``principal`` binding only asks that the key be present.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalquality_core.evaluate.operators import json_kind
from evalquality_core.evaluate.pointers import ABSENT, parse_evidence_pointer

__all__ = [
    "BindingOrder",
    "CapturedKey",
    "CapturedValue",
    "binding_deep_equal",
    "binding_order",
    "captured_dependencies",
    "observation_satisfies_bindings",
]

#: (step id holding the binding, input channel, bound key).
CapturedKey = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class CapturedValue:
    """One captured binding's value (scoring.md §2.3).

    ``status``: ``resolved`` (an observation was selected; ``value`` may still be ABSENT when the pointer
    walked off it), ``absent`` (nothing selected) or ``ambiguous`` (several under a single-valued
    cardinality; consumers treat it as absent).
    """

    status: Literal["resolved", "absent", "ambiguous"]
    value: Any = ABSENT
    observation_id: str | None = None
    sequence: int | None = None


@dataclass(frozen=True, slots=True)
class BindingOrder:
    """Kahn tiers of step ids (plan declaration order within a tier) and the steps left in a cycle."""

    tiers: tuple[tuple[str, ...], ...]
    cyclic: tuple[str, ...]


def captured_dependencies(step: Mapping[str, Any]) -> list[str]:
    """Raw step ids named by a step's ``captured`` bindings, in binding order (duplicates kept)."""
    names: list[str] = []
    for channel_binding in (step.get("inputBinding") or {}).values():
        for binding in (channel_binding or {}).values():
            if isinstance(binding, Mapping) and "captured" in binding:
                parsed = parse_evidence_pointer(binding["captured"])
                if parsed is not None:
                    names.append(parsed.step_id)
    return names


def binding_order(plan: Sequence[Mapping[str, Any]]) -> BindingOrder:
    """Kahn tiers over capture and ``after`` edges to declared steps (scoring.md §2.3).

    A self-reference counts as a cycle; steps in a cycle and everything downstream are ``cyclic``.
    """
    declared = [step["stepId"] for step in plan]
    declared_set = set(declared)
    incoming: dict[str, set[str]] = {step_id: set() for step_id in declared}
    for step in plan:
        sources = captured_dependencies(step)
        if step.get("after") is not None:
            sources.append(step["after"])
        for source in sources:
            if source in declared_set:
                incoming[step["stepId"]].add(source)
    placed: set[str] = set()
    tiers: list[tuple[str, ...]] = []
    while True:
        tier = tuple(
            s for s in declared if s not in placed and incoming[s] <= placed and s not in incoming[s]
        )
        if not tier:
            break
        tiers.append(tier)
        placed.update(tier)
    cyclic = tuple(s for s in declared if s not in placed)
    return BindingOrder(tuple(tiers), cyclic)


def binding_deep_equal(a: Any, b: Any) -> bool:
    """ABSENT-free structural equality of binding comparison (scoring.md §2.2): no coercion, key order free."""
    if a is ABSENT or b is ABSENT:
        return False
    kind = json_kind(a)
    if kind != json_kind(b):
        return False
    if kind == "array":
        return len(a) == len(b) and all(binding_deep_equal(x, y) for x, y in zip(a, b, strict=True))
    if kind == "object":
        return len(a) == len(b) and all(key in b and binding_deep_equal(a[key], b[key]) for key in a)
    return bool(a == b)


def observation_satisfies_bindings(
    observation: Mapping[str, Any],
    step: Mapping[str, Any],
    operation: Mapping[str, Any] | None,
    captured: Mapping[CapturedKey, CapturedValue],
) -> bool:
    """Does one observation satisfy every non-null channel binding of a step (scoring.md §2.2)?

    ``operation`` supplies ``requestShape`` for ``type-violating`` (None: nothing is declared, so a
    type-violating binding rejects); ``captured`` holds the step's resolved captured values.
    """
    call_inputs = observation.get("callInputs") or {}
    for channel, channel_binding in (step.get("inputBinding") or {}).items():
        if channel_binding is None:
            continue
        observed_channel = call_inputs.get(channel)
        if not isinstance(observed_channel, Mapping):
            return False
        for key, binding in channel_binding.items():
            if key not in observed_channel:
                return False
            observed = observed_channel[key]
            if "literal" in binding:
                if not binding_deep_equal(observed, binding["literal"]):
                    return False
            elif "captured" in binding:
                value = captured.get((step["stepId"], channel, key))
                if (
                    value is None
                    or value.status != "resolved"
                    or not binding_deep_equal(value.value, observed)
                ):
                    return False
            elif binding.get("matcher") == "type-violating":
                shape = ((operation or {}).get("requestShape") or {}).get(channel) or {}
                declared = (shape.get("types") or {}).get(key)
                if declared is None or json_kind(observed) == declared:
                    return False
            # matcher "any" and principal: presence of the key only.
    return True
