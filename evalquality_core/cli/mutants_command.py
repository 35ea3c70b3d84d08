"""``eval-quality mutants generate DIR``: write a suite's generated mutants (issue 18).

Exit codes: ``0`` written; ``2`` the suite could not be read (one line, ``eval-quality: mutants
generate: <what and where>``); ``64`` usage (an unknown operator, a bad number).
"""

from __future__ import annotations

from pathlib import Path

import click

from evalquality_core.cli.main import cli, say
from evalquality_core.mutants.catalogue import CATALOGUE, UnknownOperator, parse_operator_names
from evalquality_core.printable import printable
from evalquality_core.suite.load import TOOL_PROBLEMS, problem_line

EXIT_MUTANTS_FAILED = 2


@cli.group("mutants", help="Generated mutants of a suite's system (machine-made defects).")
def mutants() -> None:
    """The command group."""


def _operators(value: str | None) -> tuple[str, ...]:
    names = [name.strip() for name in (value or "").split(",") if name.strip()]
    try:
        return parse_operator_names(names)
    except UnknownOperator as problem:
        raise click.UsageError(f"--operators: {problem}") from None


@mutants.command(
    "generate",
    help="Write DIR/mutants/<id>.json (the mutation shape, marked generated) and DIR/mutants/generated.json "
    "(settings, counts, and the Invalid and Duplicate candidates with their reasons).\n\nOperators: "
    + "; ".join(f"{op.name} ({op.does})" for op in CATALOGUE),
)
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--operators", metavar="NAME[,NAME...]", help="Only these operators (default: the whole catalogue).")
@click.option("--sample", "sample_size", type=click.IntRange(min=1), help="Keep N valid mutants, chosen by --seed.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --sample and --per-line.")
@click.option("--per-line", "per_line", type=click.IntRange(min=1), help="At most N mutants per source line.")
def generate_command(directory: Path, operators: str | None, sample_size: int | None, seed: int, per_line: int | None) -> None:
    """Generate and write the suite's mutants; print one summary line."""
    # Imported here, not at the top: generation needs libcst, which no other command does.
    from evalquality_core.mutants.generate import SourceProblem
    from evalquality_core.suite.mutants import MUTANTS_DIR, generate_for_suite, write_generation

    chosen = _operators(operators)
    try:
        generation = generate_for_suite(directory, operators=chosen, sample_size=sample_size, seed=seed,
                                        per_line_limit=per_line)
        write_generation(directory, generation)
    except (*TOOL_PROBLEMS, SourceProblem) as problem:
        say(f"mutants generate: {problem_line(problem)}")
        raise click.exceptions.Exit(EXIT_MUTANTS_FAILED) from None
    invalid = sum(1 for r in generation.rejected if r.rejection.status == "Invalid")
    duplicate = sum(1 for r in generation.rejected if r.rejection.status == "Duplicate")
    total = sum(generation.candidates_per_operator.values())
    click.echo(printable(
        f"{total} candidates: {generation.valid_count} valid, {invalid} Invalid, {duplicate} Duplicate; "
        f"{len(generation.kept)} written to {directory / MUTANTS_DIR}"
    ))
