"""The stage table as data: each stage's function, module, owned artifact, spec section and task name.

style.md §1.3 and §6: a reader finds any stage in one hop. The README's "Where each stage lives" table
is held equal to ``STAGES`` by a test, and another test imports every function named here. Every stage
is a pure function from artifacts to an artifact (or a raised fault); the Prefect task that wraps it
(in ``tasks/``) carries the name in the last column, so the UI leads back here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    """One row of the stage table."""

    stage: str
    function: str
    module: str
    inputs: tuple[str, ...]
    owns: str
    spec: str
    task: str


STAGES: tuple[Stage, ...] = (
    Stage("compile", "compile_contract", "evalquality_core.compile.pipeline",
          ("authored contract",), "EvalContract", "artifacts.md §3", "compile"),
    Stage("seal", "seal", "evalquality_core.seal.seal",
          ("EvalContract",), "SealedEvaluatorBrief", "artifacts.md §4", "seal"),
    Stage("plan", "plan_preflight", "evalquality_core.preflight.plan",
          ("EvalContract", "Probe", "run id"), "PreflightPlan", "preflight-adapter.md §1", "plan-preflight"),
    Stage("reduce", "reduce_preflight", "evalquality_core.preflight.reduce",
          ("PreflightPlan", "ProbeObservation"), "PreflightVerdict", "preflight-adapter.md §2",
          "reduce-preflight"),
    Stage("ingest", "ingest", "evalquality_core.ingest.ingest",
          ("SealedRunRecord", "IsolationManifest", "EvaluatorConfiguration"), "ValidatedObservations",
          "scoring.md §7", "score"),
    Stage("score", "score", "evalquality_core.score.score",
          ("ValidatedObservations", "EvalContract", "Probe", "PreflightVerdict", "ScoringPolicy"),
          "ScoredOutcomes", "scoring.md §1–§6, §8", "score"),
    Stage("emit", "emit", "evalquality_core.emit.emit",
          ("ScoredOutcomes",), "EvidenceArtifact", "scoring.md §9", "score"),
    Stage("aggregate", "aggregate_strength", "evalquality_core.aggregate.aggregate",
          ("EvidenceArtifact", "floors", "ScoringPolicy"), "StrengthAggregate", "scoring.md §5.5",
          "aggregate-strength"),
)


def readme_table() -> str:
    """The README's "Where each stage lives" table, rendered from ``STAGES``."""
    lines = [
        "| stage | function | module | spec | task |",
        "|---|---|---|---|---|",
    ]
    for row in STAGES:
        lines.append(f"| {row.stage} | `{row.function}` | `{row.module}` | {row.spec} | `{row.task}` |")
    return "\n".join(lines)
