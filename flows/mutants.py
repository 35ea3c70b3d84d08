"""``python -m flows.mutants``: classify and score every generated mutant of each suite, as one Prefect flow.

Per suite: generate the system's mutants (evalquality_core/mutants; ``--sample``/``--seed``/``--per-line``/
``--operators`` as ``eval-quality mutants generate``), compile the contract and plan its pre-flight
legs over every probe (the suite-wide plan; identical requests run once), record per-leg line coverage
of the clean system once (``record-coverage``, cached), then run

* the **clean arm** first: every leg (``spawn-leg`` tasks keyed by the clean staged digest — the very
  keys ``python -m flows.preflight`` uses, so the leg cache shares them) and the interaction plan
  (``run-plan``); its observations enter every mutant's outcome key, and a clean arm that faults ends
  the suite before any mutant runs;
* per mutant, its outcomes from the **outcome store** (tasks/mutants.py) when its key matches — no task
  runs for it — else only the legs and the plan whose clean coverage reaches a mutated line, as
  ``spawn-leg`` tasks named ``<suite>/<mutant id>/<leg>`` keyed by the mutant's staged digest (computed
  only then), and a ``run-plan``; their outcomes, faults included, are stored under the mutant's key.

Each mutant is classified (NoCoverage, Timeout, Stillborn, Unobservable, ArtifactOnly, Observable;
evalquality_core/mutants/classify.py) and given its oracle kill verdict (Killed / Survived; score.py).
Writes ``<out>/<suite>/mutation-report.json`` (the public mutation-testing-report-schema format) and
``<out>/<suite>/mutants-summary.json``; prints one line per suite and the cost line.

**Incremental.** A mutant's outcome key is its mutated file (path and bytes after the mutation), its
edit, and per covering run (leg or plan) the run's request(s) and the clean system's observable
answer on it (channels only: never timings or labels), plus the registry text, the staged fixtures,
the interpreter identity and the tool version. So a changed system file re-runs only the mutants in
that file and those whose covering runs now answer differently on the clean system (coverage is
re-recorded once, the clean arm re-runs); a changed oracle re-classifies from stored observations
without a spawn (oracles never enter a key); a changed probe request misses the keys of the mutants
its legs cover, and of their legs only the changed ones spawn (the rest answer from the leg cache, a
remembered leg fault from its verified entry). The rule trusts that a mutant behaves as before when
its own file and every covering run's clean answer are unchanged; a change elsewhere that alters only
the mutated behaviour (not the clean one) is not seen until ``--force``, which runs everything live
once. A mutant whose class rests on a fault it did not observe in this run (from the outcome store,
a remembered leg fault, a plan-cache fault) says ``"remembered": true`` in the summary, which counts
them (``rememberedFaults``), and so does the suite's console line. A faulted mutant leg ends its task
run ``Completed`` named ``Faulted`` (a finding, not an error: no ERROR line, no traceback); a clean
leg's fault still fails its task run and the suite. The generation itself is cached
(``cached_generation``): a re-run does not run libcst.

``--trials-sample N`` then puts a seeded sample of N Killed/Survived mutants per suite through live evaluator
trials (flows/mutant_trials.py): the ``evaluatorTrials`` block of the summary and a trials line on the console.

Exit codes: 0 done; 2 a suite could not be run (one line naming it); 64 usage; 74 unusable cache.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.client.schemas.objects import State
from prefect.states import Completed, Failed
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from evalquality_core.adapters.command_line import kill_all_live_groups
from evalquality_core.canonical import canonical_bytes
from evalquality_core.compile.pipeline import compile_contract
from evalquality_core.faults import EvalQualityFault
from evalquality_core.mutants.catalogue import UnknownOperator, parse_operator_names
from evalquality_core.mutants.classify import RunOutcome
from evalquality_core.mutants.derive import derive_probe
from evalquality_core.mutants.generate import GeneratedMutant, Generation
from evalquality_core.mutants.verdicts import (
    MutantVerdict,
    decide,
    plan_outcomes,
    suite_summary,
    with_representatives,
)
from evalquality_core.preflight.plan import plan_preflight
from evalquality_core.printable import printable
from evalquality_core.suite import load as core_load
from evalquality_core.suite.evaluator import requests_for_plan
from evalquality_core.suite.generate import resolve_oracles
from evalquality_core.suite.line_coverage import reaches
from evalquality_core.suite.mutants import (
    as_mutation,
    mutant_staged_digest,
    system_members,
    system_sources,
)
from flows.embedded_server import embedded_server
from flows.lifecycle import (
    FlowArgumentParser,
    api_watchdog,
    check_flow_inputs,
    check_leg_cache,
    crash_exit,
    freeze_startup_heap,
    one_line_errors,
    start_flow_main,
)
from flows.mutant_trials import TrialSpend, run_mutant_trials, trials_line
from flows.settings import choose_suites, flow_run_settings
from flows.watch import tag_flow_run
from tasks.leg_cache import LEG_CACHE_FAULT_PATH, LegCacheUnusable, close_leg_cache
from tasks.mutants import (
    StoredOutcomes,
    cached_generation,
    close_plan_store,
    coverage_key,
    outcome_context,
    outcome_key,
    plan_key,
    qualify_derived_task,
    record_coverage_task,
    recorded_coverage,
    remember_fault,
    remembered_fault,
    run_identity,
    run_plan_task,
    stage_mutant,
    store_outcomes,
    stored_outcomes,
)
from tasks.output import write_artifact
from tasks.preflight import LegJob, abort_event, leg_key, release_invocation, spawn_leg
from tasks.suite_run import work_digest_of
from tasks.suites import Suite, SuiteLoadError, find_suites, load_suite
from tasks.workspace import reclaim_workspaces

PROG = "python -m flows.mutants"


@dataclass
class Costs:
    """What a run paid: legs and plans spawned, answered from cache, collapsed; remembered faults."""

    legs_spawned: int = 0
    legs_cached: int = 0
    legs_collapsed: int = 0
    legs_remembered: int = 0
    plans_spawned: int = 0
    plans_cached: int = 0
    legs_with_coverage: int = 0
    legs_without_coverage: int = 0
    mutants_from_store: int = 0
    mutants_run: int = 0
    outcomes_discarded: int = 0
    seconds: float = 0.0
    coverage: dict[str, str] = field(default_factory=dict)
    #: Evaluator trials of the sampled mutants (``--trials-sample``; flows/mutant_trials.py).
    trials: TrialSpend = field(default_factory=TrialSpend)
    generation: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The costs as JSON (the summary's ``costs``)."""
        return {
            "legsSpawned": self.legs_spawned, "legsFromCache": self.legs_cached, "legsCollapsed": self.legs_collapsed,
            "legFaultsRemembered": self.legs_remembered, "plansSpawned": self.plans_spawned,
            "plansFromCache": self.plans_cached, "mutantLegsWithCoverage": self.legs_with_coverage,
            "mutantLegsWithoutCoverage": self.legs_without_coverage, "coverage": dict(self.coverage),
            "trialsRun": self.trials.run, "trialsFromCache": self.trials.cached, "trialFaults": self.trials.faulted,
            "mutantsFromStore": self.mutants_from_store, "mutantsRun": self.mutants_run,
            "outcomeEntriesDiscarded": self.outcomes_discarded, "generation": dict(self.generation),
        }

    def line(self) -> str:
        """The closing cost line."""
        return (
            f"{self.legs_spawned} legs run and {self.legs_cached} answered from cache "
            f"({self.legs_collapsed} collapsed onto an identical leg of this run, {self.legs_remembered} remembered faults); "
            f"{self.plans_spawned} plans run and {self.plans_cached} answered from cache; "
            f"{self.mutants_from_store} mutants answered from the outcome store"
            + (f"; {self.trials.line()}" if self.trials.run or self.trials.cached or self.trials.faulted else "")
        )


@dataclass(frozen=True)
class SuiteResult:
    """One suite's outcome: its summary and report, or why it could not run."""

    name: str
    summary: dict[str, Any] | None = None
    report: dict[str, Any] | None = None
    problem: str | None = None
    #: Derived probes and their mutations (``--derive``): path under ``<out>/<suite>/derived/`` → bytes.
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class MutantsRun:
    """A whole run: per suite results and the costs."""

    suites: tuple[SuiteResult, ...]
    costs: Costs
    wall_seconds: float


def _distinct_legs(plan: Any) -> list[tuple[str, Mapping[str, Any]]]:
    """The plan's legs, one per distinct request (the leg id of its first occurrence)."""
    seen: set[bytes] = set()
    legs = []
    for leg in plan.legs:
        identity = canonical_bytes({**dict(leg.request), "probeId": ""})
        if identity not in seen:
            seen.add(identity)
            legs.append((leg.leg_id, leg.request))
    return legs


def _job(suite: Suite, request: Mapping[str, Any], staged: str, mutation: Any, settings: Mapping[str, Any]) -> LegJob:
    return LegJob(
        request=request,
        key=leg_key(request, suite.policy, staged, mcp_policy=suite.mcp_policy, targets=suite.targets),
        policy=suite.policy,
        mcp_policy=suite.mcp_policy,
        targets=suite.targets,
        stage=functools.partial(stage_mutant, suite.directory, mutation),
        cache_dir=settings["cache_dir"],
        cache_mode=settings["mode"],
        invocation=settings["invocation"],
        workspaces_dir=settings["workspaces_dir"],
    )


def _cache_lost(outcome: RunOutcome) -> bool:
    """Whether the leg cache failed under this leg (``LegCache``: a PostgreSQL server lost mid-run): a
    fault of ours that says nothing about the mutant."""
    return (outcome.fault or "").startswith(f"{LEG_CACHE_FAULT_PATH}:")


def _collect_leg(future: Any, job: LegJob, costs: Costs) -> tuple[RunOutcome, bool]:
    """A leg's outcome and whether it was spawned by this run. A clean leg's fault is raised by
    ``result()``; a mutant leg's comes back as a value (``spawn_leg(expected_faults=True)``)."""
    leg_id = job.request["probeId"]
    try:
        answer = future.result()
    except EvalQualityFault as fault:
        answer = fault
    if isinstance(answer, EvalQualityFault):
        cost = getattr(answer, "leg_cost", None)
        spawned = cost is not None and bool(cost.spawned)
        costs.legs_spawned += spawned
        return RunOutcome(leg_id, None, answer.code, f"{answer.artifact_path}: {answer.detail}"), spawned
    if answer.source == "spawned":
        costs.legs_spawned += 1
        costs.seconds += answer.elapsed_s
    elif answer.source == "collapsed":
        costs.legs_collapsed += 1
    else:
        costs.legs_cached += 1
    return RunOutcome(leg_id, answer.observation), answer.source == "spawned"


# No task-run tags: Prefect acquires tag concurrency slots with a lease (a server round trip, one at a
# time through its slot service) for every tagged task run, and a cached re-run of 46 tasks spent 11 of
# its 12 s there (bench_mutants --profile). The flow run carries the suite tags; a task run's name starts
# with its suite.
def _submit_leg(suite: Suite, owner: str, job: LegJob, expected_faults: bool = False) -> Any:
    return spawn_leg.submit(suite.name, owner, job.request["probeId"], quote(job), expected_faults=expected_faults)


def _submit_plan(suite: Suite, core: core_load.SuiteFiles, owner: str, mutation: Any, key: str, settings: Mapping[str, Any]) -> Any:
    return run_plan_task.submit(suite.name, owner, quote(core), quote(mutation), key, settings["store_dir"],
                                settings["mode"] == "force")


def _plan_answer(future: Any, costs: Costs) -> Any:
    answer = future.result()
    if answer.source == "spawned":
        costs.plans_spawned += 1
    else:
        costs.plans_cached += 1
    return answer


@dataclass
class _MutantRuns:
    """One mutant while the flow runs it: what covers it, its outcome key, and where its runs come from
    (the outcome store, or legs submitted now and leg faults remembered from earlier runs)."""

    mutant: GeneratedMutant
    covered: list[str]
    key: str
    stored: StoredOutcomes | None = None
    futures: dict[str, tuple[Any, LegJob]] = field(default_factory=dict)
    remembered: dict[str, RunOutcome] = field(default_factory=dict)
    plan_future: Any = None


def _outcomes_of(runs: _MutantRuns, settings: Mapping[str, Any], costs: Costs) -> tuple[dict[str, RunOutcome], Any, dict[str, Any]]:
    """A mutant's leg outcomes, its plan answer (None: the plan does not reach it) and what the summary
    says of where they came from: ``outcomes`` (``store``, ``run`` or ``none``), ``remembered`` (some
    fault of it was not observed by this run) and ``runsSpawned``. Fresh outcomes are stored."""
    if runs.stored is not None:
        stored = runs.stored
        remembered = any(o.fault_code is not None for o in stored.runs.values()) or (
            stored.plan is not None and stored.plan.fault is not None)
        return dict(stored.runs), stored.plan, {"outcomes": "store", "remembered": remembered, "runsSpawned": 0}
    mutated = dict(runs.remembered)
    spawned = 0
    collected = {leg_id: _collect_leg(future, job, costs) for leg_id, (future, job) in runs.futures.items()}
    lost = next((outcome for outcome, _ in collected.values() if _cache_lost(outcome)), None)
    if lost is not None:
        # Nothing of this mutant is remembered or stored, and it gets no verdict: the suite could not run,
        # as when a clean leg faults, and the next run asks again.
        raise LegCacheUnusable(f"mutant {runs.mutant.mutant_id} leg {lost.run_id}: {lost.fault}")
    for leg_id, (outcome, was_spawned) in collected.items():
        spawned += was_spawned
        if outcome.fault_code is not None and outcome.fault_code != "aborted":
            remember_fault(settings["store_dir"], runs.futures[leg_id][1].key, outcome.fault_code, outcome.fault or "")
        mutated[leg_id] = outcome
    plan_answer = None if runs.plan_future is None else _plan_answer(runs.plan_future, costs)
    remembered = bool(runs.remembered)
    if plan_answer is not None:
        spawned += plan_answer.source == "spawned"
        remembered = remembered or (plan_answer.source != "spawned" and plan_answer.fault is not None)
    aborted = any(o.fault_code == "aborted" for o in mutated.values()) or (
        plan_answer is not None and (plan_answer.fault or {}).get("code") == "aborted")
    if runs.covered and not aborted:
        store_outcomes(settings["store_dir"], runs.key, runs.mutant.mutant_id, mutated, plan_answer)
    how = "run" if runs.covered else "none"
    return mutated, plan_answer, {"outcomes": how, "remembered": remembered, "runsSpawned": spawned}


def run_suite(
    suite: Suite, generation: Generation, settings: Mapping[str, Any], costs: Costs, use_coverage: bool, derive: bool = False,
    sources: Mapping[str, str] | None = None,
) -> SuiteResult:
    """Classify and score one suite's generated mutants (module docstring), in four steps: the clean arm,
    every mutant's runs submitted, their verdicts collected, the summary."""
    arm = _run_clean_arm(suite, settings, costs, use_coverage)
    if isinstance(arm, str):
        return SuiteResult(suite.name, problem=arm)
    pending, selection = _submit_mutants(suite, generation, arm, settings, costs)
    collected = _collect_mutants(pending, arm, settings, costs)
    if isinstance(collected, str):
        return SuiteResult(suite.name, problem=collected)
    verdicts, runs_of, provenance = collected
    return _suite_result(suite, generation, arm, verdicts, runs_of, provenance, selection, derive, sources)


@dataclass(frozen=True)
class _CleanArm:
    """The clean system's side of a suite: its plan and legs, their outcomes, coverage, and the identities
    that enter every mutant's outcome key."""

    core: core_load.SuiteFiles
    legs: list[tuple[str, Mapping[str, Any]]]
    steps: list[str]
    planned: list[Any]
    coverage: dict[str, Any] | None
    clean: dict[str, RunOutcome]
    clean_resolutions: Any
    identity: dict[str, Any]
    plan_identity: Any
    context: Any
    work_digest: str


def _run_clean_arm(suite: Suite, settings: Mapping[str, Any], costs: Costs, use_coverage: bool) -> _CleanArm | str:
    """Plan the suite, record (or read) line coverage, run every clean leg and the clean plan; a problem
    line when the clean arm faulted (nothing about the mutants could be measured)."""
    core = core_load.load_suite(suite.directory)
    # Compiled and planned in the flow thread, not as digest-cached stage tasks: both are pure and take
    # milliseconds, while a cached re-run spent about a second reading each back from the verified
    # stage cache (bench_mutants: most of a cached re-run's own time).
    contract = compile_contract(dict(suite.contract))
    plan = plan_preflight(contract, [dict(p) for p in suite.probes], f"mutants-{suite.name}")
    legs = _distinct_legs(plan)
    clean_digest = suite.staged_digests[None]
    steps = [step["stepId"] for step, _ in requests_for_plan(core)]
    planned = [request for _, request in requests_for_plan(core)]
    coverage: dict[str, Any] | None = None
    if use_coverage:
        key = coverage_key(legs, core.targets_text, clean_digest)
        coverage, how = recorded_coverage(settings["store_dir"], key), "cache"
        if coverage is None:
            coverage, how = record_coverage_task.submit(suite.name, quote(core), quote(legs), key, settings["store_dir"]).result()
        costs.coverage[suite.name] = how
    else:
        costs.coverage[suite.name] = "off"
    # The clean arm first (every leg and the plan): its observations enter every mutant's outcome key.
    clean_jobs = {leg_id: _job(suite, request, clean_digest, None, settings) for leg_id, request in legs}
    clean_futures = {leg_id: _submit_leg(suite, "clean", job) for leg_id, job in clean_jobs.items()}
    clean_plan_future = _submit_plan(suite, core, "clean", None, plan_key(planned, core.targets_text, clean_digest), settings)
    clean: dict[str, RunOutcome] = {
        leg_id: _collect_leg(future, clean_jobs[leg_id], costs)[0] for leg_id, future in clean_futures.items()
    }
    clean_plan = _plan_answer(clean_plan_future, costs)
    if clean_plan.fault is not None:
        return f"the clean interaction plan faulted: {clean_plan.fault['code']}: {clean_plan.fault['detail']}"
    faulted = sorted(leg_id for leg_id, outcome in clean.items() if outcome.fault_code is not None)
    if faulted:
        return f"clean leg {faulted[0]} faulted: {clean[faulted[0]].fault}"
    work_digest = work_digest_of(suite.directory)
    identity = {leg_id: run_identity(leg_id, [request], [clean[leg_id].observation or {}]) for leg_id, request in legs}
    plan_identity = run_identity("plan", planned, clean_plan.observations)
    clean.update(plan_outcomes(clean_plan.observations, None, steps))
    return _CleanArm(
        core, legs, steps, planned, coverage, clean, resolve_oracles(core.contract, clean_plan.observations),
        identity, plan_identity, outcome_context(core.targets_text, work_digest), work_digest,
    )


def _submit_mutants(
    suite: Suite, generation: Generation, arm: _CleanArm, settings: Mapping[str, Any], costs: Costs
) -> tuple[list[_MutantRuns], dict[str, int]]:
    """Every mutant: its outcomes from the outcome store, else the legs (and the plan) that reach a mutated
    line, submitted; and the run selection counts (with and without coverage)."""
    core, legs, coverage, planned = arm.core, arm.legs, arm.coverage, arm.planned
    identity, plan_identity, context, work_digest = arm.identity, arm.plan_identity, arm.context, arm.work_digest
    force = settings["mode"] == "force"
    members: dict[str, str] | None = None  # the clean system's file digests, read only when some mutant runs
    pending: list[_MutantRuns] = []
    selection = {"withCoverage": 0, "withoutCoverage": 0, "mutants": len(generation.kept), "distinctLegs": len(legs)}
    for mutant in generation.kept:
        reached = [(leg_id, request) for leg_id, request in legs
                   if coverage is None or reaches(coverage.get(leg_id), mutant.target, mutant.lines)]
        plan_reached = coverage is None or reaches(coverage.get("plan"), mutant.target, mutant.lines)
        costs.legs_with_coverage += len(reached)
        costs.legs_without_coverage += len(legs)
        selection["withCoverage"] += len(reached) + (1 if plan_reached else 0)
        selection["withoutCoverage"] += len(legs) + 1
        covered = [leg_id for leg_id, _ in reached] + (["plan"] if plan_reached else [])
        key = outcome_key(mutant, [identity[leg_id] for leg_id, _ in reached] + ([plan_identity] if plan_reached else []),
                          context)
        runs = _MutantRuns(mutant, covered, key)
        pending.append(runs)
        if not covered:
            continue
        if not force:
            stored, discarded = stored_outcomes(settings["store_dir"], key)
            costs.outcomes_discarded += discarded
            if stored is not None and set(stored.runs) == {leg_id for leg_id, _ in reached} and (
                (stored.plan is not None) == plan_reached
            ):
                runs.stored = stored
                costs.mutants_from_store += 1
                continue
        costs.mutants_run += 1
        if members is None:
            members = system_members(suite.directory)
        mutation = as_mutation(mutant, suite.directory)
        staged = mutant_staged_digest(members, work_digest, mutant)
        for leg_id, request in reached:
            job = _job(suite, request, staged, mutation, settings)
            fault = None if force else remembered_fault(settings["store_dir"], job.key)
            if fault is not None:
                costs.legs_remembered += 1
                runs.remembered[leg_id] = RunOutcome(leg_id, None, fault["code"], fault["detail"])
            else:
                runs.futures[leg_id] = (_submit_leg(suite, mutant.mutant_id, job, expected_faults=True), job)
        if plan_reached:
            runs.plan_future = _submit_plan(suite, core, mutant.mutant_id, mutation,
                                            plan_key(planned, core.targets_text, staged), settings)
    return pending, selection


def _collect_mutants(
    pending: Sequence[_MutantRuns], arm: _CleanArm, settings: Mapping[str, Any], costs: Costs
) -> tuple[list[MutantVerdict], dict[str, dict[str, RunOutcome]], dict[str, dict[str, Any]]] | str:
    """Each mutant's outcomes (stored, remembered or run now) and its verdict against the clean arm; a
    problem line when the leg cache failed under a run."""
    core, coverage, clean, steps, clean_resolutions = arm.core, arm.coverage, arm.clean, arm.steps, arm.clean_resolutions
    verdicts: list[MutantVerdict] = []
    runs_of: dict[str, dict[str, RunOutcome]] = {}
    provenance: dict[str, dict[str, Any]] = {}
    for runs in pending:
        try:
            mutated, plan_answer, provenance[runs.mutant.mutant_id] = _outcomes_of(runs, settings, costs)
        except LegCacheUnusable as lost:
            return f"the leg cache failed under {lost}"
        resolutions = None
        if plan_answer is not None:
            mutated.update(plan_outcomes(plan_answer.observations, plan_answer.fault, steps))
            if plan_answer.observations is not None:
                resolutions = resolve_oracles(core.contract, plan_answer.observations)
        runs_of[runs.mutant.mutant_id] = mutated
        verdicts.append(decide(
            runs.mutant, clean, mutated, coverage_known=coverage is not None, covered_by=runs.covered,
            oracles=core.contract["oracles"], clean_resolutions=clean_resolutions, mutated_resolutions=resolutions,
        ))
    return verdicts, runs_of, provenance


def _suite_result(
    suite: Suite, generation: Generation, arm: _CleanArm, verdicts: list[MutantVerdict],
    runs_of: dict[str, dict[str, RunOutcome]], provenance: dict[str, dict[str, Any]], selection: dict[str, int],
    derive: bool, sources: Mapping[str, str] | None,
) -> SuiteResult:
    """The suite's summary and report: representatives, provenance, run selection, derived probes."""
    core, clean, legs = arm.core, arm.clean, arm.legs
    verdicts = with_representatives(verdicts)
    from evalquality_core.cli.main import package_version

    summary, report = suite_summary(suite.name, generation, verdicts,
                                    system_sources(suite.directory) if sources is None else sources,
                                    version=package_version(), config=dict(generation.settings))
    summary["runSelection"] = selection  # legs + plan runs per mutant, with and without coverage selection
    for row in summary["mutants"]:
        row.update(provenance[row["mutantId"]])
    summary["rememberedFaults"] = sum(1 for row in summary["mutants"] if row["remembered"])
    summary["outcomesFromStore"] = sum(1 for row in summary["mutants"] if row["outcomes"] == "store")
    files: dict[str, bytes] = {}
    if derive:
        summary["derivedProbes"] = _derive(suite, core, verdicts, runs_of, clean, legs, files)
    return SuiteResult(suite.name, summary, report, files=files)


def _derive(
    suite: Suite, core: core_load.SuiteFiles, verdicts: Sequence[MutantVerdict], runs_of: Mapping[str, Mapping[str, RunOutcome]],
    clean: Mapping[str, RunOutcome],
    legs: Sequence[tuple[str, Mapping[str, Any]]], files: dict[str, bytes],
) -> list[dict[str, Any]]:
    """Derive a probe for every Observable representative and qualify it (``qualify-derived`` tasks)."""
    steps = {step["stepId"]: step for step, _ in requests_for_plan(core)}
    clean_observed = {run: o.observation for run, o in clean.items() if o.observation is not None}
    rows: list[dict[str, Any]] = []
    submitted = []
    for verdict in verdicts:
        if verdict.representative != verdict.mutant.mutant_id:
            continue
        observed = {run: o.observation for run, o in runs_of[verdict.mutant.mutant_id].items() if o.observation is not None}
        derived = derive_probe(core.contract, verdict.mutant, verdict.classification, verdict.kill.killed_by, observed,
                               dict(legs), steps, core.baseline_steps, clean_observed)
        if derived.probe is None or derived.mutation is None:
            rows.append({"mutantId": derived.mutant_id, "probeId": None, "qualified": False, "reason": derived.reason})
            continue
        future = qualify_derived_task.submit(suite.name, derived.mutant_id, str(suite.directory),
                                             quote(derived.probe), quote(derived.mutation))
        submitted.append((derived, future))
    for derived, future in submitted:
        assert derived.probe is not None and derived.mutation is not None
        admitted, why, data = future.result()
        probe_id = derived.probe["probeId"]
        rows.append({"mutantId": derived.mutant_id, "probeId": probe_id, "qualified": admitted,
                     "reason": f"{derived.reason}; {why}"})
        if data is not None:
            files[f"probes/{probe_id}.json"] = data
            files[f"mutations/{derived.mutant_id}.json"] = (
                json.dumps(derived.mutation, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    return rows


@flow(name="mutants", flow_run_name="mutants {suites}", validate_parameters=False)
def mutants(
    suites_dir: str,
    out_dir: str,
    cache_dir: str,
    store_dir: str,
    workspaces_dir: str,
    suites: list[str] | None = None,
    operators: list[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
    per_line: int | None = None,
    coverage: bool = True,
    mode: str = "default",
    mutant_ids: list[str] | None = None,
    derive: bool = False,
    trials_sample: int | None = None,
) -> State:
    """Classify and score the generated mutants of every suite (or the named ones); write the reports.
    ``trials_sample`` N: then run live evaluator trials on N sampled Killed/Survived mutants per suite
    (flows/mutant_trials.py)."""
    freeze_startup_heap()
    started = time.perf_counter()
    invocation = uuid.uuid4().hex
    reclaim_workspaces(Path(workspaces_dir))
    settings = {"cache_dir": cache_dir, "store_dir": store_dir, "workspaces_dir": workspaces_dir, "mode": mode,
                "invocation": invocation}
    costs = Costs()
    results: list[SuiteResult] = []
    directories = find_suites(Path(suites_dir))
    if suites is not None:
        directories = [d for d in directories if d.name in set(suites)]
        missing = sorted(set(suites) - {d.name for d in directories})
        results.extend(SuiteResult(name, problem=f"{Path(suites_dir) / name}: no such suite") for name in missing)
    tag_flow_run(["eval-quality", "mutants", *(f"suite:{directory.name}" for directory in directories)])
    try:
        for directory in directories:
            try:
                suite = load_suite(directory)
                generation, sources, costs.generation[directory.name] = cached_generation(
                    directory, store_dir, operators=parse_operator_names(operators), sample_size=sample, seed=seed,
                    per_line_limit=per_line, force=mode == "force")
                if mutant_ids is not None:
                    generation = only_mutants(generation, mutant_ids)
            except (SuiteLoadError, *core_load.TOOL_PROBLEMS, ValueError) as problem:
                results.append(SuiteResult(directory.name, problem=core_load.problem_line(problem)))
                continue
            result = run_suite(suite, generation, settings, costs, coverage, derive, sources)
            results.append(result)
            if result.summary is not None and trials_sample is not None:
                try:
                    result.summary["evaluatorTrials"] = run_mutant_trials(
                        suite, Path(suites_dir), generation, result.summary, trials_sample, seed,
                        Path(out_dir) / suite.name, costs.trials)
                except (EvalQualityFault, *core_load.TOOL_PROBLEMS, ValueError, OSError) as problem:
                    results[-1] = SuiteResult(suite.name, problem=f"evaluator trials: {core_load.problem_line(problem)}")
                    continue
            if result.summary is not None:
                out = Path(out_dir) / suite.name
                write_artifact(out / "mutants-summary.json", {**result.summary, "costs": costs.as_json()})
                write_artifact(out / "mutation-report.json", result.report)
                for relative, data in result.files.items():
                    (out / "derived" / relative).parent.mkdir(parents=True, exist_ok=True)
                    (out / "derived" / relative).write_bytes(data)
    except BaseException:
        abort_event(invocation).set()
        kill_all_live_groups()
        raise
    finally:
        release_invocation(invocation)
        close_leg_cache(cache_dir, mode, invocation)  # type: ignore[arg-type]
        close_plan_store(store_dir)
    run = MutantsRun(tuple(results), costs, time.perf_counter() - started)
    if any(r.problem for r in results):
        first = next(r for r in results if r.problem)
        return Failed(message=printable(f"suite {first.name} could not run: {first.problem}"), data=run)
    return Completed(message=costs.line(), data=run)


def only_mutants(generation: Generation, mutant_ids: Sequence[str]) -> Generation:
    """The generation with only the named mutants selected (``--mutant``; an id not generated is ignored)."""
    from dataclasses import replace

    wanted = set(mutant_ids)
    return replace(generation, kept=tuple(m for m in generation.kept if m.mutant_id in wanted),
                   settings={**generation.settings, "mutants": sorted(wanted)})


def suite_line(result: SuiteResult) -> str:
    """One console line per suite."""
    if result.summary is None:
        return f"{result.name}: could not run: {result.problem}"
    summary = result.summary
    score = summary["killScore"]
    interval = score["interval95"]
    shown = "n/a" if score["score"] is None else f"{score['score']:.2f} [{interval[0]:.2f}, {interval[1]:.2f}]"
    classes = ", ".join(f"{n} {name}" for name, n in summary["classes"].items() if n)
    statuses = ", ".join(f"{n} {name}" for name, n in summary["statuses"].items())
    kind = "sampled" if score["sampled"] else "exhaustive"
    remembered = summary.get("rememberedFaults", 0)
    rests = f"; {remembered} remembered fault(s) decide a class (see mutants-summary.json)" if remembered else ""
    return (f"{result.name}: {summary['selected']} of {summary['valid']} valid mutants ({kind}); {classes}; {statuses}; "
            f"kill score {score['detected']}/{score['valid']} = {shown}{rests}")


def run_mutants_flow(args: argparse.Namespace, settings: Any, concurrency: int) -> MutantsRun:
    """Run the flow on a bounded thread pool; its ``MutantsRun`` (a Failed state's included)."""
    runner = ThreadPoolTaskRunner(max_workers=concurrency)
    mode = "force" if args.force else "default"
    with flow_run_settings():
        state = mutants.with_options(task_runner=runner)(
            suites_dir=str(Path(args.suites).resolve() if args.suites else settings.suites_dir),
            out_dir=str(Path(args.out).resolve() if args.out else settings.home / "mutants"),
            cache_dir=settings.leg_cache,
            store_dir=str(settings.leg_cache_dir),
            workspaces_dir=str(settings.workspaces_dir),
            suites=args.suite or None,
            operators=[n.strip() for n in (args.operators or "").split(",") if n.strip()] or None,
            sample=args.sample, seed=args.seed, per_line=args.per_line, coverage=not args.no_coverage, mode=mode,
            mutant_ids=args.mutant or None, derive=args.derive, trials_sample=args.trials_sample,
            return_state=True,
        )
    value = state.result(raise_on_failure=False)
    if isinstance(value, BaseException):
        raise value
    return value  # type: ignore[no-any-return]


def _parser() -> argparse.ArgumentParser:
    parser = FlowArgumentParser(prog=PROG, description="Classify and score every generated mutant of each suite "
                                "(real child processes, the shared leg cache), and write the mutation-testing reports.")
    parser.add_argument("--suites", metavar="DIR", help="folder of suites (default: corpus/suites)")
    parser.add_argument("--suite", action="append", metavar="NAME", help="only this suite (repeatable)")
    parser.add_argument("--out", metavar="DIR", help="where reports go (default: <home>/mutants)")
    parser.add_argument("--operators", metavar="NAME[,NAME...]", help="only these operators")
    parser.add_argument("--sample", type=int, metavar="N", help="score N valid mutants per suite, chosen by --seed")
    parser.add_argument("--seed", type=int, default=0, metavar="X", help="seed of --sample and --per-line (default 0)")
    parser.add_argument("--per-line", type=int, metavar="N", help="at most N mutants per source line")
    parser.add_argument("--mutant", action="append", metavar="ID", help="only this mutant id (repeatable)")
    parser.add_argument("--derive", action="store_true",
                        help="derive a probe from every Observable representative and qualify it (generator cycle)")
    parser.add_argument("--trials-sample", type=int, metavar="N",
                        help="run the suite's evaluator (live trials, the policy's minimum each) on N Killed/Survived "
                        "mutants per suite, sampled by --seed and stratified by the oracle verdict")
    parser.add_argument("--no-coverage", action="store_true", help="run every leg for every mutant (no coverage selection)")
    parser.add_argument("--concurrency", type=int, metavar="N", help="legs in flight at once (default 8)")
    parser.add_argument("--force", action="store_true", help="ignore the caches: run each distinct leg and plan live once")
    return parser


@crash_exit(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """Parse flags, run the flow, print one line per suite and the cost line."""
    args = _parser().parse_args(argv)
    choose_suites(args.suites)  # the defaults (home, out) follow the suites folder, as the other flows'
    settings = start_flow_main(PROG, args.concurrency)
    for name, value in (("--sample", args.sample), ("--per-line", args.per_line), ("--trials-sample", args.trials_sample)):
        if value is not None and value < 1:
            print(f"{PROG}: usage: {name} must be at least 1", file=sys.stderr)
            return 64
    try:
        parse_operator_names([n.strip() for n in (args.operators or "").split(",") if n.strip()])
    except UnknownOperator as problem:
        print(printable(f"{PROG}: usage: --operators: {problem}"), file=sys.stderr)
        return 64
    with one_line_errors(PROG):
        check_flow_inputs(Path(args.suites).resolve() if args.suites else settings.suites_dir, None)
        check_leg_cache(PROG, settings)
        # A Prefect server that stops mid-run (embedded or the user's) ends it in one line (exit 69).
        with embedded_server(PROG), api_watchdog(PROG):
            run = run_mutants_flow(args, settings, args.concurrency or settings.concurrency)
    for result in run.suites:
        print(printable(suite_line(result)))
        trials = trials_line(result.name, None if result.summary is None else result.summary.get("evaluatorTrials"))
        if trials is not None:
            print(printable(trials))
    print(run.costs.line())
    return 2 if any(result.problem for result in run.suites) else 0


__all__ = ["GeneratedMutant", "MutantsRun", "main", "mutants", "run_suite"]


def nightly_generated(suites: Sequence[Suite], out: Path, settings: Any, runner: Any, mode: str) -> tuple[dict[str, Any], list[str]]:
    """The nightly's mutants task group (issue 18): for every suite whose ``suite.toml`` opts in
    (``[mutants] nightly = true``), a ``mutants`` subflow on ``runner`` with the suite's sample and seed
    (and its ``trials-sample`` of live evaluator trials, flows/mutant_trials.py), writing under
    ``<out>/mutants/<suite>/``. Returns each suite's "generated strength" line (evalquality_core/artifacts/contract_strength.py) and one line per suite that could not be measured."""
    from evalquality_core.artifacts.contract_strength import generated_strength_of
    from evalquality_core.suite.mutants import nightly_settings

    lines: dict[str, Any] = {}
    problems: list[str] = []
    for suite in suites:
        try:
            chosen = nightly_settings(suite.directory)
        except core_load.TOOL_PROBLEMS as problem:
            problems.append(f"{suite.name}: mutants: {core_load.problem_line(problem)}")
            continue
        if chosen is None:
            continue
        state = mutants.with_options(task_runner=runner)(
            suites_dir=str(suite.directory.parent), out_dir=str(out / "mutants"), cache_dir=settings.leg_cache,
            store_dir=str(settings.leg_cache_dir), workspaces_dir=str(settings.workspaces_dir), suites=[suite.name],
            operators=chosen["operators"], sample=chosen["sample"], seed=chosen["seed"], per_line=chosen["per_line"],
            trials_sample=chosen["trials_sample"], mode="force" if mode == "force" else "default", return_state=True,
        )
        run = state.result(raise_on_failure=False)
        result = None if not isinstance(run, MutantsRun) else next((r for r in run.suites if r.name == suite.name), None)
        if result is None or result.summary is None:
            problems.append(f"{suite.name}: mutants: {getattr(result, 'problem', None) or state.message}")
            continue
        lines[suite.name] = generated_strength_of(result.summary, chosen["seed"])
    return lines, problems


if __name__ == "__main__":
    sys.exit(main())
