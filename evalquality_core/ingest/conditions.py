"""The eleven ingest condition kinds as rows, in the order ingest records them (scoring.md §7.1).

Each row names the kind, the payload fields its condition carries (wire names, in order), and the ladder
input it feeds (``evidenceIntegrity.<field>`` or ``outcomeState.unwitnessedQuotations``). A detected
condition is data (``IngestCondition``), never an exception: ingest returns it, the ladder routes it to
the Invalid rung, and ``judge-result-unscored`` additionally makes judge conduct ``malformed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

__all__ = [
    "AGREEMENT_FIELDS",
    "INGEST_CONDITIONS",
    "INGEST_CONDITIONS_BY_KIND",
    "INGEST_CONDITION_KINDS",
    "IngestCondition",
    "IngestConditionKind",
    "IngestConditionRow",
]

IngestConditionKind = Literal[
    "duplicate-record-identifier",
    "dangling-citation",
    "dangling-disposition-citation",
    "unwitnessed-quotation",
    "isolation-manifest-absent",
    "isolation-manifest-violation",
    "forbidden-input-not-withheld",
    "cross-artifact-disagreement",
    "evaluator-configuration-absent",
    "evaluator-configuration-digest-mismatch",
    "judge-result-unscored",
]
#: The eleven kinds, in recording order.
INGEST_CONDITION_KINDS: tuple[IngestConditionKind, ...] = get_args(IngestConditionKind)

#: AD-32: the fields record and isolation manifest must agree on, in reporting order. ``conditionArm`` is
#: deliberately not compared (an opaque caller label).
AGREEMENT_FIELDS: tuple[str, ...] = ("runId", "contractDigest", "evaluatorConfigurationDigest")


@dataclass(frozen=True, slots=True)
class IngestConditionRow:
    """One condition kind: its payload field names and the ladder input it feeds."""

    kind: IngestConditionKind
    payload_fields: tuple[str, ...]
    ladder_target: str


#: scoring.md §7.1, in order. ``ladder_target`` names the ladder input field the condition routes to.
INGEST_CONDITIONS: tuple[IngestConditionRow, ...] = (
    IngestConditionRow(
        "duplicate-record-identifier", ("subject", "identifier", "occurrences"), "duplicateRecordIdentifiers"
    ),
    IngestConditionRow("dangling-citation", ("findingId", "unresolvedObservationIds"), "danglingCitations"),
    IngestConditionRow(
        "dangling-disposition-citation",
        ("oracleId", "unresolvedObservationIds"),
        "danglingDispositionCitations",
    ),
    IngestConditionRow("unwitnessed-quotation", ("quotations",), "unwitnessedQuotations"),
    IngestConditionRow("isolation-manifest-absent", (), "isolationViolation"),
    IngestConditionRow(
        "isolation-manifest-violation",
        (
            "violation",
            "mountsOutsideAllowlist",
            "networkTargetsOutsideAllowlist",
            "toolCallsOutsideAllowlist",
        ),
        "isolationViolation",
    ),
    IngestConditionRow("forbidden-input-not-withheld", ("inputs",), "forbiddenInputsNotWithheld"),
    IngestConditionRow(
        "cross-artifact-disagreement", ("field", "recordValue", "manifestValue"), "crossArtifactDisagreements"
    ),
    IngestConditionRow("evaluator-configuration-absent", (), "evaluatorConfigurationAbsent"),
    IngestConditionRow(
        "evaluator-configuration-digest-mismatch",
        ("declaredDigest", "computedDigest"),
        "evaluatorConfigurationDigestMismatches",
    ),
    IngestConditionRow("judge-result-unscored", ("rubricId", "criterionId"), "judgeResultsUnscored"),
)

INGEST_CONDITIONS_BY_KIND: Mapping[str, IngestConditionRow] = {row.kind: row for row in INGEST_CONDITIONS}


@dataclass(frozen=True, slots=True)
class IngestCondition:
    """One detected condition: its ``kind`` and its payload (wire field names → JSON values).

    The payload keys are exactly the row's ``payload_fields``; ``to_wire()`` gives ``{kind, **payload}``.
    """

    kind: IngestConditionKind
    payload: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        row = INGEST_CONDITIONS_BY_KIND[self.kind]
        if tuple(self.payload) != row.payload_fields:
            raise ValueError(f"{self.kind} carries {row.payload_fields}, got {tuple(self.payload)}")

    @property
    def ladder_target(self) -> str:
        """The ladder input this condition feeds."""
        return INGEST_CONDITIONS_BY_KIND[self.kind].ladder_target

    def to_wire(self) -> dict[str, Any]:
        """``{"kind": …, **payload}``."""
        return {"kind": self.kind, **self.payload}
