"""Check resolution and selection (scoring.md §1, §2): the evaluate half of scoring.

Public API (inputs may be pydantic models or their wire dicts; everything is computed on wire JSON):

* ``select_plan(contract, observations) -> PlanSelection`` — every plan step selected once per trial.
  ``PlanSelection.steps[step_id] -> StepSelection(step_id, cardinality, result: "none"|"one"|"several",
  matched_ids: tuple[str, ...], bound: dict | None, ambiguous: bool)``; ``PlanSelection.bound`` is the
  ``{step_id: observation | None}`` map for resolution; ``PlanSelection.captured`` the captured values.
* ``select_for_oracle(contract, plan_selection, check) -> OracleSelection(addressed_step_ids,
  selections: tuple[StepSelection, ...], selector_ambiguity: bool)`` — addressed steps in plan order.
* ``resolution_context(contract, bound, regex_step_budget, artifact_path) -> ResolutionContext``.
* ``resolve_check(expression, context) -> CheckResult(resolution, introduction_condition, children)``;
  ``CheckResult.to_wire()`` gives ``{resolution, introductionCondition, children}``. Raises RuntimeFault
  ``budget-exhausted`` / ``operator-cannot-accept-operand`` / ``non-canonicalizable-value``.
* ``satisfies(resolution | None, polarity) -> bool``; ``fold_all``, ``fold_any``, ``fold_not``.
* ``OPERATORS`` (rows), ``ABSENT``, ``resolve_operand``, ``addressed_steps``, ``binding_order``.

Typical use per (trial, oracle)::

    plan = select_plan(contract, record.observations)
    trial_ctx = resolution_context(contract, plan.bound, policy.regex_match_step_budget,
                                   "EvalContract.oracles.check")        # once per trial
    result = resolve_check(oracle.check, trial_ctx.for_oracle(oracle.id))  # when oracle.check is not None
    selection = select_for_oracle(contract, plan, oracle.check)
"""

from evalquality_core.evaluate.bindings import (
    BindingOrder,
    CapturedValue,
    binding_deep_equal,
    binding_order,
    observation_satisfies_bindings,
)
from evalquality_core.evaluate.operators import (
    OPERATORS,
    OPERATORS_BY_ID,
    OperatorRow,
    canonical_equal,
    json_kind,
)
from evalquality_core.evaluate.pointers import (
    ABSENT,
    as_wire,
    channel_root,
    decode_tokens,
    parse_evidence_pointer,
    walk,
)
from evalquality_core.evaluate.resolution import (
    CheckResult,
    ResolutionContext,
    collection_locations_of,
    fold_all,
    fold_any,
    fold_not,
    resolution_context,
    resolve_check,
    resolve_operand,
    satisfies,
    step_operation,
)
from evalquality_core.evaluate.selection import (
    OracleSelection,
    PlanSelection,
    StepSelection,
    addressed_steps,
    base_candidates,
    select_for_oracle,
    select_plan,
)

__all__ = [
    "ABSENT",
    "OPERATORS",
    "OPERATORS_BY_ID",
    "BindingOrder",
    "CapturedValue",
    "CheckResult",
    "OperatorRow",
    "OracleSelection",
    "PlanSelection",
    "ResolutionContext",
    "StepSelection",
    "addressed_steps",
    "as_wire",
    "base_candidates",
    "binding_deep_equal",
    "binding_order",
    "canonical_equal",
    "channel_root",
    "collection_locations_of",
    "decode_tokens",
    "fold_all",
    "fold_any",
    "fold_not",
    "json_kind",
    "observation_satisfies_bindings",
    "parse_evidence_pointer",
    "resolution_context",
    "resolve_check",
    "resolve_operand",
    "satisfies",
    "select_for_oracle",
    "select_plan",
    "step_operation",
    "walk",
]
