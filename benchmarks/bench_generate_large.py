"""Mutant generation on a large real module against parsing it once, in one run (never asserted; issue 34).

The "system" is a real third-party module installed in the venv (default sqlalchemy's
``sql/selectable.py``, 7.7k lines), cut at a top-level statement into prefixes of growing size. For each
size, two fresh child processes: the **baseline** parses the prefix once with libcst and resolves the two
position providers generation uses (no candidate is rendered, compiled or kept), and **generate** runs
``generate`` with every operator. Printed per size: candidates, seconds and peak RSS of each, and their
ratios; then how the generation's cost per candidate and its memory over the baseline grow from the
smallest size to the largest (1.0: linear in the file and bounded).

``--code DIR`` imports ``evalquality_core`` from another checkout (e.g. the commit before issue 34: its
generation re-rendered the tree, compiled the whole file and kept a mutated copy per mutant), so the
"before" figures come from the same machine in the same way. Usage:
``python benchmarks/bench_generate_large.py [--module sqlalchemy.sql.selectable] [--lines 1000,2000,4000] [--code DIR]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from results import record

PROJECT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import ast, importlib, inspect, json, resource, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
module, lines, what = sys.argv[2], int(sys.argv[3]), sys.argv[4]
text = Path(inspect.getsourcefile(importlib.import_module(module))).read_text(encoding="utf-8")
end = max(s.end_lineno for s in ast.parse(text).body if s.end_lineno <= lines)
text = "".join(text.splitlines(keepends=True)[:end])
import libcst
from libcst.metadata import MetadataWrapper, PositionProvider, WhitespaceInclusivePositionProvider
from evalquality_core.mutants.generate import generate
started = time.perf_counter()
if what == "parse":
    wrapper = MetadataWrapper(libcst.parse_module(text), unsafe_skip_copy=True)
    wrapper.resolve(PositionProvider); wrapper.resolve(WhitespaceInclusivePositionProvider)
    candidates = 0
else:
    generation = generate({"system/m.py": text})
    candidates = sum(generation.candidates_per_operator.values())
seconds = time.perf_counter() - started
print(json.dumps({"lines": end, "seconds": seconds, "candidates": candidates,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _measure(code: Path, module: str, lines: int, what: str, timeout: float) -> dict[str, float] | None:
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(code), module, str(lines), what],
                              capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(done.stdout)


def main() -> int:
    """Print one row per size and the growth from the smallest to the largest."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", default="sqlalchemy.sql.selectable")
    parser.add_argument("--lines", default="1000,2000,4000", help="prefix sizes, comma-separated")
    parser.add_argument("--code", type=Path, default=PROJECT, help="the checkout whose evalquality_core generates")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one generation may take (else 'timed out')")
    args = parser.parse_args()
    print(f"{args.module} with {args.code}")
    print(f"{'lines':>6} {'cands':>6} {'parse s':>8} {'gen s':>8} {'gen/parse':>9} {'ms/cand':>8} "
          f"{'parse MiB':>9} {'gen MiB':>8} {'mem ratio':>9}")
    rows = []
    for lines in (int(n) for n in args.lines.split(",")):
        base = _measure(args.code, args.module, lines, "parse", args.timeout)
        gen = _measure(args.code, args.module, lines, "generate", args.timeout)
        if base is None or gen is None:
            print(f"{lines:>6} timed out after {args.timeout:.0f} s")
            continue
        per = 1000 * gen["seconds"] / max(gen["candidates"], 1)
        rows.append((gen["lines"], gen["seconds"] / base["seconds"], per, gen["rss_mib"] - base["rss_mib"], gen["candidates"]))
        print(f"{gen['lines']:>6} {gen['candidates']:>6} {base['seconds']:>8.2f} {gen['seconds']:>8.2f} "
              f"{gen['seconds'] / base['seconds']:>9.1f} {per:>8.2f} {base['rss_mib']:>9.0f} {gen['rss_mib']:>8.0f} "
              f"{gen['rss_mib'] / base['rss_mib']:>9.2f}")
    if len(rows) >= 2:
        (l0, r0, p0, m0, c0), (l1, r1, p1, m1, c1) = rows[0], rows[-1]
        print(f"from {l0} to {l1} lines ({c1 / c0:.1f}x the candidates): time per candidate x{p1 / p0:.2f}, "
              f"generation over parse x{r1 / r0:.2f}, memory above the parse baseline {m0:.0f} -> {m1:.0f} MiB"
              "  (1.0 = linear; the memory above the baseline is what generation itself holds)")
        record(__file__, baseline=f"parsing the same {args.module} prefix with libcst (same run); the smallest prefix",
               ratios={f"time per candidate, {l1} over {l0} lines (1.0 = linear)": p1 / p0,
                       f"generation over parse, {l1} over {l0} lines": r1 / r0},
               figures={"module": args.module, "lines": args.lines, f"ms per candidate at {l0} lines": p0,
                        f"ms per candidate at {l1} lines": p1, f"MiB above parse at {l1} lines": m1})
    return 0


if __name__ == "__main__":
    sys.exit(main())
