"""The seven AD-20 discipline rules as rows: a relevance and a satisfaction predicate each (scoring.md §6).

Both predicates read the contract alone (no run record, probe or outcome). They walk the contract's
wire form (its canonical JSON object), so the check trees are plain ``{"op": …}`` objects here; the
shared definitions of §6.1 (operations, descriptor roots, pointer spellings, check nodes with
bound-element substitution, "both channels address") are the helpers below. Only rule 1 restricts
its witnesses to oracles some behaviour lists (7.1.0).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Every input channel name tried by the parameter sibling groups (§6.2 rule 5).
ALL_INPUT_CHANNELS: tuple[str, ...] = (
    "path",
    "query",
    "header",
    "body",
    "argument",
    "option",
    "environment",
    "stdin",
    "arguments",
)


def escape_token(key: str) -> str:
    """RFC 6901 escaping of one key: ``~`` → ``~0`` then ``/`` → ``~1``."""
    return key.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True)
class Operation:
    """An operation with its declaring interface (§6.1 "Operations")."""

    interface_kind: str
    interface_id: str
    wire: Mapping[str, Any]

    @property
    def operation_id(self) -> str:
        """The operation identifier."""
        return self.wire["operationId"]

    @property
    def descriptor(self) -> Mapping[str, Any]:
        """The response descriptor."""
        return self.wire["responseDescriptor"]

    @property
    def descriptor_root(self) -> str:
        """The evidence channel the descriptor describes, as a pointer segment (``/response-body``)."""
        channel = self.wire.get("descriptorChannel")
        if channel is None:
            return "/response-body"
        kind = channel.get("kind")
        if kind == "stream":
            return "/" + channel["channel"]
        if kind == "artifact":
            return "/artifact/" + escape_token(channel["artifactId"])
        if kind == "structured-result":
            return "/response-body"  # a tool call's structured result is read as its response body
        return "/" + str(channel.get("channel", kind))

    @property
    def input_channels(self) -> tuple[str, ...]:
        """The keys of the request shape."""
        return tuple((self.wire.get("requestShape") or {}).keys())


@dataclass(frozen=True)
class CheckNode:
    """A node of an oracle's check: its operand pointers and its collection pointer (§6.1)."""

    op: str
    operand_pointers: tuple[str, ...]
    collection_pointer: str | None
    wire: Mapping[str, Any]


def _substitute(pointer: str, root: str | None) -> str:
    if not pointer.startswith("@") or root is None:
        return pointer  # an @ pointer outside any quantifier is kept as written and addresses nothing
    tail = pointer[1:]
    return root if tail == "/" else root + tail


def check_nodes(check: Mapping[str, Any] | None) -> list[CheckNode]:
    """Walk a check (wire form), substituting bound-element pointers against the quantifier root."""
    nodes: list[CheckNode] = []

    def walk(node: Mapping[str, Any], root: str | None) -> None:
        op = node["op"]
        if op in ("not", "all", "any"):
            nodes.append(CheckNode(op, (), None, node))
            for child in node["operands"]:
                walk(child, root)
        elif op in ("for-all", "for-any"):
            coll = node["collection"]
            cp = _substitute(coll["pointer"], root) if "pointer" in coll else None
            nodes.append(CheckNode(op, (), cp, node))
            walk(node["predicate"], cp)
        else:
            pointers = tuple(_substitute(o["pointer"], root) for o in node.get("operands", []) if "pointer" in o)
            nodes.append(CheckNode(op, pointers, None, node))

    if check is not None:
        walk(check, None)
    return nodes


def addresses(pointer: str, root: str) -> bool:
    """A pointer addresses a root when it equals it or extends it by a ``/`` segment (no decoding)."""
    return pointer == root or pointer.startswith(root + "/")


@dataclass(frozen=True)
class OracleView:
    """An oracle's check nodes, check pointers and direction targets."""

    oracle_id: str
    listed: bool
    nodes: tuple[CheckNode, ...]
    check_pointers: frozenset[str]
    direction_targets: tuple[str, ...]

    def check_addresses(self, root: str) -> bool:
        """Some check pointer addresses ``root``."""
        return any(addresses(p, root) for p in self.check_pointers)

    def both_channels(self, root: str) -> bool:
        """Some direction target and some check pointer address ``root``."""
        return any(addresses(t, root) for t in self.direction_targets) and self.check_addresses(root)


@dataclass(frozen=True)
class CoverageContext:
    """The contract, pre-digested into the §6.1 shared definitions."""

    contract: Mapping[str, Any]
    operations: tuple[Operation, ...]
    steps: tuple[Mapping[str, Any], ...]
    oracles: tuple[OracleView, ...]
    _by_operation: dict[str, list[Operation]] = field(default_factory=dict)

    def steps_using(self, op: Operation) -> list[Mapping[str, Any]]:
        """Plan steps naming the operation, in plan order: by the pair (interfaceId, operationId)
        when the step carries ``interfaceId`` (contract 6+), else by ``operationId``."""
        return [s for s in self.steps if step_names(s, op.interface_id, op.operation_id)]

    def operation_of(self, step: Mapping[str, Any]) -> Operation | None:
        """The first operation a step names (by its pair when it carries one), or None."""
        found = [
            op
            for op in self._by_operation.get(step["operationId"], [])
            if step.get("interfaceId") in (None, op.interface_id)
        ]
        return found[0] if found else None

    @staticmethod
    def root(step_id: str) -> str:
        """``R(s)``."""
        return f"/interactions/{step_id}"

    def body(self, step: Mapping[str, Any], op: Operation, descriptor_pointer: str) -> str:
        """``B(s, d)``: step root + descriptor root + descriptor pointer as written."""
        return self.root(step["stepId"]) + op.descriptor_root + descriptor_pointer

    def key(self, step: Mapping[str, Any], op: Operation, key: str) -> str:
        """``K(s, k)``."""
        return self.body(step, op, "/" + escape_token(key))

    def parameter(self, step: Mapping[str, Any], channel: str, key: str) -> str:
        """``P(s, c, k)``."""
        return f"{self.root(step['stepId'])}/call-inputs/{channel}/{escape_token(key)}"


def coverage_context(contract: Mapping[str, Any]) -> CoverageContext:
    """Build the shared definitions from a contract's wire object."""
    operations = tuple(
        Operation(iface["kind"], iface["logicalId"], op)
        for iface in contract["permittedInterfaces"]
        for op in iface["operations"]
    )
    listed = {oid for b in contract["behaviors"] for oid in b["oracles"]}
    oracles = []
    for oracle in contract["oracles"]:
        nodes = tuple(check_nodes(oracle.get("check")))
        pointers = frozenset(
            [p for n in nodes for p in n.operand_pointers] + [n.collection_pointer for n in nodes if n.collection_pointer]
        )
        direction = oracle.get("direction")
        targets = tuple(direction["evidenceTargets"]) if direction else ()
        oracles.append(OracleView(oracle["id"], oracle["id"] in listed, nodes, pointers, targets))
    by_operation: dict[str, list[Operation]] = {}
    for op in operations:
        by_operation.setdefault(op.operation_id, []).append(op)
    return CoverageContext(
        contract, operations, tuple(contract["interactionPlan"]), tuple(oracles), by_operation
    )


# ---- the seven predicate pairs (§6.2) ------------------------------------------------------------


def _no_operations(ctx: CoverageContext) -> bool:
    return not ctx.operations


def _sis_site(op: Operation) -> bool:
    d = op.descriptor
    roles = d.get("channelRoles")
    return roles is not None and any(p != d.get("successIndicator") for p in roles)


def _no_indicator(op: Operation) -> bool:
    """Neither a body ``successIndicator`` nor (ours, issue 34) a ``protocolSuccessIndicator``."""
    return op.descriptor.get("successIndicator") is None and op.descriptor.get("protocolSuccessIndicator") is None


def _indicator_pointers(ctx: CoverageContext, step: Mapping[str, Any], op: Operation) -> list[str]:
    """Where the operation's success indicator is read at one step: ``B(s, indicator)`` for a body
    indicator, and (ours, issue 34) ``R(s)/response-status`` for ``protocolSuccessIndicator:
    "response-status"`` (the HTTP status; for an mcp tool call 1 on ``isError``, else 0). Either
    one addressed counts as the indicator addressed."""
    pointers = []
    indicator = op.descriptor.get("successIndicator")
    if indicator is not None:
        pointers.append(ctx.body(step, op, indicator))
    protocol = op.descriptor.get("protocolSuccessIndicator")
    if protocol is not None:
        pointers.append(f"{ctx.root(step['stepId'])}/{protocol}")
    return pointers


def _sis_relevance(ctx: CoverageContext) -> bool:
    return _no_operations(ctx) or any(
        _no_indicator(o) or o.descriptor.get("channelRoles") is None or _sis_site(o)
        for o in ctx.operations
    )


def _scalar_command_answer(op: Operation) -> bool:
    """A command whose answer is its whole standard output (a stream descriptor channel, 6.0.1)."""
    channel = op.wire.get("descriptorChannel") or {}
    return op.interface_kind == "cli" and channel.get("kind") == "stream"


def _literal_zero_exit(node: CheckNode, step_root: str) -> bool:
    """An ``equality`` node comparing the step's exit code with the literal 0 (either order)."""
    if node.op != "equality":
        return False
    operands = node.wire.get("operands") or []
    pointers = [o.get("pointer") for o in operands if "pointer" in o]
    literals = [o.get("literal") for o in operands if "literal" in o]
    zero = [v for v in literals if isinstance(v, int) and not isinstance(v, bool) and v == 0]
    return pointers == [f"{step_root}/exit-code"] and len(zero) == 1


def _whole_stdout_match(node: CheckNode, step_root: str) -> bool:
    """An exact (``equality``) or deep (``deep-equality``) match over the step's whole stdout."""
    return node.op in ("equality", "deep-equality") and f"{step_root}/stdout" in node.operand_pointers


def _scalar_command_witnessed(ctx: CoverageContext, op: Operation) -> bool:
    """6.0.1: a scalar command answer is separated when one listed oracle (7.1.0), at one step using the
    operation, checks both exit code 0 and an exact or deep match of the whole stdout (a ``containment``
    does not count). Our reading of the CHANGELOG line; the reference's source was not readable."""
    for step in ctx.steps_using(op):
        root = ctx.root(step["stepId"])
        for oracle in ctx.oracles:
            if (
                oracle.listed
                and any(_literal_zero_exit(n, root) for n in oracle.nodes)
                and any(_whole_stdout_match(n, root) for n in oracle.nodes)
            ):
                return True
    return False


def _sis_satisfaction(ctx: CoverageContext) -> bool:
    if _no_operations(ctx):
        return False
    for op in ctx.operations:
        indicator, roles = op.descriptor.get("successIndicator"), op.descriptor.get("channelRoles")
        if _no_indicator(op) or roles is None:
            if _scalar_command_answer(op) and _scalar_command_witnessed(ctx, op):
                continue
            return False
        if not _sis_site(op):
            continue
        others = [p for p, role in roles.items() if p != indicator and role != "success-indicator"]
        witnessed = any(
            oracle.listed
            and any(oracle.both_channels(pointer) for pointer in _indicator_pointers(ctx, step, op))
            and any(oracle.both_channels(ctx.body(step, op, o)) for o in others)
            for step in ctx.steps_using(op)
            for oracle in ctx.oracles
        )
        if not witnessed:
            return False
    return True


def _distinct(keys: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(keys))


def _whole_body_relevance(ctx: CoverageContext) -> bool:
    return _no_operations(ctx) or any(len(_distinct(o.descriptor["requiredKeys"])) > 1 for o in ctx.operations)


def _whole_body_satisfaction(ctx: CoverageContext) -> bool:
    if _no_operations(ctx):
        return False
    for op in ctx.operations:
        keys = _distinct(op.descriptor["requiredKeys"])
        if len(keys) <= 1:
            continue
        if not any(
            all(oracle.both_channels(ctx.key(step, op, k)) for k in keys)
            for step in ctx.steps_using(op)
            for oracle in ctx.oracles
        ):
            return False
    return True


def _malformed_site(op: Operation) -> bool:
    return any(
        shape is not None and (shape["requiredKeys"] or shape["permittedKeys"] or shape["types"])
        for shape in (op.wire.get("requestShape") or {}).values()
    )


def _binds_type_violating(step: Mapping[str, Any]) -> bool:
    return any(
        binding is not None and any(v.get("matcher") == "type-violating" for v in binding.values())
        for binding in (step.get("inputBinding") or {}).values()
    )


def _malformed_relevance(ctx: CoverageContext) -> bool:
    return _no_operations(ctx) or any(_malformed_site(o) for o in ctx.operations)


def _malformed_satisfaction(ctx: CoverageContext) -> bool:
    if _no_operations(ctx):
        return False
    for op in ctx.operations:
        if not _malformed_site(op):
            continue
        if not any(
            _binds_type_violating(step) and any(o.check_addresses(ctx.root(step["stepId"])) for o in ctx.oracles)
            for step in ctx.steps_using(op)
        ):
            return False
    return True


def _per_record_relevance(ctx: CoverageContext) -> bool:
    return _no_operations(ctx) or any(o.descriptor.get("collectionLocations") != [] for o in ctx.operations)


def _every_collection_location(
    ctx: CoverageContext,
    witnessed: Callable[[CheckNode, Mapping[str, Any], str], bool],
    applies: Callable[[Mapping[str, Any]], bool] = lambda _location: True,
) -> bool:
    """Whether every declared collection location that ``applies`` has some oracle node for which
    ``witnessed(node, location, body pointer of the location under a step using its operation)`` holds.

    Shared by per-record and omission: no operations, or an operation whose collection locations are
    undeclared (null), never satisfies.
    """
    if _no_operations(ctx):
        return False
    if any(o.descriptor.get("collectionLocations") is None for o in ctx.operations):
        return False
    return all(
        any(
            witnessed(node, location, ctx.body(step, op, location["pointer"]))
            for step in ctx.steps_using(op)
            for oracle in ctx.oracles
            for node in oracle.nodes
        )
        for op in ctx.operations
        for location in op.descriptor["collectionLocations"]
        if applies(location)
    )


def _per_record_satisfaction(ctx: CoverageContext) -> bool:
    return _every_collection_location(
        ctx, lambda node, _location, at: node.op in ("for-all", "for-any") and node.collection_pointer == at
    )


def _sibling_relevance(ctx: CoverageContext) -> bool:
    groups = ctx.contract.get("siblingGroups")
    return groups is None or bool(groups.get("operations")) or bool(groups.get("parameters"))


def step_names(step: Mapping[str, Any], interface_id: str | None, operation_id: str) -> bool:
    """Whether a plan step names the operation: the pair when both sides carry an interface id."""
    named = step.get("interfaceId")
    return step["operationId"] == operation_id and (named is None or interface_id is None or named == interface_id)


def _member(member: Any) -> tuple[str | None, str]:
    """A sibling-group member as ``(interfaceId, operationId)``: a pair (contract 6+) or a bare id."""
    if isinstance(member, Mapping):
        return member["interfaceId"], member["operationId"]
    return None, member


def _operation_group_witnessed(ctx: CoverageContext, group: Sequence[Any]) -> bool:
    members = list(dict.fromkeys(_member(m) for m in group))
    for oracle in ctx.oracles:
        reached = {
            m
            for m in members
            if any(oracle.both_channels(ctx.root(s["stepId"])) for s in ctx.steps if step_names(s, *m))
        }
        if len(reached) >= 2:
            return True
    return False


def _parameter_group_witnessed(ctx: CoverageContext, group: Sequence[str]) -> bool:
    members = _distinct(group)
    for oracle in ctx.oracles:
        reached = {
            k
            for k in members
            if any(
                oracle.both_channels(ctx.parameter(s, c, k)) for s in ctx.steps for c in ALL_INPUT_CHANNELS
            )
        }
        if len(reached) >= 2:
            return True
    return False


def _sibling_satisfaction(ctx: CoverageContext) -> bool:
    groups = ctx.contract.get("siblingGroups")
    if groups is None:
        return False
    return all(_operation_group_witnessed(ctx, g) for g in groups.get("operations") or []) and all(
        _parameter_group_witnessed(ctx, g) for g in groups.get("parameters") or []
    )


def _omission_relevance(ctx: CoverageContext) -> bool:
    return _no_operations(ctx) or any(
        o.descriptor.get("collectionLocations") is None
        or any(loc.get("referenceSet") is not None for loc in o.descriptor["collectionLocations"])
        for o in ctx.operations
    )


def _reconciles(node: CheckNode, mode: str, reference_set: str, pointer: str) -> bool:
    if mode == "exact":
        operands = node.wire.get("operands", [])
        return (
            node.op == "covers-by-key"
            and len(operands) == 2
            and operands[0].get("referenceSet") == reference_set
            and node.operand_pointers[-1:] == (pointer,)
            and "pointer" in operands[1]
        )
    if node.op != "for-all" or node.collection_pointer != pointer:
        return False
    predicate = node.wire["predicate"]
    if predicate.get("op") != "set-membership":
        return False
    operands = predicate.get("operands", [])
    return len(operands) == 2 and operands[1].get("referenceSet") == reference_set


def _omission_satisfaction(ctx: CoverageContext) -> bool:
    # Only a location naming a reference set has anything to reconcile against.
    return _every_collection_location(
        ctx,
        lambda node, location, at: _reconciles(node, location["expectedCardinality"]["mode"], location["referenceSet"], at),
        applies=lambda location: location.get("referenceSet") is not None,
    )


def _state_change_relevance(ctx: CoverageContext) -> bool:
    return _no_operations(ctx) or any(o.wire.get("stateChangeMarker") is True for o in ctx.operations)


def _read_back_witnessed(ctx: CoverageContext, op: Operation) -> bool:
    for write in ctx.steps_using(op):
        inputs_root = ctx.root(write["stepId"]) + "/call-inputs"
        for read in ctx.steps:
            if read["stepId"] == write["stepId"] or read.get("after") != write["stepId"]:
                continue
            read_op = ctx.operation_of(read)
            if read_op is None or read_op.wire.get("stateChangeMarker") is not False:
                continue
            read_root = ctx.root(read["stepId"]) + read_op.descriptor_root
            for oracle in ctx.oracles:
                for node in oracle.nodes:
                    if node.op in ("not", "all", "any", "for-all", "for-any"):
                        continue  # two unrelated leaves under one connective relate nothing
                    ps = node.operand_pointers
                    if any(addresses(p, inputs_root) for p in ps) and any(addresses(p, read_root) for p in ps):
                        return True
    return False


def _state_change_satisfaction(ctx: CoverageContext) -> bool:
    if _no_operations(ctx):
        return False
    return all(
        _read_back_witnessed(ctx, op) for op in ctx.operations if op.wire.get("stateChangeMarker") is True
    )


@dataclass(frozen=True)
class CoverageRule:
    """One AD-20 rule: its id, predicate ids, and the two predicates (relevance false ⇒ satisfied)."""

    id: str
    relevance: Callable[[CoverageContext], bool]
    satisfaction: Callable[[CoverageContext], bool]

    @property
    def relevance_predicate(self) -> str:
        """``<rule>-relevance``."""
        return f"{self.id}-relevance"

    @property
    def satisfaction_predicate(self) -> str:
        """``<rule>-satisfaction``."""
        return f"{self.id}-satisfaction"


#: The seven rules in their fixed order, which is also the order gaps are emitted (§6).
COVERAGE_RULES: tuple[CoverageRule, ...] = (
    CoverageRule("success-indicator-separation", _sis_relevance, _sis_satisfaction),
    CoverageRule("whole-body", _whole_body_relevance, _whole_body_satisfaction),
    CoverageRule("malformed-input", _malformed_relevance, _malformed_satisfaction),
    CoverageRule("per-record", _per_record_relevance, _per_record_satisfaction),
    CoverageRule("sibling-cross-check", _sibling_relevance, _sibling_satisfaction),
    CoverageRule("omission-and-completeness", _omission_relevance, _omission_satisfaction),
    CoverageRule("state-change-read-back", _state_change_relevance, _state_change_satisfaction),
)

