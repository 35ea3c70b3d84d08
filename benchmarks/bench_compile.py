"""Benchmark: compile + seal of the whole conformance contract corpus, against plain parsing.

Baseline: ``json.loads`` + ``EvalContract.model_validate`` of the same files (what any reader pays
just to hold the contract). Measured: ``seal_contract`` (strict read, stamp check, validation, the
34 ordered compile checks, the brief with its direction prose) on every file, and
``compile_contract`` alone on those that do not compile by design. Both sides read the bytes
already in memory. Prints the median of several interleaved repetitions of each and the ratio (not asserted).

Run: /work/venv/bin/python benchmarks/bench_compile.py [repetitions]   (default 15)
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from results import record

from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.compile import compile_contract
from evalquality_core.faults import RuntimeFault, StructuralFailure
from evalquality_core.seal import seal_contract

CONFORMANCE = Path(__file__).resolve().parents[1].parent / "shared" / "conformance"


def corpus() -> list[bytes]:
    """Every contract (stamp 4 or 5) under the conformance folder, as raw bytes."""
    found = []
    for path in sorted(CONFORMANCE.rglob("*.json")):
        data = path.read_bytes()
        try:
            value = json.loads(data)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("schemaVersion") in (4, 5) and "interactionPlan" in value:
            found.append(data)
    return found


def baseline(files: list[bytes]) -> None:
    """Parse and validate each file, nothing more."""
    for data in files:
        EvalContract.model_validate(json.loads(data), by_alias=True, by_name=False)


def measured(files: list[bytes]) -> None:
    """Compile and seal each file (compile alone where compile refuses it)."""
    for data in files:
        try:
            seal_contract(data)
        except StructuralFailure:
            try:
                compile_contract(data)
            except StructuralFailure:
                pass
        except RuntimeFault:
            pass


def medians(files: list[bytes], repetitions: int) -> tuple[float, float]:
    """Median wall times of the baseline and of compile+seal, repetitions interleaved so that drift
    in the host's load touches both sides alike (one warm-up of each first)."""
    baseline(files)
    measured(files)
    base_times, our_times = [], []
    for _ in range(repetitions):
        start = time.perf_counter()
        baseline(files)
        base_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        measured(files)
        our_times.append(time.perf_counter() - start)
    return statistics.median(base_times), statistics.median(our_times)


def main() -> None:
    """Print both medians and the ratio."""
    repetitions = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    files = corpus()
    if not files:
        sys.exit(f"no contracts found under {CONFORMANCE}")
    base, ours = medians(files, repetitions)
    print(f"contracts: {len(files)} files, {sum(map(len, files))} bytes; {repetitions} repetitions, medians")
    print(f"json.loads + EvalContract.model_validate : {base * 1000:8.2f} ms")
    print(f"compile + seal (seal_contract)           : {ours * 1000:8.2f} ms")
    print(f"ratio compile+seal / parse+validate      : {ours / base:8.2f}")
    record(__file__, baseline="json.loads + EvalContract.model_validate of the same contracts (median)",
           ratios={"compile+seal / parse+validate": ours / base},
           figures={"contracts": len(files), "repetitions": repetitions,
                    "parse+validate ms": base * 1000, "compile+seal ms": ours * 1000})


if __name__ == "__main__":
    main()
