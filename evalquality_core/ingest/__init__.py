"""Ingest (scoring.md §7): one sealed run record + isolation manifest + evaluator configuration in, the
validated observations and every detected condition out.

Public API:

* ``ingest(record, manifest | None, configuration | None, contract=None) -> ValidatedObservations``
  (fields ``mode, run_id, trial_index, contract_digest, evaluator_configuration_digest,
  evaluator_recommendation, observations, findings, dispositions`` (wire dicts, sorted),
  ``conditions: tuple[IngestCondition, ...]``, ``unwitnessed_quotations``, ``isolation_violation:
  tuple[str, ...]``, ``contract_digest_matches: bool | None``).
* ``IngestCondition(kind, payload)`` with ``.to_wire()`` and ``.ladder_target``; ``INGEST_CONDITIONS`` rows.
* ``audit_quotations(observations, findings) -> tuple[UnwitnessedQuotation, ...]``; ``project_channel``.
"""

from evalquality_core.ingest.conditions import (
    AGREEMENT_FIELDS,
    INGEST_CONDITION_KINDS,
    INGEST_CONDITIONS,
    INGEST_CONDITIONS_BY_KIND,
    IngestCondition,
    IngestConditionRow,
)
from evalquality_core.ingest.ingest import ValidatedObservations, ingest
from evalquality_core.ingest.quotation import UnwitnessedQuotation, audit_quotations, project_channel

__all__ = [
    "AGREEMENT_FIELDS",
    "INGEST_CONDITIONS",
    "INGEST_CONDITIONS_BY_KIND",
    "INGEST_CONDITION_KINDS",
    "IngestCondition",
    "IngestConditionRow",
    "UnwitnessedQuotation",
    "ValidatedObservations",
    "audit_quotations",
    "ingest",
    "project_channel",
]
