"""``python -m flows.preflight``: the pre-flight of every probe of every suite, as one Prefect flow.

Compiles each suite's contract, plans each (suite, probe), fans every leg out concurrently on a bounded thread pool (one ``spawn-leg``
task per leg, answered by the leg cache or one live child process in a fresh staged workspace), reduces
each probe's observations into its ``PreflightVerdict``, writes ``<out>/<suite>/preflight-<probe>.json``
and ``<out>/preflight-summary.json``, prints the table and the cost line, and gates on the baseline.
A re-run pays nothing for legs already answered; a run killed half way resumes where it stopped.

Watching it (flows/watch.py): the flow run is named ``preflight <n> suites <UTC minute>`` and tagged
``suite:<name>``; task runs are ``compile/<suite>``, ``plan/<suite>/<probe>``, ``<suite>/<probe>/<leg>``
and ``reduce/<suite>/<probe>``, each leg ending ``Completed`` (spawned), ``Cached`` (from cache, or
collapsed onto an identical leg) or ``Failed`` (a fault). The plan per suite, faults, the table and the
cost line go to Prefect's run logger and the console, with progress while the legs run. Given a
baseline, the flow gates on it: a moved gate ends the flow run ``Failed`` with one line naming what
moved (no traceback), and ``main`` still exits 2.

Runs on Prefect's embedded (ephemeral) server by default, or against the server ``PREFECT_API_URL``
names. On any interruption (Ctrl-C, SIGTERM, a crash) the flow body kills every live leg's process
group before re-raising (prefect.md §4: hooks run too late, only the flow body is in time).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.client.schemas.objects import State
from prefect.states import Completed, Failed
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from evalquality_core.adapters.command_line import kill_all_live_groups
from evalquality_core.evaluate.pointers import as_wire
from evalquality_core.faults import EvalQualityFault
from evalquality_core.preflight.plan import PreflightPlan
from evalquality_core.printable import printable
from flows.baseline import PreflightGate, gate
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
from flows.report import (
    PreflightRun,
    ProbePreflight,
    SuiteFailure,
    outcome_of,
    print_report,
    publish_report,
    render_table,
    summary_line,
)
from flows.settings import FlowSettings, choose_suites, flow_run_settings
from flows.watch import (
    GateMoved,
    LegProgress,
    RunLog,
    announce_flow_run,
    preflight_run_name,
    tag_flow_run,
)
from tasks.contract import compile_task
from tasks.leg_cache import LEG_CACHE_MODES, LegAnswer, LegFaultCost, close_leg_cache
from tasks.output import write_artifact
from tasks.preflight import (
    LegJob,
    abort_event,
    leg_call,
    listen_to_legs,
    plan_preflight_task,
    reduce_preflight_task,
    release_invocation,
    spawn_leg,
)
from tasks.suites import Suite, load_suites
from tasks.workspace import reclaim_workspaces

__all__ = ["SCOPES", "SUITE_ROW", "main", "preflight", "run_preflight_flow", "verdict_path"]


#: The two pre-flight scopes: one plan per probe (this flow's default, the client's pre-flight-only
#: mode), or one plan per suite over the contract and every probe (the strength run, the client's full mode).
SCOPES: tuple[str, ...] = ("probe", "suite")
#: The probe column of a suite-wide row: the verdict covers every probe of the suite.
SUITE_ROW = "*"
#: The file a suite-wide verdict is written to, beside the per-probe ``preflight-<probe>.json``.
SUITE_VERDICT_FILE = "preflight.json"

PROG = "python -m flows.preflight"


def run_id_of(suite: str, probe_id: str) -> str:
    """A deterministic run id per (suite, probe), so a re-run's verdict equals the first run's.

    The suite-wide plan's run id is ``preflight-<suite>`` (``probe_id`` is ``SUITE_ROW``).
    """
    if probe_id == SUITE_ROW:
        return f"preflight-{suite}".lower()
    return f"preflight-{suite}-{probe_id}".lower()


@dataclass(frozen=True, eq=False)
class _Planned:
    """One plan: over one probe (scope ``probe``) or over every probe of the suite (scope ``suite``)."""

    suite: Suite
    probes: tuple[dict[str, Any], ...]
    probe_id: str
    plan: PreflightPlan | None
    fault: EvalQualityFault | None

    def owner_of(self, leg_id: str) -> dict[str, Any]:
        """The probe a leg belongs to: the one whose manifestation witness it is, else the first.

        Only a seeded-fault leg runs against a mutation (its own probe's); every other leg runs against
        the clean system whichever probe is named, so the first stands for all of them.
        """
        return self.suite.owner_of_leg(self.probes, leg_id)


def _fault_outcome(fault: EvalQualityFault) -> str:
    return f"fault: {fault.code}: {fault.detail}"


def verdict_path(out_dir: Path, suite: str, probe_id: str) -> Path:
    """Where a verdict is written: ``<suite>/preflight-<probe>.json``, or ``<suite>/preflight.json`` suite-wide."""
    name = SUITE_VERDICT_FILE if probe_id == SUITE_ROW else f"preflight-{probe_id}.json"
    return out_dir / suite / name


def _write_verdict(out_dir: Path, suite: str, probe_id: str, verdict: Any) -> Path:
    return write_artifact(verdict_path(out_dir, suite, probe_id), as_wire(verdict))


@flow(name="preflight", flow_run_name=preflight_run_name, validate_parameters=False)
def preflight(
    suites_dir: str,
    out_dir: str,
    cache_dir: str,
    workspaces_dir: str,
    mode: str = "default",
    scope: str = "probe",
    suites: list[str] | None = None,
    baseline: str | None = None,
    update_baseline: bool = False,
) -> State:
    """Pre-flight every probe of every suite under ``suites_dir`` (or of the named ``suites`` only: a batch
    of a fanned-out night); write verdicts under ``out_dir``.

    ``scope="probe"`` plans each probe alone (one verdict per probe); ``scope="suite"`` plans each suite
    once over its contract and every probe (one verdict and one fixture digest per suite, row probe
    ``*``). Both send the same requests for the same legs, so they share the leg cache.

    With ``baseline``, gate on it (module docstring). The final state's data is the ``PreflightRun``:
    ``Completed`` when the gate matched (or there was none), ``Failed`` naming what moved otherwise.
    """
    if mode not in LEG_CACHE_MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(LEG_CACHE_MODES)}")
    if scope not in SCOPES:
        raise ValueError(f"scope {scope!r} is not one of {', '.join(SCOPES)}")
    freeze_startup_heap()
    started = time.perf_counter()
    invocation = uuid.uuid4().hex
    out = Path(out_dir)
    log = RunLog()
    announce_flow_run(log)
    reclaim_workspaces(Path(workspaces_dir))
    loaded, problems = load_suites(Path(suites_dir), suites)
    tag_flow_run(["eval-quality", "preflight", *(f"suite:{suite.name}" for suite in loaded)])
    failures = [SuiteFailure(problem.name, problem.message) for problem in problems]
    for failure in failures:
        log.warning(f"suite {failure.suite} could not run: {failure.message}")
    keys: set[str] = set()
    try:
        planned = _plan_all(loaded, failures, log, scope)
        progress = LegProgress(sum(len(item.plan.legs) for item in planned if item.plan is not None))
        listen_to_legs(invocation, progress.on_event)
        with progress:
            futures = _submit_legs(planned, cache_dir, mode, invocation, workspaces_dir)
            # Reduce each probe as soon as its legs are in (reductions overlap the legs still running).
            pending = [(item, _submit_reduce(item, futures)) for item in planned]
            rows = [_finish_probe(item, collected, out, keys) for item, collected in pending]
    except BaseException:
        # Every in-flight leg kills its group and returns promptly, and every leg still queued
        # refuses to start (the signal stays set: it is never released on this path).
        abort_event(invocation).set()
        kill_all_live_groups()
        raise
    release_invocation(invocation)
    close_leg_cache(cache_dir, mode, invocation)  # type: ignore[arg-type]
    for row in rows:
        if row.outcome.startswith("fault"):
            log.warning(f"{row.suite}/{row.probe_id}: {row.outcome}")
    run = PreflightRun(tuple(rows), tuple(failures), len(keys), time.perf_counter() - started)
    result: PreflightGate | None = None
    if baseline is not None:
        result = gate(run, Path(baseline), update=update_baseline)
        run = PreflightRun(run.probes, run.failures, run.distinct_spawns, run.wall_seconds, result.exit_code, result.lines)
    out.mkdir(parents=True, exist_ok=True)
    write_artifact(out / "preflight-summary.json", run.to_json())
    publish_report(run)
    _log_report(log, run)
    if result is not None and result.exit_code != 0:
        message = gate_message(result)
        return Failed(message=printable(message), data=GateMoved(printable(message), run))
    return Completed(message=summary_line(run), data=run)


def gate_message(result: PreflightGate) -> str:
    """One line naming what moved: the first difference, and how many more there are."""
    lines = [line for line in result.lines if line]
    first = lines[0] if lines else "the baseline gate did not match"
    more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
    return f"pre-flight baseline gate exit {result.exit_code}: {first}{more}"


def _log_report(log: RunLog, run: PreflightRun) -> None:
    """The table and the cost line to the run logger (the console prints them itself, in ``main``)."""
    log.table_to_logger(render_table(run.probes, run.failures))
    log.to_logger(summary_line(run))
    for line in run.gate_lines:
        log.to_logger(line, 30 if run.gate_exit else 20)


def _plan_all(
    suites: list[Suite], failures: list[SuiteFailure], log: RunLog, scope: str = "probe"
) -> list[_Planned]:
    """Compile every contract, then plan every (suite, probe), or every suite once (``scope``); concurrently."""
    compiled = {}
    for suite in suites:
        compiled[suite.name] = compile_task.with_options(task_run_name=f"compile/{suite.name}").submit(
            quote(suite.contract)
        )
    plans: list[tuple[Suite, tuple[dict[str, Any], ...], str, Any]] = []
    for suite in suites:
        try:
            contract = compiled[suite.name].result()  # a contract that does not compile cannot pre-flight
        except EvalQualityFault as fault:
            failure = SuiteFailure(suite.name, f"compile: {fault.code}: {fault.artifact_path}: {fault.detail}")
            failures.append(failure)
            log.warning(f"suite {suite.name} could not run: {failure.message}")
            continue
        groups = [tuple(dict(p) for p in suite.probes)] if scope == "suite" else [(dict(p),) for p in suite.probes]
        for group in groups:
            probe_id = SUITE_ROW if scope == "suite" else group[0]["probeId"]
            run_id = run_id_of(suite.name, probe_id)
            label = f"{suite.name}/{probe_id}"
            future = plan_preflight_task.submit(quote(contract), quote(list(group)), run_id, label)
            plans.append((suite, group, probe_id, future))
    planned = []
    for suite, group, probe_id, future in plans:
        try:
            planned.append(_Planned(suite, group, probe_id, future.result(), None))
        except EvalQualityFault as fault:
            planned.append(_Planned(suite, group, probe_id, None, fault))
    for suite in suites:
        mine = [item for item in planned if item.suite is suite]
        if not mine:
            continue
        legs = sum(len(item.plan.legs) for item in mine if item.plan is not None)
        faulted = sum(1 for item in mine if item.plan is None)
        note = f", {faulted} could not be planned" if faulted else ""
        what = "the whole suite" if scope == "suite" else f"{len(mine)} probe(s)"
        log.info(f"suite {suite.name}: {what}, {legs} legs planned{note}")
    return planned


def _submit_legs(
    planned: list[_Planned], cache_dir: str, mode: str, invocation: str, workspaces_dir: str
) -> dict[tuple[str, str, str], Any]:
    """One ``spawn-leg`` per planned leg, each distinct request before its repeats."""
    jobs: list[tuple[_Planned, str, LegJob]] = []
    for item in planned:
        if item.plan is None:
            continue
        for leg in item.plan.legs:
            owner = item.owner_of(leg.leg_id)
            job = LegJob(
                request=leg.request,
                key=item.suite.leg_key_of(owner, leg),
                policy=item.suite.policy,
                mcp_policy=item.suite.mcp_policy,
                # The layer store sits beside the workspaces, in the eval-quality home.
                stage=item.suite.stager(owner, leg.leg_id, str(Path(workspaces_dir).with_name("layers"))),
                cache_dir=cache_dir,
                cache_mode=mode,  # type: ignore[arg-type]
                invocation=invocation,
                workspaces_dir=workspaces_dir,
                targets=item.suite.targets,
            )
            jobs.append((item, leg.leg_id, job))
    # A repeat waits on its twin's single-flight lock while holding a worker, so queueing repeats
    # last keeps the pool busy with real spawns.
    first_seen: set[str] = set()
    firsts, repeats = [], []
    for entry in jobs:
        (repeats if entry[2].key in first_seen else firsts).append(entry)
        first_seen.add(entry[2].key)
    futures = {}
    # No task-run tags: Prefect asks the server for tag concurrency slots (a round trip, and a lease)
    # for every tagged task run, which made a cached leg cost several no-op tasks (benchmarks/bench_scale.py).
    # The flow run carries the suite tags; a leg's run name starts with its suite.
    for item, leg_id, job in firsts + repeats:
        futures[(item.suite.name, item.probe_id, leg_id)] = spawn_leg.submit(
            item.suite.name, item.probe_id, leg_id, quote(job), leg_call(job.request)
        )
    return futures


@dataclass(frozen=True, eq=False)
class _Collected:
    answers: list[LegAnswer]
    fault: EvalQualityFault | None
    reduction: Any  # the reduce-preflight future, or None
    #: What the legs that faulted cost (a timed-out leg ran for its whole budget): spawns and seconds.
    fault_costs: tuple[LegFaultCost, ...] = ()


def _submit_reduce(item: _Planned, futures: dict[tuple[str, str, str], Any]) -> _Collected:
    """Wait for one probe's legs; submit its reduction unless a leg faulted."""
    if item.plan is None:
        return _Collected([], item.fault, None)
    answers: list[LegAnswer] = []
    fault: EvalQualityFault | None = None
    costs: list[LegFaultCost] = []
    for leg in item.plan.legs:
        try:
            # pop: a collected leg's future (its state and result) is not held until the run ends
            answers.append(futures.pop((item.suite.name, item.probe_id, leg.leg_id)).result())
        except EvalQualityFault as raised:
            fault = fault or raised
            cost = getattr(raised, "leg_cost", None)
            if isinstance(cost, LegFaultCost):
                costs.append(cost)
    if fault is not None:
        return _Collected(answers, fault, None, tuple(costs))
    observations = [answer.observation for answer in answers]
    label = f"{item.suite.name}/{item.probe_id}"
    return _Collected(answers, None, reduce_preflight_task.submit(quote(item.plan), quote(observations), label))


def _finish_probe(item: _Planned, collected: _Collected, out: Path, keys: set[str]) -> ProbePreflight:
    """The probe's row: its leg counts and its verdict (written) or the fault that stopped it."""
    answers = collected.answers
    cached = sum(1 for answer in answers if answer.source == "cache")
    collapsed = sum(1 for answer in answers if answer.source == "collapsed")
    # A leg that faulted after its spawn (a timeout burns its whole budget) was run and cost its time.
    faulted = sum(1 for cost in collected.fault_costs if cost.spawned)
    spawned = len(answers) - cached - collapsed + faulted
    keys.update(answer.key for answer in answers if answer.source == "spawned")
    keys.update(cost.key for cost in collected.fault_costs if cost.spawned)
    seconds = sum(answer.elapsed_s for answer in answers) + sum(cost.elapsed_s for cost in collected.fault_costs)
    planned = None if item.plan is None else len(item.plan.legs)

    def row(outcome: str, path: Path | None = None) -> ProbePreflight:
        """This probe's row with the given outcome (and verdict file)."""
        return ProbePreflight(
            item.suite.name, item.probe_id, planned, spawned, cached, seconds, outcome,
            None if path is None else str(path), faulted=faulted, collapsed=collapsed,
        )

    stale = verdict_path(out, item.suite.name, item.probe_id)
    if collected.fault is not None:
        stale.unlink(missing_ok=True)  # no verdict this run: never leave an earlier one looking current
        return row(_fault_outcome(collected.fault))
    try:
        verdict = collected.reduction.result()
    except EvalQualityFault as raised:
        stale.unlink(missing_ok=True)
        return row(_fault_outcome(raised))
    return row(outcome_of(as_wire(verdict)), _write_verdict(out, item.suite.name, item.probe_id, verdict))


def run_preflight_flow(
    settings: FlowSettings, mode: str = "default", *, gate_on_baseline: bool = False, update_baseline: bool = False
) -> PreflightRun:
    """Run the flow with the settings' concurrency (a bounded thread pool); its ``PreflightRun``.

    With ``gate_on_baseline`` the flow gates on ``settings.baseline`` (the run carries the gate's exit
    code and lines) and its flow run ends Failed when the gate moved.
    """
    runner = ThreadPoolTaskRunner(max_workers=settings.concurrency)
    with flow_run_settings():
        state = preflight.with_options(task_runner=runner)(
            suites_dir=str(settings.suites_dir),
            out_dir=str(settings.out_dir),
            cache_dir=settings.leg_cache,
            workspaces_dir=str(settings.workspaces_dir),
            mode=mode,
            baseline=str(settings.baseline) if gate_on_baseline or update_baseline else None,
            update_baseline=update_baseline,
            return_state=True,
        )
    return run_of(state)


def run_of(state: State) -> PreflightRun:
    """The ``PreflightRun`` a finished ``preflight`` flow run carries (its Failed state included);
    a flow that crashed re-raises its exception."""
    value = state.result(raise_on_failure=False)
    if isinstance(value, GateMoved):
        return value.run  # type: ignore[no-any-return]
    if isinstance(value, BaseException):
        raise value
    return value  # type: ignore[no-any-return]


def _parser() -> argparse.ArgumentParser:
    parser = FlowArgumentParser(
        prog=PROG,
        description="Pre-flight every probe of every suite (real child processes, digest-keyed leg cache), "
        "write the verdicts, and compare with the pre-flight baseline (exit 0 matched, 2 moved).",
    )
    parser.add_argument("--suites", metavar="DIR", help="folder of suites (default: corpus/suites; $EVALQUALITY_SUITES)")
    parser.add_argument("--out", metavar="DIR", help="where verdicts go (default: <home>/preflight, <home> beside a foreign --suites; $EVALQUALITY_OUT)")
    parser.add_argument("--concurrency", type=int, metavar="N", help="legs in flight at once (default 8)")
    parser.add_argument("--baseline", metavar="FILE", help="baseline file (default: expected-preflight.json beside the suites folder)")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--force", action="store_true", help="ignore the cache: run each distinct request live once")
    modes.add_argument("--from-cache", action="store_true", help="answer only from the cache; a miss is a fault")
    parser.add_argument("--update-baseline", action="store_true", help="rewrite the baseline from this run")
    return parser


@crash_exit(PROG)
def main(argv: list[str] | None = None) -> int:
    """Parse flags, run the flow, print the report, and return the baseline gate's exit code."""
    args = _parser().parse_args(argv)
    choose_suites(args.suites)  # the defaults below (home, out, baseline) follow the suites folder
    settings = start_flow_main(PROG, args.concurrency)
    settings = FlowSettings(
        home=settings.home,
        suites_dir=settings.suites_dir,
        out_dir=Path(args.out).resolve() if args.out else settings.out_dir,
        concurrency=args.concurrency or settings.concurrency,
        baseline=Path(args.baseline).resolve() if args.baseline else settings.baseline,
    )
    mode = "force" if args.force else ("from-cache" if args.from_cache else "default")
    with one_line_errors(PROG):
        check_flow_inputs(settings.suites_dir, settings.out_dir)
        check_leg_cache(PROG, settings)
        with embedded_server(PROG), api_watchdog(PROG):
            run = run_preflight_flow(settings, mode, gate_on_baseline=True, update_baseline=args.update_baseline)
    print_report(run)
    for line in run.gate_lines:
        print(printable(line))
    return run.gate_exit or 0


if __name__ == "__main__":
    sys.exit(main())
