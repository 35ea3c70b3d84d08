"""ScoringPolicy (artifacts.md §2.9), read at ``schemaVersion`` 2.

Version 2 carries ``catchThreshold`` (the share of trial votes that makes a probe caught, scoring.md
trial reduction). The published schema predates it and refuses it; every policy document the
reference wrote (worked example, chains, tea) has it, and the documents win (conformance README).
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from evalquality_core.artifacts.base import LineageArtifact, NonNegativeInt, Slug, UnitNumber
from evalquality_core.registries import Severity

__all__ = ["ScoringPolicy"]

PositiveInt = Annotated[int, Field(ge=1, le=2**53 - 1)]


class ScoringPolicy(LineageArtifact):
    """Thresholds and caps the scorer applies; its digest feeds the scoring version."""

    ARTIFACT_NAME: ClassVar[str] = "ScoringPolicy"
    ACCEPTED_SCHEMA_VERSIONS: ClassVar[tuple[int, ...]] = (2,)
    WRITTEN_SCHEMA_VERSION: ClassVar[int] = 2

    policy_id: Slug
    severity_floor: Severity
    confidence_threshold: UnitNumber
    catch_threshold: UnitNumber
    minimum_trial_count: PositiveInt
    re_execution_cap: NonNegativeInt
    remediation_cap: NonNegativeInt
    regex_match_step_budget: PositiveInt
