"""Sensitivity witnesses and the fixture reset (artifacts.md §3.1 #15, #32, #33; AD-10).

A witness is two legs that differ only on one input channel, plus a relation over their
observations showing the operation reads that channel. Witness paths use array indices
(``permittedInterfaces[0].operations[1].sensitivityWitness.legs[0]``) as the reference does.

Where the spec leaves the relation rules open (§7: ``checkExpressionLegChannel`` and
``checkExpressionVolatility`` were not read) we take the simplest reading: every relation pointer
must address one of the two legs (``unreachable-check-evidence`` otherwise), both legs must be
addressed, each pointer must be reachable on the witness's operation, and no pointer may read a
declared volatile pointer or descend below one (``malformed-operator-expression``). A fixture reset
on an operation with ``stateChangeMarker: false`` is ``malformed-operator-expression``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from evalquality_core.compile.check_tree import iter_pointers
from evalquality_core.compile.plan_index import Json, OperationRef, declared_keys, iter_operations
from evalquality_core.compile.pointers import descriptor_tokens, is_bound_element, parse_interaction_pointer
from evalquality_core.compile.reachability import operation_reason
from evalquality_core.faults import StructuralFailure
from evalquality_core.registries import COMMAND_CHANNELS, TRANSPORT_CHANNELS

_MALFORMED = "malformed-operator-expression"
_UNDECLARED = "undeclared-mandatory-input"
_PAYLOAD_CHANNELS = frozenset({"body", "stdin"})


def _witness_path(i: int, j: int) -> str:
    return f"EvalContract.permittedInterfaces[{i}].operations[{j}].sensitivityWitness"


def _witnessed(contract: Json) -> Iterator[tuple[int, int, OperationRef, Json]]:
    for i, j, ref in iter_operations(contract):
        witness = ref.operation.get("sensitivityWitness")
        if isinstance(witness, dict):
            yield i, j, ref, witness


def _form_channels(ref: OperationRef) -> tuple[str, ...]:
    """The channels a WitnessInputs object must carry for this operation's kind."""
    if ref.is_command:
        return COMMAND_CHANNELS
    if "arguments" in (ref.operation.get("requestShape") or {}):
        return ("arguments",)
    return TRANSPORT_CHANNELS


def _supplied_keys(channel: str, value: Any, shape: Json) -> tuple[set[str] | None, str | None]:
    """``(keys supplied, defect)``; ``None`` keys mean "not checked" (a ``raw`` body)."""
    if channel not in _PAYLOAD_CHANNELS:
        return (set(value) if isinstance(value, dict) else set()), None
    if not isinstance(value, dict):
        return set(), None
    kind = value.get("kind")
    if kind == "raw":
        return None, None
    if kind == "text":
        required = list(shape.get("requiredKeys") or [])
        if len(required) != 1:
            return None, f"a text {channel} must stand for exactly one required key, but {len(required)} are required"
        return {required[0]}, None
    if kind == "json" and isinstance(value.get("value"), dict):
        return set(value["value"]), None
    return set(), None


def inputs_defect(inputs: Any, ref: OperationRef, path: str) -> tuple[str, str] | None:
    """``(path, detail)`` when witness or reset inputs do not fit the operation's request shape."""
    channels = _form_channels(ref)
    if not isinstance(inputs, dict) or set(inputs) != set(channels):
        return path, f'inputs are not of the {"command" if ref.is_command else "transport"} form operation "{ref.operation_id}" takes'
    for channel in channels:
        shape = ref.request_shape(channel) or {"requiredKeys": [], "permittedKeys": []}
        supplied, defect = _supplied_keys(channel, inputs[channel], shape)
        if defect is not None:
            return f"{path}.{channel}", defect
        if supplied is None:
            continue
        for key in shape.get("requiredKeys") or []:
            if key not in supplied:
                return f"{path}.{channel}", f'omits required {channel} key "{key}" of operation "{ref.operation_id}"'
        allowed = declared_keys(shape)
        for key in sorted(supplied):
            if key not in allowed:
                return f"{path}.{channel}", f'supplies {channel} key "{key}", which operation "{ref.operation_id}" does not declare'
    return None


def _declares_input(ref: OperationRef) -> bool:
    shape = ref.operation.get("requestShape") or {}
    return any(declared_keys(channel) for channel in shape.values() if isinstance(channel, dict))


def check_sensitivity_witness_declared(contract: Json) -> None:
    """#15 [strict] ``undeclared-mandatory-input``: an input-bearing operation without a witness,
    or a witness leg whose inputs are of the wrong form, omit a required key, or supply an
    undeclared one."""
    for i, j, ref in iter_operations(contract):
        witness = ref.operation.get("sensitivityWitness")
        if witness is None:
            if _declares_input(ref):
                raise StructuralFailure(
                    _UNDECLARED,
                    _witness_path(i, j),
                    f'operation "{ref.operation_id}" declares request keys but no sensitivity witness (AD-10)',
                )
            continue
        for k, leg in enumerate(witness.get("legs") or []):
            defect = inputs_defect(leg.get("inputs"), ref, f"{_witness_path(i, j)}.legs[{k}].inputs")
            if defect is not None:
                raise StructuralFailure(_UNDECLARED, *defect)


def check_witness_leg_identifiers(contract: Json) -> None:
    """#32 ``malformed-operator-expression``: two legs of one witness share a ``legId``; a ``legId``
    equals a plan ``stepId``; a ``legId`` (or the fixture reset's) is used twice in the contract."""
    step_ids = {step.get("stepId") for step in contract.get("interactionPlan") or []}
    seen: set[str] = set()
    for i, j, _, witness in _witnessed(contract):
        legs = witness.get("legs") or []
        ids = [leg.get("legId") for leg in legs]
        for k, leg_id in enumerate(ids):
            path = f"{_witness_path(i, j)}.legs[{k}].legId"
            if leg_id in ids[:k]:
                raise StructuralFailure(_MALFORMED, path, f'both legs of the witness use legId "{leg_id}"')
            if leg_id in step_ids:
                raise StructuralFailure(_MALFORMED, path, f'legId "{leg_id}" is also a step of the interaction plan')
            if leg_id in seen:
                raise StructuralFailure(_MALFORMED, path, f'legId "{leg_id}" is used by another leg of the contract')
            seen.add(leg_id)
    reset = contract.get("fixtureReset")
    if isinstance(reset, dict) and reset.get("legId") in seen:
        raise StructuralFailure(
            _MALFORMED, "EvalContract.fixtureReset.legId", f'legId "{reset.get("legId")}" is also a witness leg'
        )


def _legal_channels(ref: OperationRef) -> frozenset[str]:
    if ref.is_command:
        return frozenset(COMMAND_CHANNELS)
    if "arguments" in (ref.operation.get("requestShape") or {}):
        return frozenset({"arguments"})
    return frozenset({"body"}) if ref.operation.get("stateChangeMarker") else frozenset({"path", "query"})


def _compact(value: Any) -> str:
    """``JSON.stringify`` of a value: insertion order, no spaces, non-ASCII raw."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _is_volatile(tail: tuple[str, ...], volatile: list[Any]) -> bool:
    for pointer in volatile:
        if isinstance(pointer, str):
            tokens = descriptor_tokens(pointer)
            if tokens and tail[: len(tokens)] == tokens:
                return True
    return False


def _check_relation(i: int, j: int, ref: OperationRef, witness: Json) -> None:
    path = _witness_path(i, j)
    leg_ids = [leg.get("legId") for leg in witness.get("legs") or []]
    addressed: set[str] = set()
    volatile = ref.operation.get("volatilePointers") or []
    for visit in iter_pointers(witness.get("relation"), f"{path}.relation"):
        pointer = visit.operand["pointer"]
        if is_bound_element(pointer):
            continue
        target = parse_interaction_pointer(pointer)
        if target is None or target.step_id not in leg_ids:
            raise StructuralFailure(
                "unreachable-check-evidence", visit.path, f'relation pointer "{pointer}" addresses no leg of this witness'
            )
        addressed.add(target.step_id)
        reason = operation_reason(target, ref)
        if reason is not None:
            raise StructuralFailure("unreachable-check-evidence", visit.path, f'relation pointer "{pointer}" {reason}')
        if target.channel == ref.descriptor_channel and _is_volatile(target.tail, volatile):
            raise StructuralFailure(
                _MALFORMED, visit.path, f'relation pointer "{pointer}" reads a declared volatile pointer'
            )
    missing = [leg_id for leg_id in leg_ids if leg_id not in addressed]
    if missing:
        raise StructuralFailure(_MALFORMED, f"{path}.relation", f'the relation does not address leg "{missing[0]}"')


def check_witness_legality(contract: Json) -> None:
    """#33: the witness channel is legal for the operation, both legs carry it with different values,
    the relation addresses exactly its two legs on reachable, non-volatile pointers, and the
    fixture reset names a declared state-changing operation with fitting inputs."""
    for i, j, ref, witness in _witnessed(contract):
        path = _witness_path(i, j)
        channel = witness.get("channel")
        if channel not in _legal_channels(ref):
            raise StructuralFailure(
                _MALFORMED, f"{path}.channel", f'witness channel "{channel}" is not legal for operation "{ref.operation_id}"'
            )
        legs = witness.get("legs") or []
        for k, leg in enumerate(legs):
            inputs = leg.get("inputs")
            if not isinstance(inputs, dict) or channel not in inputs:
                raise StructuralFailure(_MALFORMED, f"{path}.legs[{k}].inputs", f'leg inputs lack the witness channel "{channel}"')
        if len(legs) == 2 and _compact(legs[0]["inputs"][channel]) == _compact(legs[1]["inputs"][channel]):
            raise StructuralFailure(
                _MALFORMED, f"{path}.legs[1].inputs.{channel}", f'both legs supply the same value on the witness channel "{channel}"'
            )
        _check_relation(i, j, ref, witness)
    reset = contract.get("fixtureReset")
    if not isinstance(reset, dict):
        return
    match = [
        ref
        for _, _, ref in iter_operations(contract)
        if ref.interface_id == reset.get("interfaceId") and ref.operation_id == reset.get("operationId")
    ]
    if len(match) != 1:
        raise StructuralFailure(
            "unreachable-check-evidence",
            "EvalContract.fixtureReset.operationId",
            f'fixture reset names operation "{reset.get("operationId")}" of interface "{reset.get("interfaceId")}", which is not declared',
        )
    if not match[0].operation.get("stateChangeMarker"):
        raise StructuralFailure(
            _MALFORMED,
            "EvalContract.fixtureReset.operationId",
            f'fixture reset names operation "{reset.get("operationId")}", which declares no state change',
        )
    defect = inputs_defect(reset.get("inputs"), match[0], "EvalContract.fixtureReset.inputs")
    if defect is not None:
        raise StructuralFailure(_UNDECLARED, *defect)
