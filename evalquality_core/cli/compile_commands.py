"""``eval-quality compile`` and ``eval-quality seal`` (preflight-adapter.md §7.2–§7.3, artifacts.md §3.4).

Each command makes one core call: ``compile_contract`` or ``seal_contract``. ``--in`` is the only
input that falls back to stdin (absent or ``-``). ``--strict-inputs`` / ``--no-strict-inputs`` may
both be given; the last one wins (click keeps the last value of a flag pair), and strict is the
default. ``--strict`` is accepted and changes nothing: compile and seal have no CONCERNS to promote.
"""

from __future__ import annotations

import click

from evalquality_core.artifacts.base import to_wire
from evalquality_core.cli.io import check_out_not_input, out_path, read_json, write_artifact
from evalquality_core.cli.main import cli
from evalquality_core.compile.pipeline import compile_contract
from evalquality_core.seal.seal import seal_contract

_IN_HELP = "Authored contract (JSON file, or - for stdin; stdin when omitted)."
_STRICT_INPUTS_HELP = (
    "Strict (default): also refuse undeclared binding keys and principals, and input-bearing "
    "operations without a fitting sensitivity witness (undeclared-mandatory-input). The last flag wins."
)


def _common_options(function: click.decorators.FC) -> click.decorators.FC:
    for option in reversed(
        (
            click.option("--in", "in_", default=None, metavar="PATH", help=_IN_HELP),
            click.option("--out", "out", default=None, metavar="TARGET", help="File (*.json) or directory; stdout when omitted."),
            click.option("--strict-inputs/--no-strict-inputs", "strict_inputs", default=True, help=_STRICT_INPUTS_HELP),
            click.option("--strict", is_flag=True, default=False, help="Accepted by every command; no effect here."),
        )
    ):
        function = option(function)
    return function


@cli.command("compile")
@_common_options
def compile_command(in_: str | None, out: str | None, strict_inputs: bool, strict: bool) -> None:
    """Compile a contract: run the ordered checks and write it back canonical (exit 4 on the first failure)."""
    target = out_path(out, "eval-contract")
    check_out_not_input(target, {"in": in_})
    value = read_json("in", in_, "EvalContract")
    write_artifact(to_wire(compile_contract(value, strict_inputs=strict_inputs)), target)


@cli.command("seal")
@_common_options
def seal_command(in_: str | None, out: str | None, strict_inputs: bool, strict: bool) -> None:
    """Compile a contract, then seal it into the SealedEvaluatorBrief an evaluator may see."""
    target = out_path(out, "sealed-evaluator-brief")
    check_out_not_input(target, {"in": in_})
    value = read_json("in", in_, "EvalContract")
    write_artifact(to_wire(seal_contract(value, strict_inputs=strict_inputs)), target)
