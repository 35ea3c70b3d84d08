"""Seal: a compiled contract → the SealedEvaluatorBrief an evaluator may see (artifacts.md §4.1).

The brief keeps the behaviours, one generated direction per oracle, interfaces by id and kind,
principal names, budgets, safety limits and the probe step bound; everything that would hand the
evaluator the planted answers (checks, plan, operation inventories, reference sets, rubrics…) is
left out by construction. Every list is sorted (UTF-16 order) so only ``contractDigest`` changes
when a contract's arrays are permuted. A contract that compiles but cannot be sealed is a
``schema-parse-failure`` RuntimeFault naming ``EvalContract``. The scripting audit of §4.2 is not
run here, as in the reference (``audit_brief_scripting`` offers it separately).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pydantic import ValidationError

from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.brief import SealedEvaluatorBrief
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.compile.pipeline import compile_with_wire
from evalquality_core.compile.plan_index import Json, PlanIndex
from evalquality_core.compile.strings import utf16_key, utf16_sorted
from evalquality_core.faults import RuntimeFault, StructuralFailure
from evalquality_core.seal.directions import DirectionRenderer, SealRefusal

BRIEF_SCHEMA_VERSION = SealedEvaluatorBrief.WRITTEN_SCHEMA_VERSION


def _refuse(detail: str) -> RuntimeFault:
    return RuntimeFault("schema-parse-failure", "EvalContract", f"the contract compiles but cannot be sealed: {detail}")


def _no_duplicates(values: list[Any], what: str) -> None:
    repeated = [value for value, n in Counter(values).items() if n > 1]
    if repeated:
        raise _refuse(f'{what} "{repeated[0]}" is declared more than once')


def _directions(contract: Json) -> list[Json]:
    oracles = contract.get("oracles") or []
    _no_duplicates([oracle.get("id") for oracle in oracles], "oracle id")
    index = PlanIndex(contract)
    if index.duplicate_step_ids:
        raise _refuse(f'step id "{index.duplicate_step_ids[0]}" is declared more than once')
    if any("interfaceId" in step for step in contract.get("interactionPlan") or []):
        # Contract 6+: the pair is the identity; one id under two interfaces is two operations.
        if index.duplicate_pairs:
            interface_id, operation_id = index.duplicate_pairs[0]
            raise _refuse(f'operation "{operation_id}" is declared more than once by interface "{interface_id}"')
    elif index.duplicate_operation_ids:
        raise _refuse(f'operation id "{index.duplicate_operation_ids[0]}" is declared more than once')
    renderer = DirectionRenderer(index)
    directions = []
    for oracle in oracles:
        direction = oracle.get("direction")
        if direction is None:
            raise _refuse(f'oracle {oracle.get("id")} has no direction')
        if not direction.get("evidenceTargets"):
            raise _refuse(f'oracle {oracle.get("id")} has a direction with no evidence targets')
        try:
            text = renderer.direction_text(direction)
        except SealRefusal as refusal:
            raise _refuse(f'oracle {oracle.get("id")}: {refusal}') from None
        directions.append({"oracleId": oracle.get("id"), "text": text})
    return sorted(directions, key=lambda d: utf16_key(d["oracleId"]))


def seal(contract: EvalContract) -> SealedEvaluatorBrief:
    """Build the brief of an already compiled contract (the core seal of §4.1)."""
    return _seal_wire(to_wire(contract))


def _seal_wire(wire: Json) -> SealedEvaluatorBrief:
    interfaces = [{"logicalId": i.get("logicalId"), "kind": i.get("kind")} for i in wire.get("permittedInterfaces") or []]
    _no_duplicates([i["logicalId"] for i in interfaces], "interface logicalId")
    resources = list(wire.get("scopedResources") or [])
    _no_duplicates([r.get("reference") for r in resources], "scoped resource reference")
    test_data = wire.get("testData") or {}
    brief = {
        "schemaVersion": BRIEF_SCHEMA_VERSION,
        "parentDigest": None,
        "revisionCount": 0,
        "contractDigest": digest_artifact(wire),
        "behaviors": wire.get("behaviors"),
        "directions": _directions(wire),
        "permittedInterfaces": sorted(interfaces, key=lambda i: utf16_key(i["logicalId"])),
        "scopedResources": sorted(resources, key=lambda r: utf16_key(r.get("reference", ""))),
        "principals": utf16_sorted(test_data.get("principals") or {}),
        "budgets": wire.get("budgets"),
        "safetyLimits": utf16_sorted(wire.get("safetyLimits") or []),
        "probeStepBound": wire.get("probeStepBound"),
    }
    try:
        # Every value came out of a validated contract, so only the shape needs checking; a brief
        # that does not fit is re-read through read_artifact for its path and message.
        return SealedEvaluatorBrief.model_validate(brief, by_alias=True, by_name=False)
    except ValidationError:
        pass
    try:
        return read_artifact(SealedEvaluatorBrief, brief, "SealedEvaluatorBrief")
    except RuntimeFault as fault:
        raise _refuse(f"the brief would not conform: {fault.artifact_path}: {fault.detail}") from None


def seal_contract(contract_json_or_model: Any, *, strict_inputs: bool = True) -> SealedEvaluatorBrief:
    """The application seal: compile with the same ``strict_inputs``, then seal (§3.4)."""
    return _seal_wire(compile_with_wire(contract_json_or_model, strict_inputs=strict_inputs)[1])


_SEQUENCE_WORD_RE = re.compile(r"\b(?:then|before|after|subsequent(?:ly)?|next|finally|afterward(?:s)?)\b", re.IGNORECASE)
_LIST_MARKER_RE = re.compile(r"(?:^|\n|[.!?])\s*(?:\d+|[a-z])[.)](?![0-9])", re.IGNORECASE)


def audit_brief_scripting(brief: SealedEvaluatorBrief) -> None:
    """The AD-16 scripting audit (§4.2), offered separately: seal never runs it.

    A direction whose text holds more sequence markers (sequencing words, list markers) than
    ``probeStepBound`` is ``brief-exceeds-scripting-bound``; a null bound passes.
    """
    wire = to_wire(brief)
    bound = wire.get("probeStepBound")
    if bound is None:
        return
    for direction in wire.get("directions") or []:
        text = direction.get("text", "")
        count = len(_SEQUENCE_WORD_RE.findall(text)) + len(_LIST_MARKER_RE.findall(text))
        if count > bound:
            raise StructuralFailure(
                "brief-exceeds-scripting-bound",
                f"SealedEvaluatorBrief.directions[oracleId={direction.get('oracleId')}].text",
                f"the direction holds {count} sequence markers, more than the probe step bound {bound}",
            )
