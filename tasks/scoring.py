"""The scoring tasks: ``score`` (ingest → score → emit over one probe's trial set) and ``aggregate-strength``.

Thin wrappers (style.md §3): each body makes one core call (``pipeline.run_score``,
``aggregate_strength``) and returns a small importable result. Both are digest-cached through
``tasks/caching.py``: the ``score`` key is the digests of the contract, probe, every trial record,
policy, pre-flight verdict, corpus digest, isolation manifest and evaluator configuration, so a
re-run re-scores only a probe whose inputs changed. A fault fails the task and is never cached.

Emit happens inside ``run_score`` (the pipeline mints the artifact only off the Invalid rung), so
there is no separate ``emit`` task; the flow seals what it writes as canonical JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefect import task

from tasks.caching import StageDigest, stage_cache, verified_stage

#: Version of the scoring stages' cached results; bump when ``ProbeScore`` changes shape or meaning.
SCORING_CODE_VERSION = "scoring-v1"


@dataclass(frozen=True)
class ProbeScore:
    """What one probe's scored trial set contributes to its suite's report.

    ``evidence`` is the emitted EvidenceArtifact as wire JSON (None on the Invalid rung, where nothing is
    minted); ``qualification`` is None when the probe qualified, else one reason code per refused
    condition; ``unsatisfied_coverage_rules`` lists the contract's coverage rules left unsatisfied.
    """

    probe_id: str
    verdict: str | None
    exit_code: int
    strict_promotable: bool
    basis: tuple[str, ...]
    qualification: tuple[str, ...] | None
    evidence: Mapping[str, Any] | None
    unsatisfied_coverage_rules: tuple[str, ...]


def _engine_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("eval-quality")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0.0.0+source"


#: The score stage's key: the digests of every input that decides the evidence (module docstring).
_SCORE_INPUTS = (
    "contract",
    "probe",
    "records",
    "policy",
    "preflight_verdict",
    "corpus_digest",
    "isolation_manifest",
    "evaluator_configuration",
)


@verified_stage
@task(
    name="score",
    task_run_name="score/{suite}/{probe_id}",
    **{**stage_cache(*_SCORE_INPUTS), "cache_policy": StageDigest(inputs=_SCORE_INPUTS, version=SCORING_CODE_VERSION)},
)
def score_task(
    suite: str,
    probe_id: str,
    contract: Any,
    probe: Any,
    records: Sequence[Any],
    policy: Any,
    preflight_verdict: Any,
    corpus_digest: str,
    isolation_manifest: Any | None,
    evaluator_configuration: Any | None,
) -> ProbeScore:
    """Ingest every trial record, score the trial set, emit the evidence (scoring.md §7–§9) → ``ProbeScore``.

    ``contract`` is the compiled ``EvalContract`` or its wire JSON; the flow sends the wire JSON (a plain
    mapping is what every task runner moves intact: Prefect's ``quote()`` is a 1-tuple subclass whose
    pickle round trip nests it one tuple deeper, so a quoted model reached a Dask process worker as a
    tuple). The key is the same either way: a model's input digest is the digest of its wire JSON.
    """
    from evalquality_core.artifacts.base import read_artifact
    from evalquality_core.artifacts.contract import EvalContract
    from evalquality_core.evaluate.pointers import as_wire
    from evalquality_core.pipeline import run_score

    run = run_score(
        read_artifact(EvalContract, contract, "EvalContract") if isinstance(contract, Mapping) else contract,
        probe,
        list(records),
        policy,
        preflight_verdict,
        corpus_digest=corpus_digest,
        isolation_manifest=isolation_manifest,
        evaluator_configuration=evaluator_configuration,
    )
    qualification = run.qualification
    return ProbeScore(
        probe_id=probe_id,
        verdict=run.ladder.verdict,
        exit_code=run.ladder.exit_code,
        strict_promotable=run.ladder.strict_promotable,
        basis=tuple(run.ladder.basis),
        qualification=None if qualification.qualified else tuple(f.code for f in qualification.failures),
        evidence=None if run.artifact is None else as_wire(run.artifact),
        unsatisfied_coverage_rules=tuple(gap.rule for gap in run.result.coverage_gaps if not gap.satisfied),
    )


@dataclass(frozen=True)
class AggregateOutcome:
    """``aggregate-strength``'s answer: the ``StrengthAggregate`` as wire JSON, or why it was refused.

    A refusal (``AggregationRefusal``, exit 4 at the CLI) is a decision about the inputs, not a
    transient fault, so it is returned (and cached) rather than raised: per-probe pre-flights give each
    probe its own fixture digest, and §5.5 refuses evidence whose scoring versions differ.
    """

    aggregate: Mapping[str, Any] | None
    refusal: str | None


@verified_stage
@task(
    name="aggregate-strength",
    task_run_name="aggregate-strength/{suite}",
    **{
        **stage_cache("evidence", "floors", "policy"),
        "cache_policy": StageDigest(inputs=("evidence", "floors", "policy"), version=SCORING_CODE_VERSION),
    },
)
def aggregate_strength_task(
    suite: str, evidence: Sequence[Mapping[str, Any]], floors: Mapping[str, float], policy: Any
) -> AggregateOutcome:
    """Aggregate one suite's evidence artifacts into its ``StrengthAggregate`` (scoring.md §5.5)."""
    from evalquality_core.aggregate.aggregate import aggregate_strength
    from evalquality_core.artifacts.base import to_wire
    from evalquality_core.faults import AggregationRefusal

    try:
        aggregate = aggregate_strength(list(evidence), dict(floors), policy, engine_version=_engine_version())
    except AggregationRefusal as refusal:
        return AggregateOutcome(None, str(refusal))
    return AggregateOutcome(to_wire(aggregate), None)
