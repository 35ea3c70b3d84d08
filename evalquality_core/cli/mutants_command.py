"""``eval-quality mutants generate DIR``: write a suite's generated mutants (issue 18).

Exit codes: ``0`` written; ``2`` the suite could not be read (one line, ``eval-quality: mutants
generate: <what and where>``); ``3`` stopped at ``--max-seconds`` or ``--max-mutants`` (what was
examined before the limit is written, ``generated.json`` carries ``cut``, and one line on stderr says
what was cut); ``64`` usage (an unknown operator, a bad number).

Progress goes to stderr (issue 34), never stdout (which holds the one summary line): a rich progress bar
when stderr is a terminal, else a plain line as each file is parsed, starts and ends, and every
``--progress-every`` seconds (default ``PROGRESS_EVERY_S``) in between.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from evalquality_core.cli.main import cli, say
from evalquality_core.mutants.catalogue import CATALOGUE, UnknownOperator, parse_operator_names
from evalquality_core.printable import printable
from evalquality_core.registries import EXIT_FAIL, EXIT_INVALID
from evalquality_core.suite.load import TOOL_PROBLEMS, problem_line

EXIT_MUTANTS_FAILED = EXIT_FAIL
#: A limit stopped generation: the mutants examined before it are written (README "Generated mutants").
EXIT_MUTANTS_CUT = EXIT_INVALID
#: The default bounds of one generation (README "Generated mutants").
DEFAULT_MAX_SECONDS = 600.0
DEFAULT_MAX_MUTANTS = 50_000
#: Seconds between two plain progress lines (stderr not a terminal).
PROGRESS_EVERY_S = 5.0


@cli.group("mutants", help="Generated mutants of a suite's system (machine-made defects).")
def mutants() -> None:
    """The command group."""


def _operators(value: str | None) -> tuple[str, ...]:
    names = [name.strip() for name in (value or "").split(",") if name.strip()]
    try:
        return parse_operator_names(names)
    except UnknownOperator as problem:
        raise click.UsageError(f"--operators: {problem}") from None


class _PlainProgress:
    """Progress as plain ``eval-quality: mutants generate: ...`` lines on stderr (not a terminal)."""

    def __init__(self, started: float, every: float) -> None:
        self._started = started
        self._last = started
        self._every = every

    def __call__(self, where: Any) -> None:
        now = time.monotonic()
        head = f"mutants generate: {where.target} (file {where.file_number} of {where.files})"
        if where.file_candidates is None:
            say(f"{head}: parsing")
        elif where.done == 0:
            say(f"{head}: {where.file_candidates} candidates")
            self._last = now
        elif where.done == where.file_candidates or now - self._last >= self._every:
            say(f"{head}: {where.done} of {where.file_candidates} candidates; {where.examined} examined and "
                f"{where.valid} valid in all, {now - self._started:.0f} s")
            self._last = now

    def close(self) -> None:
        """Nothing to tear down."""


class _RichProgress:
    """Progress as a rich bar on stderr (a terminal)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("{task.fields[valid]} valid"), TimeElapsedColumn(),
                             console=Console(stderr=True), transient=False)
        self._task = self._bar.add_task("mutants generate", total=None, valid=0)
        self._bar.start()

    def __call__(self, where: Any) -> None:
        description = f"{where.target} ({where.file_number}/{where.files})"
        if where.file_candidates is None:
            self._bar.update(self._task, description=f"{description} parsing", completed=0, total=None)
        else:
            self._bar.update(self._task, description=description, completed=where.done,
                             total=where.file_candidates, valid=where.valid)

    def close(self) -> None:
        """Stop the live display."""
        self._bar.stop()


@mutants.command(
    "generate",
    help="Write DIR/mutants/<id>.json (the mutation shape, marked generated) and DIR/mutants/generated.json "
    "(settings, counts, and the Invalid and Duplicate candidates with their reasons). Progress goes to "
    "stderr. Exit 3: stopped at --max-seconds or --max-mutants (what was examined is written).\n\nOperators: "
    + "; ".join(f"{op.name} ({op.does})" for op in CATALOGUE),
)
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--operators", metavar="NAME[,NAME...]", help="Only these operators (default: the whole catalogue).")
@click.option("--sample", "sample_size", type=click.IntRange(min=1), help="Keep N valid mutants, chosen by --seed.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --sample and --per-line.")
@click.option("--per-line", "per_line", type=click.IntRange(min=1), help="At most N mutants per source line.")
@click.option("--max-seconds", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_MAX_SECONDS,
              show_default=True, help="Stop after this many seconds (exit 3; what was examined is written).")
@click.option("--max-mutants", type=click.IntRange(min=1), default=DEFAULT_MAX_MUTANTS, show_default=True,
              help="Stop after examining this many candidates (exit 3; what was examined is written).")
@click.option("--progress-every", type=click.FloatRange(min=0), default=PROGRESS_EVERY_S, show_default=True,
              help="Seconds between two progress lines on stderr when it is not a terminal.")
def generate_command(directory: Path, operators: str | None, sample_size: int | None, seed: int, per_line: int | None,
                     max_seconds: float, max_mutants: int, progress_every: float) -> None:
    """Generate and write the suite's mutants; print one summary line."""
    # Imported here, not at the top: generation needs libcst, which no other command does.
    from evalquality_core.mutants.generate import SourceProblem
    from evalquality_core.suite.mutants import MUTANTS_DIR, generate_for_suite, write_generation

    chosen = _operators(operators)
    started = time.monotonic()
    deadline = started + max_seconds
    out_of_time = f"--max-seconds {max_seconds:g} reached"

    def stop() -> str | None:
        return out_of_time if time.monotonic() >= deadline else None

    progress = _RichProgress() if sys.stderr.isatty() else _PlainProgress(started, progress_every)
    try:
        generation = generate_for_suite(directory, operators=chosen, sample_size=sample_size, seed=seed,
                                        per_line_limit=per_line, max_candidates=max_mutants, stop=stop,
                                        progress=progress)
        write_generation(directory, generation)
    except (*TOOL_PROBLEMS, SourceProblem) as problem:
        progress.close()
        say(f"mutants generate: {problem_line(problem)}")
        raise click.exceptions.Exit(EXIT_MUTANTS_FAILED) from None
    progress.close()
    invalid = sum(1 for r in generation.rejected if r.rejection.status == "Invalid")
    duplicate = sum(1 for r in generation.rejected if r.rejection.status == "Duplicate")
    total = sum(generation.candidates_per_operator.values())
    click.echo(printable(
        f"{total} candidates: {generation.valid_count} valid, {invalid} Invalid, {duplicate} Duplicate; "
        f"{len(generation.kept)} written to {directory / MUTANTS_DIR}"
    ))
    if generation.cut is not None:
        reason = generation.cut.reason if generation.cut.reason == out_of_time else f"--max-mutants {max_mutants} reached"
        say(f"mutants generate: stopped, {generation.cut.line(reason)}; the {len(generation.kept)} written come from "
            f"the candidates examined (raise --max-seconds/--max-mutants to go further)")
        raise click.exceptions.Exit(EXIT_MUTANTS_CUT)
