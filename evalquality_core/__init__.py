"""eval-quality for Python: the pure domain library (no Prefect) and the ``eval-quality`` CLI.

Stages are pure functions from artifacts to an artifact, raising ``StructuralFailure`` or
``RuntimeFault``. Only ``adapters/`` and ``cli/`` touch processes and files.
"""

from evalquality_core.artifacts import (
    ArtifactReference,
    EvalContract,
    EvaluatorConfiguration,
    EvidenceArtifact,
    Expression,
    IsolationManifest,
    PreflightVerdict,
    PrivateArtifactManifest,
    Probe,
    ScoringPolicy,
    SealedEvaluatorBrief,
    SealedRunRecord,
    StrengthAggregate,
    read_artifact,
    to_wire,
)
from evalquality_core.canonical import (
    canonical_bytes,
    digest_artifact,
    digest_bytes,
    digest_composite,
    digest_directory,
    digest_json,
    scan_json,
    serialize_artifact,
)
from evalquality_core.compile import compile_contract
from evalquality_core.faults import (
    FAILURE_CODES,
    RUNTIME_FAULT_CODES,
    AggregationRefusal,
    RuntimeFault,
    StructuralFailure,
)

# Not ``seal`` itself: the name would shadow the ``evalquality_core.seal`` subpackage.
from evalquality_core.seal import seal_contract

__all__ = [
    "ArtifactReference",
    "EvalContract",
    "EvaluatorConfiguration",
    "EvidenceArtifact",
    "Expression",
    "IsolationManifest",
    "PreflightVerdict",
    "PrivateArtifactManifest",
    "Probe",
    "ScoringPolicy",
    "SealedEvaluatorBrief",
    "SealedRunRecord",
    "StrengthAggregate",
    "read_artifact",
    "to_wire",
    "compile_contract",
    "seal_contract",
    "FAILURE_CODES",
    "RUNTIME_FAULT_CODES",
    "AggregationRefusal",
    "RuntimeFault",
    "StructuralFailure",
    "canonical_bytes",
    "digest_artifact",
    "digest_bytes",
    "digest_composite",
    "digest_directory",
    "digest_json",
    "scan_json",
    "serialize_artifact",
]
