"""What a flow run costs on the embedded server with Prefect's heartbeats and with the flows' own settings.

A flow with one subflow and one task (the shape of a contract-strength night, whose pre-flight is a
subflow), called ``--rounds`` times each way, alternating, on the embedded server of this process:

* **Prefect's defaults**: a flow-run heartbeat thread per flow run, which Prefect 3.9 joins at the end
  of the run while it sleeps in 1 s steps;
* **``flow_run_settings()``** (flows/settings.py, around each of our top-level flow calls): no
  heartbeats on the embedded server.

Prints the median wall time of each and their ratio (defaults over ours).
Usage: ``python benchmarks/bench_flow_end.py [--rounds 7]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from embedded_home import embedded_home
from results import record


def main() -> int:
    """Time both ways and print the medians and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with embedded_home("flow-end"):
        from prefect import flow, task

        from flows.settings import flow_run_settings

        @task(name="one-task")
        def one_task() -> int:
            """Nothing but a task run."""
            return 1

        @flow(name="subflow")
        def subflow() -> int:
            """A subflow, as the night's pre-flight is."""
            return one_task()

        @flow(name="flow-with-subflow")
        def outer() -> int:
            """The flow called."""
            return subflow()

        outer()  # start the embedded server (not timed)
        defaults, ours = [], []
        for _ in range(args.rounds):
            started = time.perf_counter()
            outer()
            defaults.append(time.perf_counter() - started)
            started = time.perf_counter()
            with flow_run_settings():
                outer()
            ours.append(time.perf_counter() - started)
        default_s, ours_s = statistics.median(defaults), statistics.median(ours)
        print(f"flow + subflow + task, median of {args.rounds}: Prefect's defaults {default_s:.2f} s, "
              f"flow_run_settings() {ours_s:.2f} s; ratio {default_s / ours_s:.1f}")
    record(__file__, baseline="the same flow with flow_run_settings() (no heartbeat thread joined at the end)",
           ratios={"Prefect's defaults / flow_run_settings()": default_s / ours_s},
           figures={"rounds": args.rounds, "Prefect's defaults s": default_s, "flow_run_settings() s": ours_s})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
