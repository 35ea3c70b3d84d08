"""``eval-quality compile`` and ``eval-quality seal`` (preflight-adapter.md §7.2–§7.3, artifacts.md §3.4).

Each command makes one core call: ``compile_contract`` or ``seal_contract``. ``--in`` is the only
input that falls back to stdin (absent or ``-``). ``--strict-inputs`` / ``--no-strict-inputs`` may
both be given; the last one wins (click keeps the last value of a flag pair), and strict is the
default. ``--strict`` is accepted and changes nothing: compile and seal have no CONCERNS to promote.
A value flag given twice must repeat the same value, and no value may be empty (§7.2, exit 64).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from pydantic import BaseModel

from evalquality_core.artifacts.base import to_wire
from evalquality_core.cli.flags import FlagGrammarCommand
from evalquality_core.cli.io import UsageError, check_out_not_input, out_path, read_json, write_artifact
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
            click.option("--in", "in_", multiple=True, metavar="PATH", help=_IN_HELP),
            click.option(
                "--out", "out", multiple=True, metavar="TARGET", help="File (*.json) or directory; stdout when omitted."
            ),
            click.option("--strict-inputs/--no-strict-inputs", "strict_inputs", default=True, help=_STRICT_INPUTS_HELP),
            click.option("--strict", is_flag=True, default=False, help="Accepted by every command; no effect here."),
        )
    ):
        function = option(function)
    return function


def single_value(flag: str, values: tuple[str, ...]) -> str | None:
    """The one value of a value flag: absent → None; repeats must agree; empty is refused."""
    if not values:
        return None
    if any(value == "" for value in values):
        raise UsageError(f"--{flag} needs a value, but it is empty")
    if len(set(values)) > 1:
        first, other = values[0], next(v for v in values if v != values[0])
        raise UsageError(f'--{flag} given twice with different values, "{first}" and "{other}"')
    return values[0]


def _write(kind: str, ins: tuple[str, ...], outs: tuple[str, ...], produce: Callable[[Any], BaseModel]) -> None:
    """Read ``--in``, make the one core call, write the artifact to ``--out`` (or stdout)."""
    source, destination = single_value("in", ins), single_value("out", outs)
    target = out_path(destination, kind)
    check_out_not_input(target, {"in": source})
    write_artifact(to_wire(produce(read_json("in", source, "EvalContract"))), target)


@cli.command("compile", cls=FlagGrammarCommand)
@_common_options
def compile_command(in_: tuple[str, ...], out: tuple[str, ...], strict_inputs: bool, strict: bool) -> None:
    """Compile a contract: run the ordered checks and write it back canonical (exit 4 on the first failure)."""
    _write("eval-contract", in_, out, lambda value: compile_contract(value, strict_inputs=strict_inputs))


@cli.command("seal", cls=FlagGrammarCommand)
@_common_options
def seal_command(in_: tuple[str, ...], out: tuple[str, ...], strict_inputs: bool, strict: bool) -> None:
    """Compile a contract, then seal it into the SealedEvaluatorBrief an evaluator may see."""
    _write("sealed-evaluator-brief", in_, out, lambda value: seal_contract(value, strict_inputs=strict_inputs))
