"""The evaluator's strength over generated mutants (issue 18, pure): which mutants get live trials, what
each trial's judgement says, and the vector they add up to.

The oracle kill score (score.py) needs no evaluator: it resolves the contract's oracle checks itself. A
*sample* of the Killed and Survived mutants also goes through full evaluator trials (the live strength
run's ``run-trial`` / ``seal-record``, flows/mutant_trials.py); this module decides, without touching a
process or a file:

* **the sample** (:func:`choose_trial_sample`): seeded and stratified by the oracle verdict. Candidates
  are the Killed and Survived mutants that stand for themselves (an Observable mutant that collapsed
  onto a representative is represented by it). Each stratum is ordered by the same digest order as the
  generation's sample (``select.draw_order(seed, id)``); the sample size is split between the strata in
  proportion to their sizes (largest remainder), with at least one from each non-empty stratum when the
  size allows, so a suite whose mutants nearly all survive still measures the evaluator on a Killed one.
* **a trial's detection** (:func:`trial_judgement`): the evaluator *detects* the mutant in a trial when it
  records some oracle ``violated`` or cites a ``defect`` finding. Decision: the outcome is read from the
  evaluator's judgement in the sealed run record, not from the ``score`` stage: scoring (AD-9) admits
  only a qualified, signed probe, and a generated mutant has none (a derived probe exists only for some
  Observable representatives, and only after the generator cycle), so ``score`` would put every sampled
  mutant on the Invalid rung and measure nothing.
* **a mutant's reduction** (:func:`reduce_mutant_trials`), scoring.md §5.2 applied to those detections:
  faulted trials are invalidated attempts and excluded, ``exercised`` = some valid trial, ``caught`` =
  exercised and detected/valid strictly greater than the policy's ``catchThreshold``. The evaluator's kill
  verdict is Killed when caught, Survived when exercised and not caught, none when not exercised.
* **the vector** (:func:`trial_strength`): shaped like a hand-written class entry where that makes sense —
  ``detection`` = {exercised, caught, rate} over the sampled mutants with the 95 % Wilson interval, the same
  per oracle verdict (``byOracleVerdict``: the evaluator's rate on Killed mutants is its agreement with the
  oracles' catches, its rate on Survived ones what it sees beyond them), and ``agreement`` between the
  evaluator's and the oracles' kill verdicts (with the mutants where only one of them kills).
  The overall detection rate is over the stratified sample as drawn, not re-weighted to the population;
  the per-stratum rates are what generalise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalquality_core.mutants.score import wilson_interval
from evalquality_core.mutants.select import draw_order

#: The oracle verdicts a trial sample is drawn from, in this order (one stratum each).
TRIAL_STRATA: tuple[str, ...] = ("Killed", "Survived")


def trial_candidates(mutants: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Per stratum, the ids of the summary's mutants that may be sampled (module docstring), in summary order.

    ``mutants`` are the rows of ``mutants-summary.json`` (``mutantId``, ``status``, ``representative``)."""
    strata: dict[str, list[str]] = {name: [] for name in TRIAL_STRATA}
    for row in mutants:
        representative = row.get("representative")
        if row["status"] in strata and representative in (None, row["mutantId"]):
            strata[row["status"]].append(row["mutantId"])
    return strata


def _allocate(sizes: Mapping[str, int], size: int) -> dict[str, int]:
    """How many of ``size`` each stratum gets: proportional (largest remainder), at least one per non-empty
    stratum when ``size`` allows, never more than a stratum holds."""
    total = sum(sizes.values())
    if size >= total:
        return dict(sizes)
    nonempty = [name for name in TRIAL_STRATA if sizes.get(name, 0) > 0]
    if size < len(nonempty):  # too small for one each: the largest strata first (ties in stratum order)
        ranked = sorted(nonempty, key=lambda name: (-sizes[name], TRIAL_STRATA.index(name)))
        return {name: (1 if name in ranked[:size] else 0) for name in TRIAL_STRATA}
    shares = {name: size * sizes.get(name, 0) / total for name in TRIAL_STRATA}
    counts = {name: (max(1, int(shares[name])) if name in nonempty else 0) for name in TRIAL_STRATA}
    counts = {name: min(counts[name], sizes.get(name, 0)) for name in TRIAL_STRATA}
    while sum(counts.values()) > size:  # the minimum of one pushed us over: take from the largest
        largest = max((n for n in TRIAL_STRATA if counts[n] > 1), key=lambda n: (counts[n], -TRIAL_STRATA.index(n)))
        counts[largest] -= 1
    while sum(counts.values()) < size:  # hand out the rest by the largest remaining share
        open_ = [n for n in TRIAL_STRATA if counts[n] < sizes.get(n, 0)]
        best = max(open_, key=lambda n: (shares[n] - counts[n], -TRIAL_STRATA.index(n)))
        counts[best] += 1
    return counts


def choose_trial_sample(mutants: Sequence[Mapping[str, Any]], size: int, seed: int) -> list[tuple[str, str]]:
    """The seeded, stratified trial sample: ``(mutant id, oracle verdict)`` pairs, Killed first, each stratum
    in its draw order (module docstring). The same on every machine for the same summary and seed."""
    if size < 1:
        raise ValueError("the trial sample size must be at least 1")
    strata = trial_candidates(mutants)
    counts = _allocate({name: len(ids) for name, ids in strata.items()}, size)
    chosen: list[tuple[str, str]] = []
    for name in TRIAL_STRATA:
        ordered = sorted(strata[name], key=lambda mutant_id: draw_order(seed, mutant_id))
        chosen += [(mutant_id, name) for mutant_id in ordered[: counts[name]]]
    return chosen


@dataclass(frozen=True)
class TrialJudgement:
    """What one answered trial's evaluator said about a mutant: its recommendation, the oracles it recorded
    ``violated``, the oracles its defect findings cite, and whether that counts as a detection."""

    trial_index: int
    recommendation: str
    violated: tuple[str, ...]
    cited: tuple[str, ...]

    @property
    def detected(self) -> bool:
        """Some oracle recorded violated, or some defect finding."""
        return bool(self.violated or self.cited)

    def as_json(self) -> dict[str, Any]:
        """The trial's row in the summary."""
        return {"trialIndex": self.trial_index, "recommendation": self.recommendation, "violated": list(self.violated),
                "cited": list(self.cited), "detected": self.detected}


def trial_judgement(trial_index: int, dispositions: Sequence[Mapping[str, Any]], findings: Sequence[Mapping[str, Any]],
                    recommendation: str) -> TrialJudgement:
    """One trial's judgement from the evaluator's dispositions and findings (as sealed in its run record)."""
    violated = sorted({d["oracleId"] for d in dispositions if d.get("disposition") == "violated"})
    cited = sorted({f.get("oracleId") or "" for f in findings if f.get("findingType") == "defect"})
    return TrialJudgement(trial_index, recommendation, tuple(violated), tuple(cited))


def reduce_mutant_trials(
    mutant_id: str,
    oracle_verdict: str,
    killed_by: Sequence[str],
    judgements: Sequence[TrialJudgement],
    faults: Sequence[tuple[int, str]],
    catch_threshold: float,
) -> dict[str, Any]:
    """One sampled mutant's row: its trials, the §5.2 reduction, the evaluator's verdict beside the oracles'."""
    valid = len(judgements)
    detected = sum(1 for j in judgements if j.detected)
    exercised = valid > 0
    caught = exercised and detected / valid > catch_threshold  # strict, by division (scoring.md §5.2)
    verdict = None if not exercised else ("Killed" if caught else "Survived")
    return {
        "mutantId": mutant_id,
        "oracleVerdict": oracle_verdict,
        "killedBy": list(killed_by),
        "trials": [j.as_json() for j in sorted(judgements, key=lambda j: j.trial_index)],
        "invalidatedAttempts": [{"attempt": index, "reason": reason} for index, reason in sorted(faults)],
        "validCount": valid,
        "caughtCount": detected,
        "catchThreshold": catch_threshold,
        "exercised": exercised,
        "caught": caught,
        "evaluatorVerdict": verdict,
        "agrees": None if verdict is None else verdict == oracle_verdict,
        "evaluatorCites": sorted({o for j in judgements for o in (*j.violated, *j.cited) if o}),
    }


def _entry(caught: int, exercised: int) -> dict[str, Any]:
    interval = wilson_interval(caught, exercised)
    return {"exercised": exercised, "caught": caught, "rate": None if exercised == 0 else caught / exercised,
            "interval95": None if interval is None else [round(interval[0], 6), round(interval[1], 6)]}


def trial_strength(rows: Sequence[Mapping[str, Any]], population: Mapping[str, int], *, size: int, seed: int,
                   trials_per_mutant: int) -> dict[str, Any]:
    """The generated mutants' strength vector from the sampled rows (module docstring)."""
    exercised = [row for row in rows if row["exercised"]]
    by_verdict = {
        name: _entry(sum(1 for r in exercised if r["oracleVerdict"] == name and r["caught"]),
                     sum(1 for r in exercised if r["oracleVerdict"] == name))
        for name in TRIAL_STRATA
    }
    agree = sum(1 for row in exercised if row["agrees"])
    return {
        "requested": size,
        "seed": seed,
        "trialsPerMutant": trials_per_mutant,
        "population": {name: int(population.get(name, 0)) for name in TRIAL_STRATA},
        "sampled": {name: sum(1 for r in rows if r["oracleVerdict"] == name) for name in TRIAL_STRATA},
        "detection": _entry(sum(1 for r in exercised if r["caught"]), len(exercised)),
        "byOracleVerdict": by_verdict,
        "agreement": {
            "compared": len(exercised),
            "agree": agree,
            **{k: v for k, v in _entry(agree, len(exercised)).items() if k in ("rate", "interval95")},
            "evaluatorOnly": sorted(r["mutantId"] for r in exercised if r["caught"] and r["oracleVerdict"] == "Survived"),
            "oracleOnly": sorted(r["mutantId"] for r in exercised if not r["caught"] and r["oracleVerdict"] == "Killed"),
        },
        "notExercised": sorted(r["mutantId"] for r in rows if not r["exercised"]),
    }


__all__ = [
    "TRIAL_STRATA", "TrialJudgement", "choose_trial_sample", "reduce_mutant_trials", "trial_candidates",
    "trial_judgement", "trial_strength",
]
