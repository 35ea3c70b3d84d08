"""``eval-quality layers prune``: remove dependency layers no run has used for a while (issue 34).

The store (``<eval-quality home>/layers``, evalquality_core/suite/layers.py) keeps one folder per layer
content digest and grows with every new dependency set and every mutant of a file inside a layer. A
folder is removed when its last use (the mtime of its ``.lock``, touched on every staging) is older than
``--older-than`` days AND no living process holds its in-use lock (every process that staged from it
holds one until it exits), so a running leg's layer is never removed. A removal renames the folder to
``.pruning-<id>`` first: an interrupted prune leaves a name no run reads, and the next prune clears it.

Exit codes: ``0`` pruned (one summary line on stdout); ``2`` the store could not be read or a folder
could not be removed (one line on stderr, ``eval-quality: layers prune: <what and where>``); ``64`` usage.
"""

from __future__ import annotations

from pathlib import Path

import click

from evalquality_core.cli.main import cli, say
from evalquality_core.printable import printable
from evalquality_core.registries import EXIT_FAIL

#: The default cut-off: a layer unused for this many days goes.
DEFAULT_OLDER_THAN_DAYS = 30.0
EXIT_PRUNE_FAILED = EXIT_FAIL


@cli.group("layers", help="The dependency layer store (system/node_modules and suite.toml layers, staged once).")
def layers() -> None:
    """The command group."""


@layers.command(
    "prune",
    help="Remove the stored layers unused for more than --older-than days that no running process holds. "
    "Store: --store, else <eval-quality home>/layers ($EVALQUALITY_HOME). Exit 2: the store could not be pruned.",
)
@click.option("--older-than", "older_than", type=click.FloatRange(min=0), default=DEFAULT_OLDER_THAN_DAYS,
              show_default=True, metavar="DAYS", help="Remove layers last used more than DAYS days ago (0: every unused one).")
@click.option("--store", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The layer store folder (default: <eval-quality home>/layers).")
def prune_command(older_than: float, store: Path | None) -> None:
    """Prune the store; print one summary line."""
    from evalquality_core.suite.home import layers_dir
    from evalquality_core.suite.layers import prune

    root = store if store is not None else layers_dir()
    if root.exists() and not root.is_dir():
        say(f"layers prune: {root}: not a folder")
        raise click.exceptions.Exit(EXIT_PRUNE_FAILED)
    try:
        report = prune(root, older_than * 86400.0)
    except OSError as problem:
        where = problem.filename or root
        say(f"layers prune: {where}: {problem.strerror or problem}")
        raise click.exceptions.Exit(EXIT_PRUNE_FAILED) from None
    click.echo(printable(f"{root}: {report.line(older_than)}"))
