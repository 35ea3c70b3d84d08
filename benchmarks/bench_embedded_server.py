"""The quick start's second command (a cached ``python -m flows.preflight``) with the flows' own embedded
server start (flows/embedded_server.py) against Prefect's own (the same ``main`` with it turned off).

One throwaway home; one uncached run fills the leg cache (not timed); then ``--rounds`` cached runs each
way, alternating. Each run is a fresh process, timed whole: wall time, and CPU time of the process and
everything it waited for (its server among them). Prints medians and ratios (Prefect's own over ours).
Usage: ``python benchmarks/bench_embedded_server.py [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

from embedded_home import PROJECT, embedded_home
from results import record

#: ``main`` as ``python -m flows.preflight`` runs it, with the flows' own server start turned off.
PREFECTS_OWN = (
    "import sys, flows, flows.embedded_server as e; e._applies = lambda: False; "
    "from flows.preflight import main; sys.exit(main())"
)


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one run of ``command``, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=PROJECT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or "0 legs run" not in done.stdout:
        raise SystemExit(f"run failed ({done.returncode}): {done.stdout[-500:]}{done.stderr[-1500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    """Fill the cache, time both ways alternately, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with embedded_home("embedded-server"):
        env = dict(os.environ)
        ours_command = [sys.executable, "-m", "flows.preflight"]
        filled = subprocess.run(ours_command, cwd=PROJECT, env=env, capture_output=True, text=True)
        if filled.returncode != 0:
            raise SystemExit(f"the uncached run failed: {filled.stderr[-1500:]}")
        ours, prefects = [], []
        for _ in range(args.rounds):
            ours.append(_timed(ours_command, env))
            prefects.append(_timed([sys.executable, "-c", PREFECTS_OWN], env))
        ratios: dict[str, float] = {}
        figures: dict[str, float | int | str] = {"rounds": args.rounds}
        for what, index in (("wall", 0), ("CPU", 1)):
            mine = statistics.median(run[index] for run in ours)
            theirs = statistics.median(run[index] for run in prefects)
            print(f"cached python -m flows.preflight, {what} (median of {args.rounds}): Prefect's own server start "
                  f"{theirs:.2f} s, the flows' own {mine:.2f} s; ratio {theirs / mine:.2f}")
            ratios[f"{what}: Prefect's own start / the flows' own"] = theirs / mine
            figures[f"{what}: Prefect's own start s"] = theirs
            figures[f"{what}: the flows' own s"] = mine
    record(__file__, baseline="a cached python -m flows.preflight with the flows' own embedded server start",
           ratios=ratios, figures=figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
