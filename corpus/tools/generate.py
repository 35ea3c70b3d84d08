"""``python -m corpus.tools.generate [--check] [--suite NAME|DIR ...]``: the generator over our corpus.

A thin alias of :mod:`evalquality_core.suite.generate` (``eval-quality suite generate DIR`` for any
suite). Exit 0 when written or up to date, 1 when ``--check`` finds a stale or missing file, 2 when a
check fails or the generator cannot run (one line on stderr), 3 when qualification admits no probe of
a suite (one line per such suite, after writing; as ``eval-quality suite generate``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from corpus.tools import ToolArgumentParser, positive_int, suite_folders
from evalquality_core.registries import EXIT_INVALID
from evalquality_core.suite.generate import (
    GenerationError,
    Output,
    generate_suite,
    stale_files,
    unqualified_suites,
    write_files,
)
from evalquality_core.suite.load import TOOL_PROBLEMS, problem_line


def main(argv: Sequence[str] | None = None) -> int:
    """Generate (or with ``--check`` verify) evidence and probes; exit 0 / 1 stale / 2 failed / 3 no probe qualifies."""
    parser = ToolArgumentParser(prog="python -m corpus.tools.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="regenerate in memory and fail on any byte difference")
    parser.add_argument("--suite", action="append", help="only this suite, a name under corpus/suites or a folder (repeatable)")
    # Waiting on child processes dominates, not CPU, so more probes than cores run side by side.
    parser.add_argument("--jobs", type=positive_int, default=4 * (os.cpu_count() or 1), help="probes checked side by side")
    options = parser.parse_args(argv)
    out = Output()
    try:
        for folder in suite_folders(options.suite):
            generate_suite(folder, out, max(1, options.jobs))
    except (GenerationError, *TOOL_PROBLEMS) as problem:
        print(f"generate: {problem_line(problem)}", file=sys.stderr)
        return 2
    if options.check:
        stale = stale_files(out)
        for path in stale:
            print(f"generate: stale: {path}", file=sys.stderr)
        if stale:
            return 1
        print(f"generate: {len(out.files)} file(s) up to date")
    else:
        for path in write_files(out):
            print(f"wrote {path}")
        for note in out.notes:
            print(note)
    unqualified = unqualified_suites(out)
    for line in unqualified:
        print(f"generate: {line}", file=sys.stderr)
    return EXIT_INVALID if unqualified else 0


if __name__ == "__main__":
    sys.exit(main())
