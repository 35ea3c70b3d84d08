"""The compile stage: ``compile_contract`` and the ordered CHECKS table (artifacts.md §3.1).

Compile reads the contract's stamp (``schema-version-mismatch`` before anything else), validates the
shape (``schema-parse-failure``), then runs the checks below in this fixed order and raises the
**first** failure: the order is the published priority, so a contract with several defects reports
whichever check comes first. Two rows are strict-only (``--strict-inputs``, the default). Checks
read the contract's wire form (the spec's camelCase names), so every path they report is the one a
reader of the JSON file sees. Compile never changes the contract: the output is the input model,
which makes it idempotent by construction (§3.4).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from evalquality_core.artifacts.base import check_stamp, read_artifact, to_wire
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.canonical.json import scan_json
from evalquality_core.compile.bindings import (
    check_binding_cycle,
    check_captured_channel,
    check_captured_reachability,
)
from evalquality_core.compile.declarations import (
    check_observable_success_criterion,
    check_requirement_linkage,
)
from evalquality_core.compile.excluded_content import check_excluded_content
from evalquality_core.compile.expressions import (
    check_operand_legality,
    check_quantifier_nesting,
    check_quantifier_over_non_collection,
    check_reference_set_resolution,
    check_regex_constructs,
)
from evalquality_core.compile.forbidden_inputs import (
    check_forbidden_input_floor,
    check_scoped_resource_references,
)
from evalquality_core.compile.interfaces import (
    check_artifact_references,
    check_duplicate_interface_identifier,
    check_duplicate_operation_signature,
    check_interface_kind,
    check_undeclared_mandatory_input,
)
from evalquality_core.compile.oracles import check_oracle_alignment, check_oracle_channel
from evalquality_core.compile.plan_index import Json
from evalquality_core.compile.reachability import check_bound_element_scope, check_evidence_reachability
from evalquality_core.compile.rubrics import (
    check_rubric_anchoring,
    check_rubric_evidence_reachability,
    check_rubric_identifiers,
    check_rubric_reasoning_prose,
)
from evalquality_core.compile.state_reset import check_state_reset_pointers
from evalquality_core.compile.step_reference import check_step_reference_reducibility
from evalquality_core.compile.temporal import check_nested_temporal_clause, check_scripting_bound
from evalquality_core.compile.waivers import check_waiver_completeness
from evalquality_core.compile.witnesses import (
    check_sensitivity_witness_declared,
    check_witness_leg_identifiers,
    check_witness_legality,
)

ARTIFACT_PATH = "EvalContract"


def check_schema_version(contract: Json) -> None:
    """#0: the stamp must be one we read (4 to 7); a RuntimeFault, not a structural failure.

    A missing or non-integer stamp is ``schema-parse-failure`` at ``EvalContract``; an integer we
    do not read is ``schema-version-mismatch`` at ``EvalContract.schemaVersion`` (:func:`check_stamp`).
    """
    check_stamp(EvalContract, contract, ARTIFACT_PATH)


@dataclass(frozen=True)
class CheckRow:
    """One compile check: its §3.1 number, what it fires, whether only ``--strict-inputs`` runs it."""

    number: int
    name: str
    codes: tuple[str, ...]
    strict_only: bool
    run: Callable[[Json], None]


#: The compile checks in §3.1 order (the published priority).
CHECKS: tuple[CheckRow, ...] = (
    CheckRow(0, "schema-version", ("schema-version-mismatch",), False, check_schema_version),
    CheckRow(1, "duplicate-interface-identifier", ("duplicate-interface-identifier",), False, check_duplicate_interface_identifier),
    CheckRow(2, "requirement-linkage", ("missing-requirement-linkage",), False, check_requirement_linkage),
    CheckRow(3, "observable-success-criterion", ("no-observable-success-criterion",), False, check_observable_success_criterion),
    CheckRow(4, "artifact-references", ("unresolved-artifact-reference",), False, check_artifact_references),
    CheckRow(5, "evidence-reachability", ("unreachable-check-evidence",), False, check_evidence_reachability),
    CheckRow(6, "captured-reachability", ("unreachable-check-evidence",), False, check_captured_reachability),
    CheckRow(7, "bound-element-scope", ("malformed-operator-expression",), False, check_bound_element_scope),
    CheckRow(8, "operand-legality", ("malformed-operator-expression",), False, check_operand_legality),
    CheckRow(9, "regex-constructs", ("malformed-operator-expression",), False, check_regex_constructs),
    CheckRow(10, "quantifier-over-non-collection", ("quantifier-over-non-collection",), False, check_quantifier_over_non_collection),
    CheckRow(11, "quantifier-nesting", ("quantifier-nesting-exceeded",), False, check_quantifier_nesting),
    CheckRow(12, "reference-set-resolution", ("unresolved-reference-set",), False, check_reference_set_resolution),
    CheckRow(13, "duplicate-operation-signature", ("duplicate-operation-signature",), False, check_duplicate_operation_signature),
    CheckRow(14, "undeclared-mandatory-input", ("undeclared-mandatory-input",), True, check_undeclared_mandatory_input),
    CheckRow(15, "sensitivity-witness-declared", ("undeclared-mandatory-input",), True, check_sensitivity_witness_declared),
    CheckRow(16, "oracle-channel", ("oracle-missing-channel",), False, check_oracle_channel),
    CheckRow(17, "oracle-alignment", ("direction-check-misaligned",), False, check_oracle_alignment),
    CheckRow(18, "interface-kind", ("unsupported-interface-kind",), False, check_interface_kind),
    CheckRow(19, "nested-temporal-clause", ("nested-temporal-clause",), False, check_nested_temporal_clause),
    CheckRow(20, "scripting-bound", ("plan-exceeds-scripting-bound",), False, check_scripting_bound),
    CheckRow(21, "binding-cycle", ("binding-cycle",), False, check_binding_cycle),
    CheckRow(22, "captured-channel", ("captured-channel-undeclared",), False, check_captured_channel),
    CheckRow(23, "rubric-identifiers", ("rubric-unanchored",), False, check_rubric_identifiers),
    CheckRow(24, "rubric-reasoning-prose", ("rubric-scores-reasoning-prose",), False, check_rubric_reasoning_prose),
    CheckRow(25, "rubric-anchoring", ("rubric-unanchored",), False, check_rubric_anchoring),
    CheckRow(26, "rubric-evidence", ("rubric-evidence-unreachable",), False, check_rubric_evidence_reachability),
    CheckRow(27, "forbidden-input-floor", ("forbidden-input-floor-incomplete",), False, check_forbidden_input_floor),
    CheckRow(28, "excluded-content", ("excluded-content-in-declaration",), False, check_excluded_content),
    CheckRow(29, "scoped-references", ("scoped-reference-resolves-forbidden",), False, check_scoped_resource_references),
    CheckRow(30, "waiver-completeness", ("waiver-incomplete",), False, check_waiver_completeness),
    CheckRow(31, "step-reference-reducibility", ("irreducible-step-reference",), False, check_step_reference_reducibility),
    CheckRow(32, "witness-leg-identifiers", ("malformed-operator-expression",), False, check_witness_leg_identifiers),
    CheckRow(
        33,
        "witness-legality",
        ("malformed-operator-expression", "unreachable-check-evidence", "undeclared-mandatory-input"),
        False,
        check_witness_legality,
    ),
    CheckRow(34, "state-reset-pointers", ("unreachable-check-evidence",), False, check_state_reset_pointers),
)


def run_checks(contract: Json, *, strict_inputs: bool = True) -> None:
    """Run every check on a contract's wire form, in order; the first failure propagates."""
    for row in CHECKS:
        if row.strict_only and not strict_inputs:
            continue
        row.run(contract)


def _validated(value: Any, *, domain_checked: bool) -> EvalContract:
    """The contract model; a value the scanner already checked skips the second domain walk."""
    if domain_checked and isinstance(value, dict):
        try:
            return EvalContract.model_validate(value, by_alias=True, by_name=False)
        except ValidationError:
            pass  # read_artifact below names the failure the way every reader does
    return read_artifact(EvalContract, value, ARTIFACT_PATH)


def compile_with_wire(contract_json_or_model: Any, *, strict_inputs: bool = True) -> tuple[EvalContract, Json]:
    """``compile_contract``, also returning the wire form the checks read (so a caller such as
    ``seal_contract`` does not dump the model a second time)."""
    if isinstance(contract_json_or_model, EvalContract):
        model = contract_json_or_model
    else:
        value = contract_json_or_model
        scanned = isinstance(value, bytes | str)
        if scanned:
            value = scan_json(value, ARTIFACT_PATH)  # checks the value domain on the way
        if isinstance(value, dict):
            check_schema_version(value)
        model = _validated(value, domain_checked=scanned)
    wire = to_wire(model)
    run_checks(wire, strict_inputs=strict_inputs)
    return model, wire


def compile_contract(contract_json_or_model: Any, *, strict_inputs: bool = True) -> EvalContract:
    """Compile an authored contract (a model, a parsed JSON value, or raw JSON text/bytes).

    Raises ``RuntimeFault`` (``schema-version-mismatch``, ``schema-parse-failure``,
    ``non-canonicalizable-value``) for an unreadable document and ``StructuralFailure`` for the
    first failing check. Returns the contract unchanged, as a model.
    """
    return compile_with_wire(contract_json_or_model, strict_inputs=strict_inputs)[0]
