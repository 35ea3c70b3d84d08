"""Benchmark: the bounded regex operator scales linearly (RE2), a backtracking engine does not.

Prints ratios only, each against a baseline measured in the same run:
* RE2 (through ``regex_test``) on ``^(a|aa)*$`` over n and 4n characters: the ratio stays near 4 (linear).
* Python's backtracking ``re`` on the same pattern over 22 and 26 characters plus a mismatch: the ratio is
  about phi^4 ≈ 6.9 for four more characters (exponential), which is why no backtracking engine is used.

Run: /work/venv/bin/python benchmarks/regex_linear.py
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from results import record

from evalquality_core.evaluate.regex import regex_test

PATTERN = "^(a|aa)*$"


def best_of(runs: int, work: Callable[[], object]) -> float:
    """The fastest of ``runs`` timings of ``work`` (seconds)."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    """Print the two scaling ratios."""
    n = 200_000
    small, large = "a" * n, "a" * (4 * n)  # matching inputs: the whole string is scanned
    re2_small = best_of(5, lambda: regex_test(small, PATTERN, 10**7, "bench"))
    re2_large = best_of(5, lambda: regex_test(large, PATTERN, 10**7, "bench"))
    print(f"re2 ^(a|aa)*$ over {4 * n} vs {n} chars: time ratio {re2_large / re2_small:.2f} (linear ≈ 4)")
    compiled = re.compile(PATTERN)
    bt_small = best_of(3, lambda: compiled.search("a" * 22 + "b"))
    bt_large = best_of(3, lambda: compiled.search("a" * 26 + "b"))
    print(f"backtracking re over 26 vs 22 chars: time ratio {bt_large / bt_small:.2f} (exponential ≈ 6.9)")
    record(__file__, baseline="the same engine on an input 4 times (RE2) or 4 characters (re) shorter",
           ratios={f"RE2 {4 * n} / {n} chars (linear ~ 4)": re2_large / re2_small,
                   "backtracking re 26 / 22 chars (exponential ~ 6.9)": bt_large / bt_small},
           figures={"RE2 small ms": re2_small * 1000, "RE2 large ms": re2_large * 1000,
                    "re small ms": bt_small * 1000, "re large ms": bt_large * 1000})


if __name__ == "__main__":
    main()
