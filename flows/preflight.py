"""``python -m flows.preflight``: the pre-flight of every probe of every suite, as one Prefect flow.

Compiles each suite's contract, plans each (suite, probe), fans every leg out concurrently on a bounded thread pool (one ``spawn-leg``
task per leg, answered by the leg cache or one live child process in a fresh staged workspace), reduces
each probe's observations into its ``PreflightVerdict``, writes ``<out>/<suite>/preflight-<probe>.json``
and ``<out>/preflight-summary.json``, prints the table and the cost line, and gates on the baseline.
A re-run pays nothing for legs already answered; a run killed half way resumes where it stopped.

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
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from evalquality_core.adapters.command_line import kill_all_live_groups
from evalquality_core.evaluate.pointers import as_wire
from evalquality_core.faults import EvalQualityFault
from evalquality_core.preflight.plan import PreflightPlan
from flows.baseline import gate
from flows.lifecycle import FlowArgumentParser, check_leg_cache, one_line_errors, start_flow_main
from flows.output import write_artifact
from flows.report import PreflightRun, ProbePreflight, SuiteFailure, outcome_of, print_report, publish_report
from flows.settings import FlowSettings
from flows.suites import Suite, load_suites
from tasks.contract import compile_task
from tasks.leg_cache import LEG_CACHE_MODES, LegAnswer, LegFaultCost, close_leg_cache
from tasks.preflight import (
    LegJob,
    abort_event,
    leg_key,
    plan_preflight_task,
    reduce_preflight_task,
    release_invocation,
    spawn_leg,
)
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


@flow(name="preflight", flow_run_name="preflight", validate_parameters=False)
def preflight(
    suites_dir: str, out_dir: str, cache_dir: str, workspaces_dir: str, mode: str = "default", scope: str = "probe"
) -> PreflightRun:
    """Pre-flight every probe of every suite under ``suites_dir``; write verdicts under ``out_dir``.

    ``scope="probe"`` plans each probe alone (one verdict per probe); ``scope="suite"`` plans each suite
    once over its contract and every probe (one verdict and one fixture digest per suite, row probe
    ``*``). Both send the same requests for the same legs, so they share the leg cache.
    """
    if mode not in LEG_CACHE_MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(LEG_CACHE_MODES)}")
    if scope not in SCOPES:
        raise ValueError(f"scope {scope!r} is not one of {', '.join(SCOPES)}")
    started = time.perf_counter()
    invocation = uuid.uuid4().hex
    out = Path(out_dir)
    reclaim_workspaces(Path(workspaces_dir))
    suites, problems = load_suites(Path(suites_dir))
    failures = [SuiteFailure(problem.name, problem.message) for problem in problems]
    keys: set[str] = set()
    try:
        planned = _plan_all(suites, failures, scope)
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
    close_leg_cache(Path(cache_dir), mode, invocation)  # type: ignore[arg-type]
    run = PreflightRun(tuple(rows), tuple(failures), len(keys), time.perf_counter() - started)
    out.mkdir(parents=True, exist_ok=True)
    write_artifact(out / "preflight-summary.json", run.to_json())
    publish_report(run)
    return run


def _plan_all(suites: list[Suite], failures: list[SuiteFailure], scope: str = "probe") -> list[_Planned]:
    """Compile every contract, then plan every (suite, probe), or every suite once (``scope``); concurrently."""
    compiled = {suite.name: compile_task.submit(quote(suite.contract)) for suite in suites}
    plans: list[tuple[Suite, tuple[dict[str, Any], ...], str, Any]] = []
    for suite in suites:
        try:
            contract = compiled[suite.name].result()  # a contract that does not compile cannot pre-flight
        except EvalQualityFault as fault:
            failures.append(SuiteFailure(suite.name, f"compile: {fault.code}: {fault.artifact_path}: {fault.detail}"))
            continue
        groups = [tuple(dict(p) for p in suite.probes)] if scope == "suite" else [(dict(p),) for p in suite.probes]
        for group in groups:
            probe_id = SUITE_ROW if scope == "suite" else group[0]["probeId"]
            run_id = run_id_of(suite.name, probe_id)
            plans.append((suite, group, probe_id, plan_preflight_task.submit(quote(contract), quote(list(group)), run_id)))
    planned = []
    for suite, group, probe_id, future in plans:
        try:
            planned.append(_Planned(suite, group, probe_id, future.result(), None))
        except EvalQualityFault as fault:
            planned.append(_Planned(suite, group, probe_id, None, fault))
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
                key=leg_key(leg.request, item.suite.policy, item.suite.staged_digest_of_leg(owner, leg.leg_id)),
                policy=item.suite.policy,
                stage=item.suite.stager(owner, leg.leg_id),
                cache_dir=cache_dir,
                cache_mode=mode,  # type: ignore[arg-type]
                invocation=invocation,
                workspaces_dir=workspaces_dir,
            )
            jobs.append((item, leg.leg_id, job))
    # A repeat waits on its twin's single-flight lock while holding a worker, so queueing repeats
    # last keeps the pool busy with real spawns.
    first_seen: set[str] = set()
    firsts, repeats = [], []
    for entry in jobs:
        (repeats if entry[2].key in first_seen else firsts).append(entry)
        first_seen.add(entry[2].key)
    return {
        (item.suite.name, item.probe_id, leg_id): spawn_leg.submit(item.suite.name, item.probe_id, leg_id, quote(job))
        for item, leg_id, job in firsts + repeats
    }


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
            answers.append(futures[(item.suite.name, item.probe_id, leg.leg_id)].result())
        except EvalQualityFault as raised:
            fault = fault or raised
            cost = getattr(raised, "leg_cost", None)
            if isinstance(cost, LegFaultCost):
                costs.append(cost)
    if fault is not None:
        return _Collected(answers, fault, None, tuple(costs))
    observations = [answer.observation for answer in answers]
    return _Collected(answers, None, reduce_preflight_task.submit(quote(item.plan), quote(observations)))


def _finish_probe(item: _Planned, collected: _Collected, out: Path, keys: set[str]) -> ProbePreflight:
    """The probe's row: its leg counts and its verdict (written) or the fault that stopped it."""
    answers = collected.answers
    cached = sum(1 for answer in answers if answer.source == "cache")
    # A leg that faulted after its spawn (a timeout burns its whole budget) was run and cost its time.
    faulted = sum(1 for cost in collected.fault_costs if cost.spawned)
    spawned = len(answers) - cached + faulted
    keys.update(answer.key for answer in answers if answer.source == "spawned")
    keys.update(cost.key for cost in collected.fault_costs if cost.spawned)
    seconds = sum(answer.elapsed_s for answer in answers) + sum(cost.elapsed_s for cost in collected.fault_costs)
    planned = None if item.plan is None else len(item.plan.legs)

    def row(outcome: str, path: Path | None = None) -> ProbePreflight:
        """This probe's row with the given outcome (and verdict file)."""
        return ProbePreflight(
            item.suite.name, item.probe_id, planned, spawned, cached, seconds, outcome,
            None if path is None else str(path), faulted=faulted,
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


def run_preflight_flow(settings: FlowSettings, mode: str = "default") -> PreflightRun:
    """Run the flow with the settings' concurrency (a bounded thread pool)."""
    runner = ThreadPoolTaskRunner(max_workers=settings.concurrency)
    return preflight.with_options(task_runner=runner)(
        suites_dir=str(settings.suites_dir),
        out_dir=str(settings.out_dir),
        cache_dir=str(settings.leg_cache_dir),
        workspaces_dir=str(settings.workspaces_dir),
        mode=mode,
    )


def _parser() -> argparse.ArgumentParser:
    parser = FlowArgumentParser(
        prog=PROG,
        description="Pre-flight every probe of every suite (real child processes, digest-keyed leg cache), "
        "write the verdicts, and compare with the pre-flight baseline (exit 0 matched, 2 moved).",
    )
    parser.add_argument("--suites", metavar="DIR", help="folder of suites (default: corpus/suites; $EVALQUALITY_SUITES)")
    parser.add_argument("--out", metavar="DIR", help="where verdicts go (default: <home>/preflight; $EVALQUALITY_OUT)")
    parser.add_argument("--concurrency", type=int, metavar="N", help="legs in flight at once (default 8)")
    parser.add_argument("--baseline", metavar="FILE", help="baseline file (default: corpus/expected-preflight.json)")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--force", action="store_true", help="ignore the cache: run each distinct request live once")
    modes.add_argument("--from-cache", action="store_true", help="answer only from the cache; a miss is a fault")
    parser.add_argument("--update-baseline", action="store_true", help="rewrite the baseline from this run")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse flags, run the flow, print the report, and return the baseline gate's exit code."""
    args = _parser().parse_args(argv)
    settings = start_flow_main(PROG, args.concurrency)
    settings = FlowSettings(
        home=settings.home,
        suites_dir=Path(args.suites).resolve() if args.suites else settings.suites_dir,
        out_dir=Path(args.out).resolve() if args.out else settings.out_dir,
        concurrency=args.concurrency or settings.concurrency,
        baseline=Path(args.baseline).resolve() if args.baseline else settings.baseline,
    )
    mode = "force" if args.force else ("from-cache" if args.from_cache else "default")
    with one_line_errors(PROG):
        check_leg_cache(PROG, settings)
        run = run_preflight_flow(settings, mode)
    print_report(run)
    result = gate(run, settings.baseline, update=args.update_baseline)
    for line in result.lines:
        print(line)
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
