"""Which of our flow entry points this process runs, and the ``--suites DIR`` its command line names.

Read when flows/settings.py is imported, before argparse and before Prefect: Prefect fixes its home when
it is imported, so a foreign suites folder can move Prefect's database beside itself only if the folder
is known that early. The rule is deliberately narrow so that nothing else is surprised (pytest, its
workers, Dask workers, a library import of ``flows``, ``python -c``): only a process whose entry module
is in ``SUITES_ENTRY_POINTS`` (``python -m flows.preflight ...`` or ``python flows/preflight.py ...``)
looks at its arguments. Pure: no Prefect, no file access.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

#: The entry modules whose ``--suites DIR`` decides where state lives (flows/settings.py ``choose_suites``).
#: ``deployments.batched_nightly`` is not one: its batches run on workers with their own environment.
SUITES_ENTRY_POINTS = frozenset({"flows.preflight", "flows.contract_strength", "flows.mutants"})

SUITES_FLAG = "--suites"


def entry_module(argv: Sequence[str], orig_argv: Sequence[str], project_root: Path) -> str | None:
    """The dotted name of the module this process was started to run, or None (``-c``, a REPL, a script
    outside ``project_root``).

    ``argv`` is ``sys.argv`` at import time. While ``python -m NAME`` is still importing NAME's packages,
    ``sys.argv[0]`` is ``"-m"`` and NAME is only in ``orig_argv`` (``sys.orig_argv``), just before the
    arguments ``sys.argv`` ends with; once NAME runs (``-m deployments.x`` importing ``flows``) or for a
    script, ``sys.argv[0]`` is the file's path.
    """
    if not argv:
        return None
    if argv[0] == "-m":
        if len(orig_argv) <= len(argv):
            return None
        name = orig_argv[-len(argv)]
        flag = orig_argv[-len(argv) - 1]
        if name.startswith("-m") and len(name) > 2:  # "-mflows.preflight", one token
            return name[2:]
        # "-m" itself, or interpreter flags joined before it ("-Im").
        return name if flag.startswith("-") and not flag.startswith("--") and flag.endswith("m") else None
    if argv[0] in ("", "-c"):
        return None
    try:
        relative = Path(argv[0]).resolve().relative_to(project_root.resolve())
    except (OSError, ValueError):
        return None
    if relative.suffix != ".py":
        return None
    parts = relative.with_suffix("").parts
    if parts and parts[-1] == "__main__":
        parts = parts[:-1]
    return ".".join(parts) or None


def suites_argument(arguments: Sequence[str]) -> str | None:
    """The value of the last ``--suites DIR`` or ``--suites=DIR`` before a ``--`` (argparse's reading:
    the last one wins), or None. A missing value or one that starts with ``-`` is none: argparse refuses
    that command line later, with its usage line."""
    found: str | None = None
    for index, argument in enumerate(arguments):
        if argument == "--":
            break
        if argument.startswith(SUITES_FLAG + "="):
            value: str | None = argument[len(SUITES_FLAG) + 1:]
        elif argument == SUITES_FLAG:
            value = arguments[index + 1] if index + 1 < len(arguments) else None
        else:
            continue
        found = value if value and not value.startswith("-") else None
    return found
