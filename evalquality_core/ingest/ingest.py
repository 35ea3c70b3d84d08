"""Ingest one sealed run record (one trial): ``ingest(record, manifest, configuration, contract=None)``.

scoring.md §7 (AD-24, AD-16, AD-32, AD-17, AD-23). Every problem detected here is returned as data — an
ordered list of ``IngestCondition`` — and nothing raises except ``non-canonicalizable-value`` from
canonicalization (quotation audit, configuration digest). Parse and version checks happened earlier, at
the boundary that read the bytes. The one choice the spec left open: repeated identifiers are ordered by
``(subject, identifier)`` as strings, so subjects sort ``finding``, ``observation``, ``oracle-disposition``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.evaluate.pointers import as_wire
from evalquality_core.faults import RuntimeFault
from evalquality_core.ingest.conditions import AGREEMENT_FIELDS, IngestCondition
from evalquality_core.ingest.quotation import UnwitnessedQuotation, audit_quotations
from evalquality_core.registries import FORBIDDEN_INPUT_FLOOR

__all__ = ["ValidatedObservations", "ingest"]


@dataclass(frozen=True, slots=True)
class ValidatedObservations:
    """The validated product of one trial (scoring.md §7.2). Not a published artifact.

    ``observations`` (sorted by sequence, then id), ``findings`` (stable-sorted by findingId) and
    ``dispositions`` (stable-sorted by oracleId) are the record's own entries as wire dicts.
    ``contract_digest_matches`` is None when no contract was given, else whether the trial's
    ``contractDigest`` equals the canonical digest of the supplied contract (score turns a mismatch into
    ``trial-set-field-disagreement``; ingest records no condition for it).
    """

    mode: str
    run_id: str
    trial_index: int
    contract_digest: str
    evaluator_configuration_digest: str
    evaluator_recommendation: str
    observations: tuple[Mapping[str, Any], ...]
    findings: tuple[Mapping[str, Any], ...]
    dispositions: tuple[Mapping[str, Any], ...]
    conditions: tuple[IngestCondition, ...]
    unwitnessed_quotations: tuple[UnwitnessedQuotation, ...]
    isolation_violation: tuple[str, ...]
    contract_digest_matches: bool | None

    @property
    def condition_kinds(self) -> tuple[str, ...]:
        """The kinds of the recorded conditions, in order."""
        return tuple(condition.kind for condition in self.conditions)


def _duplicates(record: Mapping[str, Any]) -> list[IngestCondition]:
    sources = (
        ("observation", [o["observationId"] for o in record.get("observations") or []]),
        ("finding", [f["findingId"] for f in record.get("findings") or []]),
        ("oracle-disposition", [d["oracleId"] for d in record.get("oracleDispositions") or []]),
    )
    found = [
        (subject, identifier, count)
        for subject, identifiers in sources
        for identifier, count in Counter(identifiers).items()
        if count > 1
    ]
    found.sort(key=lambda entry: (entry[0], entry[1]))
    return [
        IngestCondition(
            "duplicate-record-identifier",
            {"subject": subject, "identifier": identifier, "occurrences": count},
        )
        for subject, identifier, count in found
    ]


def _unresolved(cited: Sequence[str], declared: set[str]) -> list[str]:
    """Cited ids naming no observation, de-duplicated in first-citation order."""
    return [i for i in dict.fromkeys(cited) if i not in declared]


def _dangling(
    entries: Sequence[Mapping[str, Any]], key: str, kind: str, declared: set[str]
) -> list[IngestCondition]:
    found = []
    for entry in entries:
        unresolved = _unresolved(entry.get("observationIds") or [], declared)
        if unresolved:
            found.append((entry[key], unresolved))
    # Sorted by [id, …unresolved] element-wise, never by array position.
    found.sort(key=lambda pair: [pair[0], *pair[1]])
    return [IngestCondition(kind, {key: ident, "unresolvedObservationIds": ids}) for ident, ids in found]  # type: ignore[arg-type]


def _outside(observed: Sequence[str], allowed: Sequence[str]) -> list[str]:
    """Observed values with no allowlist entry, de-duplicated, in the manifest's own order."""
    permitted = set(allowed)
    return [value for value in dict.fromkeys(observed) if value not in permitted]


def _manifest_conditions(
    record: Mapping[str, Any], manifest: Mapping[str, Any], violations: list[str]
) -> list[IngestCondition]:
    conditions: list[IngestCondition] = []
    mounts = _outside(manifest["observedMounts"], manifest["allowedMounts"])
    targets = _outside(manifest["observedNetworkTargets"], manifest["networkAllowlist"])
    tools = _outside(manifest["observedToolCalls"], manifest["toolAllowlist"])
    declared_violation = manifest.get("violation")
    if declared_violation is not None or mounts or targets or tools:
        conditions.append(
            IngestCondition(
                "isolation-manifest-violation",
                {
                    "violation": declared_violation,
                    "mountsOutsideAllowlist": mounts,
                    "networkTargetsOutsideAllowlist": targets,
                    "toolCallsOutsideAllowlist": tools,
                },
            )
        )
        if declared_violation is not None:
            violations.append(f"manifest violation: {declared_violation}")
        violations.extend(f"mount outside allowlist: {v}" for v in mounts)
        violations.extend(f"network target outside allowlist: {v}" for v in targets)
        violations.extend(f"tool call outside allowlist: {v}" for v in tools)
    accounting = manifest.get("forbiddenInputAccounting") or {}
    # Named in floor order; an input the manifest does not account for is not withheld.
    admitted = [
        name for name in FORBIDDEN_INPUT_FLOOR if not (accounting.get(name) or {}).get("withheld", False)
    ]
    if admitted:
        conditions.append(IngestCondition("forbidden-input-not-withheld", {"inputs": admitted}))
    for name in AGREEMENT_FIELDS:
        if record[name] != manifest[name]:
            conditions.append(
                IngestCondition(
                    "cross-artifact-disagreement",
                    {"field": name, "recordValue": record[name], "manifestValue": manifest[name]},
                )
            )
    return conditions


def ingest(
    record: Any,
    manifest: Any | None,
    configuration: Any | None,
    contract: Any | None = None,
) -> ValidatedObservations:
    """Ingest one sealed run record with its isolation manifest and evaluator configuration (scoring.md §7).

    Each argument is a model or its wire dict; ``manifest``/``configuration`` may be None (absent). The
    eleven condition kinds are recorded in the order of ``conditions.INGEST_CONDITIONS``.
    ``contract`` (optional) only fills ``contract_digest_matches``.
    """
    rec = as_wire(record)
    observations: list[Mapping[str, Any]] = list(rec.get("observations") or [])
    findings: list[Mapping[str, Any]] = list(rec.get("findings") or [])
    dispositions: list[Mapping[str, Any]] = list(rec.get("oracleDispositions") or [])
    declared = {observation["observationId"] for observation in observations}

    conditions: list[IngestCondition] = _duplicates(rec)
    conditions += _dangling(findings, "findingId", "dangling-citation", declared)
    conditions += _dangling(dispositions, "oracleId", "dangling-disposition-citation", declared)
    quotations = audit_quotations(observations, findings)
    if quotations:
        conditions.append(
            IngestCondition("unwitnessed-quotation", {"quotations": [q.to_wire() for q in quotations]})
        )
    violations: list[str] = []
    if manifest is None:
        # The manifest-reading checks cannot run; every record-internal check still does.
        conditions.append(IngestCondition("isolation-manifest-absent"))
        violations.append("isolation manifest absent")
    else:
        conditions += _manifest_conditions(rec, as_wire(manifest), violations)
    if configuration is None:
        conditions.append(IngestCondition("evaluator-configuration-absent"))
    else:
        # The record's declaration is the operand; the manifest's is covered by cross-artifact agreement.
        try:
            computed = digest_artifact(as_wire(configuration))
        except RuntimeFault as fault:
            raise RuntimeFault(fault.code, "EvaluatorConfiguration", fault.detail) from None  # type: ignore[arg-type]
        if computed != rec["evaluatorConfigurationDigest"]:
            conditions.append(
                IngestCondition(
                    "evaluator-configuration-digest-mismatch",
                    {"declaredDigest": rec["evaluatorConfigurationDigest"], "computedDigest": computed},
                )
            )
    unscored = {
        (result["rubricId"], result["criterionId"]): None
        for result in rec.get("judgeResults") or []
        if result.get("score") is None
    }
    for rubric_id, criterion_id in sorted(unscored):
        conditions.append(
            IngestCondition("judge-result-unscored", {"rubricId": rubric_id, "criterionId": criterion_id})
        )

    return ValidatedObservations(
        mode=rec["mode"],
        run_id=rec["runId"],
        trial_index=rec["trialIndex"],
        contract_digest=rec["contractDigest"],
        evaluator_configuration_digest=rec["evaluatorConfigurationDigest"],
        evaluator_recommendation=rec["evaluatorRecommendation"],
        observations=tuple(sorted(observations, key=lambda o: (o["sequence"], o["observationId"]))),
        findings=tuple(sorted(findings, key=lambda f: f["findingId"])),
        dispositions=tuple(sorted(dispositions, key=lambda d: d["oracleId"])),
        conditions=tuple(conditions),
        unwitnessed_quotations=quotations,
        isolation_violation=tuple(violations),
        contract_digest_matches=None
        if contract is None
        else digest_artifact(as_wire(contract)) == rec["contractDigest"],
    )
