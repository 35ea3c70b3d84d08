"""Contract-strength benchmarks; prints ratios against baselines measured in the same run (never asserted).

(a) Cached night over first night: the wall time of a contract-strength run whose legs and score tasks are
    all answered from cache, over the first run of the same corpus in a fresh home (legs spawned, every
    probe scored). No aim: the corpus's legs are cheap local commands run in parallel, so both nights
    are mostly Prefect's per-task cost and the ratio is near 1; with real agents' legs (minutes and
    money each) it falls toward 0. What a cached night saves is the spawns, printed beside it.
(b) Cached night over cached pre-flight: the same cached contract-strength run over a cached run of the
    pre-flight flow alone, i.e. what compile, seal, scoring from cache, aggregation, the documents, the
    gate and the report add on top of the pre-flight. Aim: <= 2.
(c) Live night over stored night: a night that runs every trial live (``--trials live``: the system
    driven in fresh workspaces, each trial's evidence judged by the suite's evaluator command, the
    reference evaluator here) over the stored night, both with every leg answered from cache, so the
    ratio is what running the trials costs. No aim: it is the price of measuring something live.
(d) Cached live night over first live night: the same live night again, every trial answered from the
    trial cache. Aim: well under 1.
(e) Cached live night over cached pre-flight: what a live night with nothing changed adds on top of the
    pre-flight it runs anyway. Every answered stage (trial, score, aggregate, compile, seal) is looked up
    before submission, so it creates no task run (``tasks.caching.stored_result``). Aim: about 1 (<= 1.5).

Figures taken while other work loads the machine are distorted (mostly Prefect's API round trips
waiting for CPU); compare ratios from one quiet run.

Usage: ``python benchmarks/bench_contract_strength.py [--suites DIR]`` (runs in a temp eval-quality
home, so it never touches your cache; the first flow call also pays Prefect's embedded-server start).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
from pathlib import Path

_HOME = Path(tempfile.mkdtemp(prefix="evalquality-bench-"))
os.environ.setdefault("EVALQUALITY_HOME", str(_HOME))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
importlib.import_module("flows")  # fixes Prefect's home and logging before Prefect is imported

from prefect import flow  # noqa: E402
from results import record  # noqa: E402

from flows.contract_strength import run_contract_strength  # noqa: E402
from flows.preflight import run_preflight_flow  # noqa: E402
from flows.settings import FlowSettings, load_settings  # noqa: E402

#: Pause before each timed flow: back-to-back flows on SQLite hit 503 back-offs (prefect.md §8).
PAUSE_S = 3.0


@flow(name="warm-up", validate_parameters=False)
def warm_up() -> None:
    """An empty flow: starts the embedded API server outside the timed calls."""


def _timed(label: str, call) -> tuple[float, object]:
    time.sleep(PAUSE_S)
    started = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - started
    print(f"  {label}: {seconds:.2f} s")
    return seconds, result


def main() -> int:
    """Run the five timed flows and print the five ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", metavar="DIR", help="suites folder (default: corpus/suites)")
    args = parser.parse_args()
    settings = load_settings()
    if args.suites:
        settings = FlowSettings(
            settings.home, Path(args.suites).resolve(), settings.out_dir, settings.concurrency, settings.baseline
        )
    out = str(_HOME / "out")
    options = {"suites_dir": str(settings.suites_dir), "out_dir": out}
    print(f"contract strength over {settings.suites_dir} (home {_HOME})")
    # Warm-up: the embedded server's start would otherwise land in the first timed call.
    warm_up()
    first_s, first = _timed("first night", lambda: run_contract_strength(settings, **options))
    cached_s, cached = _timed("cached night", lambda: run_contract_strength(settings, **options))
    pre_s, _ = _timed(
        "cached pre-flight alone",
        lambda: run_preflight_flow(
            FlowSettings(settings.home, settings.suites_dir, _HOME / "pre", settings.concurrency, settings.baseline)
        ),
    )
    live = {**options, "out_dir": str(_HOME / "out-live"), "trials": "live"}
    live_s, live_run = _timed("first live night", lambda: run_contract_strength(settings, **live))
    live_cached_s, live_cached = _timed("cached live night", lambda: run_contract_strength(settings, **live))
    print(f"  first night:  {first.counts.sentence()}")  # type: ignore[attr-defined]
    print(f"  cached night: {cached.counts.sentence()}")  # type: ignore[attr-defined]
    print(f"  first live night:  {live_run.summary_lines()[1]}")  # type: ignore[attr-defined]
    print(f"  cached live night: {live_cached.summary_lines()[1]}")  # type: ignore[attr-defined]
    print(f"(a) cached night / first night         = {cached_s / first_s:.2f}  (no aim; see the docstring)")
    print(f"(b) cached night / cached pre-flight   = {cached_s / pre_s:.2f}  (aim: <= 2)")
    print(f"(c) live night / stored night          = {live_s / cached_s:.2f}  (legs cached in both: the trials' cost)")
    print(f"(d) cached live night / first live     = {live_cached_s / live_s:.2f}  (aim: well under 1)")
    print(f"(e) cached live night / cached pre-flight = {live_cached_s / pre_s:.2f}  (aim: about 1, <= 1.5)")
    record(__file__, baseline="the first night, the cached pre-flight alone, the stored night (same run)",
           ratios={"cached night / first night": cached_s / first_s,
                   "cached night / cached pre-flight (aim <= 2)": cached_s / pre_s,
                   "live night / stored night": live_s / cached_s,
                   "cached live night / first live night": live_cached_s / live_s,
                   "cached live night / cached pre-flight (aim <= 1.5)": live_cached_s / pre_s},
           figures={"first night s": first_s, "cached night s": cached_s, "cached pre-flight s": pre_s,
                    "first live night s": live_s, "cached live night s": live_cached_s})
    return 0


if __name__ == "__main__":
    sys.exit(main())
