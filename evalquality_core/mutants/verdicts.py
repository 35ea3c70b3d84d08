"""From runs to verdicts: one mutant's classification, kill verdict and report entry (pure).

The flow hands over, per mutant, the runs it made (:class:`~.classify.RunOutcome` by run id) and the
oracle resolutions of its plan run; this module decides the mutant's class (classify.py), its kill
verdict (score.py), its report status (report.py) and collects a suite's figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalquality_core.mutants.classify import CLASSIFICATIONS, Classification, RunOutcome, classify, collapse
from evalquality_core.mutants.generate import GeneratedMutant, Generation, location
from evalquality_core.mutants.report import build_report, report_status
from evalquality_core.mutants.score import KillVerdict, kill_score, kill_verdict


def plan_outcomes(observations: Sequence[Mapping[str, Any]] | None, fault: Mapping[str, str] | None,
                  step_ids: Sequence[str]) -> dict[str, RunOutcome]:
    """A plan run as one run per step (``plan/<step>``); a plan that faulted faults every step (the run
    stops at the fault, so no step of it answered as the clean plan did)."""
    if fault is not None or observations is None:
        fault = fault or {"code": "port-failure", "detail": "no observations"}
        return {f"plan/{step}": RunOutcome(f"plan/{step}", None, fault["code"], fault.get("detail")) for step in step_ids}
    return {f"plan/{step}": RunOutcome(f"plan/{step}", observation) for step, observation in zip(step_ids, observations, strict=True)}


@dataclass(frozen=True)
class MutantVerdict:
    """Everything decided about one run mutant."""

    mutant: GeneratedMutant
    classification: Classification
    kill: KillVerdict
    covered_by: tuple[str, ...]
    representative: str | None = None

    @property
    def status(self) -> str:
        """The report status."""
        return report_status(self.classification.status, self.kill.killed)

    def status_reason(self) -> str:
        """Our class and why, then the kill verdict's reason for a mutant that ran."""
        reason = f"{self.classification.status}: {self.classification.reason}"
        if self.classification.status in ("Unobservable", "ArtifactOnly", "Observable"):
            reason += f"; {self.kill.reason}"
        if self.representative is not None and self.representative != self.mutant.mutant_id:
            reason += f"; collapses onto {self.representative} (same difference vector)"
        return reason

    def entry(self) -> dict[str, Any]:
        """The report's MutantResult (plus ``file``)."""
        return {
            "file": self.mutant.target,
            "id": self.mutant.mutant_id,
            "mutatorName": self.mutant.mutator_name,
            "location": location(self.mutant.start, self.mutant.end),
            "status": self.status,
            "statusReason": self.status_reason(),
            "replacement": self.mutant.replacement,
            "description": self.mutant.description(),
            "killedBy": list(self.kill.killed_by),
            "coveredBy": list(self.covered_by),
            "testsCompleted": len(self.classification.runs),
        }


def decide(
    mutant: GeneratedMutant,
    clean: Mapping[str, RunOutcome],
    mutated: Mapping[str, RunOutcome],
    *,
    coverage_known: bool,
    covered_by: Sequence[str],
    oracles: Sequence[Mapping[str, Any]],
    clean_resolutions: Mapping[str, str],
    mutated_resolutions: Mapping[str, str] | None,
) -> MutantVerdict:
    """Classify one mutant and give its kill verdict (``mutated_resolutions`` None: the plan did not run
    against it or faulted, so every oracle resolves as on the clean arm, or not at all)."""
    classification = classify(clean, mutated, coverage_known=coverage_known)
    verdict = kill_verdict(oracles, clean_resolutions, mutated_resolutions if mutated_resolutions is not None else clean_resolutions)
    return MutantVerdict(mutant, classification, verdict, tuple(covered_by))


def with_representatives(verdicts: Sequence[MutantVerdict]) -> list[MutantVerdict]:
    """Each Observable verdict with the representative its difference vector collapses onto."""
    representatives = collapse([(v.mutant.mutant_id, v.classification) for v in verdicts])
    return [
        MutantVerdict(v.mutant, v.classification, v.kill, v.covered_by, representatives.get(v.mutant.mutant_id))
        for v in verdicts
    ]


def rejected_entries(generation: Generation) -> list[dict[str, Any]]:
    """The static filter's rejections as report entries (CompileError / Ignored), never run."""
    from evalquality_core.mutants.catalogue import MUTATOR_NAMES
    from evalquality_core.mutants.report import STATUS_OF

    return [
        {"file": r.target, "id": r.mutant_id, "mutatorName": MUTATOR_NAMES[r.operator], "location": location(r.start, r.end),
         "status": STATUS_OF[r.rejection.status], "statusReason": f"{r.rejection.status}: {r.rejection.reason}",
         "replacement": r.replacement, "killedBy": [], "coveredBy": [], "testsCompleted": 0}
        for r in generation.rejected
    ]


def suite_summary(
    suite: str,
    generation: Generation,
    verdicts: Sequence[MutantVerdict],
    sources: Mapping[str, str],
    *,
    version: str,
    config: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The suite's summary (figures, kill score, every mutant's verdict) and its mutation-testing report."""
    classes = Counter(v.classification.status for v in verdicts)
    classes.update(r.rejection.status for r in generation.rejected)
    statuses = Counter(v.status for v in verdicts)
    sampled = len(generation.kept) < generation.valid_count
    score = kill_score([v.status for v in verdicts], sampled=sampled, population=generation.valid_count)
    representatives = sorted({v.representative for v in verdicts if v.representative is not None})
    summary = {
        "suite": suite,
        "candidates": sum(generation.candidates_per_operator.values()),
        "candidatesPerOperator": dict(generation.candidates_per_operator),
        "linesOfCode": dict(generation.lines_of_code),
        "valid": generation.valid_count,
        "selected": len(generation.kept),
        "classes": {name: classes.get(name, 0) for name in ("Invalid", "Duplicate", *CLASSIFICATIONS)},
        "statuses": dict(sorted(statuses.items())),
        "killScore": score.as_json(),
        "observableRepresentatives": representatives,
        "mutants": [
            {"mutantId": v.mutant.mutant_id, "probeId": v.mutant.probe_id, "class": v.classification.status,
             "status": v.status, "reason": v.status_reason(), "killedBy": list(v.kill.killed_by),
             "coveredBy": list(v.covered_by), "representative": v.representative,
             "differences": [list(d) for d in v.classification.vector],
             "mutatorName": v.mutant.mutator_name, "target": v.mutant.target, "line": v.mutant.start[0],
             "find": v.mutant.find, "replace": v.mutant.replace}
            for v in verdicts
        ],
    }
    report = build_report(dict(sources), [*rejected_entries(generation), *(v.entry() for v in verdicts)],
                          version=version, config=dict(config))
    return summary, report
