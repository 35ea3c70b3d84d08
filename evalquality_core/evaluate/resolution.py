"""Three-valued check resolution: ``resolve_check(expression, context) -> CheckResult`` (scoring.md §1.5–§1.6).

Every node resolves to ``"true"``, ``"false"`` or ``"insufficient-evidence"``; the only introduction
condition is ``"empty-collection"``, recorded on the node that tripped (a leaf, or a quantifier whose
collection was ABSENT/non-array/empty) and ``None`` on every fold node. Evaluation is total: connectives
and quantifiers resolve every child (no short-circuit). Runtime faults raised by operators
(``budget-exhausted``, ``operator-cannot-accept-operand``, ``non-canonicalizable-value``) propagate; a
fault is never a resolution. The non-obvious rule: an operand trips the empty-collection interception
when it is a *present* ``[]`` under a needs-a-member operator, or an ABSENT ``response-body`` pointer the
step's operation declares as a collection location — for every operator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from evalquality_core.evaluate.operators import OPERATORS_BY_ID, OperatorEnvironment
from evalquality_core.evaluate.pointers import (
    ABSENT,
    as_wire,
    channel_root,
    decode_tokens,
    parse_evidence_pointer,
    walk,
)
from evalquality_core.registries import CheckResolution, Polarity

__all__ = [
    "CheckResult",
    "IntroductionCondition",
    "ResolutionContext",
    "collection_locations_of",
    "fold_all",
    "fold_any",
    "fold_not",
    "resolution_context",
    "resolve_check",
    "resolve_operand",
    "satisfies",
]

IntroductionCondition = Literal["empty-collection"]


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One node of the recorded resolution tree (``CheckResolution`` on the wire).

    ``children`` is empty on a leaf and on a quantifier that tripped; ``introduction_condition`` is
    ``"empty-collection"`` only on the node that tripped.
    """

    resolution: CheckResolution
    introduction_condition: IntroductionCondition | None = None
    children: tuple[CheckResult, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        """``{resolution, introductionCondition, children}`` as emitted in an outcome row."""
        return {
            "resolution": self.resolution,
            "introductionCondition": self.introduction_condition,
            "children": [child.to_wire() for child in self.children],
        }


@dataclass(frozen=True, slots=True)
class ResolutionContext:
    """What a check resolves against (scoring.md §1.6).

    * ``bound``: step id → the one observation bound to it (wire dict), or None when nothing is bound;
      a step missing from the map is undeclared. Pointers into an unbound or undeclared step are ABSENT.
    * ``reference_sets``: reference-set id → ``{"keys": [...], "members": [...]}`` (the contract's).
    * ``collection_locations``: ``(step id, decoded tail tokens)`` pairs of every declared step's
      operation's ``responseDescriptor.collectionLocations`` — the "pointer denotes a collection" set.
    * ``regex_step_budget``: the scoring policy's ``regexMatchStepBudget``.
    * ``artifact_path``: where faults point, e.g. ``EvalContract.oracles[id=O-001].check``.
    """

    bound: Mapping[str, Mapping[str, Any] | None]
    reference_sets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    collection_locations: frozenset[tuple[str, tuple[str, ...]]] = frozenset()
    regex_step_budget: int = 1_000_000
    artifact_path: str = "EvalContract.oracles.check"

    def for_oracle(self, oracle_id: str) -> ResolutionContext:
        """The same context with faults pointing at ``EvalContract.oracles[id=<oracle_id>].check``."""
        return replace(self, artifact_path=f"EvalContract.oracles[id={oracle_id}].check")


def satisfies(resolution: CheckResolution | None, polarity: Polarity) -> bool:
    """A check satisfies iff its root is ``true`` under expects-hold or ``false`` under expects-violation.

    ``insufficient-evidence`` never satisfies, nor does a check that never ran (``None``) (scoring.md §1.5).
    """
    if polarity == "expects-hold":
        return resolution == "true"
    return resolution == "false"


def fold_not(value: CheckResolution) -> CheckResolution:
    """``not``: insufficient-evidence stays; otherwise negation."""
    if value == "insufficient-evidence":
        return value
    return "false" if value == "true" else "true"


def fold_all(values: Iterable[CheckResolution]) -> CheckResolution:
    """``all``: any false → false; else any insufficient-evidence → insufficient-evidence; else true."""
    values = list(values)
    if "false" in values:
        return "false"
    if "insufficient-evidence" in values:
        return "insufficient-evidence"
    return "true"


def fold_any(values: Iterable[CheckResolution]) -> CheckResolution:
    """``any``: any insufficient-evidence → insufficient-evidence; else any true → true; else false.

    Deliberately weaker than disjunction (scoring.md §1.5): one unexamined branch poisons the fold.
    """
    values = list(values)
    if "insufficient-evidence" in values:
        return "insufficient-evidence"
    if "true" in values:
        return "true"
    return "false"


_UNBOUND = object()  # "no element bound" (the root of the tree)


def resolve_operand(operand: Mapping[str, Any], context: ResolutionContext, element: Any = _UNBOUND) -> Any:
    """Resolve one operand form to a JSON value or ABSENT (scoring.md §1.2).

    ``element`` is the quantifier's bound element; omitted at the root, where ``@/`` pointers are ABSENT.
    """
    if "literal" in operand:
        return operand["literal"]
    if "referenceSet" in operand:
        declared = context.reference_sets.get(operand["referenceSet"])
        return ABSENT if declared is None else declared["members"]
    pointer = operand["pointer"]
    if pointer.startswith("@"):
        if element is _UNBOUND:
            return ABSENT
        return walk(element, decode_tokens(pointer[1:]) if pointer != "@/" else ())
    parsed = parse_evidence_pointer(pointer)
    if parsed is None:
        return ABSENT
    observation = context.bound.get(parsed.step_id)
    if observation is None:
        return ABSENT
    return walk(channel_root(observation, parsed.channel, parsed.sub), parsed.tokens)


def _denotes_collection(operand: Mapping[str, Any], context: ResolutionContext) -> bool:
    """The operand is an evidence pointer onto a declared response-body collection location (§1.5)."""
    pointer = operand.get("pointer")
    if pointer is None or pointer.startswith("@"):
        return False
    parsed = parse_evidence_pointer(pointer)
    if parsed is None or parsed.channel != "response-body" or parsed.step_id not in context.bound:
        return False
    return (parsed.step_id, parsed.tokens) in context.collection_locations


def _project_reference_set(operand: Mapping[str, Any], members: Any, context: ResolutionContext) -> Any:
    """``set-membership`` over ``{referenceSet}``: each member projected to the set's single key (§1.4)."""
    if "referenceSet" not in operand or members is ABSENT:
        return members
    keys = context.reference_sets[operand["referenceSet"]]["keys"]
    if len(keys) != 1:
        raise ValueError(f"reference set {operand['referenceSet']!r} must declare exactly one key")
    return [member[keys[0]] for member in members]


_EMPTY = CheckResult("insufficient-evidence", "empty-collection")


def _resolve(node: Mapping[str, Any], context: ResolutionContext, element: Any) -> CheckResult:
    op = node["op"]
    if op in ("all", "any", "not"):
        children = tuple(_resolve(child, context, element) for child in node["operands"])
        values = [child.resolution for child in children]
        if op == "not":
            value = fold_not(values[0])
        else:
            value = fold_all(values) if op == "all" else fold_any(values)
        return CheckResult(value, None, children)
    if op in ("for-all", "for-any"):
        collection = resolve_operand(node["collection"], context, element)
        if not isinstance(collection, list) or not collection:
            return _EMPTY
        children = tuple(_resolve(node["predicate"], context, item) for item in collection)
        values = [child.resolution for child in children]
        return CheckResult(fold_all(values) if op == "for-all" else fold_any(values), None, children)
    row = OPERATORS_BY_ID.get(op)
    if row is None:
        raise ValueError(f"unknown expression op {op!r}")
    operands = node["operands"]
    values = [resolve_operand(operand, context, element) for operand in operands]
    env = OperatorEnvironment(context.regex_step_budget, context.artifact_path)
    if row.own_empty_rule:
        expected, actual = values
        if expected is not ABSENT and not isinstance(expected, list):
            raise ValueError("covers-by-key expected operand must resolve to a reference-set members array")
        if isinstance(expected, list) and isinstance(actual, list) and (not expected or not actual):
            return _EMPTY
        return CheckResult("true" if row.evaluate(values, node, env) else "false")
    if op == "set-membership":
        values[1] = _project_reference_set(operands[1], values[1], context)
    for operand, value in zip(operands, values, strict=True):
        if value is ABSENT and _denotes_collection(operand, context):
            return _EMPTY
        if row.needs_member and isinstance(value, list) and not value:
            return _EMPTY
    return CheckResult("true" if row.evaluate(values, node, env) else "false")


def resolve_check(expression: Any, context: ResolutionContext) -> CheckResult:
    """Resolve an oracle's check to a three-valued tree (scoring.md §1.5–§1.6).

    ``expression`` is an ``Expression`` model or its wire dict. Raises the operators' runtime faults
    unchanged; an unknown ``op`` or a malformed reference-set operand is a programming error (ValueError).
    """
    return _resolve(as_wire(expression), context, _UNBOUND)


def _operation_index(contract: Mapping[str, Any]) -> dict[tuple[str | None, str], Mapping[str, Any]]:
    index: dict[tuple[str | None, str], Mapping[str, Any]] = {}
    for interface in contract.get("permittedInterfaces") or []:
        for operation in interface.get("operations") or []:
            index.setdefault((interface.get("logicalId"), operation["operationId"]), operation)
            index.setdefault((None, operation["operationId"]), operation)
    return index


def step_operation(contract: Mapping[str, Any], step: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The operation a plan step invokes (qualified by ``interfaceId`` when the step carries one)."""
    index = _operation_index(contract)
    return index.get((step.get("interfaceId"), step["operationId"]))


def collection_locations_of(contract: Any) -> frozenset[tuple[str, tuple[str, ...]]]:
    """Every (step id, decoded tail) a declared step's operation declares as a collection location."""
    wire = as_wire(contract)
    index = _operation_index(wire)
    pairs: set[tuple[str, tuple[str, ...]]] = set()
    for step in wire.get("interactionPlan") or []:
        operation = index.get((step.get("interfaceId"), step["operationId"]))
        if operation is None:
            continue
        locations = (operation.get("responseDescriptor") or {}).get("collectionLocations") or []
        for location in locations:
            pairs.add((step["stepId"], decode_tokens(location["pointer"])))
    return frozenset(pairs)


def resolution_context(
    contract: Any,
    bound: Mapping[str, Mapping[str, Any] | None],
    regex_step_budget: int,
    artifact_path: str,
) -> ResolutionContext:
    """Build a ``ResolutionContext`` from a contract (model or wire) and a step → observation binding.

    ``bound`` is usually ``PlanSelection.bound`` from ``selection.select_plan``; it must hold a key for
    every declared step (None when nothing is bound).
    """
    wire = as_wire(contract)
    reference_sets = {
        set_id: {"keys": list(declared["keys"]), "members": list(declared["members"])}
        for set_id, declared in (wire.get("referenceSets") or {}).items()
    }
    return ResolutionContext(
        bound=bound,
        reference_sets=reference_sets,
        collection_locations=collection_locations_of(wire),
        regex_step_budget=regex_step_budget,
        artifact_path=artifact_path,
    )
