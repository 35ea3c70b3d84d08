"""Entry point of ``eval-quality``: registers the commands and turns every failure into one line.

Faults never reach the user as a traceback: StructuralFailure → exit 4, RuntimeFault → 5, usage → 64,
each as ``eval-quality: <code>: <artifactPath>: <detail>`` or ``eval-quality: usage: <msg>`` on
stderr. Only a genuine bug in the package prints its stack trace (exit 5), as the reference does.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
import traceback
from importlib.metadata import PackageNotFoundError, version

import click

from evalquality_core.faults import AggregationRefusal, RuntimeFault, StructuralFailure
from evalquality_core.migrate import MigrationRefusal
from evalquality_core.printable import printable
from evalquality_core.registries import EXIT_RUNTIME_FAULT, EXIT_STRUCTURAL, EXIT_USAGE

#: Modules that each add their commands to ``cli`` when imported (one per command family).
COMMAND_MODULES: tuple[str, ...] = (
    "evalquality_core.cli.preflight_command",
    "evalquality_core.cli.compile_commands",
    "evalquality_core.cli.score_commands",
    "evalquality_core.cli.probe_command",
    "evalquality_core.cli.suite_commands",
    "evalquality_core.cli.explain_command",
    "evalquality_core.cli.migrate_command",
    "evalquality_core.cli.mutants_command",
    "evalquality_core.cli.layers_command",
)


def package_version() -> str:
    """The installed eval-quality version (``--version``, and the engine version artifacts record)."""
    try:
        return version("eval-quality")
    except PackageNotFoundError:
        return "0.0.0+unknown"


@click.group(
    name="eval-quality",
    context_settings={"help_option_names": ["-h", "--help"]},
    help=(
        "Measure how strong an evaluation contract is.\n\n"
        "Artifacts go to stdout (or --out) as canonical JSON plus one newline; diagnostics go to stderr.\n\n"
        "Exit codes: 0 success; 1 CONCERNS promoted by --strict; 2 FAIL; 3 invalid (pre-flight not passed,\n"
        "or an invalidating condition in score); 4 structural failure or refused aggregation;\n"
        "5 runtime fault; 64 usage error."
    ),
)
@click.version_option(package_version(), "-V", "--version", prog_name="eval-quality")
def cli() -> None:
    """The command group."""


def _load_commands() -> None:
    for module in COMMAND_MODULES:
        importlib.import_module(module)


def say(line: str) -> None:
    """Print one diagnostic line, ``eval-quality: <line>``, on stderr."""
    # One diagnostic is one line, and it may quote author or target text (a pointer, a pattern, a
    # server's stderr): shown with every control character escaped (evalquality_core/printable.py).
    click.echo(f"eval-quality: {printable(line)}", err=True)


def usage_message(exc: click.UsageError, args: list[str]) -> str:
    """click's usage errors in §7's words: ``--out requires a value``, ``preflight requires
    --observations, --run-id`` (every missing required flag, named with the command),
    ``unknown command "x"; expected one of …``; anything else as click words it."""
    if isinstance(exc, click.exceptions.BadOptionUsage) and "requires an argument" in exc.format_message():
        return f"{exc.option_name} requires a value"
    if isinstance(exc, click.exceptions.MissingParameter) and exc.ctx is not None and exc.ctx.command is not None:
        given = {arg.split("=", 1)[0] for arg in args if arg.startswith("--")}
        missing = [
            param.opts[0]
            for param in exc.ctx.command.params
            if isinstance(param, click.Option) and param.required and not given.intersection(param.opts)
        ]
        if missing:
            return f"{exc.ctx.command.name} requires {', '.join(missing)}"
    if exc.ctx is not None and exc.ctx.command is cli and args and args[0] not in cli.commands and not args[0].startswith("-"):
        return f'unknown command "{args[0]}"; expected one of {", ".join(sorted(cli.commands))}'
    return exc.format_message()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return (and, from the console script, exit with) the process exit code.

    Whatever escapes the command (a bug while loading the commands or rendering an error included)
    still prints its stack trace and exits 5, never Python's 1 (which means CONCERNS under --strict)."""
    try:
        return _main(argv)
    except Exception:  # noqa: BLE001 — §7.4: a bug exits 5, wherever it happens
        traceback.print_exc()
        return _finish(EXIT_RUNTIME_FAULT, argv)


def _main(argv: list[str] | None) -> int:
    _load_commands()
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["help"]:  # §7.1: `help` alone is --help; `help <command>` is that command's help
        args = [*args[1:2], "--help"]
    try:
        code = cli.main(args=args, prog_name="eval-quality", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        say(f"usage: no command given; expected one of {', '.join(sorted(cli.commands))}")
        del exc
        return _finish(EXIT_USAGE, argv)
    except click.UsageError as exc:
        say(f"usage: {usage_message(exc, args)}")
        return _finish(EXIT_USAGE, argv)
    except click.exceptions.Exit as exc:
        return _finish(exc.exit_code, argv)
    except click.exceptions.Abort:
        say("aborted")
        return _finish(EXIT_RUNTIME_FAULT, argv)
    except StructuralFailure as exc:
        say(f"{exc.code}: {exc.artifact_path}: {exc.detail}")
        return _finish(EXIT_STRUCTURAL, argv)
    except (AggregationRefusal, MigrationRefusal) as exc:
        say(f"{exc.code}: {exc.artifact_path}: {exc.detail}")
        return _finish(EXIT_STRUCTURAL, argv)
    except RuntimeFault as exc:
        say(f"{exc.code}: {exc.artifact_path}: {exc.detail}")
        return _finish(EXIT_RUNTIME_FAULT, argv)
    except BrokenPipeError:
        return _finish(EXIT_RUNTIME_FAULT, argv)
    except OSError as exc:  # §7.3: any other error with an errno code exits 5, rendered (stdout full, EIO, …)
        name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
        say(f"{name}: {exc.filename if exc.filename is not None else '-'}: {exc.strerror or exc}")
        _quiet_stdout()
        return _finish(EXIT_RUNTIME_FAULT, argv)
    except Exception:  # §7.3: a bug in the package itself prints its stack trace and exits 5
        traceback.print_exc()
        return _finish(EXIT_RUNTIME_FAULT, argv)
    if not args:
        say(f"usage: no command given; expected one of {', '.join(sorted(cli.commands))}")
        return _finish(EXIT_USAGE, argv)
    return _finish(code if isinstance(code, int) else 0, argv)


def _quiet_stdout() -> None:
    # Whatever the failed write left buffered would fail again when Python flushes stdout at exit
    # and print a second, unformatted error; send the rest nowhere.
    try:
        sys.stdout.flush()
    except OSError:
        sys.stdout = open(os.devnull, "w")  # lives until the process exits


def _finish(code: int, argv: list[str] | None) -> int:
    if argv is None:  # called as the console script
        sys.exit(code)
    return code


if __name__ == "__main__":
    main()
