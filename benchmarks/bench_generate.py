"""Mutant generation with the spliced render against re-rendering the whole tree, in one run (never asserted).

For every corpus suite with a system: the seconds ``generate`` takes over the suite's system sources
with each candidate's text spliced where that provably equals a re-render (the default,
``evalquality_core/mutants/operators.py``), and with every candidate re-rendered from libcst's tree (the
baseline: what generation did before), best of ``--repeat`` runs each, and their ratio. The two
generations are checked equal (the same kept mutants, the same texts).

Usage: ``python benchmarks/bench_generate.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from results import record  # noqa: E402

from evalquality_core.mutants import generate as generation  # noqa: E402
from evalquality_core.mutants.operators import candidate_list  # noqa: E402
from evalquality_core.suite.mutants import system_sources  # noqa: E402


def _best(repeat: int, sources: dict[str, str], splice: bool) -> tuple[float, object]:
    generation.candidate_list = functools.partial(candidate_list, splice=splice)  # type: ignore[attr-defined]
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = generation.generate(sources)
        best = min(best, time.perf_counter() - started)
    generation.candidate_list = candidate_list  # type: ignore[attr-defined]
    return best, result


def main() -> int:
    """Print one row per suite and the totals."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'suite':<14} {'mutants':>7} {'lines':>6} {'spliced s':>9} {'re-rendered s':>13} {'ratio':>6}")
    totals = [0.0, 0.0]
    for suite in sorted(d for d in (PROJECT / "corpus" / "suites").iterdir() if (d / "system").is_dir()):
        sources = system_sources(suite)
        fast_s, fast = _best(args.repeat, sources, True)
        slow_s, slow = _best(args.repeat, sources, False)
        if [(m.mutant_id, m.mutated_text) for m in fast.kept] != [(m.mutant_id, m.mutated_text) for m in slow.kept]:
            raise SystemExit(f"{suite.name}: the spliced generation differs from the re-rendered one")
        lines = sum(fast.lines_of_code.values())
        print(f"{suite.name:<14} {len(fast.kept):>7} {lines:>6} {fast_s:>9.3f} {slow_s:>13.3f} {slow_s / fast_s:>6.1f}")
        totals[0] += fast_s
        totals[1] += slow_s
    print(f"{'all':<14} {'':>7} {'':>6} {totals[0]:>9.3f} {totals[1]:>13.3f} {totals[1] / totals[0]:>6.1f}"
          "  (re-rendered over spliced: how many times faster generation is now)")
    record(__file__, baseline="re-rendering libcst's whole tree per candidate (the two generations checked equal)",
           ratios={"re-rendered / spliced, all corpus systems": totals[1] / totals[0]},
           figures={"spliced s": totals[0], "re-rendered s": totals[1], "repeat": args.repeat})
    return 0


if __name__ == "__main__":
    sys.exit(main())
