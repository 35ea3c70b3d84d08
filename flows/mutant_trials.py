"""Live evaluator trials for a sample of a suite's generated mutants (issue 18): the generated strength vector.

After ``python -m flows.mutants`` has decided every mutant's class and oracle kill verdict, ``--trials-sample N``
(``suite.toml`` ``[mutants] trials-sample = N`` in the nightly) draws a seeded sample of N Killed and Survived
mutants, stratified by that verdict (evalquality_core/mutants/evaluator_strength.py), and puts each through
the live strength run's trial path (flows/contract_strength.py ``--trials live``):

* the suite's contract compiled and sealed (the cached ``compile``/``seal`` stages), its evaluator command
  (``suite.toml`` ``[evaluator]``, default the reference evaluator) and ``evaluator.json`` choices, and the
  scoring policy's ``minimumTrialCount`` trials per mutant (indices 1..N) and ``catchThreshold``;
* per mutant and trial index a ``run-trial`` task named ``trial/<suite>/<mutant id>/<n>`` whose job stages the
  generated edit (``as_mutation``) instead of a probe's declared mutation, keyed by :func:`tasks.trials.trial_key`
  over the mutant's staged digest and its id, so an answered trial is looked up before submission and a
  re-run spawns nothing (0 trials run);
* each answer sealed by ``seal-record`` (a fresh answer as a task run, a cached one in-process, as the live
  strength run does) and written under ``<out>/<suite>/trials/<mutant id>/trial-<n>/`` (run record,
  isolation manifest, evaluator configuration, actions); an earlier run's folder of a mutant no longer
  sampled is removed.

Each sampled mutant's evaluator outcome is reduced beside its oracle verdict, and the rows add up to the
``evaluatorTrials`` block of ``mutants-summary.json`` (its ``strength`` the vector; the contract-strength
document's ``generatedStrength.evaluator``). A faulted trial (the evaluator timed out, refused, answered
malformed) is an invalidated attempt of that mutant, never cached. The ``score`` stage is not run: see the
decision in evaluator_strength.py (a generated mutant has no qualified signed probe).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalquality_core.mutants.evaluator_strength import (
    TrialJudgement,
    choose_trial_sample,
    reduce_mutant_trials,
    trial_candidates,
    trial_judgement,
    trial_strength,
)
from evalquality_core.mutants.generate import Generation
from evalquality_core.suite.mutants import as_mutation, mutant_staged_digest, system_members
from tasks.caching import stored_result
from tasks.suite_run import Answered, prepare_suite, trial_context, work_digest_of, write_sealed_trial
from tasks.suites import Suite
from tasks.trials import TrialAnswer, TrialFaultNote, TrialJob, run_trial, seal_record, trial_key


@dataclass
class TrialSpend:
    """Trials a run paid for: run now, answered from the cache, faulted."""

    run: int = 0
    cached: int = 0
    faulted: int = 0

    def line(self) -> str:
        """The console's trial line."""
        return f"{self.run} trials run and {self.cached} answered from cache, {self.faulted} trial faults"


def run_mutant_trials(
    suite: Suite, suites_root: Path, generation: Generation, summary: Mapping[str, Any], size: int, seed: int,
    out: Path, spend: TrialSpend,
) -> dict[str, Any]:
    """Draw the trial sample of one suite's classified mutants, run and seal their trials, write them, and
    return the summary's ``evaluatorTrials`` block (module docstring)."""
    from evalquality_core.artifacts.base import to_wire

    prepared = prepare_suite(suite, suites_root)
    context = trial_context(suite, prepared)
    threshold = float(to_wire(prepared.policy)["catchThreshold"])
    rows_by_id = {row["mutantId"]: row for row in summary["mutants"]}
    mutants = {mutant.mutant_id: mutant for mutant in generation.kept}
    chosen = choose_trial_sample(summary["mutants"], size, seed)
    members = system_members(suite.directory)
    work_digest = work_digest_of(suite.directory)
    submitted: dict[str, list[tuple[int, Any, str]]] = {}
    for mutant_id, _ in chosen:
        mutant = mutants[mutant_id]
        staged = mutant_staged_digest(members, work_digest, mutant)
        futures = []
        for index in range(1, context.minimum + 1):
            key = trial_key(brief_digest=context.brief_digest, contract_digest=context.contract_digest,
                            staged_digest=staged, choices_digest=context.choices_digest, command=context.command,
                            probe_id=mutant_id, trial_index=index)
            hit, answer = stored_result(run_trial, key=key)
            if hit:
                futures.append((index, Answered(answer), key))
                continue
            job = TrialJob(str(suite.directory), context.contract, context.brief, context.command, key,
                           mutation=as_mutation(mutant, suite.directory))
            # No task-run tags (flows/mutants.py: a slot lease per tagged run); the flow run carries them.
            futures.append((index, run_trial.submit(suite.name, mutant_id, index, key, job), key))
        submitted[mutant_id] = futures
    rows = []
    for mutant_id, oracle_verdict in chosen:
        judgements: list[TrialJudgement] = []
        faults: list[tuple[int, str]] = []
        seals = []
        for index, future, _ in submitted[mutant_id]:
            if isinstance(future, Answered):
                answer, fresh = future.value, False
            else:
                answer = future.result(raise_on_failure=False)
                fresh = future.state.name != "Cached"
            if isinstance(answer, TrialFaultNote):
                spend.faulted += 1
                faults.append((index, f"{answer.reason}: {answer.detail}"))
                continue
            if isinstance(answer, BaseException):
                raise answer  # not a trial fault: a bug or a crash of the task itself
            assert isinstance(answer, TrialAnswer)
            spend.run += fresh
            spend.cached += not fresh
            judgements.append(trial_judgement(index, answer.dispositions, answer.findings, answer.recommendation))
            folder = f"trials/{mutant_id}/trial-{index}"
            # Sealed under the mutant's probe id (``P-1xxx``): a finding's probeId must name a probe.
            probe_id = mutants[mutant_id].probe_id
            arguments = (suite.name, probe_id, index, answer, context.contract, context.brief_digest, context.command, folder)
            seals.append((folder, seal_record.submit(*arguments) if fresh else Answered(seal_record.fn(*arguments))))
        for folder, sealed in seals:
            write_sealed_trial(out / folder, sealed.value if isinstance(sealed, Answered) else sealed.result())
        row = rows_by_id[mutant_id]
        rows.append({**reduce_mutant_trials(mutant_id, oracle_verdict, row["killedBy"], judgements, faults, threshold),
                     "probeId": mutants[mutant_id].probe_id})
    _remove_stale(out / "trials", {mutant_id for mutant_id, _ in chosen})
    population = {name: len(ids) for name, ids in trial_candidates(summary["mutants"]).items()}
    return {
        "rows": rows,
        "strength": trial_strength(rows, population, size=size, seed=seed, trials_per_mutant=context.minimum),
    }


def _remove_stale(folder: Path, kept: set[str]) -> None:
    """Remove an earlier run's trial folders of generated mutants this sample no longer holds (``m-<hex>``
    only), so the folder never shows evidence the summary does not list."""
    import shutil

    if not folder.is_dir():
        return
    for child in folder.iterdir():
        if child.name.startswith("m-") and child.name not in kept and child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)


def trials_line(name: str, block: Mapping[str, Any] | None) -> str | None:
    """One console line for a suite's evaluator trials (None when it ran none)."""
    if block is None:
        return None
    vector = block["strength"]
    detection, agreement = vector["detection"], vector["agreement"]
    rate = "n/a" if detection["rate"] is None else f"{detection['rate']:.2f}"
    agreed = "n/a" if agreement["rate"] is None else f"{agreement['rate']:.2f}"
    sampled = ", ".join(f"{n} {name}" for name, n in vector["sampled"].items())
    return (f"{name}: evaluator trials on {len(block['rows'])} sampled mutants ({sampled}), "
            f"{vector['trialsPerMutant']} each: detection {detection['caught']}/{detection['exercised']} = {rate}; "
            f"agreement with the oracles {agreement['agree']}/{agreement['compared']} = {agreed}")


__all__ = ["TrialSpend", "run_mutant_trials", "trials_line"]
