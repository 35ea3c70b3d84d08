"""Where a fanned-out leg's wall time goes: the fan-out of ``bench_scale.py``, timed phase by phase.

``--legs`` legs of ``sleep 0.5`` at concurrency ``--concurrency`` (128 and 32, as ``bench_scale.py``)
through ``spawn-leg`` and the real adapter, on the embedded server, with the run logs on (as the
flows have them); alternately, as many Prefect tasks that only sleep 0.5 s (the baseline: Prefect's
own fan-out). Each round prints the efficiency (ideal over measured) of both and their ratio, then
for every leg, medians and 90th percentiles of:

* **first start**: from the first submit to a task body's start (the first wave only);
* **gap**: on one worker thread, from one task body's end to the next one's start (Prefect's own
  per-task work between two legs);
* **to launch**: from the body's start to the target's launch (leg key, cache claim, workspace);
* **launch**: ``LegProcess.launch`` (taking a spare leg watchdog, sending it the target);
* **run**: from launch to the adapter closing the leg (``sleep 0.5`` and seeing its exit);
* **after**: from the close to the body's end (the cache entry, the state, the log line);
* ``_take_spare``, the cache ``claim``, ``put`` and ``_log`` on their own.

The functions are wrapped in this process only, to read a clock around them; nothing else changes.
Each round also prints the time this process spent in garbage collections during it.

``--compare-reuse`` adds a third kind to every round: the same spawn-leg fan-out with idle leg
watchdogs never kept for another leg (``process_group._IDLE_CAP = 0``: each leg takes a freshly forked
spare, as before reuse), and prints the medians of both (benchmarks/SCALING.md, *Fan-out, seventh pass*).

Three switches reproduce the sixth pass's experiments (benchmarks/SCALING.md, *Fan-out, sixth pass*), each applied to
both kinds of fan-out alike:

* ``--server-idle``: every thread of the embedded Prefect server at ``SCHED_IDLE`` (Linux), re-applied
  every 0.5 s: the server runs only when nothing else wants a core;
* ``--freeze-gc``: ``gc.collect()`` and ``gc.freeze()`` before each fan-out;
* ``--no-run-logs``: the run loggers stay at their default level (WARNING), so no INFO line reaches the
  server (the flows turn them on; this shows what they cost).

Usage: ``python benchmarks/bench_fanout_phases.py [--rounds 3] [--legs 128] [--concurrency 32]
[--compare-reuse] [--server-idle] [--freeze-gc] [--no-run-logs]``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import os
import shutil
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from embedded_home import embedded_home
from results import record

SLEEP_S = 0.5
PAUSE_S = 3.0

_LOCK = threading.Lock()
_MARKS: dict[int, list[tuple[str, float]]] = {}
_CALLS: dict[str, list[float]] = {}
#: Seconds spent in garbage collections since the last reset, and when the current one started.
_GC = {"seconds": 0.0, "started": 0.0}


def _on_gc(phase: str, _info: dict[str, Any]) -> None:
    if phase == "start":
        _GC["started"] = time.perf_counter()
    else:
        _GC["seconds"] += time.perf_counter() - _GC["started"]


def _server_threads_idle(stop: threading.Event) -> None:
    """Put every thread of this process's Prefect server children at ``SCHED_IDLE``, until ``stop``."""
    me = str(os.getpid())
    while not stop.wait(0.5):
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat", "rb") as handle:
                    parent = handle.read().rsplit(b")", 1)[1].split()[1].decode()
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    command = handle.read()
                if parent != me or b"prefect.server" not in command:
                    continue
                for thread in os.listdir(f"/proc/{pid}/task"):
                    if os.sched_getscheduler(int(thread)) != os.SCHED_IDLE:
                        os.sched_setscheduler(int(thread), os.SCHED_IDLE, os.sched_param(0))
            except (OSError, IndexError):
                continue  # gone meanwhile


def _mark(name: str) -> None:
    with _LOCK:
        _MARKS.setdefault(threading.get_ident(), []).append((name, time.perf_counter()))


def _timed(owner: Any, name: str) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            with _LOCK:
                _CALLS.setdefault(name, []).append(time.perf_counter() - started)

    setattr(owner, name, timed)


def _timed_entry(owner: Any, name: str) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    @contextlib.contextmanager
    def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
        started = time.perf_counter()
        with original(*args, **kwargs) as value:
            with _LOCK:
                _CALLS.setdefault(name, []).append(time.perf_counter() - started)
            yield value

    setattr(owner, name, timed)


def _marked(original: Callable[..., Any], before: str, after: str) -> Callable[..., Any]:
    @functools.wraps(original)
    def marked(*args: Any, **kwargs: Any) -> Any:
        _mark(before)
        try:
            return original(*args, **kwargs)
        finally:
            _mark(after)

    return marked


def _line(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    if not ordered:
        return f"  {name:34s} -"
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"  {name:34s} median {1000 * statistics.median(ordered):6.1f} ms   p90 {1000 * p90:6.1f} ms   max {1000 * ordered[-1]:6.1f} ms"


def _phases(started: float, concurrency: int) -> list[str]:
    """The per-leg phases of the last fan-out, from the marks every worker thread left."""
    legs: list[dict[str, float]] = []
    gaps: list[float] = []
    for marks in _MARKS.values():
        current: dict[str, float] = {}
        ends = [at for name, at in marks if name == "body-end"]
        starts = [at for name, at in marks if name == "body-start"]
        gaps += [start - end for end, start in zip(ends, starts[1:], strict=False)]
        for name, at in marks:
            current[name] = at
            if name == "body-end":
                legs.append(current)
                current = {}
    legs.sort(key=lambda leg: leg["body-start"])
    lines = [_line("first start (first wave)", [leg["body-start"] - started for leg in legs[:concurrency]]),
             _line("gap between two bodies on a thread", gaps)]
    if legs and "launch-start" in legs[0]:
        lines += [
            _line("to launch", [leg["launch-start"] - leg["body-start"] for leg in legs]),
            _line("launch", [leg["launch-end"] - leg["launch-start"] for leg in legs]),
            _line("run", [leg["close-start"] - leg["launch-end"] for leg in legs]),
            _line("after", [leg["body-end"] - leg["close-end"] for leg in legs]),
        ]
        lines += [_line(f"[{name}]", values) for name, values in sorted(_CALLS.items())]
    return lines


def main() -> int:
    """Run the rounds and print each one's efficiencies and phases."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--legs", type=int, default=128)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--compare-reuse", action="store_true", help="also spawn-leg without idle leg watchdogs")
    parser.add_argument("--server-idle", action="store_true", help="the embedded server's threads at SCHED_IDLE")
    parser.add_argument("--freeze-gc", action="store_true", help="gc.collect() and gc.freeze() before each fan-out")
    parser.add_argument("--no-run-logs", action="store_true", help="no INFO run-log lines to the server")
    args = parser.parse_args()
    if args.server_idle and not hasattr(os, "SCHED_IDLE"):
        parser.error("--server-idle needs Linux (os.SCHED_IDLE)")
    gc.callbacks.append(_on_gc)
    idle_stop = threading.Event()
    if args.server_idle:
        threading.Thread(target=_server_threads_idle, args=(idle_stop,), daemon=True).start()

    with embedded_home("phases") as home:
        from prefect import flow, task
        from prefect.cache_policies import NO_CACHE
        from prefect.task_runners import ThreadPoolTaskRunner
        from prefect.utilities.annotations import quote

        import tasks.leg_cache as leg_cache
        import tasks.preflight as preflight
        from evalquality_core.adapters import process_group
        from evalquality_core.probe.policy import parse_command_target_policy
        from flows.lifecycle import freeze_startup_heap
        from flows.watch import enable_run_logs

        spawn_leg = preflight.spawn_leg
        spawn_leg.fn = _marked(spawn_leg.fn, "body-start", "body-end")
        launch = process_group.LegProcess.launch.__func__
        process_group.LegProcess.launch = classmethod(_marked(launch, "launch-start", "launch-end"))
        process_group.LegProcess.close = _marked(process_group.LegProcess.close, "close-start", "close-end")
        for owner, name in ((leg_cache.SqliteLegStore, "put"), (process_group, "_take_spare"), (preflight, "_log")):
            _timed(owner, name)
        _timed_entry(leg_cache.SqliteLegStore, "claim")

        policy = parse_command_target_policy({"authorizations": [{
            "interfaceId": "sleeper", "executable": "sleeper", "target": shutil.which("sleep") or "sleep",
            "targetArgs": [str(SLEEP_S)], "permittedSubcommandPaths": [[]], "permittedEnvironmentKeys": [],
            "cwd": ".", "artifacts": {}, "maxElapsedMs": 60000, "maxOutputBytes": 65536}]})

        def no_staging(_workspace: Path) -> None:
            """The sleeping command needs no staged files."""

        def jobs(cache_dir: str) -> list[tuple[str, Any]]:
            return [(f"leg-{index}", preflight.LegJob(
                {"kind": "cli", "probeId": f"leg-{index}", "interfaceId": "sleeper", "operationId": "sleep",
                 "executable": "sleeper", "subcommandPath": [],
                 "channels": {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}}},
                f"phases-{index}", policy, no_staging, cache_dir, "force", "phases", str(home / "workspaces")))
                for index in range(args.legs)]

        @flow(name="fan-out-phases", validate_parameters=False)
        def fan_out(cache_dir: str) -> tuple[float, float]:
            """One spawn-leg task per sleeping leg; (first submit, seconds to the last answer)."""
            freeze_startup_heap()  # as the flows do at their start
            if not args.no_run_logs:
                enable_run_logs()
            planned = jobs(cache_dir)
            started = time.perf_counter()
            futures = [spawn_leg.submit("bench", "P-000", leg_id, quote(job)) for leg_id, job in planned]
            for future in futures:
                future.result()
            return started, time.perf_counter() - started

        @task(name="sleep", cache_policy=NO_CACHE, persist_result=False)
        def sleep_task(index: int) -> int:
            """Only sleeps as long as a leg."""
            _mark("body-start")
            time.sleep(SLEEP_S)
            _mark("body-end")
            return index

        @flow(name="sleep-fan-out-phases", validate_parameters=False)
        def sleep_fan_out() -> tuple[float, float]:
            """As many sleeping tasks; (first submit, seconds to the last answer)."""
            freeze_startup_heap()
            if not args.no_run_logs:
                enable_run_logs()
            started = time.perf_counter()
            futures = [sleep_task.submit(index) for index in range(args.legs)]
            for future in futures:
                future.result()
            return started, time.perf_counter() - started

        runner = ThreadPoolTaskRunner(max_workers=args.concurrency)
        ideal = -(-args.legs // args.concurrency) * SLEEP_S
        seconds_of: dict[str, list[float]] = {"spawn-leg": [], "no reuse": [], "sleep-only": []}

        def without_reuse(cache_dir: str) -> tuple[float, float]:
            kept = process_group._IDLE_CAP
            process_group._IDLE_CAP = 0  # every ended leg's watchdog exits; each leg takes a fresh spare
            try:
                return fan_out.with_options(task_runner=runner)(cache_dir)
            finally:
                process_group._IDLE_CAP = kept

        for index in range(args.rounds):
            cache_dir = str(home / f"cache-{index}")
            kinds: list[tuple[str, Callable[[], tuple[float, float]]]] = [
                ("spawn-leg", lambda cache_dir=cache_dir: fan_out.with_options(task_runner=runner)(cache_dir))]
            if args.compare_reuse:
                kinds.append(("no reuse", lambda cache_dir=cache_dir: without_reuse(cache_dir + "-no-reuse")))
            kinds.append(("sleep-only", lambda: sleep_fan_out.with_options(task_runner=runner)()))
            for name, run in kinds:
                if args.compare_reuse and name != "sleep-only":
                    # Both spawn-leg kinds start as a new flow process would: no idle leg watchdog left
                    # over from the other kind's round (the no-reuse round would take them first).
                    process_group.shutdown_watchdog()
                time.sleep(PAUSE_S)
                _MARKS.clear()
                _CALLS.clear()
                if args.freeze_gc:
                    gc.collect()
                    gc.freeze()
                _GC["seconds"] = 0.0
                started, seconds = run()
                seconds_of[name].append(seconds)
                print(f"round {index + 1} {name}: {seconds:.2f} s, efficiency {ideal / seconds:.2f}; "
                      f"{1000 * _GC['seconds']:.0f} ms in garbage collections", flush=True)
                for line in _phases(started, args.concurrency):
                    print(line, flush=True)
        ours, baseline = statistics.median(seconds_of["spawn-leg"]), statistics.median(seconds_of["sleep-only"])
        if args.compare_reuse:
            fresh = statistics.median(seconds_of["no reuse"])
            print(f"median of {args.rounds} rounds without reuse: {fresh:.2f} s (efficiency {ideal / fresh:.2f}); "
                  f"with reuse {ours:.2f} s (efficiency {ideal / ours:.2f})")
        print(f"median of {args.rounds} rounds: spawn-leg {ours:.2f} s (efficiency {ideal / ours:.2f}), "
              f"sleep-only {baseline:.2f} s (efficiency {ideal / baseline:.2f}); sleep-only / spawn-leg {baseline / ours:.2f}")
        ratios = {"spawn-leg efficiency": ideal / ours, "sleep-only efficiency": ideal / baseline,
                  "sleep-only / spawn-leg": baseline / ours}
        if args.compare_reuse:
            ratios["spawn-leg efficiency without watchdog reuse"] = ideal / fresh
        record(__file__, baseline="Prefect tasks that only sleep; the ideal fan-out time (median of the rounds)",
               ratios=ratios, figures={"rounds": args.rounds, "spawn-leg s": ours, "sleep-only s": baseline,
                                       "ideal s": ideal})
    idle_stop.set()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
