"""The nightly fanned out over Prefect workers: suites split into batches, one flow run per batch.

* ``contract-strength-batch/batch`` — the deployment of :func:`strength_batch`: the contract-strength
  flow (live pre-flight, scoring, documents) over the named suites only, writing under its own
  ``<out>/batches/batch-<i>/`` and a ``batch-summary.json`` of what it spent. Any worker of the pool
  runs it; its legs and score tasks show in the UI under that batch's flow run.
* ``contract-strength-batched/nightly`` — the deployment of :func:`batched_nightly` (cron ``0 2 * * *``
  in an explicit time zone, as ``deployments/nightly.py``): it splits the suites into ``batches``
  (sorted names dealt round-robin), starts every batch with ``run_deployment`` at once (one
  ``run-batch`` task each, so the batch runs are its children in the UI), waits, and gathers the
  batches' documents into one strength report and one gate (harness.md A.5) under ``<out>/``.

A batch whose flow run does not end Completed (its process killed, its machine lost and the run
marked Crashed, a bug) fails its ``run-batch`` task, which Prefect retries (``BATCH_RETRIES``) as a
new flow run of the same batch; legs the failed attempt answered are served by the shared leg cache
(``EVALQUALITY_LEG_CACHE=postgresql://…`` for several machines), so a retry spawns only the legs that
had no answer yet. A lost machine (worker and flow-run process gone, so nobody reports the run's end)
is caught by the automation ``deploy`` installs (``ensure_zombie_automation``): batch runs send a
heartbeat every ``HEARTBEAT_S``, and one silent for ``--silent-after`` seconds is marked Crashed, which
fails its ``run-batch`` task, which retries it. Workers need: the project installed, ``PREFECT_API_URL`` of one server (backed by
PostgreSQL: ``PREFECT_API_DATABASE_CONNECTION_URL=postgresql+asyncpg://…``), the shared leg cache, and
the suites and ``<out>`` folder at the same paths (a shared disk; plain files written atomically,
never a database). The flow that waits holds a worker slot while its batches run, so give the pool
at least two slots (``--limit``) in total.

``python -m deployments.batched_nightly deploy --pool P`` registers both deployments;
``python -m deployments.batched_nightly run --batches N`` runs the fanned-out night now from this
process (batches still go to the pool's workers) and exits with the gate's code.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.deployments import run_deployment
from prefect.task_runners import ThreadPoolTaskRunner

from deployments.nightly import NIGHTLY_CRON, nightly_schedule
from evalquality_core.artifacts.contract_strength import CONTRACT_STRENGTH_FILE, SuiteStrength
from evalquality_core.printable import printable
from flows.contract_strength import check_written, contract_strength, default_baseline
from flows.lifecycle import FlowArgumentParser, crash_exit
from flows.settings import load_settings
from flows.strength_baseline import GateResult, compare_with_baseline, read_baseline, update_baseline
from flows.strength_html import write_html_report
from flows.strength_report import RunCounts, StrengthReport, publish_artifacts
from tasks.output import write_artifact
from tasks.strength_document import read_suite_strength
from tasks.suites import find_suites

BATCH_FLOW = "contract-strength-batch"
BATCH_DEPLOYMENT = "batch"
NIGHTLY_FLOW = "contract-strength-batched"
NIGHTLY_DEPLOYMENT = "nightly"
BATCH_SUMMARY = "batch-summary.json"
NIGHT_SUMMARY = "nightly-batches.json"
#: How often Prefect re-runs a batch whose flow run did not complete (a new flow run each time).
BATCH_RETRIES = 2
#: Seconds between the heartbeats a batch's flow run sends (Prefect's minimum is 30); set on the deployment.
HEARTBEAT_S = 30
#: A flow run that sent heartbeats and then went silent this long, without reaching a final state, lost its
#: machine (process, worker and all): the server's automation marks it Crashed, so ``run-batch`` retries it.
SILENT_AFTER_S = 90
ZOMBIE_AUTOMATION = f"eval-quality: crash {BATCH_FLOW}/{BATCH_DEPLOYMENT} runs that stopped sending heartbeats"
PROJECT_DIR = Path(__file__).resolve().parent.parent
ENTRYPOINT = "deployments/batched_nightly.py"
TAGS = ["eval-quality", "nightly", "batched"]


def split_batches(names: Sequence[str], count: int) -> list[list[str]]:
    """Sorted names dealt round-robin into at most ``count`` non-empty batches."""
    if count < 1:
        raise ValueError(f"batches must be at least 1, not {count}")
    ordered = sorted(names)
    batches = [ordered[index::count] for index in range(min(count, len(ordered)))]
    return [batch for batch in batches if batch]


def batch_dir(out: Path, index: int) -> Path:
    """Where batch ``index`` (1-based) writes."""
    return out / "batches" / f"batch-{index}"


# --------------------------------------------------------------------------------- one batch


@flow(name=BATCH_FLOW, flow_run_name="batch-{batch}", validate_parameters=False)
def strength_batch(
    batch: int, suites: list[str], suites_dir: str, out_dir: str, baseline: str | None = None, mode: str = "default"
) -> dict[str, Any]:
    """The contract-strength flow over ``suites`` only, writing under ``out_dir``, plus ``batch-summary.json``.

    The batch's own gate compares a part of the corpus with the whole baseline, so it is not the night's
    verdict (the gathering flow gates the merged documents); it never fails the batch's flow run.
    """
    run = contract_strength(
        suites_dir=suites_dir, out_dir=out_dir, baseline=baseline, mode=mode, suites=suites, fail_on_movement=False
    )
    summary = {
        "batch": batch,
        "suites": list(suites),
        "documents": sorted(run.documents),
        "problems": dict(run.problems),
        "legsSpawned": run.counts.legs_spawned,
        "legsCached": run.counts.legs_cached,
        "spawnedSeconds": round(run.counts.spawned_seconds, 3),
        "scoresRun": run.counts.scores_run,
        "scoresCached": run.counts.scores_cached,
        "seconds": round(run.counts.total_seconds, 3),
    }
    write_artifact(Path(out_dir) / BATCH_SUMMARY, summary)
    return summary


class BatchFailed(RuntimeError):
    """A batch's flow run ended in a state other than Completed."""


@task(name="run-batch", task_run_name="batch-{index}", retries=BATCH_RETRIES, retry_delay_seconds=2,
      cache_policy=NO_CACHE, persist_result=False)
def run_batch(index: int, parameters: dict[str, Any], deployment: str, poll_s: float = 2.0) -> dict[str, Any]:
    """Start batch ``index`` on the pool and wait for it; raise (so Prefect retries) unless it completed."""
    flow_run = run_deployment(
        deployment, parameters=parameters, timeout=None, poll_interval=poll_s, as_subflow=True,
        flow_run_name=f"batch-{index}",
    )
    state = flow_run.state
    if state is None or not state.is_completed():
        name = "no state" if state is None else state.name
        raise BatchFailed(f"batch {index}: flow run {flow_run.id} ended {name}: {getattr(state, 'message', '')}")
    summary_path = Path(parameters["out_dir"]) / BATCH_SUMMARY
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    summary["flowRunId"] = str(flow_run.id)
    return summary


# ------------------------------------------------------------------------------ the whole night


@dataclass(frozen=True)
class BatchedNight:
    """A fanned-out night: the merged documents, the gate, the cost, per-batch summaries, the report."""

    documents: dict[str, SuiteStrength]
    gate: GateResult
    counts: RunCounts
    batches: list[dict[str, Any]]
    problems: dict[str, str]
    out_dir: str
    report: str

    @property
    def exit_code(self) -> int:
        """The gate's exit code (harness.md A.5)."""
        return self.gate.exit_code

    def summary_lines(self) -> list[str]:
        """Cost, the gate's every move, where the report is."""
        return [self.counts.sentence(), *self.gate.lines(), f"report: {self.report}"]


@flow(name=NIGHTLY_FLOW, flow_run_name="contract-strength-batched", validate_parameters=False)
def batched_nightly(
    batches: int = 2,
    suites_dir: str | None = None,
    out_dir: str | None = None,
    baseline: str | None = None,
    mode: str = "default",
    update_baseline_file: bool = False,
    fail_on_movement: bool = False,
    deployment: str = f"{BATCH_FLOW}/{BATCH_DEPLOYMENT}",
) -> BatchedNight:
    """Split the suites into ``batches``, run each on the pool, gather one report and one gate."""
    settings = load_settings()
    started = time.perf_counter()
    suites_root = Path(suites_dir).resolve() if suites_dir else settings.suites_dir
    out = Path(out_dir).resolve() if out_dir else settings.home / "contract-strength"
    baseline_path = Path(baseline).resolve() if baseline else default_baseline(suites_root)
    names = [directory.name for directory in find_suites(suites_root)]
    groups = split_batches(names, batches)
    futures = []
    for index, group in enumerate(groups, start=1):
        folder = batch_dir(out, index)
        shutil.rmtree(folder, ignore_errors=True)  # never gather an earlier night's batch
        parameters = {
            "batch": index, "suites": group, "suites_dir": str(suites_root), "out_dir": str(folder),
            "baseline": str(baseline_path), "mode": mode,
        }
        futures.append((index, group, run_batch.submit(index, parameters, deployment)))

    problems: dict[str, str] = {} if names else {str(suites_root): "no suite found (a folder holding contract.json)"}
    summaries: list[dict[str, Any]] = []
    documents: dict[str, SuiteStrength] = {}
    for index, group, future in futures:
        try:
            summary = future.result()
        except Exception as failure:  # noqa: BLE001 — every suite of a batch that never completed could not run
            problems.update({name: f"batch {index} did not complete: {failure}" for name in group})
            continue
        summaries.append(summary)
        problems.update(summary["problems"])
        for name in summary["documents"]:
            source = batch_dir(out, index) / name
            shutil.rmtree(out / name, ignore_errors=True)
            shutil.copytree(source, out / name)
            documents[name] = read_suite_strength(out / name / CONTRACT_STRENGTH_FILE)

    schema_failures = check_written(out, documents)
    if update_baseline_file and not problems and not schema_failures:
        update_baseline(baseline_path, documents.values())
    gate = compare_with_baseline(
        documents, read_baseline(baseline_path), could_not_run=problems, schema_failures=schema_failures,
        complete=True, baseline_name=str(baseline_path),
    )
    counts = RunCounts(
        legs_spawned=sum(s["legsSpawned"] for s in summaries),
        legs_cached=sum(s["legsCached"] for s in summaries),
        scores_run=sum(s["scoresRun"] for s in summaries),
        scores_cached=sum(s["scoresCached"] for s in summaries),
        spawned_seconds=sum(s["spawnedSeconds"] for s in summaries),
        total_seconds=time.perf_counter() - started,
    )
    at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    report = StrengthReport(at, documents, gate, counts)
    report_path = write_html_report(out, report)
    publish_artifacts(report)
    write_artifact(out / NIGHT_SUMMARY, {"at": at, "exitCode": gate.exit_code, "batches": summaries,
                                         "problems": problems})
    night = BatchedNight(documents, gate, counts, summaries, problems, str(out), str(report_path))
    if fail_on_movement and gate.exit_code != 0:
        raise RuntimeError(f"contract strength gate exit {gate.exit_code}: " + "; ".join(gate.lines()))
    return night


def run_batched_nightly(batches: int, **parameters: Any) -> BatchedNight:
    """Run the gathering flow in this process; its batch tasks wait on the pool side by side."""
    return batched_nightly.with_options(task_runner=ThreadPoolTaskRunner(max_workers=max(batches, 1)))(
        batches=batches, **parameters
    )


# ------------------------------------------------------------------------------ deployments


def ensure_zombie_automation(deployment_id: Any, silent_after_s: int = SILENT_AFTER_S) -> None:
    """Create (or re-create with this window) the server automation that marks a flow run of the batch
    deployment ``Crashed`` when its heartbeats stop for ``silent_after_s`` seconds before it reached a
    final state.

    That is how a lost machine shows: its worker and the batch's flow-run process are gone, so nobody
    reports the run's end, and it would stay ``Running``. Once it is ``Crashed``, the night's
    ``run-batch`` task sees it and retries the batch on a worker that is still there
    (https://docs.prefect.io/v3/advanced/detect-zombie-flows). Only runs of this deployment are
    watched: they send a heartbeat every ``HEARTBEAT_S`` (its job variables say so), while other flow
    runs keep Prefect's default period (180 s), longer than this window.
    """
    from datetime import timedelta

    from prefect.automations import Automation
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import EventTrigger, Posture
    from prefect.events.schemas.events import ResourceSpecification

    if silent_after_s <= HEARTBEAT_S:
        raise ValueError(f"the silence window ({silent_after_s} s) must be longer than a heartbeat ({HEARTBEAT_S} s)")
    try:
        Automation.read(name=ZOMBIE_AUTOMATION).delete()
    except ValueError:  # none yet
        pass
    Automation(
        name=ZOMBIE_AUTOMATION,
        description="A flow run that stopped sending heartbeats lost its machine: mark it Crashed (eval-quality).",
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect={
                "prefect.flow-run.heartbeat",
                "prefect.flow-run.Completed",
                "prefect.flow-run.Failed",
                "prefect.flow-run.Cancelled",
                "prefect.flow-run.Crashed",
            },
            match=ResourceSpecification({"prefect.resource.id": ["prefect.flow-run.*"]}),
            match_related=ResourceSpecification(
                {"prefect.resource.role": "deployment", "prefect.resource.id": f"prefect.deployment.{deployment_id}"}
            ),
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=silent_after_s),
        ),
        actions=[ChangeFlowRunState(
            state=StateType.CRASHED,
            message=f"no heartbeat for {silent_after_s} s: the flow run's machine was lost",
        )],
    ).create()


def deploy(
    pool: str, cron: str = NIGHTLY_CRON, timezone: str | None = None, batches: int = 2,
    silent_after_s: int = SILENT_AFTER_S,
) -> None:
    """Register both deployments on a process work pool, loading the flows from this directory, and the
    automation that marks a batch whose machine was lost ``Crashed`` (``ensure_zombie_automation``)."""
    batch = strength_batch.from_source(source=str(PROJECT_DIR), entrypoint=f"{ENTRYPOINT}:strength_batch").deploy(
        name=BATCH_DEPLOYMENT, work_pool_name=pool, tags=TAGS, build=False, push=False,
        description="One batch of suites of the fanned-out nightly (started by contract-strength-batched).",
        # Each batch's flow run sends heartbeats, so a run whose machine vanished can be told from a slow one.
        job_variables={"env": {"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": str(HEARTBEAT_S)}},
    )
    ensure_zombie_automation(batch, silent_after_s)
    batched_nightly.from_source(source=str(PROJECT_DIR), entrypoint=f"{ENTRYPOINT}:batched_nightly").deploy(
        name=NIGHTLY_DEPLOYMENT, work_pool_name=pool, tags=TAGS, build=False, push=False,
        schedules=[nightly_schedule(cron, timezone)],
        parameters={"batches": batches, "fail_on_movement": True},
        description="Nightly contract strength fanned out over the pool's workers, one flow run per batch.",
    )


@crash_exit("python -m deployments.batched_nightly")
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m deployments.batched_nightly {deploy --pool P | run --batches N} ...``."""
    parser = FlowArgumentParser(prog="python -m deployments.batched_nightly", description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("deploy", "run"))
    parser.add_argument("--pool", default="nightly-pool", help="process work pool (deploy)")
    parser.add_argument("--cron", default=NIGHTLY_CRON)
    parser.add_argument("--timezone", default=None)
    parser.add_argument("--batches", type=int, default=2, help="how many batches (flow runs) to split the suites into")
    parser.add_argument("--suites", metavar="DIR")
    parser.add_argument("--out", metavar="DIR")
    parser.add_argument("--baseline", metavar="FILE")
    parser.add_argument("--silent-after", type=int, default=SILENT_AFTER_S, metavar="S",
                        help=f"deploy: mark a batch Crashed after S s without a heartbeat (> {HEARTBEAT_S})")
    args = parser.parse_args(argv)
    if args.batches < 1:
        parser.error("--batches must be at least 1")
    if args.silent_after <= HEARTBEAT_S:
        parser.error(f"--silent-after must be more than {HEARTBEAT_S} seconds (one heartbeat)")
    if args.mode == "deploy":
        deploy(args.pool, args.cron, args.timezone, args.batches, args.silent_after)
        print(f"deployed {BATCH_FLOW}/{BATCH_DEPLOYMENT} and {NIGHTLY_FLOW}/{NIGHTLY_DEPLOYMENT} on pool {args.pool}")
        return 0
    night = run_batched_nightly(args.batches, suites_dir=args.suites, out_dir=args.out, baseline=args.baseline)
    for batch in night.batches:
        # Suite names and summary lines name what a user or a target wrote: shown printable.
        print(printable(f"batch {batch['batch']} ({', '.join(batch['suites'])}): {batch['legsSpawned']} leg(s) run, "
                        f"{batch['legsCached']} from cache; flow run {batch['flowRunId']}"))
    for line in night.summary_lines():
        print(printable(line))
    return night.exit_code


if __name__ == "__main__":
    sys.exit(main())
