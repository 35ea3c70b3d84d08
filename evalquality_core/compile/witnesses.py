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

Multi-call legs (ours, docs/reference/multi-call-legs.md): a leg may list ``calls`` made after its own in
the same session. A call names an operation of the leg's interface (``unreachable-check-evidence``
otherwise) with inputs fitting it (#15's code); its ``callId`` shares the leg ids' namespace (#32). The
relation may address a leg's calls as well as the legs, and a leg counts as addressed when it or one of
its calls is; a call's pointers are checked against the call's own operation. And a state-changing HTTP
operation whose body declares no key (``DELETE /posts/{id}``) may be witnessed on ``path``: nothing else
of its request can vary, so AD-10's ``body`` rule would leave it unwitnessable.
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
from evalquality_core.preflight.projection import tokens_cover
from evalquality_core.preflight.volatility import volatile_header_names
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


def _supplied_keys(channel: str, value: Any, shape: Json) -> tuple[list[str] | None, str | None]:
    """``(keys supplied, defect)``; ``None`` keys mean "not checked" (a ``raw`` body)."""
    if channel not in _PAYLOAD_CHANNELS:
        return (list(value) if isinstance(value, dict) else []), None
    if not isinstance(value, dict):
        return [], None
    kind = value.get("kind")
    if kind == "raw":
        return None, None
    if kind == "text":
        required = list(shape.get("requiredKeys") or [])
        if len(required) != 1:
            return None, f"a text {channel} must stand for exactly one required key, but {len(required)} are required"
        return [required[0]], None
    if kind == "json" and isinstance(value.get("value"), dict):
        return list(value["value"]), None
    return [], None  # absent, or JSON that is not an object: supplies no key


def inputs_defect(inputs: Any, ref: OperationRef, owner: str) -> str | None:
    """Why witness or reset inputs do not fit the operation's request shape, or ``None``.

    The form (transport, command) must be the operation's; then, channel by channel, every
    required key is supplied and every supplied key is declared (a ``raw`` body is not compared;
    a ``text`` stdin stands for the channel's single required key).
    """
    channels = _form_channels(ref)
    if not isinstance(inputs, dict) or set(inputs) != set(channels):
        kind = "command" if ref.is_command else "transport"
        return f'{owner} does not supply the {kind} channels operation "{ref.operation_id}" accepts (AD-10, AD-19)'
    for channel in channels:
        shape = ref.request_shape(channel) or {"requiredKeys": [], "permittedKeys": []}
        supplied, defect = _supplied_keys(channel, inputs[channel], shape)
        if defect is not None:
            return f"{owner}: {defect}"
        if supplied is None:
            continue
        for key in shape.get("requiredKeys") or []:
            if key not in supplied:
                return f'{owner} omits "{key}", which operation "{ref.operation_id}" declares required in its {channel} channel (AD-10)'
        allowed = declared_keys(shape)
        for key in supplied:
            if key not in allowed:
                return (
                    f'{owner} supplies "{key}", which operation "{ref.operation_id}" declares in neither requiredKeys '
                    f"nor permittedKeys of its {channel} channel (AD-10, AD-18)"
                )
    return None


def _declares_input(ref: OperationRef) -> bool:
    shape = ref.operation.get("requestShape") or {}
    return any(declared_keys(channel) for channel in shape.values() if isinstance(channel, dict))


def _operation_ref(contract: Json, interface_id: Any, operation_id: Any) -> OperationRef | None:
    for _, _, ref in iter_operations(contract):
        if ref.interface_id == interface_id and ref.operation_id == operation_id:
            return ref
    return None


def _check_calls(contract: Json, ref: OperationRef, leg: Json, path: str) -> None:
    """A leg's calls: each on the leg's interface, on a declared operation, with fitting inputs."""
    for n, call in enumerate(leg.get("calls") or []):
        where = f"{path}.calls[{n}]"
        if call.get("interfaceId") != ref.interface_id:
            raise StructuralFailure(
                "unreachable-check-evidence", where,
                f'call "{call.get("callId")}" names interface "{call.get("interfaceId")}", not its leg\'s "{ref.interface_id}"; '
                "one server or session answers a leg",
            )
        target = _operation_ref(contract, call.get("interfaceId"), call.get("operationId"))
        if target is None:
            raise StructuralFailure(
                "unreachable-check-evidence", where,
                f'call "{call.get("callId")}" names operation "{call.get("operationId")}", which interface '
                f'"{ref.interface_id}" does not declare',
            )
        defect = inputs_defect(call.get("inputs"), target, f'call "{call.get("callId")}"')
        if defect is not None:
            raise StructuralFailure(_UNDECLARED, where, defect)


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
                    f"EvalContract.permittedInterfaces[{i}].operations[{j}]",
                    f'operation "{ref.operation_id}" declares request keys but no sensitivity witness; only an '
                    "operation declaring no keys in any channel is exempt (AD-10)",
                )
            continue
        for k, leg in enumerate(witness.get("legs") or []):
            defect = inputs_defect(leg.get("inputs"), ref, f'leg "{leg.get("legId")}"')
            if defect is not None:
                raise StructuralFailure(_UNDECLARED, f"{_witness_path(i, j)}.legs[{k}]", defect)
            _check_calls(contract, ref, leg, f"{_witness_path(i, j)}.legs[{k}]")


def check_witness_leg_identifiers(contract: Json) -> None:
    """#32 ``malformed-operator-expression``: the two legs of one witness share a ``legId``; a
    ``legId`` (or the fixture reset's) equals a plan ``stepId`` or is already used elsewhere. Leg ids
    and step ids share one pointer namespace (``/interactions/{id}/…``)."""
    step_ids = {step.get("stepId") for step in contract.get("interactionPlan") or []}
    seen: dict[str, str] = {}

    def claim(leg_id: str, owner: str, path: str) -> None:
        if leg_id in step_ids:
            raise StructuralFailure(_MALFORMED, path, f'leg id "{leg_id}" collides with an interaction-plan step id (AD-10, AD-26)')
        if leg_id in seen:
            raise StructuralFailure(_MALFORMED, path, f'leg id "{leg_id}" is already claimed by {seen[leg_id]} (AD-10)')
        seen[leg_id] = owner

    for i, j, _, witness in _witnessed(contract):
        legs = witness.get("legs") or []
        if len(legs) == 2 and legs[0].get("legId") == legs[1].get("legId"):
            raise StructuralFailure(
                _MALFORMED,
                f"{_witness_path(i, j)}.legs",
                f'both legs of witness "{witness.get("witnessId")}" carry the leg id "{legs[0].get("legId")}"',
            )
        for k, leg in enumerate(legs):
            claim(leg.get("legId"), f'witness "{witness.get("witnessId")}"', f"{_witness_path(i, j)}.legs[{k}].legId")
            for n, call in enumerate(leg.get("calls") or []):
                claim(call.get("callId"), f'witness "{witness.get("witnessId")}"', f"{_witness_path(i, j)}.legs[{k}].calls[{n}].callId")
    reset = contract.get("fixtureReset")
    if isinstance(reset, dict):
        claim(reset.get("legId"), "the fixture reset", "EvalContract.fixtureReset.legId")


def _legal_channels(ref: OperationRef) -> frozenset[str]:
    if ref.is_command:
        return frozenset(COMMAND_CHANNELS)
    if "arguments" in (ref.operation.get("requestShape") or {}):
        return frozenset({"arguments"})
    if not ref.operation.get("stateChangeMarker"):
        return frozenset({"path", "query"})
    if not declared_keys(ref.request_shape("body") or {}):
        return frozenset({"body", "path"})  # a DELETE /posts/{id}: only its path can vary (module docstring)
    return frozenset({"body"})


def _compact(value: Any) -> str:
    """``JSON.stringify`` of a value: insertion order, no spaces, non-ASCII raw."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _is_volatile(tail: tuple[str, ...], volatile: list[Any]) -> bool:
    """True when ``tail`` reads at or below a non-empty volatile pointer; a ``*`` segment (8.0.0)
    matches any one key or index at its depth (``preflight/projection.py``, one rule for both)."""
    for pointer in volatile:
        if isinstance(pointer, str):
            tokens = descriptor_tokens(pointer)
            if tokens and tokens_cover(tokens, tail):
                return True
    return False


def _check_relation(i: int, j: int, ref: OperationRef, witness: Json, contract: Json) -> None:
    path = f"{_witness_path(i, j)}.relation"
    leg_ids = [leg.get("legId") for leg in witness.get("legs") or []]
    # A call's id stands for its leg when counting which legs the relation reads (module docstring).
    owner = {leg_id: leg_id for leg_id in leg_ids}
    call_refs: dict[str, OperationRef | None] = {}
    for leg in witness.get("legs") or []:
        for call in leg.get("calls") or []:
            owner[call.get("callId")] = leg.get("legId")
            call_refs[call.get("callId")] = _operation_ref(contract, call.get("interfaceId"), call.get("operationId"))
    pointers = [
        (visit.path, visit.operand["pointer"])
        for visit in iter_pointers(witness.get("relation"), path)
        if not is_bound_element(visit.operand["pointer"])
    ]
    targets = [(where, pointer, parse_interaction_pointer(pointer)) for where, pointer in pointers]
    addressed: list[str] = []
    for _, pointer, target in targets:
        step_id = target.step_id if target is not None else pointer
        if step_id not in addressed:
            addressed.append(step_id)
    for step_id in addressed:  # a third root first: the more specific diagnosis
        if step_id not in owner:
            raise StructuralFailure(
                "unreachable-check-evidence",
                path,
                f'the relation addresses "{step_id}", which is neither leg of witness "{witness.get("witnessId")}" (AD-10)',
            )
    covered = [leg_id for leg_id in leg_ids if any(owner[step] == leg_id for step in addressed)]
    if len(covered) != len(leg_ids):
        raise StructuralFailure(
            _MALFORMED,
            path,
            f'the relation addresses {len(covered)} of the two legs of witness "{witness.get("witnessId")}"; a '
            "differential that reads one leg establishes no sensitivity (AD-10)",
        )
    for where, pointer, target in targets:
        if target is None:  # cannot happen: an unparsed pointer's root is no leg and failed above
            continue
        on = call_refs.get(target.step_id) or ref  # a call's pointer reads the call's operation
        reason = operation_reason(target, on)
        if reason is not None:
            raise StructuralFailure("unreachable-check-evidence", where, f'relation pointer "{pointer}" {reason}')
        volatile = on.operation.get("volatilePointers") or []
        if target.channel == on.descriptor_channel and _is_volatile(target.tail, volatile):
            raise StructuralFailure(_MALFORMED, where, f'relation pointer "{pointer}" reads a declared volatile pointer')
        if target.channel == "response-headers" and target.tail and target.tail[0].lower() in volatile_header_names(on.operation):
            # Ours (issue 34): a volatile header differs run to run by nature, like a volatile pointer.
            raise StructuralFailure(_MALFORMED, where, f'relation pointer "{pointer}" reads declared volatile header "{target.tail[0]}"')


def check_witness_legality(contract: Json) -> None:
    """#33: the witness channel is legal for the operation, both legs carry it with different values,
    the relation addresses exactly its two legs on reachable, non-volatile pointers, and the
    fixture reset names a declared state-changing operation with fitting inputs."""
    for i, j, ref, witness in _witnessed(contract):
        path = _witness_path(i, j)
        channel = witness.get("channel")
        legal = _legal_channels(ref)
        if channel not in legal:
            raise StructuralFailure(
                _MALFORMED,
                path,
                f'channel "{channel}" contradicts stateChangeMarker {str(bool(ref.operation.get("stateChangeMarker"))).lower()} '
                f'on operation "{ref.operation_id}"; AD-10 selects {" or ".join(f"{c!r}" for c in sorted(legal))}',
            )
        legs = witness.get("legs") or []
        for leg in legs:
            inputs = leg.get("inputs")
            if not isinstance(inputs, dict) or channel not in inputs:
                raise StructuralFailure(
                    _MALFORMED, f"{path}.legs", f'leg "{leg.get("legId")}" supplies inputs whose shape carries no "{channel}" channel'
                )
        if len(legs) == 2 and _compact(legs[0]["inputs"][channel]) == _compact(legs[1]["inputs"][channel]):
            raise StructuralFailure(
                _MALFORMED,
                f"{path}.legs",
                f'both legs of witness "{witness.get("witnessId")}" supply the same {channel} value, so the pair is not a differential (AD-10)',
            )
        _check_relation(i, j, ref, witness, contract)
    reset = contract.get("fixtureReset")
    if not isinstance(reset, dict):
        return
    interface = next(
        (i for i in contract.get("permittedInterfaces") or [] if i.get("logicalId") == reset.get("interfaceId")), None
    )
    operation = next(
        (
            OperationRef(interface.get("logicalId", ""), interface.get("kind", ""), op)
            for op in (interface.get("operations") or [] if interface else [])
            if op.get("operationId") == reset.get("operationId")
        ),
        None,
    )
    if operation is None:
        raise StructuralFailure(
            "unreachable-check-evidence",
            "EvalContract.fixtureReset",
            f'the fixture reset names operation "{reset.get("operationId")}" on interface "{reset.get("interfaceId")}", '
            "which the contract does not declare (AD-10)",
        )
    if not operation.operation.get("stateChangeMarker"):
        raise StructuralFailure(
            _MALFORMED,
            "EvalContract.fixtureReset",
            f'the fixture reset names operation "{reset.get("operationId")}", whose stateChangeMarker is false; an '
            "operation that changes no state resets nothing (AD-10)",
        )
    defect = inputs_defect(reset.get("inputs"), operation, "the fixture reset")
    if defect is not None:
        raise StructuralFailure(_UNDECLARED, "EvalContract.fixtureReset.inputs", defect)
