"""``eval-quality explain [RULE] [--contract FILE]``: what each AD-20 coverage rule asks of a contract.

``explain`` lists the seven rules; ``explain <rule>`` prints when it applies, what satisfies it, and the
example from our corpus (:mod:`evalquality_core.coverage.explanations`); ``explain --contract FILE``
prints the rules that contract leaves unsatisfied, each explained and followed by one ``  gap at: <site>``
line per operation (or sibling group) behind it (``coverage/gap_sites.py``; exit 0 either way: a gap is data).
An unknown rule is a usage error (64).
"""

from __future__ import annotations

import click

from evalquality_core.cli.io import read_json
from evalquality_core.cli.main import cli
from evalquality_core.coverage.explanations import BY_RULE, EXPLANATIONS, explain
from evalquality_core.printable import printable


@cli.command("explain", help="Explain the AD-20 coverage rules (all, one RULE, or the gaps of --contract FILE).")
@click.argument("rule", required=False)
@click.option("--contract", "contract_path", default=None, help="A contract: explain only the rules it leaves unsatisfied.")
def explain_command(rule: str | None, contract_path: str | None) -> None:
    """``explain``."""
    if rule is not None and rule not in BY_RULE:
        raise click.UsageError(f'unknown coverage rule "{rule}"; expected one of {", ".join(BY_RULE)}')
    if contract_path is not None:
        from evalquality_core.artifacts.base import read_artifact
        from evalquality_core.artifacts.contract import EvalContract
        from evalquality_core.coverage.coverage import coverage_gaps
        from evalquality_core.coverage.gap_sites import gap_sites

        contract = read_artifact(EvalContract, read_json("contract", contract_path, "EvalContract"), "EvalContract")
        gaps = [gap.rule for gap in coverage_gaps(contract) if rule is None or gap.rule == rule]
        if not gaps:
            click.echo(printable(f"{contract_path}: no coverage gap" + (f" for {rule}" if rule else "")))
            return
        click.echo(printable(f"{contract_path}: {len(gaps)} coverage gap(s): {', '.join(gaps)}"))
        for name in gaps:
            click.echo(explain(name), nl=False)
            # Ours (issue 34): which operation (or sibling group) is behind the gap.
            for site in gap_sites(contract, name):
                click.echo(printable(f"  gap at: {site}"))
        return
    if rule is not None:
        click.echo(explain(rule), nl=False)
        return
    for row in EXPLANATIONS:
        click.echo(f"{row.rule}: {row.summary}")
    click.echo("eval-quality explain <rule> says what satisfies one; --contract FILE lists a contract's gaps.")
