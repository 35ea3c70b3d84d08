"""StrengthAggregate (scoring.md §5.5, artifacts.md §2.12): run-wide strength per probe class, read at 1.

The shape follows scoring.md §5.5 (the newest aggregate): beside the published schema's fields it
carries ``scoringPolicyDigest``, the sorted ``callerAttestedInputs``, ``aggregateAttestedInputs`` (what
the aggregation takes on trust) and the ``unexercised-probe`` floor basis. The published schema (an
older commit) lacks them; no conformance document of this kind exists to arbitrate.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from evalquality_core.artifacts.base import (
    ArtifactModel,
    Digest,
    LineageArtifact,
    NonEmptyStr,
    NonNegativeInt,
    ProbeId,
    UnitNumber,
)
from evalquality_core.artifacts.evidence import CallerAttestedInput
from evalquality_core.registries import RunMode, StrengthBasis

__all__ = [
    "AGGREGATE_ATTESTED_INPUTS",
    "AggregatedClass",
    "AggregatedClasses",
    "AggregatedInput",
    "FloorDecision",
    "FloorDecisions",
    "FloorMet",
    "FloorNotMet",
    "FloorUndeclared",
    "StrengthAggregate",
]

AggregateAttestedInput = Literal["evidenceSetCompleteness", "probeClass"]
#: What the aggregation takes on trust (AD-32), in the order it states them.
AGGREGATE_ATTESTED_INPUTS: tuple[AggregateAttestedInput, ...] = ("evidenceSetCompleteness", "probeClass")
StrengthClassName = Literal["defect", "gameability", "zero-action"]
PositiveInt = Annotated[int, Field(ge=1, le=2**53 - 1)]


class AggregatedInput(ArtifactModel):
    """One aggregated evidence artifact: its probe, class (``None`` for controls/canaries), run, digest."""

    probe_id: ProbeId
    probe_class: StrengthClassName | None
    run_id: NonEmptyStr
    artifact_digest: Digest


class AggregatedClass(ArtifactModel):
    """One class's counts across the run, with its eligible denominator and comparability."""

    caught: NonNegativeInt
    exercised: NonNegativeInt
    rate: UnitNumber | None
    eligible: PositiveInt
    comparable: bool


class AggregatedClasses(ArtifactModel):
    """Per class, the aggregated counts or ``None`` when no eligible probe."""

    defect: AggregatedClass | None
    gameability: AggregatedClass | None
    zero_action: AggregatedClass | None = Field(alias="zero-action")


class FloorMet(ArtifactModel):
    """The class meets its declared floor."""

    floor: UnitNumber
    decision: Literal["meets"]
    basis: Literal["rate-meets-floor"]


class FloorNotMet(ArtifactModel):
    """The class misses its declared floor, with the reason."""

    floor: UnitNumber
    decision: Literal["does-not-meet"]
    basis: Literal["no-eligible-probe", "not-comparable", "no-exercised-probe", "unexercised-probe", "rate-below-floor"]


class FloorUndeclared(ArtifactModel):
    """No floor was declared for the class."""

    floor: None
    decision: Literal["undeclared"]
    basis: Literal["no-floor-declared"]


#: A decision against one class's floor, discriminated on ``decision``.
FloorDecision = Annotated[FloorMet | FloorNotMet | FloorUndeclared, Field(discriminator="decision")]


class FloorDecisions(ArtifactModel):
    """The decision for every class."""

    defect: FloorDecision
    gameability: FloorDecision
    zero_action: FloorDecision = Field(alias="zero-action")


class StrengthAggregate(LineageArtifact):
    """The run-wide strength of the qualified probes of one run."""

    ARTIFACT_NAME: ClassVar[str] = "StrengthAggregate"
    ACCEPTED_SCHEMA_VERSIONS: ClassVar[tuple[int, ...]] = (1,)
    WRITTEN_SCHEMA_VERSION: ClassVar[int] = 1

    engine_version: NonEmptyStr
    mode: RunMode
    scoring_version: Digest
    scoring_policy_digest: Digest
    comparability_key: Digest
    basis: StrengthBasis
    minimum_trial_count: PositiveInt
    caller_attested_inputs: list[CallerAttestedInput]
    aggregate_attested_inputs: list[AggregateAttestedInput]
    inputs: Annotated[list[AggregatedInput], Field(min_length=1)]
    classes: AggregatedClasses
    floor_decisions: FloorDecisions
