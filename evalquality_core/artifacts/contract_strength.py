"""The per-suite ``contract-strength.json`` document the contract_strength flow writes (harness.md A.4):
its pydantic models, published as ``schemas/contract-strength.schema.json``.

One document per suite: the contract's strength vector plus, per probe, its class, pre-flight outcome,
planned leg count, verdict, exit code, basis and qualification reasons. The per-probe fields use the
names of the TEA baseline (harness.md A.11) so the baseline is a projection of this document.

The one decision that is not obvious: the document holds only what the inputs determine (no clock,
no cache counters), so two runs over the same corpus write byte-identical documents; run costs live
in the flow's summary and the cost record instead.
"""

from __future__ import annotations

from pydantic import Field

from evalquality_core.artifacts.base import (
    ArtifactModel,
    BehaviorId,
    Digest,
    NonNegativeInt,
)
from evalquality_core.artifacts.evidence import StrengthVector
from evalquality_core.registries import ProbeClass, Verdict

#: File name of the per-suite document (harness.md A.4 step 3).
CONTRACT_STRENGTH_FILE = "contract-strength.json"
#: What the document's ``document`` field says, so a reader can tell it from other JSON in the folder.
DOCUMENT_KIND = "contract-strength"
#: Version of this document's shape; bump it when a field changes meaning. 2: one suite-wide
#: pre-flight (``preflight``, ``preflight_legs``, ``fixture_digest``), floors, the aggregate's classes
#: and its floor decisions.
DOCUMENT_VERSION = 2

#: The three classes of the strength vector, in the spec's order (scoring.md §5.3).
VECTOR_CLASSES: tuple[str, ...] = ("defect", "gameability", "zero-action")


class AggregateClass(ArtifactModel):
    """One class of the contract's ``StrengthAggregate``: probes exercised and caught, the rate, how many
    were eligible (scored with a class vector), and whether every member was comparable (scoring.md §5.5)."""

    exercised: NonNegativeInt
    caught: NonNegativeInt
    rate: float | None
    eligible: NonNegativeInt
    comparable: bool


class AggregateClasses(ArtifactModel):
    """The aggregate per class; a class is null when no eligible probe has it."""

    defect: AggregateClass | None
    gameability: AggregateClass | None
    zero_action: AggregateClass | None = Field(alias="zero-action")


class FloorDecision(ArtifactModel):
    """The aggregate's decision against one class's floor: ``meets``, ``does-not-meet`` or ``undeclared``,
    with its basis (``rate-meets-floor``, ``rate-below-floor``, ``unexercised-probe``, ...)."""

    floor: float | None
    decision: str
    basis: str

    def describe(self) -> str:
        """``meets (rate-meets-floor)``: the one string the gate compares."""
        return f"{self.decision} ({self.basis})"


class ProbeStrength(ArtifactModel):
    """What one probe contributed to its suite's run (harness.md A.11 names).

    ``preflight`` is ``passed`` or ``failed: <sorted unique failed check kinds>`` (harness.md A.5) of the
    suite-wide pre-flight the probe was scored under, ``preflight_legs`` that pre-flight's planned legs;
    ``verdict`` is null for the Invalid rung; ``qualification`` is null when the probe qualified, else
    the reason code of every refused condition; ``evidence_digest`` names ``evidence-<probe>.json``
    (null when no artifact was minted, i.e. on Invalid).
    """

    probe_class: ProbeClass
    expected_clean: bool
    behavior_id: BehaviorId | None
    preflight: str
    preflight_legs: NonNegativeInt | None
    trials: NonNegativeInt
    verdict: Verdict | None
    exit_code: NonNegativeInt
    strict_promotable: bool | None
    basis: list[str]
    qualification: list[str] | None
    strength: StrengthVector | None
    evidence_digest: Digest | None


class SurvivedMutant(ArtifactModel):
    """A generated mutant the contract's oracles let through: what changed, where, and why it survived."""

    mutant_id: str
    mutator_name: str
    target: str
    line: NonNegativeInt
    find: str
    replace: str
    reason: str


class TrialDetection(ArtifactModel):
    """Sampled mutants the evaluator's trials exercised and caught (scoring.md §5.2 per mutant), the rate and
    its 95 % Wilson interval (null when nothing was exercised)."""

    exercised: NonNegativeInt
    caught: NonNegativeInt
    rate: float | None
    interval95: list[float] | None


class TrialAgreement(ArtifactModel):
    """How often the evaluator's kill verdict equals the oracles' over the exercised sampled mutants, and the
    mutants only the evaluator (``evaluator_only``) or only the oracles (``oracle_only``) killed."""

    compared: NonNegativeInt
    agree: NonNegativeInt
    rate: float | None
    interval95: list[float] | None
    evaluator_only: list[str]
    oracle_only: list[str]


class SampledMutantTrials(ArtifactModel):
    """One sampled mutant: its oracle verdict beside the evaluator's (null when no trial was valid)."""

    mutant_id: str
    oracle_verdict: str
    evaluator_verdict: str | None
    valid_count: NonNegativeInt
    caught_count: NonNegativeInt
    agrees: bool | None


class GeneratedTrialStrength(ArtifactModel):
    """The evaluator's strength over a seeded sample of the generated mutants, stratified by the oracle
    verdict (flows/mutant_trials.py; evalquality_core/mutants/evaluator_strength.py): ``detection`` over the
    sample, ``by_oracle_verdict`` per stratum, ``agreement`` with the oracle kill verdicts."""

    requested: NonNegativeInt
    seed: int
    trials_per_mutant: NonNegativeInt
    population: dict[str, NonNegativeInt]
    sampled: dict[str, NonNegativeInt]
    detection: TrialDetection
    by_oracle_verdict: dict[str, TrialDetection]
    agreement: TrialAgreement
    not_exercised: list[str]
    mutants: list[SampledMutantTrials]


def trial_strength_of(block: dict) -> GeneratedTrialStrength:  # type: ignore[type-arg]
    """The document's evaluator line from a summary's ``evaluatorTrials`` block (flows/mutant_trials.py)."""
    rows = [{key: row[key] for key in ("mutantId", "oracleVerdict", "evaluatorVerdict", "validCount", "caughtCount", "agrees")}
            for row in block["rows"]]
    return GeneratedTrialStrength.model_validate({**block["strength"], "mutants": rows}, by_alias=True)


class GeneratedStrength(ArtifactModel):
    """The "generated strength" line (issue 18): the oracle kill score over the suite's generated mutants
    (flows/mutants.py), beside the hand-written vector. ``interval95`` is the Wilson interval; ``sampled``
    says whether ``valid`` counts a sample of the ``population`` of valid mutants (seed ``seed``)."""

    detected: NonNegativeInt
    valid: NonNegativeInt
    score: float | None
    interval95: list[float] | None
    sampled: bool
    population: NonNegativeInt
    seed: int
    classes: dict[str, NonNegativeInt]
    survived: list[SurvivedMutant]
    #: The evaluator's trials on a sample of the mutants (``[mutants] trials-sample``); absent without.
    evaluator: GeneratedTrialStrength | None = None


def generated_strength_of(summary: dict, seed: int) -> GeneratedStrength:  # type: ignore[type-arg]
    """The document's generated-strength line from a mutants summary (flows/mutants.py)."""
    score = summary["killScore"]
    return GeneratedStrength(
        detected=score["detected"], valid=score["valid"], score=score["score"], interval95=score["interval95"],
        sampled=score["sampled"], population=score["population"], seed=seed, classes=dict(summary["classes"]),
        survived=[
            SurvivedMutant(mutant_id=m["mutantId"], mutator_name=m["mutatorName"], target=m["target"], line=m["line"],
                           find=m["find"], replace=m["replace"], reason=m["reason"])
            for m in summary["mutants"] if m["status"] == "Survived"
        ],
        evaluator=None if summary.get("evaluatorTrials") is None else trial_strength_of(summary["evaluatorTrials"]),
    )


class SuiteStrength(ArtifactModel):
    """The ``contract-strength.json`` document of one suite.

    ``preflight`` / ``preflight_legs`` / ``fixture_digest`` describe the one suite-wide pre-flight every
    probe was scored under (null digest when it produced no verdict). ``floors`` are the suite's declared
    floors (``suite.toml`` ``[floors]``); ``aggregate`` and ``floor_decisions`` are the contract's
    ``StrengthAggregate`` classes and decisions, null when it was refused (``aggregate_refusal`` says why).
    """

    document: str
    document_version: NonNegativeInt
    suite: str
    contract_id: str
    contract_digest: Digest
    corpus_digest: Digest
    brief_digest: Digest | None
    preflight: str
    preflight_legs: NonNegativeInt | None
    fixture_digest: Digest | None
    aggregate_digest: Digest | None
    aggregate_refusal: str | None
    floors: dict[str, float]
    aggregate: AggregateClasses | None
    floor_decisions: dict[str, FloorDecision] | None
    probe_count: NonNegativeInt
    strength: StrengthVector
    unsatisfied_coverage_rules: list[str]
    probes: dict[str, ProbeStrength]
    #: Only for a suite that opts in (``suite.toml`` ``[mutants] nightly = true``); absent otherwise.
    generated_strength: GeneratedStrength | None = None


def rate_of(caught: int, exercised: int) -> float | None:
    """``caught / exercised``, null when nothing was exercised (scoring.md §5.3)."""
    return None if exercised == 0 else caught / exercised
