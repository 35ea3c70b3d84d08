"""Look-ups over a contract's plan and operation inventory (artifacts.md §3.2, §4.1).

Steps are found by ``stepId``. An operation is named by the pair (interfaceId, operationId) from
contract 6 on (5.0.0): a step carrying ``interfaceId`` resolves to the operation that interface
declares under its ``operationId``; a step without one (contracts 4, 5) resolves by ``operationId``
across every permitted interface. An identifier (or pair) declared twice resolves as *absent* (the
compile reading of §3.2): a check never guesses which of two declarations a pointer meant. ``seal``
asks for the strict reading instead, where a repeated identifier is itself a refusal.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from evalquality_core.compile.strings import utf16_sorted
from evalquality_core.registries import COMMAND_CHANNELS, TRANSPORT_CHANNELS

#: Input channels in the order every reader walks them (§4.3); ``arguments`` is the v6 tool-call one.
INPUT_CHANNEL_ORDER: tuple[str, ...] = (*TRANSPORT_CHANNELS, *COMMAND_CHANNELS, "arguments")

Json = dict[str, Any]


@dataclass(frozen=True)
class OperationRef:
    """One declared operation with the interface that declares it."""

    interface_id: str
    kind: str
    operation: Json

    @property
    def operation_id(self) -> str:
        """The operation's identifier."""
        return str(self.operation.get("operationId"))

    @property
    def is_command(self) -> bool:
        """True for an operation of a ``cli`` interface."""
        return self.kind == "cli"

    @property
    def is_tool_call(self) -> bool:
        """True for an mcp tool-call operation (``toolName``, contract 6+)."""
        return self.kind == "mcp" and "toolName" in self.operation

    @property
    def family(self) -> str:
        """The shape family the operation's signature lives in: ``http``, ``command`` or ``tool-call``."""
        if self.is_command:
            return "command"
        return "tool-call" if self.is_tool_call else "http"

    @property
    def descriptor_channel(self) -> str:
        """The evidence channel the response descriptor describes (§2.2)."""
        if self.is_command:
            channel = self.operation.get("descriptorChannel") or {}
            if channel.get("kind") == "artifact":
                return "artifact"
            return str(channel.get("channel", "stdout"))
        return "response-body"

    @property
    def descriptor_artifact(self) -> str | None:
        """The artifact id the descriptor describes, for a cli artifact descriptor channel."""
        channel = self.operation.get("descriptorChannel") or {}
        if self.is_command and channel.get("kind") == "artifact":
            return channel.get("artifactId")
        return None

    @property
    def input_channels(self) -> tuple[str, ...]:
        """The request channels the operation accepts input on (from its request shape)."""
        shape = self.operation.get("requestShape") or {}
        return tuple(channel for channel in INPUT_CHANNEL_ORDER if channel in shape)

    def request_shape(self, channel: str) -> Json | None:
        """The KeyShape of one request channel, or ``None`` when the operation has no such channel."""
        shape = self.operation.get("requestShape") or {}
        value = shape.get(channel)
        return value if isinstance(value, dict) else None

    @property
    def response_descriptor(self) -> Json:
        """The operation's response descriptor."""
        return self.operation.get("responseDescriptor") or {}


def declared_keys(shape: Json | None) -> set[str]:
    """Keys a KeyShape admits: required ∪ permitted (permitted need not cover required, §2.0)."""
    if shape is None:
        return set()
    return set(shape.get("requiredKeys") or []) | set(shape.get("permittedKeys") or [])


def iter_operations(contract: Json) -> list[tuple[int, int, OperationRef]]:
    """Every operation with its interface and operation indices, in declaration order."""
    found: list[tuple[int, int, OperationRef]] = []
    for i, interface in enumerate(contract.get("permittedInterfaces") or []):
        for j, operation in enumerate(interface.get("operations") or []):
            found.append((i, j, OperationRef(interface.get("logicalId", ""), interface.get("kind", ""), operation)))
    return found


class PlanIndex:
    """Steps by id and operations by id; ids declared twice resolve as absent."""

    def __init__(self, contract: Json) -> None:
        steps = list(contract.get("interactionPlan") or [])
        step_counts = Counter(step.get("stepId") for step in steps)
        self.steps: dict[str, Json] = {
            step["stepId"]: step for step in steps if step_counts[step.get("stepId")] == 1
        }
        operations = [ref for _, _, ref in iter_operations(contract)]
        op_counts = Counter(ref.operation_id for ref in operations)
        self.operations: dict[str, OperationRef] = {
            ref.operation_id: ref for ref in operations if op_counts[ref.operation_id] == 1
        }
        pair_counts = Counter((ref.interface_id, ref.operation_id) for ref in operations)
        self.pairs: dict[tuple[str, str], OperationRef] = {
            (ref.interface_id, ref.operation_id): ref
            for ref in operations
            if pair_counts[(ref.interface_id, ref.operation_id)] == 1
        }
        interfaces_of: dict[str, set[str]] = {}
        for ref in operations:
            interfaces_of.setdefault(ref.operation_id, set()).add(ref.interface_id)
        #: Operation ids declared by more than one interface (the brief then names the interface).
        self.shared_operation_ids = frozenset(k for k, v in interfaces_of.items() if len(v) > 1)
        self.duplicate_step_ids = sorted(k for k, n in step_counts.items() if n > 1)
        self.duplicate_operation_ids = sorted(k for k, n in op_counts.items() if n > 1)
        self.duplicate_pairs = sorted(k for k, n in pair_counts.items() if n > 1)

    def step(self, step_id: str) -> Json | None:
        """The step declared exactly once under ``step_id``."""
        return self.steps.get(step_id)

    def operation(self, operation_id: str | None) -> OperationRef | None:
        """The operation declared exactly once under ``operation_id``."""
        if operation_id is None:
            return None
        return self.operations.get(operation_id)

    def operation_for(self, interface_id: str | None, operation_id: str | None) -> OperationRef | None:
        """The operation named by the pair, or by ``operation_id`` alone when ``interface_id`` is ``None``."""
        if interface_id is None:
            return self.operation(operation_id)
        if operation_id is None:
            return None
        return self.pairs.get((interface_id, operation_id))

    def operation_for_step(self, step: Json) -> OperationRef | None:
        """The operation a step names: by its pair (contract 6+) or by its operation id (4, 5)."""
        return self.operation_for(step.get("interfaceId"), step.get("operationId"))

    def operation_of_step(self, step_id: str) -> OperationRef | None:
        """The operation a resolvable step names, when it resolves too."""
        step = self.step(step_id)
        return None if step is None else self.operation_for_step(step)


def bound_entries(step: Json) -> list[tuple[str, str, Json]]:
    """Every bound ``(channel, key, value)`` of a step: channels in input order, keys in UTF-16 order."""
    binding = step.get("inputBinding") or {}
    entries: list[tuple[str, str, Json]] = []
    for channel in INPUT_CHANNEL_ORDER:
        bound = binding.get(channel)
        if not isinstance(bound, dict):
            continue
        for key in utf16_sorted(bound):
            entries.append((channel, key, bound[key]))
    return entries
