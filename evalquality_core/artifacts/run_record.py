"""SealedRunRecord (artifacts.md §2.6): one evaluator trial, read at ``schemaVersion`` 4 to 8.

One model reads every stamp and records the stamp as read; a new record is written at 8. The
versions differ by five keys, checked by stamp before the shape and dropped again on the way out so
a parsed record round-trips exactly:

* ``invalidReason`` — present at 4 and 5, gone at 6;
* ``observations[].callInputs.arguments`` — the MCP tool-call input channel, present from 5;
* ``findings[].quotedEvidence[].artifactId`` — present from 5 (a slug when the quote is from an
  artifact channel, else ``null``);
* ``observations[].interfaceId`` — present from 7 (5.0.0: an observation names the pair
  (interfaceId, operationId));
* ``observations[].callInputs.bodyEncoding`` — present from 8 (6.0.0): ``"raw"`` when the call sent
  a raw body, ``null`` otherwise. For a raw call we record ``body`` as ``{"base64": <canonical
  base64>}`` and the content type in ``header`` (our reading; no stored record 8 exists), and an
  observation whose ``header`` names Content-Type twice (case-insensitively) is refused.

The conformance README calls records 4 and 5 "identical key sets"; that holds at the top level
only: the two nested keys above are in every v5/v6 record we hold and in no v4 record.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from evalquality_core.artifacts.base import (
    ArtifactModel,
    BehaviorId,
    CriterionId,
    Digest,
    FindingId,
    JsonValue,
    LineageArtifact,
    NonEmptyStr,
    NonNegativeInt,
    NonNegativeNumber,
    OracleId,
    ProbeId,
    RubricId,
    SignedSafeInt,
    Slug,
    StampedKeysModel,
    UnitNumber,
    UnsignedDecimal,
)
from evalquality_core.artifacts.contract import CANONICAL_BASE64_PATTERN, TaggedPayload
from evalquality_core.artifacts.references import ArtifactReference
from evalquality_core.registries import (
    Disposition,
    EvaluatorRecommendation,
    EvidenceChannel,
    ObservationProvenance,
    RunMode,
    Severity,
)

__all__ = [
    "FIRST_BODY_ENCODING_RECORD",
    "FIRST_PAIR_RECORD",
    "RECORD_SCHEMA_VERSIONS",
    "CallInputs",
    "ConfirmationFinding",
    "DefectFinding",
    "EvidenceDisclosure",
    "Finding",
    "JudgeResult",
    "Observation",
    "ObservationFinding",
    "OracleDisposition",
    "QuotedEvidence",
    "ResourceUse",
    "SealedRunRecord",
]

#: Record stamps we read; 8 is what we write.
RECORD_SCHEMA_VERSIONS: tuple[int, ...] = (4, 5, 6, 7, 8)
_FIRST_WITH_ARGUMENTS = 5
_LAST_WITH_INVALID_REASON = 5
#: The first record stamp whose observations carry ``interfaceId`` (5.0.0).
FIRST_PAIR_RECORD = 7
#: The first record stamp whose call inputs carry ``bodyEncoding`` (6.0.0).
FIRST_BODY_ENCODING_RECORD = 8

JsonObject = dict[str, JsonValue]


class OracleDisposition(ArtifactModel):
    """The evaluator's disposition of one oracle and the observations it rests on."""

    oracle_id: OracleId
    disposition: Disposition
    observation_ids: list[Slug]
    note: str | None


class CallInputs(StampedKeysModel):
    """The inputs a call actually sent, per channel (``None`` = channel not used)."""

    STAMPED_KEYS: ClassVar[tuple[str, ...]] = ("body_encoding",)

    path: JsonObject | None
    query: JsonObject | None
    header: JsonObject | None
    body: JsonObject | None
    argument: JsonObject | None
    option: JsonObject | None
    environment: JsonObject | None
    stdin: JsonObject | None
    # Key present from record 5 only; the record validator enforces presence by stamp.
    arguments: JsonObject | None = None
    # Key present from record 8 only (``"raw"`` for a raw body, else ``None``).
    body_encoding: Literal["raw"] | None = None


class Observation(StampedKeysModel):
    """One observed call: inputs, response channels, streams, exit code and artifacts.

    ``interface_id`` is on the wire from record 7; an observation read at 4 to 6 has none (its
    operation is then found by ``operationId`` alone) and goes back to the wire without the key.
    """

    STAMPED_KEYS: ClassVar[tuple[str, ...]] = ("interface_id",)

    observation_id: Slug
    sequence: Annotated[int, Field(gt=0, le=2**53 - 1)]
    interface_id: Slug | None = None
    operation_id: Slug
    provenance: ObservationProvenance
    principal: Slug | None
    call_inputs: CallInputs
    response_body: JsonValue
    response_headers: JsonObject | None
    response_status: NonNegativeInt | None
    stdout: TaggedPayload
    stderr: TaggedPayload
    exit_code: SignedSafeInt | None
    artifacts: dict[Slug, TaggedPayload]


class QuotedEvidence(StampedKeysModel):
    """A verbatim quote a defect finding rests on, and its channel."""

    STAMPED_KEYS: ClassVar[tuple[str, ...]] = ("artifact_id",)

    quote: NonEmptyStr
    channel: EvidenceChannel
    # Key present from record 5 only; the record validator enforces presence by stamp. A quote keeps
    # the key set it was read or built with (an EvidenceArtifact copies quotes from any record).
    artifact_id: Slug | None = None


class _FindingFields(ArtifactModel):
    """Fields common to every finding type."""

    finding_id: FindingId
    oracle_id: OracleId | None
    probe_id: ProbeId
    behavior_id: BehaviorId | None
    severity: Severity
    summary: NonEmptyStr
    confidence: UnitNumber
    evidence_artifacts: list[ArtifactReference]


class DefectFinding(_FindingFields):
    """A defect claim: at least one observation and one verbatim quote."""

    finding_type: Literal["defect"]
    observation_ids: Annotated[list[Slug], Field(min_length=1)]
    quoted_evidence: Annotated[list[QuotedEvidence], Field(min_length=1)]


class ObservationFinding(_FindingFields):
    """An observation (no quoted evidence)."""

    finding_type: Literal["observation"]
    observation_ids: list[Slug]


class ConfirmationFinding(_FindingFields):
    """A confirmation that something held (no quoted evidence)."""

    finding_type: Literal["confirmation"]
    observation_ids: list[Slug]


#: A finding, discriminated on ``findingType``.
Finding = Annotated[DefectFinding | ObservationFinding | ConfirmationFinding, Field(discriminator="finding_type")]


class JudgeResult(ArtifactModel):
    """A judge's score for one rubric criterion."""

    rubric_id: RubricId
    criterion_id: CriterionId
    score: SignedSafeInt | None
    note: str | None


class ResourceUse(ArtifactModel):
    """What the run consumed."""

    tool_calls: NonNegativeInt
    input_tokens: NonNegativeInt
    output_tokens: NonNegativeInt
    wall_clock_seconds: NonNegativeNumber
    cost_usd: UnsignedDecimal


class EvidenceDisclosure(ArtifactModel):
    """Whether the evidence was truncated or reported incomplete."""

    truncation_bound: NonNegativeInt | None
    reported_incomplete: bool


_RAW_BODY = re.compile(CANONICAL_BASE64_PATTERN)


def _raw_call_problems(inputs: dict[str, Any], where: str) -> list[str]:
    """Record 8: a duplicate Content-Type header is refused; a raw body is ``{"base64": canonical}``."""
    problems: list[str] = []
    header = inputs.get("header")
    if isinstance(header, dict):
        content_types = [key for key in header if isinstance(key, str) and key.lower() == "content-type"]
        if len(content_types) > 1:
            problems.append(f"{where}.header names Content-Type more than once ({', '.join(content_types)})")
    if inputs.get("bodyEncoding") == "raw":
        body = inputs.get("body")
        base64 = body.get("base64") if isinstance(body, dict) else None
        if not (isinstance(body, dict) and set(body) == {"base64"} and isinstance(base64, str) and _RAW_BODY.match(base64)):
            problems.append(f'{where}.body of a raw call is {{"base64": <canonical RFC 4648 base64>}}')
    return problems


def _versioned_key_problems(data: dict[str, Any], version: int) -> list[str]:
    """Name each version-gated key whose presence does not match ``version`` (module docstring)."""
    problems: list[str] = []

    def expect(present: bool, wanted: bool, where: str) -> None:
        if present and not wanted:
            problems.append(f"{where} is not a key at schemaVersion {version}")
        elif wanted and not present:
            problems.append(f"{where} is required at schemaVersion {version}")

    expect("invalidReason" in data, version <= _LAST_WITH_INVALID_REASON, "invalidReason")
    modern = version >= _FIRST_WITH_ARGUMENTS
    observations = data.get("observations")
    for index, observation in enumerate(observations if isinstance(observations, list) else []):
        if isinstance(observation, dict):
            expect("interfaceId" in observation, version >= FIRST_PAIR_RECORD, f"observations[{index}].interfaceId")
        inputs = observation.get("callInputs") if isinstance(observation, dict) else None
        if isinstance(inputs, dict):
            expect("arguments" in inputs, modern, f"observations[{index}].callInputs.arguments")
            encoded = version >= FIRST_BODY_ENCODING_RECORD
            expect("bodyEncoding" in inputs, encoded, f"observations[{index}].callInputs.bodyEncoding")
            if encoded:
                problems.extend(_raw_call_problems(inputs, f"observations[{index}].callInputs"))
    findings = data.get("findings")
    for index, finding in enumerate(findings if isinstance(findings, list) else []):
        quotes = finding.get("quotedEvidence") if isinstance(finding, dict) else None
        for position, quote in enumerate(quotes if isinstance(quotes, list) else []):
            if isinstance(quote, dict):
                expect("artifactId" in quote, modern, f"findings[{index}].quotedEvidence[{position}].artifactId")
    return problems


class SealedRunRecord(LineageArtifact):
    """A sealed record of one evaluator trial against a sealed brief."""

    ARTIFACT_NAME: ClassVar[str] = "SealedRunRecord"
    ACCEPTED_SCHEMA_VERSIONS: ClassVar[tuple[int, ...]] = RECORD_SCHEMA_VERSIONS
    WRITTEN_SCHEMA_VERSION: ClassVar[int] = max(RECORD_SCHEMA_VERSIONS)

    run_id: NonEmptyStr
    condition_arm: NonEmptyStr
    mode: RunMode
    trial_index: Annotated[int, Field(ge=1, le=2**53 - 1)]
    contract_digest: Digest
    sealed_brief_digest: Digest
    evaluator_configuration_digest: Digest
    evaluator_recommendation: EvaluatorRecommendation
    oracle_dispositions: list[OracleDisposition]
    findings: list[Finding]
    observations: list[Observation]
    judge_results: list[JudgeResult]
    actions_artifact: ArtifactReference
    isolation_manifest_artifact: ArtifactReference
    resource_use: ResourceUse
    evidence_disclosure: EvidenceDisclosure
    # Present at 4 and 5 only (the record validator enforces it); ``None`` at 6.
    invalid_reason: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _keys_match_the_stamp(cls, data: Any) -> Any:
        """Version-gated keys are present exactly at the stamps that carry them."""
        if isinstance(data, dict):
            version = data.get("schemaVersion", data.get("schema_version"))
            if isinstance(version, int) and version in RECORD_SCHEMA_VERSIONS:
                problems = _versioned_key_problems(data, version)
                if problems:
                    raise ValueError("; ".join(problems))
        return data

    @model_serializer(mode="wrap")
    def _drop_keys_the_stamp_lacks(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Write back only the keys this record's stamp carries."""
        value = handler(self)
        if not isinstance(value, dict):
            return value
        modern = self.schema_version >= _FIRST_WITH_ARGUMENTS
        if self.schema_version > _LAST_WITH_INVALID_REASON:
            value.pop("invalidReason", None)
            value.pop("invalid_reason", None)
        if not modern:
            for observation in value.get("observations", ()):
                inputs = observation.get("callInputs", observation.get("call_inputs"))
                inputs.pop("arguments", None)
            for finding in value.get("findings", ()):
                for quote in finding.get("quotedEvidence", finding.get("quoted_evidence", ())):
                    quote.pop("artifactId", None)
                    quote.pop("artifact_id", None)
        return value
