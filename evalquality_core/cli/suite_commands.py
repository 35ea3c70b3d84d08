"""``eval-quality suite init|check|generate|trials|digest DIR``: author a suite that lives in any folder.

Exit codes of the ``suite`` commands (harness.md A.10 for the generator's): ``0`` done (or, for
``check`` and ``generate --check``, everything holds); ``1`` ``generate --check`` found a stale or
missing file; ``2`` a check failed, or the suite could not be read, staged or run (one line on stderr,
``eval-quality: suite <command>: <what and where>``); ``3`` invalid: ``trials`` stored a pre-flight
verdict that did not pass (one line per such probe, naming its verdict file and the failed checks), or
``generate`` found no probe the qualification gate admits (one line naming the suite and counting the
refusal codes; the files are still written, refused probes recorded refused); ``64`` usage.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from evalquality_core.cli.exit_codes import CommandOutcome, exit_code_of
from evalquality_core.cli.main import cli, say
from evalquality_core.printable import printable
from evalquality_core.registries import EXIT_INVALID
from evalquality_core.suite.load import TOOL_PROBLEMS, problem_line

#: ``suite`` exit codes (module docstring).
EXIT_SUITE_OK, EXIT_SUITE_STALE, EXIT_SUITE_FAILED = 0, 1, 2
#: ``generate`` on a suite whose every probe qualification refuses: each would score Invalid (``EXIT_INVALID``).
EXIT_SUITE_UNQUALIFIED = EXIT_INVALID

F = TypeVar("F", bound=Callable[..., Any])

_DIR = click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
# Waiting on child processes dominates, not CPU, so more probes than cores run side by side.
_JOBS = click.option("--jobs", type=click.IntRange(min=1), default=4 * (os.cpu_count() or 1), show_default=True,
                     help="Probes run side by side.")


def _fail(command: str, line: str) -> None:
    say(f"suite {command}: {line}")
    raise click.exceptions.Exit(EXIT_SUITE_FAILED)


def _guarded(command: str) -> Callable[[F], F]:
    """Report a suite problem as one line and exit 2 (never a traceback)."""

    def wrap(function: F) -> F:
        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except TOOL_PROBLEMS as problem:
                _fail(command, problem_line(problem))

        return run  # type: ignore[return-value]

    return wrap


@cli.group(
    "suite",
    help=(
        "Author a suite in any folder: a system under test, its fixtures, registry, contract, probes and "
        "mutations.\n\nExit codes: 0 done (check: every step holds); 1 generate --check found a stale file; "
        "2 a check failed or the suite could not be read or run; 3 trials stored a failed pre-flight, or "
        "generate found no probe that qualifies; 64 usage."
    ),
)
def suite_group() -> None:
    """The ``suite`` command group."""


@suite_group.command("init", help=(
    "Write a working starter suite into DIR (new or empty), generated and trialled. --kind picks the system: "
    "cli (default) a command-line program, http an HTTP service, mcp a stdio tool server, agent a command-line "
    "program behind a scripted stand-in agent (slow, seeded transient failures)."))
@_DIR
@click.option("--kind", type=click.Choice(["cli", "http", "mcp", "agent"]), default="cli", show_default=True,
              help="The kind of system under test the starter holds.")
@_guarded("init")
def suite_init(directory: Path, kind: str) -> None:
    """``suite init DIR [--kind cli|http|mcp|agent]``."""
    from evalquality_core.suite.init import init_suite

    for path in init_suite(directory, kind=kind):
        click.echo(printable(f"wrote {path}"))
    click.echo(printable(f"next: eval-quality suite check {directory}"))


@suite_group.command("check", help="Run every authoring step's check on DIR; name the first problem and its fix.")
@_DIR
@_guarded("check")
def suite_check(directory: Path) -> None:
    """``suite check DIR``: one ``ok`` line per step held, then the first problem on stderr (exit 2)."""
    from evalquality_core.suite.check import check_suite

    for step in check_suite(directory):
        if not step.ok:
            _fail("check", step.line())
        click.echo(printable(step.line()))


@suite_group.command(
    "generate", help="Run every probe's checks; write evidence/ and the probes' derived fields (--check: write nothing)."
)
@_DIR
@click.option("--check", "check_only", is_flag=True, help="Regenerate in memory; exit 1 on any byte difference.")
@_JOBS
@_guarded("generate")
def suite_generate(directory: Path, check_only: bool, jobs: int) -> None:
    """``suite generate DIR [--check]``."""
    from evalquality_core.suite.generate import (
        Output,
        generate_suite,
        stale_files,
        unqualified_suites,
        write_files,
    )

    out = Output()
    generate_suite(directory, out, jobs)
    if check_only:
        stale = stale_files(out)
        for path in stale:
            click.echo(printable(f"stale: {path}"))
        if stale:
            say(f"suite generate: {len(stale)} file(s) stale or missing; run eval-quality suite generate {directory}")
            raise click.exceptions.Exit(EXIT_SUITE_STALE)
        click.echo(f"{len(out.files)} file(s) up to date")
    else:
        for path in write_files(out):
            click.echo(printable(f"wrote {path}"))
        for note in out.notes:
            click.echo(printable(note))
    # Written (refused probes are recorded refused), yet a suite no probe qualifies in measures nothing:
    # every probe of it would score Invalid, so it exits as an Invalid score does (3).
    unqualified = unqualified_suites(out)
    for line in unqualified:
        say(f"suite generate: {line}")
    if unqualified:
        raise click.exceptions.Exit(EXIT_SUITE_UNQUALIFIED)


@suite_group.command("trials", help="Store each probe's pre-flight verdict and sealed trials under DIR/trials/.")
@_DIR
@click.option("--trials", "count", type=click.IntRange(min=1), default=None, help="Trials per probe (default 3).")
@click.option("--probe", "probe_ids", multiple=True, help="Only this probe (repeatable).")
@_JOBS
@_guarded("trials")
def suite_trials(directory: Path, count: int | None, probe_ids: tuple[str, ...], jobs: int) -> None:
    """``suite trials DIR``: the reference evaluator's stored replays."""
    from evalquality_core.suite.evaluator import DEFAULT_TRIALS, regenerate, stored_preflight_failures
    from evalquality_core.suite.load import load_suite

    known = load_suite(directory).probes
    unknown = [probe_id for probe_id in probe_ids if probe_id not in known]
    if unknown:
        raise click.UsageError(f"--probe {unknown[0]}: no such probe in {directory} (it has {', '.join(sorted(known))})")
    written = regenerate(directory, count or DEFAULT_TRIALS, list(probe_ids) or None, jobs=jobs)
    for path in written:
        click.echo(printable(f"wrote {path}"))
    # A failed pre-flight is stored with its trials (scoring them is then Invalid) and exits as the
    # preflight command does: 3, one line per probe naming its stored verdict and the failed checks.
    failures = stored_preflight_failures(written)
    for line in failures:
        say(f"suite trials: {line}")
    if failures:
        raise click.exceptions.Exit(exit_code_of(CommandOutcome(kind="preflight", passed=False)))


@suite_group.command("digest", help="Print DIR's corpus digest (what `score --corpus-digest` takes).")
@_DIR
@_guarded("digest")
def suite_digest(directory: Path) -> None:
    """``suite digest DIR``: the digest of contract.json, probes/, mutations/ and trials/."""
    from evalquality_core.suite.load import corpus_digest, suite_dir

    click.echo(corpus_digest(suite_dir(directory)))
