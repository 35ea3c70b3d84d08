"""The operation inventory (artifacts.md §3.1 #1, #4, #13, #14, #18).

Interfaces are addressed by ``logicalId`` and operations by ``operationId`` in every path, which is
why a repeated ``logicalId`` is reported before anything else (#1). Operation signatures erase path
parameter names, so ``GET /things/{id}`` and ``GET /things/{key}`` collide (#13).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from evalquality_core.artifacts.contract import FIRST_PAIR_CONTRACT
from evalquality_core.compile.check_tree import iter_pointers, oracle_checks, witness_relations
from evalquality_core.compile.plan_index import (
    INPUT_CHANNEL_ORDER,
    Json,
    OperationRef,
    PlanIndex,
    declared_keys,
    iter_operations,
)
from evalquality_core.compile.pointers import is_bound_element, parse_interaction_pointer
from evalquality_core.faults import StructuralFailure
from evalquality_core.registries import SUPPORTED_INTERFACE_KINDS

_PATH_PARAMETER_RE = re.compile(r"\{[A-Za-z0-9_-]+\}")


def operation_path(ref: OperationRef) -> str:
    """``EvalContract.permittedInterfaces[logicalId=X].operations[operationId=Y]``."""
    return f"EvalContract.permittedInterfaces[logicalId={ref.interface_id}].operations[operationId={ref.operation_id}]"


def check_duplicate_interface_identifier(contract: Json) -> None:
    """#1 ``duplicate-interface-identifier``: two permitted interfaces share a ``logicalId``."""
    seen: set[str] = set()
    for i, interface in enumerate(contract.get("permittedInterfaces") or []):
        logical_id = interface.get("logicalId")
        if logical_id in seen:
            raise StructuralFailure(
                "duplicate-interface-identifier",
                f"EvalContract.permittedInterfaces[{i}].logicalId",
                f'logicalId "{logical_id}" is declared by more than one permitted interface',
            )
        seen.add(logical_id)


def _artifact_pointers(contract: Json) -> Iterator[tuple[str, str, OperationRef | None]]:
    """``(pointer, path, operation)`` for every artifact pointer whose operation resolves.

    Oracle checks, direction targets and rubric evidence resolve through the plan; a witness
    relation's pointers address the witness's own legs, so its operation is the witness's.
    """
    index = PlanIndex(contract)

    def through_plan(pointer: str) -> OperationRef | None:
        target = parse_interaction_pointer(pointer)
        return None if target is None else index.operation_of_step(target.step_id)

    for _, check, path in oracle_checks(contract):
        for visit in iter_pointers(check, path):
            pointer = visit.operand["pointer"]
            if not is_bound_element(pointer):
                yield pointer, visit.path, through_plan(pointer)
    for oracle in contract.get("oracles") or []:
        direction = oracle.get("direction")
        if isinstance(direction, dict):
            for k, pointer in enumerate(direction.get("evidenceTargets") or []):
                path = f"EvalContract.oracles[id={oracle.get('id')}].direction.evidenceTargets[{k}]"
                yield pointer, path, through_plan(pointer)
    for rubric in contract.get("rubrics") or []:
        for criterion in rubric.get("criteria") or []:
            path = f"EvalContract.rubrics[id={rubric.get('id')}].criteria[id={criterion.get('id')}].evidence"
            yield criterion.get("evidence", ""), path, through_plan(criterion.get("evidence", ""))
    refs = {(i, j): ref for i, j, ref in iter_operations(contract)}
    for i, j, _, relation, path in witness_relations(contract):
        for visit in iter_pointers(relation, path):
            pointer = visit.operand["pointer"]
            if not is_bound_element(pointer):
                yield pointer, visit.path, refs[(i, j)]


def check_artifact_references(contract: Json) -> None:
    """#4 ``unresolved-artifact-reference``.

    A cli descriptor channel naming an artifact the operation does not list; or an artifact
    pointer naming an id its operation does not declare (an unresolvable step or operation is #5's).
    Our choice: a witness relation's pointers answer to the witness's own operation (its legs are
    calls of it), so an undeclared artifact there is reported too; the reference resolves them
    through the plan, where leg ids never appear, and so lets them pass.
    """
    for _, _, ref in iter_operations(contract):
        channel = ref.operation.get("descriptorChannel")
        if ref.is_command and isinstance(channel, dict) and channel.get("kind") == "artifact":
            if channel.get("artifactId") not in (ref.operation.get("artifacts") or []):
                raise StructuralFailure(
                    "unresolved-artifact-reference",
                    f"{operation_path(ref)}.descriptorChannel.artifactId",
                    f'descriptor channel names artifact "{channel.get("artifactId")}", which the operation does not list in artifacts',
                )
    for pointer, path, ref in _artifact_pointers(contract):
        if "/artifact/" not in pointer:
            continue  # cheap filter: only artifact pointers can name an artifact
        target = parse_interaction_pointer(pointer)
        if target is None or target.channel != "artifact" or ref is None:
            continue
        if ref.is_tool_call:
            raise StructuralFailure(
                "unresolved-artifact-reference",
                path,
                f'pointer "{pointer}" names artifact "{target.artifact_id}", but operation "{ref.operation_id}" '
                "is a tool call, which writes no artifact",
            )
        if target.artifact_id not in (ref.operation.get("artifacts") or []):
            raise StructuralFailure(
                "unresolved-artifact-reference",
                path,
                f'pointer "{pointer}" names artifact "{target.artifact_id}", which operation "{ref.operation_id}" does not declare',
            )


def operation_signature(ref: OperationRef) -> str | None:
    """``"METHOD /path/{}/…"`` for a transport operation, ``"exe sub sub"`` for a command one, the
    ``toolName`` for a tool call. Signatures are compared within one shape family only."""
    operation = ref.operation
    if ref.is_tool_call:
        return str(operation.get("toolName"))
    if "invocation" in operation:
        invocation = operation.get("invocation") or {}
        return " ".join([str(invocation.get("executable")), *map(str, invocation.get("subcommandPath") or [])])
    if "method" in operation and "pathTemplate" in operation:
        return f"{operation['method']} {_PATH_PARAMETER_RE.sub('{}', str(operation['pathTemplate']))}"
    return None


def check_duplicate_operation_signature(contract: Json) -> None:
    """#13 ``duplicate-operation-signature``: two operations of one shape family (HTTP, command, tool
    call), across all interfaces, share a signature. A tool named ``GET /x`` never collides with an
    HTTP operation: the families are compared apart."""
    seen: dict[tuple[str, str], OperationRef] = {}
    for _, _, ref in iter_operations(contract):
        signature = operation_signature(ref)
        if signature is None:
            continue
        key = (ref.family, signature)
        if key in seen:
            first = seen[key]
            raise StructuralFailure(
                "duplicate-operation-signature",
                operation_path(ref),
                f'signature "{signature}" is also the signature of operation "{first.operation_id}" of interface "{first.interface_id}"',
            )
        seen[key] = ref


def check_undeclared_mandatory_input(contract: Json) -> None:
    """#14 [strict] ``undeclared-mandatory-input``: a step binds a key its operation's channel does
    not declare (a channel of the other kind declares nothing), or a ``{principal}`` binding names
    a principal ``testData.principals`` does not declare. Steps whose operation does not resolve
    are skipped (#5 reports what reads them). Keys are visited in the binding's own order."""
    index = PlanIndex(contract)
    principals = (contract.get("testData") or {}).get("principals") or {}
    for step in contract.get("interactionPlan") or []:
        operation = index.operation_for_step(step)
        if operation is None:
            continue
        binding = step.get("inputBinding") or {}
        for channel in INPUT_CHANNEL_ORDER:
            bound = binding.get(channel)
            if not isinstance(bound, dict):
                continue
            declared = declared_keys(operation.request_shape(channel))
            for key, value in bound.items():
                path = (
                    f"EvalContract.interactionPlan[stepId={step.get('stepId')}].inputBinding.{channel}"
                    f"[{json.dumps(key, ensure_ascii=False)}]"
                )
                if key not in declared:
                    raise StructuralFailure(
                        "undeclared-mandatory-input",
                        path,
                        f'operation "{operation.operation_id}" declares "{key}" in neither requiredKeys nor '
                        f"permittedKeys of its {channel} channel (AD-4)",
                    )
                if isinstance(value, dict) and "principal" in value and value["principal"] not in principals:
                    raise StructuralFailure(
                        "undeclared-mandatory-input",
                        path,
                        f'binds the principal "{value["principal"]}", which testData.principals does not declare (AD-4, AD-19)',
                    )


def check_interface_kind(contract: Json) -> None:
    """#18 ``unsupported-interface-kind``: ``api``, ``cli`` and ``mcp`` interfaces compile here.

    ``web`` is refused as in the reference. ``mcp`` compiles from contract 6 on, where its
    operations are tool calls; at 4 and 5 (api-shaped mcp) the reference of that era refused it, and
    so do we: the rule follows the stamp.
    """
    stamp = contract.get("schemaVersion")
    for interface in contract.get("permittedInterfaces") or []:
        if interface.get("kind") == "mcp" and isinstance(stamp, int) and stamp < FIRST_PAIR_CONTRACT:
            raise StructuralFailure(
                "unsupported-interface-kind",
                f"EvalContract.permittedInterfaces[logicalId={interface.get('logicalId')}].kind",
                f'interface kind "mcp" compiles from contract schemaVersion {FIRST_PAIR_CONTRACT} (tool calls); '
                f"this contract is stamped {stamp}",
            )
        if interface.get("kind") not in SUPPORTED_INTERFACE_KINDS:
            raise StructuralFailure(
                "unsupported-interface-kind",
                f"EvalContract.permittedInterfaces[logicalId={interface.get('logicalId')}].kind",
                f'interface kind "{interface.get("kind")}" is not supported; supported kinds: {", ".join(SUPPORTED_INTERFACE_KINDS)}',
            )
