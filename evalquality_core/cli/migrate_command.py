"""``eval-quality migrate``: upgrade a contract, probe or sealed run record to the newest stamp (issue 11).

One core call, :func:`evalquality_core.migrate.migrate_document`. ``--in`` falls back to stdin (absent or
``-``); ``--contract`` is needed only for a record older than 7 (its observations gain the interface that
declares their operation). The result goes to ``--out`` (a ``*.json`` file, or a directory receiving
``migrated.json``) or stdout, canonical JSON plus one newline. A refusal (not mechanical) is one line
``eval-quality: migration-refused: <where>: <why>`` and exit 4; an unreadable input is a runtime fault (5).
"""

from __future__ import annotations

import click

from evalquality_core.cli.compile_commands import single_value
from evalquality_core.cli.flags import FlagGrammarCommand
from evalquality_core.cli.io import check_out_not_input, out_path, read_json, write_artifact
from evalquality_core.cli.main import cli
from evalquality_core.migrate import migrate_document


@cli.command("migrate", cls=FlagGrammarCommand)
@click.option("--in", "in_", multiple=True, metavar="PATH", help="Contract, probe or record (JSON file, or - for stdin).")
@click.option("--contract", "contract", multiple=True, metavar="PATH",
              help="The contract a record before stamp 7 was sealed against (names each observation's interface).")
@click.option("--out", "out", multiple=True, metavar="TARGET", help="File (*.json) or directory; stdout when omitted.")
@click.option("--strict", is_flag=True, default=False, help="Accepted by every command; no effect here.")
def migrate_command(in_: tuple[str, ...], contract: tuple[str, ...], out: tuple[str, ...], strict: bool) -> None:
    """Upgrade a contract (to 7), probe (to 6) or sealed run record (to 8) where that is mechanical."""
    source, contract_path, destination = single_value("in", in_), single_value("contract", contract), single_value("out", out)
    target = out_path(destination, "migrated")
    check_out_not_input(target, {"in": source, "contract": contract_path})
    document = read_json("in", source, "document")
    contract_value = None if contract_path is None else read_json("contract", contract_path, "EvalContract")
    write_artifact(migrate_document(document, contract=contract_value), target)
