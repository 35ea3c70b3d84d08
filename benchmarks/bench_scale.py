"""Scaling benchmark of the pre-flight flow; prints ratios against baselines measured in the same run.

For each N in ``--sizes`` (default 10, 30, 100) synthetic suites (``corpus/tools/synthesize.py``: real
systems, each with its own system digest, so no leg collapses across suites), in a fresh child process
with its own eval-quality home and embedded Prefect server:

* **first run**: wall time of the pre-flight flow with an empty leg cache (every distinct leg spawns);
* **cached re-run**: wall time of the same flow again (nothing spawns; best of two);
* **start-up**: wall time of a flow of one no-op task in the same process (creating and finishing a
  flow run on the already running server);
* **per-leg overhead** = the cached re-run's flow body (its wall time minus the start-up of creating
  and finishing the flow run) / planned legs; the same for a Prefect flow of as many no-op tasks as the
  cached re-run creates task runs (compile, plan, spawn-leg, reduce), on the same thread pool: their
  **ratio** (aim <= 1.5 at the largest N);
* **growth**: per-leg overhead at the largest N over the smallest (aim <= 1.2: linear);
* **CPU per leg** of the cached re-run and of the no-op flow (this process's CPU time, every thread;
  the embedded server's apart): the same comparison in CPU time, which other load on the machine
  does not inflate as it inflates wall time;
* **peak RSS per 1,000 legs**: the child's peak resident set minus its resident set before the first
  run, per 1,000 planned legs (the embedded server is another process and is not counted);
* **fan-out efficiency**: ``--fan-legs`` legs of ``sleep 0.5`` at concurrency ``--fan-concurrency`` (32)
  through ``spawn-leg`` and the real adapter: ideal (legs x 0.5 / concurrency) over measured (aim >= 0.8);
  and the same legs through ``spawn-leg``'s body on a plain thread pool, without Prefect (its share),
  and as many Prefect tasks that only sleep 0.5 s (Prefect's own fan-out: the floor of one task per leg).

Usage: ``python benchmarks/bench_scale.py [--sizes 10,30,100] [--concurrency 8] [--fan-legs 128] [--profile DIR]``.
Nothing is written outside temp directories; the table is printed at the end (and as JSON with
``--json``). Takes several minutes on 2 cores (the first run at N = 100 spawns about 1,000 legs).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from results import record
from server_idle import children_cpu_s, settle

PROJECT = Path(__file__).resolve().parent.parent
SLEEP_S = 0.5
#: Pause before each timed flow: back-to-back flows on SQLite hit 503 back-offs (prefect.md §8).
PAUSE_S = 3.0


def _rss_mib() -> float:
    """This process's current resident set (MiB), from /proc."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_rss_mib() -> float:
    """This process's peak resident set so far (MiB; ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(function: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - started, result


def _settle(limit_s: float = 120.0) -> None:
    """Wait until the embedded server is idle (``server_idle.settle``)."""
    settle(PAUSE_S, limit_s)


def _cpu_timed(function: Any, *args: Any, **kwargs: Any) -> tuple[float, float, float, Any]:
    """Wall seconds, this process's CPU seconds (every thread), its children's CPU seconds, the result.
    CPU time is what the benchmark compares under load: other sessions' work does not enter it."""
    started, cpu, children = time.perf_counter(), time.process_time(), children_cpu_s()
    result = function(*args, **kwargs)
    return time.perf_counter() - started, time.process_time() - cpu, children_cpu_s() - children, result


class _Profile:
    """Profiles one call: with yappi (every thread, CPU clock) when it is installed, else cProfile (the
    calling thread only: the flow thread, where per-leg work of the flow itself shows). Saved as pstats."""

    def __init__(self, path: str | None) -> None:
        self.path = path

    def run(self, function: Any, *args: Any) -> Any:
        """``function(*args)``, profiled when a path was given."""
        if not self.path:
            return function(*args)
        try:
            import yappi
        except ImportError:
            import cProfile

            profiler = cProfile.Profile()
            result = profiler.runcall(function, *args)
            profiler.dump_stats(self.path)
            return result
        yappi.set_clock_type("cpu")
        yappi.start(builtins=False)
        try:
            return function(*args)
        finally:
            yappi.stop()
            yappi.get_func_stats().save(self.path, type="pstat")
            yappi.clear_stats()


def measure_size(
    count: int, concurrency: int, fan_legs: int, fan_concurrency: int, profile: str | None = None
) -> dict[str, Any]:
    """One N, in this (child) process: see the module docstring. Returns the figures as a dict.
    With ``profile`` (a folder), the second cached re-run is profiled into ``<folder>/cached-<N>.pstat``,
    and one more fan-out and sleep-only fan-out into ``fan-out.pstat`` and ``sleep-fan-out.pstat``."""
    home = Path(tempfile.mkdtemp(prefix=f"evalquality-scale-{count}-"))
    os.environ["EVALQUALITY_HOME"] = str(home)
    os.environ.pop("PREFECT_HOME", None)
    # After a flow of thousands of task runs the embedded SQLite server stays busy recording their events
    # for a minute or more and answers 503 meanwhile; the default 5 retries (about 60 s) ran out at N = 30.
    os.environ["PREFECT_CLIENT_MAX_RETRIES"] = "10"
    sys.path.insert(0, str(PROJECT))
    importlib.import_module("flows")  # configures Prefect's home and logging before Prefect is imported
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE
    from prefect.task_runners import ThreadPoolTaskRunner
    from prefect.utilities.annotations import quote

    from corpus.tools.synthesize import synthesize
    from evalquality_core.probe.policy import parse_command_target_policy
    from flows.lifecycle import freeze_startup_heap
    from flows.preflight import run_preflight_flow
    from flows.settings import FlowSettings, flow_run_settings
    from flows.watch import enable_run_logs
    from tasks.preflight import LegJob, spawn_leg

    @task(name="no-op", cache_policy=NO_CACHE, persist_result=False)
    def no_op(index: int) -> int:
        """A task that does nothing: Prefect's per-task cost alone."""
        return index

    @flow(name="no-op-fan-out", validate_parameters=False)
    def no_op_flow(tasks: int) -> float:
        """``tasks`` no-op tasks on the flow's thread pool; the seconds inside the flow body."""
        freeze_startup_heap()  # as the flows do at their start (once per process)
        started = time.perf_counter()
        futures = [no_op.submit(index) for index in range(tasks)]
        for future in futures:
            future.result()
        return time.perf_counter() - started

    def _no_staging(_workspace: Path) -> None:
        """The sleeping command needs no staged files."""

    def fan_jobs(legs: int, cache_dir: str, workspaces_dir: str) -> list[tuple[str, LegJob]]:
        """``legs`` distinct requests of ``sleep 0.5`` (force mode: each spawns), one ``LegJob`` each."""
        policy = parse_command_target_policy(
            {
                "authorizations": [
                    {
                        "interfaceId": "sleeper",
                        "executable": "sleeper",
                        "target": shutil.which("sleep") or "sleep",
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
        jobs = []
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
            jobs.append((f"leg-{index}", LegJob(request, f"scale-{index}", policy, _no_staging, cache_dir, "force", "scale", workspaces_dir)))
        return jobs

    @flow(name="fan-out", validate_parameters=False)
    def fan_out_flow(legs: int, cache_dir: str, workspaces_dir: str) -> float:
        """One spawn-leg task per sleeping leg; seconds from first submit to last answer."""
        freeze_startup_heap()
        enable_run_logs()  # as the flows' RunLog does: each spawned leg's INFO line reaches the server
        jobs = fan_jobs(legs, cache_dir, workspaces_dir)
        started = time.perf_counter()
        # The job quoted, as the flows pass it (flows/preflight.py): Prefect does not walk it for futures.
        futures = [spawn_leg.submit("bench", "P-000", leg_id, quote(job)) for leg_id, job in jobs]
        for future in futures:
            future.result()
        return time.perf_counter() - started

    @task(name="sleep", cache_policy=NO_CACHE, persist_result=False)
    def sleep_task(index: int) -> int:
        """A task that only sleeps as long as a leg: Prefect's own fan-out, with no leg work at all."""
        time.sleep(SLEEP_S)
        return index

    @flow(name="sleep-fan-out", validate_parameters=False)
    def sleep_flow(tasks: int) -> float:
        """``tasks`` sleeping tasks on the flow's thread pool; seconds from first submit to last answer."""
        freeze_startup_heap()
        started = time.perf_counter()
        futures = [sleep_task.submit(index) for index in range(tasks)]
        for future in futures:
            future.result()
        return time.perf_counter() - started

    def fan_out_plain(legs: int, cache_dir: str, workspaces_dir: str, workers: int) -> float:
        """The same legs through spawn-leg's own body (leg cache, workspace, adapter) on a plain thread pool,
        without Prefect: what the fan-out would cost with no task orchestration at all."""
        jobs = fan_jobs(legs, cache_dir, workspaces_dir)
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda item: spawn_leg.fn("bench", "P-000", item[0], item[1]), jobs))
        return time.perf_counter() - started

    # Every flow here, ours and the baselines alike, runs with the flows' own Prefect settings
    # (flows/settings.py: no heartbeats on the embedded server), so no fixed cost is on one side only.
    with flow_run_settings():
        runner = ThreadPoolTaskRunner(max_workers=concurrency)
        no_op_flow.with_options(task_runner=runner)(1)  # start the embedded server (not timed)
        time.sleep(PAUSE_S)
        startup_s, _ = _timed(no_op_flow.with_options(task_runner=runner), 1)

        suites_dir = home / "suites"
        synthesize(count, suites_dir)
        settings = FlowSettings(
            home=home, suites_dir=suites_dir, out_dir=home / "out", concurrency=concurrency,
            baseline=suites_dir / "expected-preflight.json",
        )
        rss_before = _rss_mib()
        time.sleep(PAUSE_S)
        first_s, first = _timed(run_preflight_flow, settings)
        legs = sum(row.legs_planned or 0 for row in first.probes)
        probes = len(first.probes)
        moved = [
            f"{row.suite}/{row.probe_id}: {row.outcome}" for row in first.probes if row.outcome.startswith("fault")
        ] + [f"{failure.suite}: {failure.message}" for failure in first.failures]
        task_runs = count + probes + legs + probes  # compile, plan, spawn-leg, reduce
        cached_times, cached_bodies, noop_times, noop_bodies = [], [], [], []
        cached_cpu, noop_cpu, cached_server, noop_server = [], [], [], []
        cached = first
        profiler = _Profile(None)
        for attempt in range(2):
            if profile and attempt == 1:  # the profile's own cost never enters the figures: the best run counts
                profiler = _Profile(str(Path(profile) / f"cached-{count}.pstat"))
            _settle()
            elapsed, cpu, server, cached = _cpu_timed(profiler.run, run_preflight_flow, settings)
            cached_times.append(elapsed)
            cached_bodies.append(cached.wall_seconds)
            cached_cpu.append(cpu)
            cached_server.append(server)
            _settle()
            elapsed, cpu, server, body = _cpu_timed(no_op_flow.with_options(task_runner=runner), task_runs)
            noop_times.append(elapsed)
            noop_bodies.append(body)
            noop_cpu.append(cpu)
            noop_server.append(server)
        cached_s, noop_s = min(cached_times), min(noop_times)
        peak = _peak_rss_mib()

        figures: dict[str, Any] = {
            "suites": count,
            "probes": probes,
            "legs": legs,
            "distinct": first.distinct_spawns,
            "spawned_first": first.spawned,
            "spawned_cached": cached.spawned,
            "task_runs": task_runs,
            "first_s": first_s,
            "cached_s": cached_s,
            "startup_s": startup_s,
            "noop_s": noop_s,
            # Inside the flow body: the flow run's creation and finish (start-up) are left out, and with them
            # the embedded SQLite server's 503 back-offs after a large flow (prefect.md §8), which are noise here.
            "per_leg_ms": 1000 * min(cached_bodies) / legs,
            "noop_per_leg_ms": 1000 * min(noop_bodies) / legs,
            # CPU per planned leg, this process (flow, task threads, client) and the embedded server apart.
            "cpu_per_leg_ms": 1000 * min(cached_cpu) / legs,
            "noop_cpu_per_leg_ms": 1000 * min(noop_cpu) / legs,
            "server_cpu_per_leg_ms": 1000 * min(cached_server) / legs,
            "noop_server_cpu_per_leg_ms": 1000 * min(noop_server) / legs,
            "peak_rss_mib": peak,
            "rss_per_1000_legs_mib": 1000 * max(peak - rss_before, 0.0) / legs,
            "faults": moved[:5],
        }
        if fan_legs:
            fan = fan_out_flow.with_options(task_runner=ThreadPoolTaskRunner(max_workers=fan_concurrency))
            sleeping = sleep_flow.with_options(task_runner=ThreadPoolTaskRunner(max_workers=fan_concurrency))
            # Each attempt: (seconds from first submit to last answer, this process's CPU, its children's CPU).
            runs, plain, bare = [], [], []

            def attempt_of(function: Any, *args: Any) -> tuple[float, float, float, float]:
                _settle()
                _wall, cpu, children, inside = _cpu_timed(function, *args)
                before = children_cpu_s() - children
                _settle()  # the embedded server catches up on what the fan-out sent it
                return inside, cpu, children, children_cpu_s() - before

            for attempt in range(2):
                runs.append(attempt_of(fan, fan_legs, str(home / f"fan-cache-{attempt}"), str(settings.workspaces_dir)))
                plain.append(attempt_of(fan_out_plain, fan_legs, str(home / f"fan-plain-{attempt}"), str(settings.workspaces_dir), fan_concurrency))
                bare.append(attempt_of(sleeping, fan_legs))
            if profile:  # one more of each, profiled, after the timed ones: where the fan-out's CPU goes
                _settle()
                _Profile(str(Path(profile) / "fan-out.pstat")).run(fan, fan_legs, str(home / "fan-cache-profiled"), str(settings.workspaces_dir))
                _settle()
                _Profile(str(Path(profile) / "sleep-fan-out.pstat")).run(sleeping, fan_legs)
            ideal = fan_legs * SLEEP_S / fan_concurrency
            figures.update(
                fan_legs=fan_legs, fan_concurrency=fan_concurrency, fan_ideal_s=ideal, fan_cores=os.cpu_count() or 1,
                fan=min(runs), fan_plain=min(plain), fan_sleep=min(bare),
            )
        shutil.rmtree(home, ignore_errors=True)
        return figures


def _child(count: int, args: argparse.Namespace, fan_legs: int) -> dict[str, Any]:
    """Run one size in a fresh process (own home, own embedded server, own peak RSS)."""
    command = [
        sys.executable, __file__, "--one", str(count), "--concurrency", str(args.concurrency),
        "--fan-legs", str(fan_legs), "--fan-concurrency", str(args.fan_concurrency),
        *(["--profile", str(Path(args.profile).resolve())] if args.profile else []),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_"))}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"size {count} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])


def print_table(rows: list[dict[str, Any]]) -> None:
    """The scaling table and the aims."""
    print(
        f"{'N':>4} {'probes':>6} {'legs':>6} {'distinct':>8} {'first s':>8} {'cached s':>8} {'start s':>7} "
        f"{'ms/leg':>7} {'no-op ms/leg':>12} {'ratio':>6} {'RSS MiB/1k legs':>15}"
    )
    for row in rows:
        ratio = row["per_leg_ms"] / row["noop_per_leg_ms"] if row["noop_per_leg_ms"] else float("nan")
        print(
            f"{row['suites']:>4} {row['probes']:>6} {row['legs']:>6} {row['distinct']:>8} {row['first_s']:>8.1f} "
            f"{row['cached_s']:>8.1f} {row['startup_s']:>7.2f} {row['per_leg_ms']:>7.2f} "
            f"{row['noop_per_leg_ms']:>12.2f} {ratio:>6.2f} {row['rss_per_1000_legs_mib']:>15.1f}"
        )
        if row["spawned_cached"] or row["faults"]:
            print(f"     !! cached re-run spawned {row['spawned_cached']}; faults: {row['faults']}")
    print(
        f"{'N':>4} {'cpu ms/leg':>10} {'no-op cpu':>9} {'cpu ratio':>9} {'server cpu':>10} {'no-op server':>12}"
        "   (CPU time, insensitive to other load)"
    )
    for row in rows:
        cpu_ratio = row["cpu_per_leg_ms"] / row["noop_cpu_per_leg_ms"] if row["noop_cpu_per_leg_ms"] else float("nan")
        print(
            f"{row['suites']:>4} {row['cpu_per_leg_ms']:>10.2f} {row['noop_cpu_per_leg_ms']:>9.2f} {cpu_ratio:>9.2f} "
            f"{row['server_cpu_per_leg_ms']:>10.2f} {row['noop_server_cpu_per_leg_ms']:>12.2f}"
        )
    small, large = rows[0], rows[-1]
    if len(rows) > 1 and small["cpu_per_leg_ms"]:
        print(
            f"CPU per leg vs no-op tasks at N={large['suites']}: ratio "
            f"{large['cpu_per_leg_ms'] / large['noop_cpu_per_leg_ms']:.2f}; growth N={large['suites']} over "
            f"N={small['suites']}: {large['cpu_per_leg_ms'] / small['cpu_per_leg_ms']:.2f}"
        )
    last_ratio = large["per_leg_ms"] / large["noop_per_leg_ms"] if large["noop_per_leg_ms"] else float("nan")
    print(f"per-leg overhead vs no-op tasks at N={large['suites']}: ratio {last_ratio:.2f} (aim <= 1.5)")
    if len(rows) > 1:
        growth = large["per_leg_ms"] / small["per_leg_ms"] if small["per_leg_ms"] else float("nan")
        print(f"growth of per-leg overhead N={large['suites']} over N={small['suites']}: {growth:.2f} (aim <= 1.2)")
    fan = next((row for row in rows if row.get("fan_legs")), None)
    if fan:
        ideal, cores = fan["fan_ideal_s"], fan["fan_cores"]

        def cpu(figure: list[float]) -> str:
            """Where the CPU went during one fan-out, against what the machine's cores offered meanwhile."""
            return (f"CPU {figure[1]:.2f} s here + {figure[2]:.2f} s in children (the embedded server, the watchdogs) "
                    f"of {cores * figure[0]:.2f} s on {cores} cores; children until settled {figure[3]:.2f} s "
                    f"({1000 * figure[3] / fan['fan_legs']:.0f} ms per task run)")

        seconds, plain_s, sleep_s = fan["fan"][0], fan["fan_plain"][0], fan["fan_sleep"][0]
        print(
            f"fan-out: {fan['fan_legs']} legs x {SLEEP_S} s at concurrency {fan['fan_concurrency']}: measured "
            f"{seconds:.2f} s, ideal {ideal:.2f} s, efficiency {ideal / seconds:.2f} (aim >= 0.8); {cpu(fan['fan'])}"
        )
        print(
            f"fan-out without Prefect (spawn-leg's body on a plain pool of {fan['fan_concurrency']} threads): "
            f"{plain_s:.2f} s, efficiency {ideal / plain_s:.2f}; {cpu(fan['fan_plain'])}"
        )
        print(
            f"fan-out of {fan['fan_legs']} Prefect tasks that only sleep {SLEEP_S} s (no leg work): {sleep_s:.2f} s, "
            f"efficiency {ideal / sleep_s:.2f}; spawn-leg against it: {sleep_s / seconds:.2f}; {cpu(fan['fan_sleep'])}"
        )


def record_rows(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """The aims' three ratios (and the figures behind them) into benchmarks/results/bench_scale.json."""
    small, large = rows[0], rows[-1]
    ratios: dict[str, float] = {}
    figures: dict[str, float | int | str] = {"sizes": args.sizes}
    if large["noop_per_leg_ms"]:
        ratios[f"per-leg overhead vs no-op tasks at N={large['suites']} (aim <= 1.5)"] = (
            large["per_leg_ms"] / large["noop_per_leg_ms"])
    if large["noop_cpu_per_leg_ms"]:
        ratios[f"CPU per leg vs no-op tasks at N={large['suites']}"] = (
            large["cpu_per_leg_ms"] / large["noop_cpu_per_leg_ms"])
    if len(rows) > 1 and small["per_leg_ms"]:
        ratios[f"growth N={large['suites']} over N={small['suites']} (aim <= 1.2)"] = (
            large["per_leg_ms"] / small["per_leg_ms"])
    fan = next((row for row in rows if row.get("fan_legs")), None)
    if fan:
        ratios["fan-out efficiency (aim >= 0.8)"] = fan["fan_ideal_s"] / fan["fan"][0]
        ratios["fan-out efficiency of Prefect tasks that only sleep"] = fan["fan_ideal_s"] / fan["fan_sleep"][0]
        figures["fan-out legs"] = fan["fan_legs"]
    for row in rows:
        figures[f"N={row['suites']}: ms per cached leg"] = row["per_leg_ms"]
        figures[f"N={row['suites']}: ms per no-op task"] = row["noop_per_leg_ms"]
    record(__file__, baseline="a Prefect flow of as many no-op tasks; the ideal fan-out time (same run)",
           ratios=ratios, figures=figures)


def main() -> int:
    """Run every size in its own child process and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,30,100", help="comma-separated suite counts")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--fan-legs", type=int, default=128)
    parser.add_argument("--fan-concurrency", type=int, default=32)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    parser.add_argument("--profile", metavar="DIR", help="profile each size's cached re-run into DIR/cached-N.pstat "
                        "(yappi, every thread, when installed; else cProfile of the flow thread)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure_size(args.one, args.concurrency, args.fan_legs, args.fan_concurrency, args.profile)))
        return 0
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    sizes = [int(size) for size in args.sizes.split(",")]
    rows = [_child(size, args, args.fan_legs if index == 0 else 0) for index, size in enumerate(sizes)]
    print_table(rows)
    record_rows(rows, args)
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
