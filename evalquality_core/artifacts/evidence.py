"""EvidenceArtifact (scoring.md §9.1, artifacts.md §2.11): what ``score``/``emit`` publish.

We write schema 4 and also read schema 3 (every evidence artifact the reference committed: the
chains' and the worked example's older chain). One model holds both versions and both modes; keys
that exist only in one version or one mode are *gated*: checked present/absent by the stamp and
``mode`` before the shape, held as ``None`` where absent, and left off again on the way out, so a
parsed artifact round-trips exactly.

* v4 only: ``scoredProbeId``, ``reducedProbeOutcomes``, ``trials.completedAttempts``,
  ``outcomes[].trialIndex`` (CHANGELOG 4.0.0; shapes reconstructed in scoring.md §9.1).
* production only: ``productionVerdict``.
* contract-scoring only: ``contractVerdict``, ``uncitedFindingGaps``, ``systemRecommendationRecorded``,
  ``systemRecommendationNote``.

The published schema (pre-``mode``) rejects the reference's own v3 artifacts (``mode`` in
``scoringVersionInputs`` and ``callerAttestedInputs``, ``uncitedFindingGaps``); the documents win.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator
from pydantic.alias_generators import to_snake

from evalquality_core.artifacts.base import (
    ArtifactModel,
    Digest,
    FindingId,
    LineageArtifact,
    NonEmptyStr,
    NonNegativeInt,
    OracleId,
    ProbeId,
    SchemaVersionInt,
    SignedSafeInt,
    Slug,
    UnitNumber,
)
from evalquality_core.artifacts.run_record import QuotedEvidence
from evalquality_core.registries import CheckResolution as ResolutionValue
from evalquality_core.registries import (
    Corroboration,
    Disposition,
    EvaluatorRecommendation,
    OutcomeState,
    RunMode,
    Severity,
    StrengthBasis,
    Verdict,
)

__all__ = [
    "EVIDENCE_SCHEMA_VERSIONS",
    "CallerAttestedInput",
    "CheckResolution",
    "ClassStrength",
    "CoverageGap",
    "EvidenceArtifact",
    "InvalidatedAttempt",
    "LineageChain",
    "Outcome",
    "ReducedProbeOutcome",
    "Remediation",
    "ScoringVersionInputs",
    "StrengthBlock",
    "StrengthVector",
    "TrialVote",
    "Trials",
    "UncitedFindingGap",
]

#: Evidence stamps we read; 4 is what we write.
EVIDENCE_SCHEMA_VERSIONS: tuple[int, ...] = (3, 4)
_FIRST_V4 = 4

PositiveInt = Annotated[int, Field(ge=1, le=2**53 - 1)]
CallerAttestedInput = Literal[
    "contractSchemaVersion",
    "corpusDigest",
    "fixtureDigest",
    "evaluatorConfigurationDigest",
    "scoringPolicyDigest",
    "mode",
]


class ScoringVersionInputs(ArtifactModel):
    """The six inputs whose digest is the scoring version."""

    contract_schema_version: SchemaVersionInt
    corpus_digest: Digest
    fixture_digest: Digest
    evaluator_configuration_digest: Digest
    scoring_policy_digest: Digest
    mode: RunMode


class InvalidatedAttempt(ArtifactModel):
    """A trial excluded from the vote, and the invalidating state that excluded it."""

    attempt: PositiveInt
    reason: NonEmptyStr


class Trials(ArtifactModel):
    """Declared minimum, completed count, and (v4) the exact attempt identities."""

    declared_minimum: PositiveInt
    completed: NonNegativeInt
    # v4 only (gated by the artifact's stamp).
    completed_attempts: list[PositiveInt] | None = None
    invalidated_attempts: list[InvalidatedAttempt]


class CheckResolution(ArtifactModel):
    """A check's three-valued resolution tree (one child per sub-expression or quantified element)."""

    resolution: ResolutionValue
    introduction_condition: Literal["empty-collection"] | None
    children: list[CheckResolution]


class Outcome(ArtifactModel):
    """One (trial, oracle) outcome row."""

    oracle_id: OracleId
    # v4 only (gated by the artifact's stamp).
    trial_index: PositiveInt | None = None
    probe_id: ProbeId | None
    state: OutcomeState
    severity: Severity
    disposition: Disposition
    resolved_from: FindingId | None
    corroboration: Corroboration
    selected_observation_ids: list[Slug]
    check_resolution: CheckResolution | None


class TrialVote(ArtifactModel):
    """One trial's vote state for the scored probe."""

    trial_index: PositiveInt
    state: OutcomeState


class ReducedProbeOutcome(ArtifactModel):
    """The per-probe trial-set result (v4, scoring.md §5.2)."""

    probe_id: ProbeId
    severity: Severity
    exercised: bool
    caught: bool
    catch_threshold: UnitNumber
    trial_votes: list[TrialVote]
    valid_count: NonNegativeInt
    caught_count: NonNegativeInt
    invalidated_attempts: list[InvalidatedAttempt]


class CoverageGap(ArtifactModel):
    """One AD-20 coverage rule's result."""

    rule: NonEmptyStr
    relevance_predicate: NonEmptyStr
    satisfaction_predicate: NonEmptyStr
    satisfied: bool
    severity: Severity


class ClassStrength(ArtifactModel):
    """Caught over exercised for one probe class (``rate`` null when none exercised)."""

    caught: NonNegativeInt
    exercised: NonNegativeInt
    rate: UnitNumber | None


class StrengthVector(ArtifactModel):
    """The AD-7 vector: one entry per probe class, ``None`` where no eligible probe."""

    defect: ClassStrength | None
    gameability: ClassStrength | None
    zero_action: ClassStrength | None = Field(alias="zero-action")


class StrengthBlock(ArtifactModel):
    """The strength block: denominator sentence, basis, vector, comparability, note."""

    denominator: NonEmptyStr
    basis: StrengthBasis
    vector: StrengthVector
    comparable: bool
    note: str | None


class LineageChain(ArtifactModel):
    """The three lineage-chain facts the scorer declares."""

    length_consistent: bool
    no_repeated_digest: bool
    no_gap: bool


class Remediation(ArtifactModel):
    """Revision count against the caller-attested remediation cap."""

    revision_count: NonNegativeInt
    cap: NonNegativeInt
    cap_source: Literal["caller-attested"]
    lineage_chain: LineageChain


class UncitedFindingGap(ArtifactModel):
    """An uncited defect finding, as the contract-scoring branch lists it."""

    finding_id: FindingId
    observation_ids: list[Slug]
    quoted_evidence: list[QuotedEvidence]
    severity: Severity


# --- Gated keys --------------------------------------------------------------------------------

_Facts = tuple[int, str]  # (schemaVersion, mode)
_GATES: tuple[tuple[tuple[str, ...], Callable[[int, str], bool]], ...] = (
    (("scoredProbeId",), lambda v, m: v >= _FIRST_V4),
    (("reducedProbeOutcomes",), lambda v, m: v >= _FIRST_V4),
    (("trials", "completedAttempts"), lambda v, m: v >= _FIRST_V4),
    (("outcomes", "*", "trialIndex"), lambda v, m: v >= _FIRST_V4),
    (("productionVerdict",), lambda v, m: m == "production"),
    (("contractVerdict",), lambda v, m: m == "contract-scoring"),
    (("uncitedFindingGaps",), lambda v, m: m == "contract-scoring"),
    (("systemRecommendationRecorded",), lambda v, m: m == "contract-scoring"),
    (("systemRecommendationNote",), lambda v, m: m == "contract-scoring"),
)


def _parents(node: Any, path: tuple[str, ...], where: str) -> list[tuple[dict[str, Any], str]]:
    """The objects holding the last key of ``path`` (``*`` = every list element), with their paths."""
    if not path:
        return [(node, where)] if isinstance(node, dict) else []
    head, rest = path[0], path[1:]
    if head == "*":
        items = node if isinstance(node, list) else []
        return [found for i, item in enumerate(items) for found in _parents(item, rest, f"{where}[{i}]")]
    if not isinstance(node, dict):
        return []
    child = node.get(head, node.get(to_snake(head)))
    return _parents(child, rest, f"{where}.{head}" if where else head)


def _gate_problems(data: dict[str, Any], version: int, mode: str) -> list[str]:
    problems = []
    for path, applies in _GATES:
        wanted = applies(version, mode)
        key = path[-1]
        for parent, where in _parents(data, path[:-1], ""):
            present = key in parent or to_snake(key) in parent
            full = f"{where}.{key}" if where else key
            if present and not wanted:
                problems.append(f"{full} is not a key at schemaVersion {version} in mode {mode}")
            elif wanted and not present:
                problems.append(f"{full} is required at schemaVersion {version} in mode {mode}")
    return problems


class EvidenceArtifact(LineageArtifact):
    """The emitted evidence of one scored probe: outcomes, verdict, strength, coverage gaps."""

    ARTIFACT_NAME: ClassVar[str] = "EvidenceArtifact"
    ACCEPTED_SCHEMA_VERSIONS: ClassVar[tuple[int, ...]] = EVIDENCE_SCHEMA_VERSIONS
    WRITTEN_SCHEMA_VERSION: ClassVar[int] = max(EVIDENCE_SCHEMA_VERSIONS)

    run_id: NonEmptyStr
    scoring_version: Digest
    scoring_version_inputs: ScoringVersionInputs
    comparability_key: Digest
    excluded_probe_ids: list[ProbeId]
    exit_code: SignedSafeInt
    verdict_basis: list[NonEmptyStr]
    caller_attested_inputs: list[CallerAttestedInput]
    trials: Trials
    outcomes: list[Outcome]
    uncited_findings: list[FindingId]
    coverage_gaps: list[CoverageGap]
    strength: StrengthBlock
    remediation: Remediation
    mode: RunMode
    # Gated keys (module docstring): each defaults to None only for the versions/modes lacking it.
    scored_probe_id: ProbeId | None = None
    reduced_probe_outcomes: list[ReducedProbeOutcome] | None = None
    production_verdict: Verdict | None = None
    contract_verdict: Verdict | None = None
    uncited_finding_gaps: list[UncitedFindingGap] | None = None
    system_recommendation_recorded: EvaluatorRecommendation | None = None
    system_recommendation_note: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _gated_keys_match(cls, data: Any) -> Any:
        """Version- and mode-gated keys are present exactly where the stamp and mode carry them."""
        if isinstance(data, dict):
            version = data.get("schemaVersion", data.get("schema_version"))
            mode = data.get("mode")
            if version in EVIDENCE_SCHEMA_VERSIONS and mode in ("production", "contract-scoring"):
                problems = _gate_problems(data, version, mode)
                if problems:
                    raise ValueError("; ".join(problems))
        return data

    @model_validator(mode="after")
    def _gated_values_present(self) -> EvidenceArtifact:
        """A gated key that is present may not be null where the shape requires a value."""
        required: list[tuple[str, Any]] = []
        if self.schema_version >= _FIRST_V4:
            required += [("scoredProbeId", self.scored_probe_id), ("reducedProbeOutcomes", self.reduced_probe_outcomes)]
            required += [("trials.completedAttempts", self.trials.completed_attempts)]
            required += [(f"outcomes[{i}].trialIndex", o.trial_index) for i, o in enumerate(self.outcomes)]
        if self.mode == "production":
            required.append(("productionVerdict", self.production_verdict))
        else:
            required += [
                ("contractVerdict", self.contract_verdict),
                ("uncitedFindingGaps", self.uncited_finding_gaps),
                ("systemRecommendationRecorded", self.system_recommendation_recorded),
            ]
        missing = [name for name, value in required if value is None]
        if missing:
            raise ValueError(f"{', '.join(missing)} must not be null at schemaVersion {self.schema_version}")
        return self

    @model_serializer(mode="wrap")
    def _drop_gated_keys(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Write back only the keys this artifact's stamp and mode carry."""
        value = handler(self)
        if not isinstance(value, dict):
            return value
        for path, applies in _GATES:
            if applies(self.schema_version, self.mode):
                continue
            for parent, _ in _parents(value, path[:-1], ""):
                parent.pop(path[-1], None)
                parent.pop(to_snake(path[-1]), None)
        return value
