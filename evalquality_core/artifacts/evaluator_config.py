"""EvaluatorConfiguration (artifacts.md §2.8): the evaluator a record was produced by, read at 1.

It names the sealed brief by digest; records and isolation manifests name it by digest in turn.
There is no ``trialIndex``: trials of one configuration pool into one scoring version.
"""

from __future__ import annotations

from typing import ClassVar

from evalquality_core.artifacts.base import (
    ArtifactModel,
    Digest,
    JsonValue,
    LineageArtifact,
    NonEmptyStr,
    SignedSafeInt,
)
from evalquality_core.artifacts.contract import Budgets

__all__ = ["EvaluatorConfiguration", "JudgeConfiguration"]


class JudgeConfiguration(ArtifactModel):
    """The judge model used for rubric scoring, if any."""

    model_snapshot: NonEmptyStr
    system_prompt_digest: Digest | None


class EvaluatorConfiguration(LineageArtifact):
    """Identity, model, prompt, decoding, inventories and budgets of an evaluator."""

    ARTIFACT_NAME: ClassVar[str] = "EvaluatorConfiguration"
    ACCEPTED_SCHEMA_VERSIONS: ClassVar[tuple[int, ...]] = (1,)
    WRITTEN_SCHEMA_VERSION: ClassVar[int] = 1

    sealed_brief_digest: Digest
    evaluator_identity: NonEmptyStr
    model_snapshot: NonEmptyStr
    system_prompt_digest: Digest
    decoding_parameters: dict[str, JsonValue]
    tool_inventory: list[str]
    permission_inventory: list[str]
    budgets: Budgets
    seed: SignedSafeInt | None
    judge_configuration: JudgeConfiguration | None
