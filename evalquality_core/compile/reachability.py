"""Evidence reachability (artifacts.md §3.2): checks #5 and #7, and the rule #6, #26 and #33 reuse.

A pointer is reachable when its step and operation resolve and the operation's declarations say the
channel and tail can carry a value. Undeclared ``types`` entries and ``null`` types stay permissive;
only a declared scalar blocks descent. An artifact id nobody declares is left to check #4, so the
two checks never race on one pointer.
"""

from __future__ import annotations

from evalquality_core.compile.check_tree import iter_pointers, oracle_checks
from evalquality_core.compile.plan_index import Json, OperationRef, PlanIndex, declared_keys
from evalquality_core.compile.pointers import (
    ARRAY_INDEX_RE,
    EvidenceTarget,
    is_bound_element,
    parse_interaction_pointer,
)
from evalquality_core.faults import StructuralFailure

#: Declared types a pointer may not descend into (``null`` as a *type name*; a ``null`` entry is permissive).
SCALAR_TYPES = frozenset({"string", "number", "boolean", "null"})
_COMMAND_UNREACHABLE = frozenset({"response-body", "response-headers", "response-status"})
#: A tool call's evidence is its structured result (``response-body``), whether it reported an error
#: (``response-status``, 1 or 0), the arguments sent and the server's exit code; nothing else.
_TOOL_CALL_UNREACHABLE = frozenset({"response-headers", "stdout", "stderr"})


def descriptor_reason(tail: tuple[str, ...], descriptor: Json, channel: str) -> str | None:
    """Why a tail cannot be read through a response descriptor, or ``None`` when it can (a ``*`` is a key)."""
    if not tail:
        return None
    first = tail[0]
    if ARRAY_INDEX_RE.match(first):
        for location in descriptor.get("collectionLocations") or []:
            if location.get("pointer") == "":
                cardinality = location.get("expectedCardinality") or {}
                bound = cardinality.get("count") if cardinality.get("mode") == "exact" else cardinality.get("max")
                if isinstance(bound, int) and int(first) < bound:
                    return None
                return f"indexes element {first} of a root collection declared to hold at most {bound}"
    if first not in declared_keys(descriptor):
        return f'reads {channel} key "{first}", which the response descriptor declares in neither requiredKeys nor permittedKeys'
    declared = (descriptor.get("types") or {}).get(first)
    if len(tail) > 1 and declared in SCALAR_TYPES:
        return f'descends into {channel} key "{first}", which the response descriptor declares "{declared}"'
    return None


def operation_reason(target: EvidenceTarget, operation: OperationRef) -> str | None:
    """Why ``target`` is unreachable on ``operation`` (step already resolved), or ``None``."""
    channel = target.channel
    descriptor = operation.response_descriptor
    if operation.is_tool_call and channel in _TOOL_CALL_UNREACHABLE:
        return f"reads the {channel} channel, which a tool call does not produce"
    if channel == "artifact":
        declared = operation.operation.get("artifacts") or []
        if target.artifact_id not in declared:
            return None  # check #4's defect, not this one's
        if target.artifact_id != operation.descriptor_artifact:
            if target.tail:
                return f'descends into artifact "{target.artifact_id}", which the response descriptor does not describe'
            return None
        return descriptor_reason(target.tail, descriptor, f"artifact {target.artifact_id}")
    if channel == operation.descriptor_channel:
        return descriptor_reason(target.tail, descriptor, channel)
    if operation.is_command and channel in _COMMAND_UNREACHABLE:
        return f"reads the {channel} channel, which a command operation does not produce"
    if channel in ("stdout", "stderr"):
        if target.tail:
            return f"descends into {channel}, which the response descriptor does not describe"
        return None
    if channel == "call-inputs":
        if not target.tail:
            return None  # the whole input channel as sent: reachable whatever it declares (§3.2)
        shape = operation.request_shape(target.input_channel or "")
        if shape is None:
            return f'reads call-inputs channel "{target.input_channel}", on which operation "{operation.operation_id}" accepts no input'
        first = target.tail[0]
        if first not in declared_keys(shape):
            return f'reads {target.input_channel} input "{first}", which operation "{operation.operation_id}" does not declare'
        declared = (shape.get("types") or {}).get(first)
        if len(target.tail) > 1 and declared in SCALAR_TYPES:
            return f'descends into {target.input_channel} input "{first}", which is declared "{declared}"'
        return None
    return None


def pointer_reason(pointer: str, index: PlanIndex) -> str | None:
    """Why an interaction pointer is unreachable in the plan, or ``None`` when it is reachable."""
    target = parse_interaction_pointer(pointer)
    if target is None:
        return "is not an interaction-rooted pointer"
    step = index.step(target.step_id)
    if step is None:
        return f'names step "{target.step_id}", which the interaction plan does not declare exactly once'
    operation = index.operation_for_step(step)
    if operation is None:
        if step.get("interfaceId") is not None:
            return (
                f'names step "{target.step_id}", which names operation "{step.get("operationId")}" of interface '
                f'"{step.get("interfaceId")}", which that interface does not declare exactly once'
            )
        return (
            f'names step "{target.step_id}", which names operation "{step.get("operationId")}", '
            "not declared exactly once by the permitted interfaces"
        )
    return operation_reason(target, operation)


def check_evidence_reachability(contract: Json) -> None:
    """#5 ``unreachable-check-evidence``: every non-``@`` pointer of every oracle check is reachable.

    First (5.0.0), a step naming an interface must name an operation that interface declares
    exactly once: the pair is the operation's identity, so a step whose pair resolves nowhere
    could never be observed, whether or not a check reads it.
    """
    index = PlanIndex(contract)
    for step in contract.get("interactionPlan") or []:
        interface_id = step.get("interfaceId")
        if interface_id is not None and index.operation_for_step(step) is None:
            raise StructuralFailure(
                "unreachable-check-evidence",
                f"EvalContract.interactionPlan[stepId={step.get('stepId')}].interfaceId",
                f'interface "{interface_id}" does not declare operation "{step.get("operationId")}" exactly once',
            )
    for _, check, path in oracle_checks(contract):
        for visit in iter_pointers(check, path):
            pointer = visit.operand["pointer"]
            if is_bound_element(pointer):
                continue
            reason = pointer_reason(pointer, index)
            if reason is not None:
                raise StructuralFailure("unreachable-check-evidence", visit.path, f'pointer "{pointer}" {reason}')


def check_bound_element_scope(contract: Json) -> None:
    """#7 ``malformed-operator-expression``: an ``@…`` pointer outside every quantifier predicate."""
    for _, check, path in oracle_checks(contract):
        for visit in iter_pointers(check, path):
            pointer = visit.operand["pointer"]
            if is_bound_element(pointer) and not visit.enclosing:
                raise StructuralFailure(
                    "malformed-operator-expression",
                    visit.path,
                    f'bound-element pointer "{pointer}" stands outside every quantifier predicate',
                )
