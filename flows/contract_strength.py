"""``python -m flows.contract_strength``: live pre-flight, then score every probe's stored trials, per contract.

The run (harness.md A.4, full mode), per suite under the corpus:

1. the pre-flight flow runs as a subflow with the same tasks and leg cache (``flows/preflight.py``), in
   its suite-wide scope: one plan over the contract and every probe, one verdict and one fixture digest
   per suite (the reference client's full mode), written as ``preflight.json``. Its legs send the same
   requests as the per-probe pre-flight's, so a night after a pre-flight run spawns nothing new;
2. the contract is compiled and sealed (``tasks/contract.py``): ``sealed-evaluator-brief.json``;
3. one ``score`` task per probe over its trial records under the suite's one pre-flight verdict: the
   stored replays (``trials/<probe>/trial-N/``, ``--trials stored``) or trials run now
   (``--trials live``: ``run-trial`` and ``seal-record`` per trial index, ``tasks/trials.py``, written
   under ``<out>/<suite>/trials/``), keyed by the digests of its inputs (``tasks/scoring.py``):
   ``evidence-<probe>.json``. One verdict per suite gives every probe the same fixture digest, hence
   the same ``scoringVersion``, which is what lets step 4 aggregate them;
4. ``aggregate-strength`` over the suite's evidence against the suite's floors (``suite.toml``
   ``[floors]``, e.g. ``defect = 0.8``): ``strength-aggregate.json``, whose classes and floor decisions
   the document carries and the gate compares;
5. ``contract-strength.json`` (``evalquality_core/artifacts/contract_strength.py``); the gate against
   ``corpus/expected-strength.json`` (``flows/strength_baseline.py``); the Prefect artifacts and the
   HTML report (``flows/strength_report.py``); ``preflight-cost.json`` only when a leg was spawned, so a
   cached run never overwrites the record of the run that spent the time.

The task runner is a parameter of :func:`run_contract_strength` (a bounded thread pool by default;
``--task-runner dask`` runs the scoring tasks on prefect-dask's ``DaskTaskRunner``; the pre-flight legs
stay on a thread pool, where child-spawning legs run fastest on one machine, prefect.md §7). The corpus digest of a
suite is the directory digest of its evaluation corpus (contract, probes, mutations, stored trials):
the system under test and its fixtures are the environment, which the pre-flight's fixture digest covers.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.client.schemas.objects import State
from prefect.context import FlowRunContext
from prefect.states import Completed, Failed
from prefect.task_runners import ThreadPoolTaskRunner

from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.brief import SealedEvaluatorBrief
from evalquality_core.artifacts.contract_strength import (
    CONTRACT_STRENGTH_FILE,
    DOCUMENT_KIND,
    DOCUMENT_VERSION,
    AggregateClasses,
    FloorDecision,
    ProbeStrength,
    SuiteStrength,
    rate_of,
)
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.artifacts.evidence import ClassStrength, EvidenceArtifact, StrengthVector
from evalquality_core.artifacts.isolation import IsolationManifest
from evalquality_core.artifacts.preflight_verdict import PreflightVerdict
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.artifacts.strength import StrengthAggregate
from evalquality_core.canonical import (
    digest_artifact,
    scan_json,
)
from evalquality_core.faults import EvalQualityFault
from evalquality_core.printable import printable
from evalquality_core.suite.load import (
    SuiteError,
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
from flows.night import add_night_flags, finish_night, start_night_from
from flows.preflight import SUITE_ROW, preflight
from flows.report import PreflightRun, ProbePreflight, print_report
from flows.settings import FlowSettings, choose_suites, flow_run_settings, load_settings
from flows.strength_baseline import (
    BASELINE_FILE,
    GateResult,
    compare_with_baseline,
    read_baseline,
    update_baseline,
)
from flows.strength_html import mutations_of, write_html_report
from flows.strength_report import (
    HISTORY_FILE,
    ProbeDetail,
    RunCounts,
    StrengthReport,
    load_history,
    publish_artifacts,
)
from flows.watch import GateMoved, RunLog, announce_flow_run, strength_run_name, tag_flow_run, task_run_url
from tasks.caching import stored_result
from tasks.output import write_artifact, write_atomically
from tasks.scoring import ProbeScore, aggregate_strength_task, score_task
from tasks.strength_document import read_suite_strength, write_suite_strength
from tasks.suite_run import (
    Answered,
    PreparedSuite,
    TrialSet,
    load_trials,
    prepare_suite,
    read_artifact_file,
    trial_context,
    write_sealed_trial,
)
from tasks.suites import Suite, load_suites
from tasks.trials import (
    SealedTrial,
    TrialAnswer,
    TrialFaultNote,
    TrialJob,
    run_trial,
    seal_record,
    trial_key,
    trial_spend,
)

__all__ = ["StrengthRun", "contract_strength", "main", "run_contract_strength"]

BRIEF_FILE = "sealed-evaluator-brief.json"
AGGREGATE_FILE = "strength-aggregate.json"
COST_FILE = "preflight-cost.json"


@dataclass(frozen=True)
class StrengthRun:
    """One contract-strength run: the documents, the gate, what it cost, and where it wrote."""

    documents: Mapping[str, SuiteStrength]
    gate: GateResult
    counts: RunCounts
    preflight: PreflightRun
    out_dir: str
    report: str
    problems: Mapping[str, str] = field(default_factory=dict)
    #: The class name of the task runner the flow ran on (``ThreadPoolTaskRunner``, ``DaskTaskRunner``).
    task_runner: str = ""
    #: ``live`` or ``stored``, and in live mode the trial spend (``tasks.trials.trial_spend``).
    trials_mode: str = "stored"
    trial_counts: Mapping[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """The gate's exit code (harness.md A.5)."""
        return self.gate.exit_code

    def summary_lines(self) -> list[str]:
        """The closing lines: cost, the gate's every move (or the match sentence), where the report is."""
        lines = [self.counts.sentence()]
        if self.trials_mode == "live":
            spend = self.trial_counts
            lines.append(
                f"{spend.get('trialsRun', 0)} trials run and {spend.get('trialsCached', 0)} answered from cache, "
                f"{spend.get('trialFaults', 0)} faults, {spend.get('evaluatorSeconds', '0.000')} s in the evaluator"
            )
        return [*lines, *self.gate.lines(), f"report: {self.report}"]


# -------------------------------------------------------------------------------------- inputs


# ------------------------------------------------------------------------------------ documents


def _vector_of(value: Mapping[str, Any] | None) -> StrengthVector | None:
    if value is None:
        return None
    return StrengthVector.model_validate(
        {cls: value.get(cls) for cls in ("defect", "gameability", "zero-action")}, by_alias=True
    )


def suite_vector(classes: Mapping[str, str], scores: Mapping[str, ProbeScore | None]) -> StrengthVector:
    """The contract's vector as the TEA baseline records it (harness.md A.11).

    A class is null when the suite has no probe of it (and zero-action always, AD-7); otherwise it
    counts the probes of the class whose evidence marks them exercised and caught, so a class whose
    every probe was refused or Invalid reads ``0/0`` with a null rate.
    """
    entries: dict[str, ClassStrength | None] = {}
    for cls in ("defect", "gameability"):
        members = [pid for pid, c in classes.items() if c == cls]
        if not members:
            entries[cls] = None
            continue
        exercised = caught = 0
        for pid in members:
            score = scores.get(pid)
            vector = (score.evidence or {}).get("strength", {}).get("vector", {}) if score and score.evidence else {}
            entry = vector.get(cls) if isinstance(vector, dict) else None
            if entry:
                exercised += int(entry["exercised"])
                caught += int(entry["caught"])
        entries[cls] = ClassStrength(exercised=exercised, caught=caught, rate=rate_of(caught, exercised))
    return StrengthVector(defect=entries["defect"], gameability=entries["gameability"], zero_action=None)


def _probe_strength(
    probe: Mapping[str, Any], row: ProbePreflight | None, score: ProbeScore | None, trials: int, problem: str | None
) -> ProbeStrength:
    common = {
        "probe_class": probe["probeClass"],
        "expected_clean": probe["expectedClean"],
        "behavior_id": probe.get("behaviorId"),
        "preflight": row.outcome if row is not None else "not run",
        "preflight_legs": None if row is None else row.legs_planned,
        "trials": trials,
    }
    if score is None:
        # Nothing scored: the environment could not measure this probe (Invalid, exit 3).
        return ProbeStrength(
            **common,
            verdict=None,
            exit_code=3,
            strict_promotable=None,
            basis=[problem or "not scored"],
            qualification=None,
            strength=None,
            evidence_digest=None,
        )
    evidence = score.evidence
    return ProbeStrength(
        **common,
        verdict=score.verdict,  # type: ignore[arg-type]
        exit_code=score.exit_code,
        strict_promotable=score.strict_promotable,
        basis=list(score.basis),
        qualification=None if score.qualification is None else list(score.qualification),
        strength=None if evidence is None else _vector_of(evidence["strength"]["vector"]),
        evidence_digest=None if evidence is None else digest_artifact(evidence),
    )


def check_written(out: Path, documents: Mapping[str, SuiteStrength]) -> list[str]:
    """Read every artifact this run wrote back through its model; each failure as ``<path>: <detail>``."""
    failures: list[str] = []
    for suite in documents:
        folder = out / suite
        checks: list[tuple[type, Path]] = [(SealedEvaluatorBrief, folder / BRIEF_FILE)]
        checks += [(EvidenceArtifact, p) for p in sorted(folder.glob("evidence-*.json"))]
        checks += [(PreflightVerdict, p) for p in sorted(folder.glob("preflight*.json"))]
        if (folder / AGGREGATE_FILE).is_file():
            checks.append((StrengthAggregate, folder / AGGREGATE_FILE))
        for model, path in checks:
            try:
                read_artifact_file(model, path)
            except (EvalQualityFault, SuiteError, OSError) as fault:
                failures.append(f"{path}: {fault}")
        try:
            read_suite_strength(folder / CONTRACT_STRENGTH_FILE)
        except (EvalQualityFault, SuiteError, OSError) as fault:
            failures.append(f"{folder / CONTRACT_STRENGTH_FILE}: {fault}")
    return failures


# ------------------------------------------------------------------------------------------ flow


@flow(name="contract-strength", flow_run_name=strength_run_name, validate_parameters=False)
def contract_strength(
    suites_dir: str | None = None,
    out_dir: str | None = None,
    baseline: str | None = None,
    mode: str = "default",
    update_baseline_file: bool = False,
    fail_on_movement: bool = True,
    suites: list[str] | None = None,
    trials: str = "stored",
    fresh_trials: bool = False,
) -> State:
    """Measure every suite's contract strength and gate it on the baseline (module docstring).

    The final state's data is the ``StrengthRun``. With ``fail_on_movement`` (the default, from the
    CLI and the nightly deployment alike) the flow run ends ``Failed`` when the gate's exit code is not
    0, with one line naming what moved and no traceback, after everything is written and published,
    so the UI shows a moved night in red; the CLI's exit code is the gate's either way.
    ``trials="live"`` runs every probe's trials now (``tasks/trials.py``: ``run-trial`` then
    ``seal-record`` per trial index, digest-cached) instead of reading the stored replays
    (``trials="stored"``, the deterministic twin CI runs); ``fresh_trials`` samples new trial indices.
    """
    if trials not in TRIAL_MODES:
        raise ValueError(f"trials {trials!r} is not one of {', '.join(TRIAL_MODES)}")
    night = _load_night(suites_dir, out_dir, baseline, mode, suites)
    work = _submit_suites(night, trials, fresh_trials)
    measured = _collect_night(night, work, trials, update_baseline_file)
    run = _publish_night(night, work, measured, trials)
    gate = measured.gate
    if fail_on_movement and gate.exit_code != 0:
        message = gate_message(gate)
        return Failed(message=printable(message), data=GateMoved(printable(message), run))
    return Completed(message=measured.counts.sentence(), data=run)


@dataclass
class _Night:
    """What the load step found: settings, paths, the pre-flight subflow's run, the suites and their problems."""

    settings: FlowSettings
    started: float
    log: RunLog
    suites_root: Path
    out: Path
    baseline_path: Path
    context: Any
    runner: Any
    legs_runner: Any
    pre: PreflightRun
    suites: list[Suite]
    problems: dict[str, str]
    rows: dict[str, ProbePreflight]
    generated: dict[str, Any]


def _load_night(
    suites_dir: str | None, out_dir: str | None, baseline: str | None, mode: str, only: list[str] | None
) -> _Night:
    """Load: settings and paths, the suite-wide pre-flight subflow, the suites, the generated mutants."""
    settings = load_settings()
    freeze_startup_heap()
    started = time.perf_counter()
    log = RunLog()
    announce_flow_run(log)
    suites_root = Path(suites_dir).resolve() if suites_dir else settings.suites_dir
    out = Path(out_dir).resolve() if out_dir else settings.home / "contract-strength"
    baseline_path = Path(baseline).resolve() if baseline else default_baseline(suites_root)
    # A history file that is not one stops the run before any leg, not after the night's work.
    load_history(out / HISTORY_FILE)
    context = FlowRunContext.get()
    runner = context.task_runner if context is not None else None
    # Legs wait on child processes: a bounded thread pool is the fastest home for them on one machine
    # (prefect.md §7), whatever runner the scoring tasks use; scale-out across machines is per flow run.
    legs_runner = ThreadPoolTaskRunner(max_workers=settings.concurrency)

    pre: PreflightRun = preflight.with_options(task_runner=legs_runner)(
        suites_dir=str(suites_root),
        out_dir=str(out),
        cache_dir=settings.leg_cache,
        workspaces_dir=str(settings.workspaces_dir),
        mode=mode,
        scope="suite",
        suites=only,
    )
    suites, load_problems = load_suites(suites_root, only)
    # Issue 18: the generated-mutants task group, for the suites that opt in (suite.toml [mutants]).
    from flows.mutants import nightly_generated

    generated, generated_problems = nightly_generated(suites, out, settings, legs_runner, mode)
    for line in generated_problems:
        log.warning(line)
    tag_flow_run(["eval-quality", "contract-strength", *(f"suite:{suite.name}" for suite in suites)])
    problems: dict[str, str] = {p.name: p.message for p in load_problems}
    if not suites and not problems:
        problems[str(suites_root)] = "no suite found (a folder holding contract.json)"
    # One suite-wide pre-flight row per suite (probe "*"): every probe of the suite is scored under it.
    rows = {row.suite: row for row in pre.probes if row.probe_id == SUITE_ROW}
    return _Night(settings, started, log, suites_root, out, baseline_path, context, runner, legs_runner, pre,
                  suites, problems, rows, generated)


@dataclass
class _Submitted:
    """What the submit step left running or answered: per suite its preparation, per probe its score."""

    prepared: dict[str, PreparedSuite] = field(default_factory=dict)
    scores: dict[tuple[str, str], Any] = field(default_factory=dict)
    trial_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    probe_problems: dict[tuple[str, str], str] = field(default_factory=dict)
    spent: list[tuple[TrialAnswer, bool]] = field(default_factory=list)
    faults: int = 0


def _submit_suites(night: _Night, trials: str, fresh_trials: bool) -> _Submitted:
    """Submit: prepare every suite (and submit its live trials), then collect the trials and submit the scores.

    A suite whose preparation or trials fail gets a problem (it could not run); the others go on."""
    problems = night.problems
    work = _Submitted()
    live: dict[str, _LiveSuite] = {}
    for suite in night.suites:
        try:
            work.prepared[suite.name] = prepare_suite(suite, night.suites_root)
            if trials == "live":
                live[suite.name] = _submit_trials(suite, work.prepared[suite.name], night.settings.home, fresh_trials)
        except (EvalQualityFault, SuiteError, ValueError, OSError) as problem:
            problems[suite.name] = f"{type(problem).__name__}: {problem}"
    for suite in night.suites:
        if suite.name in problems:
            continue
        try:
            if trials == "live":
                sealed, spend, faulted = _collect_trials(suite, live[suite.name], night.out, work.probe_problems)
                work.spent += spend
                work.faults += faulted
            else:
                sealed = None
            work.scores.update(_submit_scores(
                suite, work.prepared[suite.name], night.rows, work.trial_counts, work.probe_problems, sealed
            ))
        except (EvalQualityFault, SuiteError, ValueError, OSError) as problem:
            problems[suite.name] = f"{type(problem).__name__}: {problem}"
    return work


@dataclass(frozen=True)
class _Measured:
    """What the collect step measured: the scores, the per-suite documents, the gate and the run's counts."""

    scores: dict[tuple[str, str], ProbeScore]
    task_runs: dict[tuple[str, str], str]
    trial_counts_run: dict[str, Any]
    documents: dict[str, SuiteStrength]
    gate: GateResult
    counts: RunCounts


def _collect_night(night: _Night, work: _Submitted, trials: str, update_baseline_file: bool) -> _Measured:
    """Collect: wait for the scores, build each suite's document, gate them on the baseline, count the run."""
    scores, scores_cached = _collect_scores(work.scores, work.probe_problems)
    # A score answered before submission has no task run this night (the report links none).
    task_runs = {key: str(future.task_run_id) for key, future in work.scores.items() if not isinstance(future, Answered)}
    trial_counts_run = {**trial_spend(work.spent), "trialFaults": work.faults} if trials == "live" else {}
    documents = {
        suite.name: _suite_document(suite, night.out, work.prepared[suite.name], night.rows, scores, work.trial_counts,
                                    work.probe_problems, night.generated.get(suite.name))
        for suite in night.suites
        if suite.name not in night.problems
    }
    gate = _gate(night.out, documents, night.problems, night.baseline_path, update_baseline_file)
    pre = night.pre
    counts = RunCounts(
        legs_spawned=pre.spawned,
        legs_cached=pre.from_cache,
        legs_collapsed=pre.collapsed,
        scores_run=len(scores) - scores_cached,
        scores_cached=scores_cached,
        spawned_seconds=pre.leg_seconds,
        total_seconds=time.perf_counter() - night.started,
    )
    return _Measured(scores, task_runs, trial_counts_run, documents, gate, counts)


def _publish_night(night: _Night, work: _Submitted, measured: _Measured, trials: str) -> StrengthRun:
    """Publish: the cost record (when anything was spawned), the HTML report, the Prefect artifacts, the logs."""
    out, pre, counts, documents, gate = night.out, night.pre, measured.counts, measured.documents, measured.gate
    trial_counts_run = measured.trial_counts_run
    if pre.spawned or trial_counts_run.get("trialsRun"):
        write_artifact(out / COST_FILE, {**_cost_record(pre, counts), **({"trials": trial_counts_run} if trials == "live" else {})})
    at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    context = night.context
    report = StrengthReport(
        at, documents, gate, counts,
        flow_run_id=None if context is None else str(context.flow_run.id),
        flow_run_name=None if context is None else context.flow_run.name,
        aggregates=_aggregates_written(out, documents),
        details=_probe_details(night.suites, documents, measured.scores, measured.task_runs),
    )
    report_path = write_html_report(out, report, night.log.warning)
    publish_artifacts(report, report_path)
    run = StrengthRun(
        documents, gate, counts, pre, str(out), str(report_path), night.problems, type(night.runner).__name__,
        trials, trial_counts_run,
    )
    _log_tables(night.log, run)
    for line in run.summary_lines():
        # Printed on the console by main (print_strength); here to the Logs tab, a move as a warning.
        night.log.to_logger(line, logging.WARNING if gate.exit_code and line in gate.lines() else logging.INFO)
    return run


def gate_message(gate: GateResult) -> str:
    """One line naming what moved: the first move or problem, and how many more there are."""
    lines = gate.lines()
    first = lines[0] if lines else "the gate did not match"
    more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
    return f"contract strength gate exit {gate.exit_code}: {first}{more}"


def _aggregates_written(out: Path, documents: Mapping[str, SuiteStrength]) -> dict[str, Any]:
    """Each suite's ``strength-aggregate.json`` this run wrote (wire JSON), for the report."""
    found = {}
    for name, document in documents.items():
        if document.aggregate_digest is not None:
            found[name] = scan_json((out / name / AGGREGATE_FILE).read_bytes())
    return found


def _probe_details(
    suites: Sequence[Suite],
    documents: Mapping[str, SuiteStrength],
    scores: Mapping[tuple[str, str], ProbeScore],
    task_runs: Mapping[tuple[str, str], str],
) -> dict[str, ProbeDetail]:
    """Per probe, what the report's probe section shows: mutation, evidence, and links."""
    details = {}
    for suite in suites:
        if suite.name not in documents:
            continue
        mutations = mutations_of(suite.directory)
        for probe in suite.probes:
            pid = probe["probeId"]
            score = scores.get((suite.name, pid))
            evidence = None if score is None else score.evidence
            run_id = task_runs.get((suite.name, pid))
            details[f"{suite.name}/{pid}"] = ProbeDetail(
                mutation=mutations.get(pid),
                evidence=evidence,
                evidence_href=None if evidence is None else f"{suite.name}/evidence-{pid}.json",
                task_run_id=run_id,
                task_run_url=task_run_url(run_id),
            )
    return details


def _submit_scores(
    suite: Suite,
    prepared: PreparedSuite,
    rows: Mapping[str, ProbePreflight],
    trial_counts: dict[tuple[str, str], int],
    probe_problems: dict[tuple[str, str], str],
    live: Mapping[str, TrialSet] | None = None,
) -> dict[tuple[str, str], Any]:
    """Submit one ``score`` task per probe under the suite's one pre-flight verdict; without a verdict
    every probe is noted (Invalid).

    Unreadable stored trials raise: the suite's corpus is broken, so the suite could not run.
    """
    submitted: dict[tuple[str, str], Any] = {}
    row = rows.get(suite.name)
    verdict = None if row is None or row.verdict_file is None else read_artifact_file(PreflightVerdict, Path(row.verdict_file))
    for probe in suite.probes:
        key = (suite.name, probe["probeId"])
        if verdict is None:
            probe_problems[key] = "pre-flight produced no verdict" + (f" ({row.outcome})" if row else "")
            continue
        if live is not None:
            if probe["probeId"] not in live:
                continue  # a trial faulted: its problem is noted, the probe is not scored
            trials = live[probe["probeId"]]
        else:
            trials = load_trials(suite.directory / "trials" / probe["probeId"])
        trial_counts[key] = len(trials.records)
        inputs = {
            "contract": prepared.contract_wire,  # plain JSON, never quote(): see score_task's docstring
            "probe": probe,
            "records": trials.records,
            "policy": prepared.policy,
            "preflight_verdict": verdict,
            "corpus_digest": prepared.corpus_digest,
            "isolation_manifest": trials.isolation_manifest,
            "evaluator_configuration": trials.evaluator_configuration,
        }
        hit, answered = stored_result(score_task, **inputs)
        if hit:
            submitted[key] = Answered(answered)
            continue
        submitted[key] = score_task.submit(suite.name, probe["probeId"], **inputs)
    return submitted


TRIAL_MODES: tuple[str, ...] = ("stored", "live")
#: Where ``--fresh-trials`` remembers each probe's current sample (under the eval-quality home).
SAMPLES_FILE = "trial-samples.json"


def _samples(home: Path, keys: Sequence[str], fresh: bool) -> dict[str, int]:
    """Each probe's trial sample: 0 until ``--fresh-trials`` moves every probe named to its next sample.

    Sample ``s`` of a policy minimum ``N`` uses trial indices ``s*N+1 .. s*N+N``, so a fresh sample runs
    new trials while the old ones stay answered in the cache (a later night on sample ``s`` reuses them).
    """
    import json

    path = home / SAMPLES_FILE
    try:
        recorded = json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        recorded = {}  # a torn file forgets the samples; the cache still holds every answered trial
    samples = {key: int(recorded.get(key, 0)) + (1 if fresh else 0) for key in keys}
    if fresh:
        write_atomically(path, json.dumps({**recorded, **samples}, indent=2, sort_keys=True).encode("utf-8"))
    return samples


@dataclass(frozen=True)
class _LiveSuite:
    """A suite's submitted trials (per probe: ``[(trial index, future)]``) and what sealing them needs."""

    futures: Mapping[str, list[tuple[int, Any]]]
    command: Any
    contract: Mapping[str, Any]
    brief_digest: str


def _submit_trials(suite: Suite, prepared: PreparedSuite, home: Path, fresh: bool) -> _LiveSuite:
    """Submit ``run-trial`` for every probe of the suite and each trial index of its current sample."""
    from evalquality_core.suite import staging

    context = trial_context(suite, prepared)
    command, contract, brief, brief_digest = context.command, context.contract, context.brief, context.brief_digest
    contract_digest, choices_digest, minimum = context.contract_digest, context.choices_digest, context.minimum
    samples = _samples(home, [f"{suite.name}/{p['probeId']}" for p in suite.probes], fresh)
    submitted: dict[str, list[tuple[int, Any]]] = {}
    for probe in suite.probes:
        pid = probe["probeId"]
        mutation = staging.mutation_for_probe(suite.directory, pid)
        staged = suite.staged_digests[None if mutation is None else mutation.mutation_id]
        first = samples[f"{suite.name}/{pid}"] * minimum + 1
        futures = []
        for index in range(first, first + minimum):
            key = trial_key(brief_digest=brief_digest, contract_digest=contract_digest, staged_digest=staged,
                            choices_digest=choices_digest, command=command, probe_id=pid, trial_index=index)
            hit, answer = stored_result(run_trial, key=key)
            if hit:
                futures.append((index, Answered(answer)))
                continue
            job = TrialJob(str(suite.directory), contract, brief, command, key)
            futures.append((index, run_trial.submit(suite.name, pid, index, key, job)))
        submitted[pid] = futures
    return _LiveSuite(submitted, command, contract, brief_digest)


def _collect_trials(
    suite: Suite,
    live: _LiveSuite,
    out: Path,
    probe_problems: dict[tuple[str, str], str],
) -> tuple[dict[str, TrialSet], list[tuple[TrialAnswer, bool]], int]:
    """Wait for each probe's trials, seal them (``seal-record``), write them under ``<out>/<suite>/trials/``.

    A faulted trial (its reason in the probe's basis) leaves the probe unscored (Invalid) this night.
    Returns the trial sets, each answer with whether it came from the cache, and the fault count.
    """
    command, contract, brief_digest = live.command, live.contract, live.brief_digest
    sets: dict[str, TrialSet] = {}
    spent: list[tuple[TrialAnswer, bool]] = []
    faults = 0
    seals: dict[str, list[tuple[str, Any]]] = {}
    for probe in suite.probes:
        pid = probe["probeId"]
        answers: list[tuple[int, TrialAnswer]] = []
        problem = None
        fresh: set[int] = set()
        for index, future in live.futures.get(pid, []):
            if isinstance(future, Answered):
                answer, cached = future.value, True
            else:
                answer = future.result(raise_on_failure=False)
                cached = future.state.name == "Cached"
            if isinstance(answer, TrialFaultNote):
                faults += 1
                problem = problem or f"trial {index} fault: {answer.reason}: {answer.detail}"
                continue
            if isinstance(answer, BaseException):
                raise answer  # not a trial fault: a bug or a crash of the task itself
            spent.append((answer, cached))
            answers.append((index, answer))
            if not isinstance(future, Answered):
                fresh.add(index)
        if problem is not None:
            probe_problems[(suite.name, pid)] = problem
            continue
        # A trial run this night is sealed by a ``seal-record`` task run; one answered from the cache is
        # sealed here (pure and cheap, the same function), so a night with nothing changed runs no task.
        seals[pid] = [
            (folder, seal_record.submit(suite.name, pid, index, answer, contract, brief_digest, command, folder)
             if index in fresh else
             Answered(seal_record.fn(suite.name, pid, index, answer, contract, brief_digest, command, folder)))
            for index, answer in answers
            for folder in [f"trials/{pid}/trial-{index}"]
        ]
    for pid, submitted in seals.items():
        sealed: list[SealedTrial] = []
        for folder, future in submitted:
            trial = future.value if isinstance(future, Answered) else future.result()
            write_sealed_trial(out / suite.name / folder, trial)
            sealed.append(trial)
        if sealed:
            sets[pid] = TrialSet(
                tuple(read_artifact(SealedRunRecord, dict(t.record), "SealedRunRecord") for t in sealed),
                read_artifact(IsolationManifest, dict(sealed[0].isolation_manifest), "IsolationManifest"),
                read_artifact(EvaluatorConfiguration, dict(sealed[0].evaluator_configuration), "EvaluatorConfiguration"),
            )
    return sets, spent, faults


def _collect_scores(
    submitted: Mapping[tuple[str, str], Any], probe_problems: dict[tuple[str, str], str]
) -> tuple[dict[tuple[str, str], ProbeScore], int]:
    """Wait for every score task; return the scores and how many were answered from the cache (looked
    up before submission, or a task run Prefect answered ``Cached``)."""
    scores: dict[tuple[str, str], ProbeScore] = {}
    cached = 0
    for key, future in submitted.items():
        if isinstance(future, Answered):
            scores[key] = future.value
            cached += 1
            continue
        try:
            scores[key] = future.result()
        except (EvalQualityFault, ValueError) as problem:
            probe_problems[key] = f"score raised {type(problem).__name__}: {problem}"
            continue
        cached += future.state.name == "Cached"  # a cache hit is a Completed state named "Cached"
    return scores, cached


def default_baseline(suites_root: Path) -> Path:
    """``$EVALQUALITY_STRENGTH_BASELINE``, else ``expected-strength.json`` beside the suites folder."""
    configured = os.environ.get("EVALQUALITY_STRENGTH_BASELINE")
    return Path(configured).resolve() if configured else suites_root.parent / BASELINE_FILE


def _suite_document(
    suite: Suite,
    out: Path,
    prepared: PreparedSuite,
    rows: Mapping[str, ProbePreflight],
    scores: Mapping[tuple[str, str], ProbeScore],
    trial_counts: Mapping[tuple[str, str], int],
    probe_problems: Mapping[tuple[str, str], str],
    generated: Any = None,
) -> SuiteStrength:
    """Write the suite's brief, evidence and aggregate; return its contract-strength document (written too).
    ``generated`` is the suite's "generated strength" line when it opts in to generated mutants."""
    folder = out / suite.name
    policy, corpus_digest = prepared.policy, prepared.corpus_digest
    brief_wire = to_wire(prepared.brief)
    write_artifact(folder / BRIEF_FILE, brief_wire)
    own: dict[str, ProbeScore | None] = {}
    probes: dict[str, ProbeStrength] = {}
    unsatisfied: set[str] = set()
    for probe in suite.probes:
        pid = probe["probeId"]
        key = (suite.name, pid)
        score = scores.get(key)
        own[pid] = score
        stale = folder / f"evidence-{pid}.json"
        if score is not None and score.evidence is not None:
            write_artifact(stale, score.evidence)
        elif stale.exists():
            stale.unlink()  # an Invalid probe mints nothing; never leave an earlier night's artifact behind
        if score is not None:
            unsatisfied.update(score.unsatisfied_coverage_rules)
        probes[pid] = _probe_strength(probe, rows.get(suite.name), score, trial_counts.get(key, 0), probe_problems.get(key))
    evidence = [s.evidence for s in own.values() if s is not None and s.evidence is not None]
    aggregate_digest: str | None = None
    refusal: str | None = None
    aggregate: Mapping[str, Any] | None = None
    if evidence:
        hit, outcome = stored_result(aggregate_strength_task, evidence=evidence, floors=dict(prepared.floors), policy=policy)
        if not hit:
            outcome = aggregate_strength_task(suite.name, evidence, dict(prepared.floors), policy)
        refusal = outcome.refusal
        if outcome.aggregate is not None:
            aggregate = outcome.aggregate
            write_artifact(folder / AGGREGATE_FILE, aggregate)
            aggregate_digest = digest_artifact(aggregate)
    else:
        refusal = "no evidence artifact was minted (every probe Invalid)"
    if aggregate_digest is None and (folder / AGGREGATE_FILE).exists():
        (folder / AGGREGATE_FILE).unlink()  # never leave an earlier night's aggregate beside this night's evidence
    classes = {p["probeId"]: ("zero-action" if p["expectedClean"] else p["probeClass"]) for p in suite.probes}
    row = rows.get(suite.name)
    verdict_wire = None if row is None or row.verdict_file is None else scan_json(Path(row.verdict_file).read_bytes())
    document = SuiteStrength(
        document=DOCUMENT_KIND,
        document_version=DOCUMENT_VERSION,
        suite=suite.name,
        contract_id=suite.contract["contractId"],
        contract_digest=digest_artifact(suite.contract),
        corpus_digest=corpus_digest,
        brief_digest=digest_artifact(brief_wire),
        preflight=row.outcome if row is not None else "not run",
        preflight_legs=None if row is None else row.legs_planned,
        fixture_digest=None if verdict_wire is None else verdict_wire["fixtureDigest"],
        aggregate_digest=aggregate_digest,
        aggregate_refusal=refusal,
        floors=dict(prepared.floors),
        aggregate=None if aggregate is None else AggregateClasses.model_validate(aggregate["classes"], by_alias=True),
        floor_decisions=None
        if aggregate is None
        else {
            cls: FloorDecision.model_validate(decision, by_alias=True)
            for cls, decision in aggregate["floorDecisions"].items()
        },
        probe_count=len(suite.probes),
        strength=suite_vector(classes, own),
        unsatisfied_coverage_rules=sorted(unsatisfied),
        probes=probes,
        generated_strength=generated,
    )
    write_suite_strength(document, folder / CONTRACT_STRENGTH_FILE)
    return document


def _gate(
    out: Path, documents: Mapping[str, SuiteStrength], problems: Mapping[str, str], baseline_path: Path, update: bool
) -> GateResult:
    schema_failures = check_written(out, documents)
    notes: list[str] = []
    if update and not problems and not schema_failures:
        update_baseline(baseline_path, documents.values())
        notes.append(f"baseline rewritten: {baseline_path}")
    elif update:
        notes.append(f"baseline NOT rewritten ({baseline_path}): this run could not measure every suite")
    try:
        recorded = read_baseline(baseline_path)
    except EvalQualityFault as fault:
        return GateResult(2, [], [*problems.values(), f"baseline unreadable: {fault}"], notes)
    return replace(compare_with_baseline(
        documents,
        recorded,
        could_not_run=problems,
        schema_failures=schema_failures,
        complete=True,
        baseline_name=str(baseline_path),
    ), notes=notes)


def _cost_record(pre: PreflightRun, counts: RunCounts) -> dict[str, Any]:
    """``preflight-cost.json`` (harness.md A.4 step 4): spawned vs cached legs, seconds, per probe."""
    return {
        "legsSpawned": counts.legs_spawned,
        "legsCached": counts.legs_cached,
        "legsCollapsed": counts.legs_collapsed,
        "spawnedSeconds": f"{counts.spawned_seconds:.3f}",
        "totalSeconds": f"{counts.total_seconds:.3f}",
        "probes": [
            {
                "suite": row.suite,
                "probeId": row.probe_id,
                "legsPlanned": row.legs_planned,
                "spawned": row.spawned,
                "cached": row.from_cache,
                "collapsed": row.collapsed,
                "seconds": f"{row.leg_seconds:.3f}",
            }
            for row in pre.probes
        ],
    }


# ------------------------------------------------------------------------------------- running


def make_task_runner(kind: str, workers: int) -> Any:
    """``threads`` → ``ThreadPoolTaskRunner(workers)``; ``dask`` → a ``DaskTaskRunner`` on a local
    cluster of ``workers`` processes (prefect-dask; the test extra installs it)."""
    if kind == "threads":
        return ThreadPoolTaskRunner(max_workers=workers)
    if kind == "dask":
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(
            cluster_kwargs={"n_workers": workers, "processes": True, "threads_per_worker": 4, "dashboard_address": None}
        )
    raise ValueError(f"unknown task runner {kind!r} (threads or dask)")


def run_contract_strength(
    settings: FlowSettings | None = None,
    *,
    task_runner: Any | None = None,
    suites_dir: str | None = None,
    out_dir: str | None = None,
    baseline: str | None = None,
    mode: str = "default",
    update_baseline_file: bool = False,
    trials: str = "stored",
    fresh_trials: bool = False,
) -> StrengthRun:
    """Run the flow on ``task_runner`` (default: a thread pool of the settings' concurrency)."""
    settings = settings or load_settings()
    runner = task_runner or ThreadPoolTaskRunner(max_workers=settings.concurrency)
    shared = _share_api_with_worker_processes(runner)
    try:
        with flow_run_settings():
            state = contract_strength.with_options(task_runner=runner)(
                suites_dir=suites_dir,
                out_dir=out_dir,
                baseline=baseline,
                mode=mode,
                update_baseline_file=update_baseline_file,
                return_state=True,
                trials=trials,
                fresh_trials=fresh_trials,
            )
        value = state.result(raise_on_failure=False)
        if isinstance(value, GateMoved):
            return value.run  # type: ignore[no-any-return]
        if isinstance(value, BaseException):
            raise value  # a crash, not a moved gate
        return value  # type: ignore[no-any-return]
    finally:
        if shared:
            os.environ.pop("PREFECT_API_URL", None)


def _share_api_with_worker_processes(runner: Any) -> bool:
    """Point a process-based runner's workers at this process's embedded API server.

    Without ``PREFECT_API_URL`` the flow runs on an embedded (ephemeral) server that only this process
    knows; a Dask worker process would try to start its own and fail. The workers are started when the
    flow enters its task runner, after this sets the variable they inherit. Returns whether it set it.
    """
    from prefect.settings import PREFECT_API_URL

    if isinstance(runner, ThreadPoolTaskRunner) or PREFECT_API_URL.value() or os.environ.get("PREFECT_API_URL"):
        return False
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    server.start()
    os.environ["PREFECT_API_URL"] = server.api_url
    return True


def _parser() -> argparse.ArgumentParser:
    parser = FlowArgumentParser(
        prog="python -m flows.contract_strength",
        description="Live pre-flight, then score every probe's stored trials, aggregate per contract, write "
        "the report, and gate on corpus/expected-strength.json (exit 0 matched, 1 a verdict moved, "
        "2 could not measure or the environment moved).",
    )
    parser.add_argument("--suites", metavar="DIR", help="folder of suites (default: corpus/suites; $EVALQUALITY_SUITES)")
    parser.add_argument("--out", metavar="DIR", help="where artifacts go (default: <home>/contract-strength, <home> beside a foreign --suites)")
    parser.add_argument("--baseline", metavar="FILE", help="baseline (default: expected-strength.json beside the suites)")
    parser.add_argument("--concurrency", type=int, metavar="N", help="tasks in flight at once (default 8)")
    parser.add_argument("--task-runner", choices=("threads", "dask"), default="threads", help="where tasks run")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--force", action="store_true", help="ignore the leg cache: run each distinct request once")
    modes.add_argument("--from-cache", action="store_true", help="answer legs only from the cache; a miss is a fault")
    parser.add_argument("--update-baseline", action="store_true", help="rewrite the baseline from this run")
    parser.add_argument(
        "--trials", choices=TRIAL_MODES, default="stored",
        help="stored: score the replays in corpus/suites/*/trials (CI's deterministic twin); live: run every "
        "trial now through the suite's evaluator command (the nightly deployment's default)",
    )
    parser.add_argument("--fresh-trials", action="store_true", help="live: sample new trial indices (old answers stay cached)")
    add_night_flags(parser)  # issue 34: the night's wall-clock and cost budget (flows/night.py)
    return parser


def strength_tables(run: StrengthRun) -> list[Any]:
    """One console table per contract (probe, class, pre-flight, legs, verdict, exit, basis, qualification).

    Probe, class, legs, verdict and exit are whole on each row's one line at any width; a pre-flight
    outcome, basis (each distinct line once) or qualification too long for the width left is written
    whole under its row (:class:`flows.watch.ReadableTable`); the report and the JSON carry them too.
    """
    from flows.strength_report import contract_table_rows, format_class, vector_classes
    from flows.watch import ReadableTable

    tables = []
    for name, document in sorted(run.documents.items()):
        vector = ", ".join(f"{cls} {format_class(v)}" for cls, v in vector_classes(document.strength).items())
        rows = contract_table_rows(document)
        headers = list(rows[0]) if rows else []
        tables.append(ReadableTable(
            f"{name} ({document.contract_id}): {vector}", headers, [list(row.values()) for row in rows],
            long=("pre-flight", "basis", "qualification"), right=("legs", "exit"),
        ))
    return tables


def _log_tables(log: RunLog, run: StrengthRun) -> None:
    """The strength tables to the run logger (the Logs tab shows them also under serve and workers)."""
    for table in strength_tables(run):
        log.table_to_logger(table)


def print_strength(run: StrengthRun) -> None:
    """The console report: the pre-flight table, one strength table per contract, the summary lines."""
    from flows.watch import console as make_console
    from flows.watch import print_line

    console = make_console()
    print_report(run.preflight, console)
    for table in strength_tables(run):
        console.print(table)
    for line in run.summary_lines():
        print_line(console, line)


@crash_exit("python -m flows.contract_strength")
def main(argv: Sequence[str] | None = None) -> int:
    """Parse flags, run the flow, print the report, return the gate's exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    prog = "python -m flows.contract_strength"
    start_night_from(parser, args)
    choose_suites(args.suites)  # the defaults (home, out, baseline) follow the suites folder
    settings = start_flow_main(prog, args.concurrency)
    workers = args.concurrency or (2 if args.task_runner == "dask" else settings.concurrency)
    with one_line_errors(prog):
        out_dir = Path(args.out).resolve() if args.out else settings.home / "contract-strength"
        check_flow_inputs(Path(args.suites).resolve() if args.suites else settings.suites_dir, out_dir)
        load_history(out_dir / HISTORY_FILE)  # not a history: one line and 74, before Prefect starts
        check_leg_cache(prog, settings)
        with embedded_server(prog), api_watchdog(prog):
            run = run_contract_strength(
                settings,
                task_runner=make_task_runner(args.task_runner, workers),
                suites_dir=args.suites,
                out_dir=args.out,
                baseline=args.baseline,
                mode="force" if args.force else ("from-cache" if args.from_cache else "default"),
                update_baseline_file=args.update_baseline,
                trials=args.trials,
                fresh_trials=args.fresh_trials,
            )
    print_strength(run)
    stopped = finish_night(prog, out_dir)
    return run.exit_code if stopped is None else stopped


if __name__ == "__main__":
    sys.exit(main())
