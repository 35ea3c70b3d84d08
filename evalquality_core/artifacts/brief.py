"""SealedEvaluatorBrief (artifacts.md §2.4, built by seal per §4.1), read and written at 2.

What an evaluator may see of a contract: its behaviours unchanged, one direction text per oracle,
the interfaces by id and kind only, scoped resources, principal names, budgets, safety limits and
the probe step bound. Strict: a brief carrying ``interactionPlan``, ``commentary`` or ``stepId`` fails
to parse. There is no identity field; a brief is named by its digest.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from evalquality_core.artifacts.base import (
    ArtifactModel,
    Digest,
    LineageArtifact,
    NonNegativeInt,
    OracleId,
    Slug,
)
from evalquality_core.artifacts.contract import Behavior, Budgets, ScopedResource
from evalquality_core.registries import InterfaceKind

__all__ = ["BriefDirection", "BriefInterface", "SealedEvaluatorBrief"]


class BriefDirection(ArtifactModel):
    """The generated direction prose for one oracle."""

    oracle_id: OracleId
    text: Annotated[str, Field(min_length=1)]


class BriefInterface(ArtifactModel):
    """A permitted interface as the brief shows it: id and kind only."""

    logical_id: Slug
    kind: InterfaceKind


class SealedEvaluatorBrief(LineageArtifact):
    """The sealed brief an evaluator receives; names its contract by digest."""

    ARTIFACT_NAME: ClassVar[str] = "SealedEvaluatorBrief"
    ACCEPTED_SCHEMA_VERSIONS: ClassVar[tuple[int, ...]] = (2,)
    WRITTEN_SCHEMA_VERSION: ClassVar[int] = 2

    contract_digest: Digest
    behaviors: Annotated[list[Behavior], Field(min_length=1)]
    directions: Annotated[list[BriefDirection], Field(min_length=1)]
    permitted_interfaces: list[BriefInterface]
    scoped_resources: list[ScopedResource]
    principals: list[Slug]
    budgets: Budgets
    safety_limits: list[str]
    probe_step_bound: NonNegativeInt | None
