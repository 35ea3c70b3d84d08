"""A night of N slow agent legs at concurrency c, against the ideal N*t/c (issue 34).

Builds ``--copies`` copies of the stand-in agent starter (``eval-quality suite init --kind agent``; each
copy gets its own seed, so its legs have their own keys and none collapses onto another copy's), sets
every copy's latency to ``--latency-ms`` t and the vendor limit ``[vendors] standin`` to
``--concurrency`` c, then runs ``python -m flows.contract_strength --concurrency c`` as a child process
on the embedded Prefect server (a fresh leg cache per night), twice:

* **no failures** (``transient_rate = 0``): N legs, N calls;
* **retries on** (``transient_rate = --transient-rate``): some legs fail their first one or two calls
  with exit 4/5 and are retried after the registry's backoff (200 ms, doubling).

For each night it reads the night's ledger (``<out>/agent-night.json``: every call's start and end on
the wall clock) and prints N, the calls made, the ideal ``N*t/c``, the legs' window (first call's
start to last call's end) and its ratio to the ideal, the mean measured call (t plus interpreter
start-up under load) and the ideal with it (``calls * mean / c``), the most calls at once (never above
c: the vendor limit), the mean time Prefect took to release a call's vendor slot (a round trip to the
API, which the next queued leg waits for), and the whole flow's wall time (Prefect start-up and scoring
included).
Timings on a shared machine are noisy: compare the ratios of one run.

Usage: ``python benchmarks/bench_agent_night.py [--copies 4] [--latency-ms 1000] [--concurrency 4]
[--transient-rate 0.3] [--json]``. Everything lives in a temp folder, removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import record  # noqa: E402  (beside this script)


def _most_at_once(rows: list[dict[str, Any]]) -> int:
    events = sorted([(row["started"], 1) for row in rows] + [(row["ended"], -1) for row in rows])
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def _suites(root: Path, starter: Path, copies: int, latency_ms: int, rate: float, limit: int) -> Path:
    suites = root / "suites"
    for index in range(copies):
        suite = Path(shutil.copytree(starter, suites / f"agent-{index}"))
        knobs = suite / "system" / "agent.toml"
        text = knobs.read_text()
        for name, value in (("seed", 1000 + index), ("latency_ms", latency_ms), ("transient_rate", rate)):
            text = re.sub(rf"(?m)^{name} = .*$", f"{name} = {value}", text)
        knobs.write_text(text)
        registry = suite / "targets.toml"
        registry.write_text(re.sub(r"(?m)^standin = \d+$", f"standin = {limit}", registry.read_text()))
    return suites


def _night(root: Path, name: str, suites: Path, concurrency: int, prefect_home: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_"))}
    env.update({"EVALQUALITY_HOME": str(root / f"home-{name}"), "PREFECT_HOME": str(prefect_home),
                "PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "EVALQUALITY_PROGRESS_SECONDS": "0"})
    out = root / f"out-{name}"
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "flows.contract_strength", "--suites", str(suites), "--out", str(out),
         "--baseline", str(root / f"baseline-{name}.json"), "--update-baseline", "--concurrency", str(concurrency)],
        cwd=PROJECT, env=env, capture_output=True, text=True, timeout=3600, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bench_agent_night: the {name} night exited {done.returncode}: {done.stderr[-2000:]}")
    return {"ledger": json.loads((out / "agent-night.json").read_text()), "flow_s": wall}


def main() -> None:
    """Build the suites, run both nights, print the table (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=4, help="copies of the agent starter (8 legs each)")
    parser.add_argument("--latency-ms", type=int, default=1000, help="t: each call's latency")
    parser.add_argument("--concurrency", type=int, default=4, help="c: the vendor limit and the flow's workers")
    parser.add_argument("--transient-rate", type=float, default=0.3, help="share of flaky requests, retries on")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="eval-quality-bench-agents-"))
    try:
        made = subprocess.run(["eval-quality", "suite", "init", "starter", "--kind", "agent"], cwd=root,
                              capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
        if made.returncode != 0:
            raise SystemExit(f"bench_agent_night: suite init failed: {made.stderr[-2000:]}")
        rows = []
        for name, rate in (("no-failures", 0.0), ("retries-on", args.transient_rate)):
            suites = _suites(root / name, root / "starter", args.copies, args.latency_ms, rate, args.concurrency)
            night = _night(root, name, suites, args.concurrency, root / "prefect")
            attempts = night["ledger"]["attempts"]
            legs = len({row["key"] for row in attempts})
            window = max(row["ended"] for row in attempts) - min(row["started"] for row in attempts)
            mean_call = sum(row["ended"] - row["started"] for row in attempts) / len(attempts)
            ideal = legs * args.latency_ms / 1000 / args.concurrency
            rows.append({
                "night": name, "legs": legs, "calls": len(attempts), "t_s": args.latency_ms / 1000,
                "c": args.concurrency, "ideal_s": round(ideal, 2), "legs_window_s": round(window, 2),
                "ratio": round(window / ideal, 2), "mean_call_s": round(mean_call, 3),
                "ideal_measured_calls_s": round(len(attempts) * mean_call / args.concurrency, 2),
                "most_at_once": _most_at_once(attempts), "flow_s": round(night["flow_s"], 1),
                # The vendor slot's own cost: Prefect's release round trip after each call.
                "mean_release_s": round(sum(row["released"] - row["ended"] for row in attempts) / len(attempts), 3),
            })
        header = ("night", "legs", "calls", "t_s", "c", "ideal_s", "legs_window_s", "ratio", "mean_call_s",
                  "ideal_measured_calls_s", "most_at_once", "mean_release_s", "flow_s")
        print(" | ".join(header))
        for row in rows:
            print(" | ".join(str(row[name]) for name in header))
        print("ratio = legs' window / (N * t / c); ideal_measured_calls_s = calls * mean call / c")
        if args.json:
            print(json.dumps(rows, indent=1))
        record(__file__, baseline="the ideal night N*t/c (legs x latency / vendor limit)",
               ratios={f"{row['night']}: legs' window / ideal": row["ratio"] for row in rows},
               figures={f"{row['night']}: {name}": row[name] for row in rows
                        for name in ("legs", "calls", "ideal_s", "legs_window_s", "mean_call_s", "most_at_once")})
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
