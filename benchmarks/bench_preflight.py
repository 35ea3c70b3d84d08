"""Pre-flight benchmarks; prints ratios against baselines measured in the same run (never asserted).

(a) Cached re-run: the wall time of a pre-flight flow over the corpus whose legs are all answered from the
    leg cache, against a Prefect flow running the same number of no-op tasks on the same thread pool.
    Aim: ratio <= 1.5 (our caching adds little beyond Prefect's own per-task cost).
(b) Fan-out efficiency: N legs of a real command that sleeps 0.5 s, at concurrency C, through spawn-leg
    and the command-line adapter. Efficiency = ideal (N x 0.5 / C) over measured, measured from the first
    submit to the last answer inside the flow (the flow run's own ~1 s start/finish is printed apart).
    Aim: >= 0.8.

Usage: ``python benchmarks/bench_preflight.py [--legs N] [--concurrency C] [--suites DIR]``
(runs in a temp eval-quality home, so it never touches your cache).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

_HOME = Path(tempfile.mkdtemp(prefix="evalquality-bench-"))
os.environ.setdefault("EVALQUALITY_HOME", str(_HOME))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# Configure Prefect's home and logging (flows/settings.py) before anything imports Prefect.
importlib.import_module("flows")

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: E402
from prefect.utilities.annotations import quote  # noqa: E402
from results import record  # noqa: E402

from evalquality_core.probe.policy import parse_command_target_policy  # noqa: E402
from flows.preflight import run_preflight_flow  # noqa: E402
from flows.settings import FlowSettings, flow_run_settings, load_settings  # noqa: E402
from tasks.preflight import LegJob, spawn_leg  # noqa: E402

SLEEP_S = 0.5
#: Pause before each timed flow: back-to-back flows on SQLite hit 503 back-offs (prefect.md §8).
PAUSE_S = 3.0


@task(name="no-op", cache_policy=NO_CACHE, persist_result=False)
def no_op(index: int) -> int:
    """A task that does nothing: the Prefect per-task cost alone."""
    return index


@flow(name="no-op-fan-out", validate_parameters=False)
def no_op_flow(count: int) -> float:
    """``count`` no-op tasks submitted to the flow's thread pool; returns the seconds inside the flow body."""
    started = time.perf_counter()
    futures = [no_op.submit(index) for index in range(count)]
    for future in futures:
        future.result()
    return time.perf_counter() - started


def _stage_nothing(_workspace: Path) -> None:
    """The sleeping command needs no staged files."""


@flow(name="fan-out", validate_parameters=False)
def fan_out_flow(legs: int, cache_dir: str, workspaces_dir: str) -> tuple[float, float]:
    """``legs`` distinct requests of a command that sleeps, each one spawn-leg.

    Returns (seconds from the first submit to the last answer, seconds spent inside legs): the fan-out
    itself, without the fixed cost of creating and finishing a flow run (about 1 s per sync flow).
    """
    started = time.perf_counter()
    policy = parse_command_target_policy(
        {
            "authorizations": [
                {
                    "interfaceId": "sleeper",
                    "executable": "sleeper",
                    "target": shutil.which("sleep") or "sleep",  # no interpreter start-up inside the leg
                    "targetArgs": [str(SLEEP_S)],
                    "permittedSubcommandPaths": [[]],
                    "permittedEnvironmentKeys": [],
                    "cwd": ".",
                    "artifacts": {},
                    "maxElapsedMs": 60000,
                    "maxOutputBytes": 65536,
                }
            ]
        }
    )
    futures = []
    for index in range(legs):
        request = {
            "kind": "cli",
            "probeId": f"leg-{index}",
            "interfaceId": "sleeper",
            "operationId": "sleep",
            "executable": "sleeper",
            "subcommandPath": [],
            "channels": {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}},
        }
        job = LegJob(request, f"bench-{index}", policy, _stage_nothing, cache_dir, "force", "bench", workspaces_dir)
        # quoted as the flows pass it (flows/preflight.py): Prefect does not walk the job for futures
        futures.append(spawn_leg.submit("bench", "P-000", f"leg-{index}", quote(job)))
    inside = sum(future.result().elapsed_s for future in futures)
    return time.perf_counter() - started, inside


def _timed(function, *args, **kwargs) -> tuple[float, object]:
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - started, result


def main() -> int:
    """Run both benchmarks and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--legs", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--suites", type=Path, default=None)
    args = parser.parse_args()
    base = load_settings()
    settings = FlowSettings(
        home=base.home,
        suites_dir=(args.suites or base.suites_dir).resolve(),
        out_dir=base.home / "bench-out",
        concurrency=args.concurrency,
        baseline=base.baseline,
    )
    # Every flow here, ours and the baselines alike, runs with the flows' own Prefect settings
    # (flows/settings.py: no heartbeats on the embedded server), so no fixed cost is on one side only.
    with flow_run_settings():
        runner = ThreadPoolTaskRunner(max_workers=args.concurrency)

        no_op_flow.with_options(task_runner=runner)(1)  # warm up: start the embedded server once

        # (b) first, on a quiet server: legs of a sleeping command through spawn-leg and the real adapter.
        fan = fan_out_flow.with_options(task_runner=runner)
        fan_runs = []
        for attempt in range(2):
            time.sleep(PAUSE_S)
            outer_s, (fan_s, leg_seconds) = _timed(
                fan, args.legs, str(settings.home / f"bench-cache-{attempt}"), str(settings.workspaces_dir)
            )
            fan_runs.append((fan_s, outer_s, leg_seconds))
        measured_s, outer_s, leg_seconds = min(fan_runs)
        ideal_s = args.legs * SLEEP_S / args.concurrency

        # (a) the corpus, once to fill the cache, then cached re-runs interleaved with the no-op baseline
        # (min of three each after a pause, so neither pays alone for the server backlog; prefect.md §2, §8).
        cold_s, cold = _timed(run_preflight_flow, settings)
        tasks_run = len(cold.probes) + sum(row.legs_planned or 0 for row in cold.probes) + len(cold.probes)
        cached_times, noop_times, cached_bodies, noop_bodies = [], [], [], []
        for _ in range(3):
            time.sleep(PAUSE_S)  # let the server drain its event backlog before each timed flow
            elapsed, body = _timed(no_op_flow.with_options(task_runner=runner), tasks_run)
            noop_times.append(elapsed)
            noop_bodies.append(body)
            time.sleep(PAUSE_S)
            elapsed, cached = _timed(run_preflight_flow, settings)
            cached_times.append(elapsed)
            cached_bodies.append(cached.wall_seconds)
        cached_s, noop_s = min(cached_times), min(noop_times)
        cached_body_s, noop_body_s = min(cached_bodies), min(noop_bodies)

        print(f"(a) cached re-run over {len(cached.probes)} probes: {cached.spawned} legs spawned, "
              f"{cached.from_cache} from cache; first run {cold_s:.2f} s ({cold.spawned} spawned)")
        print(f"    cached re-run {cached_s:.2f} s vs {tasks_run} no-op tasks {noop_s:.2f} s: "
              f"ratio {cached_s / noop_s:.2f} (aim <= 1.5)")
        print(f"    flow bodies only (without creating and finishing the flow run, where SQLite back-offs land): "
              f"{cached_body_s:.2f} s vs {noop_body_s:.2f} s, ratio {cached_body_s / noop_body_s:.2f}")
        print(f"(b) fan-out: {args.legs} legs x {SLEEP_S} s at concurrency {args.concurrency}: "
              f"measured {measured_s:.2f} s, ideal {ideal_s:.2f} s, efficiency {ideal_s / measured_s:.2f} (aim >= 0.8); "
              f"{leg_seconds:.2f} s inside legs; whole flow call {outer_s:.2f} s")
        record(__file__, baseline="a Prefect flow of as many no-op tasks; the ideal fan-out time",
               ratios={"cached re-run / no-op tasks (aim <= 1.5)": cached_s / noop_s,
                       "flow bodies: cached / no-op": cached_body_s / noop_body_s,
                       "fan-out efficiency (aim >= 0.8)": ideal_s / measured_s},
               figures={"probes": len(cached.probes), "first run s": cold_s, "cached re-run s": cached_s,
                        "no-op tasks": tasks_run, "no-op flow s": noop_s, "fan-out legs": args.legs,
                        "concurrency": args.concurrency, "fan-out measured s": measured_s,
                        "fan-out ideal s": ideal_s})
        return 0


if __name__ == "__main__":
    sys.exit(main())
