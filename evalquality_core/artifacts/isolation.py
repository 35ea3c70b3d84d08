"""IsolationManifest (artifacts.md §2.7): what an evaluator run was allowed and what it did, read at 1.

``forbiddenInputAccounting`` has exactly the seven AD-16 forbidden-input names as keys (kebab-case on
the wire, so each field carries an explicit alias). A non-null ``violation`` invalidates the run.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from evalquality_core.artifacts.base import (
    ArtifactModel,
    Digest,
    LineageArtifact,
    NonEmptyStr,
    PositiveDecimal,
    PositiveNumber,
    Slug,
)
from evalquality_core.artifacts.run_record import ResourceUse

__all__ = ["ForbiddenInputAccounting", "IsolationManifest", "ResourceCeilings", "WithholdingEntry"]

PositiveInt = Annotated[int, Field(ge=1, le=2**53 - 1)]


class ResourceCeilings(ArtifactModel):
    """The run's ceilings (all strictly positive)."""

    max_tool_calls: PositiveInt
    max_input_tokens: PositiveInt
    max_output_tokens: PositiveInt
    max_wall_clock_minutes: PositiveNumber
    max_cost_usd: PositiveDecimal


class WithholdingEntry(ArtifactModel):
    """Whether one forbidden input was withheld from the evaluator."""

    withheld: bool
    note: str | None


class ForbiddenInputAccounting(ArtifactModel):
    """One entry for each of the seven forbidden inputs (FORBIDDEN_INPUT_FLOOR), no more."""

    original_spec: WithholdingEntry = Field(alias="original-spec")
    source_code: WithholdingEntry = Field(alias="source-code")
    repository: WithholdingEntry = Field(alias="repository")
    builder_transcript: WithholdingEntry = Field(alias="builder-transcript")
    implementation_logs: WithholdingEntry = Field(alias="implementation-logs")
    comparator_results: WithholdingEntry = Field(alias="comparator-results")
    human_labels: WithholdingEntry = Field(alias="human-labels")


class IsolationManifest(LineageArtifact):
    """The isolation facts of one run; ingest checks them against the record."""

    ARTIFACT_NAME: ClassVar[str] = "IsolationManifest"
    ACCEPTED_SCHEMA_VERSIONS: ClassVar[tuple[int, ...]] = (1,)
    WRITTEN_SCHEMA_VERSION: ClassVar[int] = 1

    run_id: NonEmptyStr
    contract_id: Slug
    condition_arm: NonEmptyStr
    model_snapshot: NonEmptyStr
    system_prompt_digest: Digest
    contract_digest: Digest
    evaluator_configuration_digest: Digest
    workspace_identity: NonEmptyStr
    allowed_mounts: list[str]
    observed_mounts: list[str]
    network_allowlist: list[str]
    observed_network_targets: list[str]
    tool_allowlist: list[str]
    observed_tool_calls: list[str]
    resource_ceilings: ResourceCeilings
    actual_resource_use: ResourceUse
    forbidden_input_accounting: ForbiddenInputAccounting
    violation: str | None
