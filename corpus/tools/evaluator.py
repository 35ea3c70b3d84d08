"""``python -m corpus.tools.evaluator --regenerate [--suite NAME|DIR ...] [--trials N]``: our corpus's trials.

A thin alias of :func:`evalquality_core.suite.evaluator.regenerate` (``eval-quality suite trials DIR``
for any suite). Exit 0 when written, 2 when it cannot run (one line on stderr), 3 when a stored
pre-flight verdict did not pass (one line per such probe; its trials are stored too, as ``eval-quality
suite trials`` does).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from corpus.tools import ToolArgumentParser, positive_int, suite_folders
from evalquality_core.registries import EXIT_INVALID
from evalquality_core.suite.evaluator import DEFAULT_TRIALS, regenerate, stored_preflight_failures
from evalquality_core.suite.load import TOOL_PROBLEMS, problem_line


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m corpus.tools.evaluator --regenerate [--suite NAME ...] [--trials N]``."""
    parser = ToolArgumentParser(prog="python -m corpus.tools.evaluator", description=__doc__.splitlines()[0])
    parser.add_argument("--regenerate", action="store_true", help="rewrite every stored trial (required)")
    parser.add_argument("--suite", action="append", help="only this suite, a name under corpus/suites or a folder (repeatable)")
    parser.add_argument("--trials", type=positive_int, default=DEFAULT_TRIALS, help=f"trials per probe (default {DEFAULT_TRIALS})")
    # Waiting on child processes dominates, not CPU, so more probes than cores run side by side.
    parser.add_argument("--jobs", type=positive_int, default=4 * (os.cpu_count() or 1), help="probes run side by side")
    options = parser.parse_args(argv)
    if not options.regenerate:
        parser.error("nothing to do: pass --regenerate")
    failures = []
    try:
        for folder in suite_folders(options.suite):
            written = regenerate(folder, options.trials, jobs=options.jobs)
            for path in written:
                print(f"wrote {path}")
            failures += stored_preflight_failures(written)
    except TOOL_PROBLEMS as problem:
        print(f"evaluator: {problem_line(problem)}", file=sys.stderr)
        return 2
    for line in failures:
        print(f"evaluator: {line}", file=sys.stderr)
    return EXIT_INVALID if failures else 0


if __name__ == "__main__":
    sys.exit(main())
