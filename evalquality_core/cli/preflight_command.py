"""``eval-quality preflight``: pre-flight over observations gathered elsewhere (preflight-adapter.md §7).

One core call, ``preflight_from_observations``: the CLI never probes and never spawns a target. The
verdict is written whether it passed or not; the exit code is 0 when it passed and 3 otherwise (§7.4).
Progress lines go to stderr as ``eval-quality: preflight: <runId>: <message>``.
"""

from __future__ import annotations

from typing import Any

import click

from evalquality_core.artifacts.base import to_wire
from evalquality_core.cli.exit_codes import CommandOutcome, exit_code_of
from evalquality_core.cli.flags import FlagGrammarCommand
from evalquality_core.cli.io import (
    UsageError,
    check_out_not_input,
    check_single_stdin,
    out_path,
    read_json,
    write_artifact,
)
from evalquality_core.cli.main import cli
from evalquality_core.faults import RuntimeFault
from evalquality_core.pipeline import preflight_from_observations
from evalquality_core.printable import printable


def _as_list(value: Any, flag: str, schema_name: str) -> list[Any]:
    """A JSON array of documents; a single object is read as a one-element array."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return [value]
    raise RuntimeFault("schema-parse-failure", schema_name, f"--{flag} is neither an array nor an object")


@cli.command("preflight", cls=FlagGrammarCommand)
@click.option("--contract", "contract", required=True, help="Compiled eval contract (JSON).")
@click.option("--probes", "probes", required=True, help="JSON array of probes (an object is one probe).")
@click.option("--observations", "observations", required=True, help="JSON array of probe observations.")
@click.option("--run-id", "run_id", required=True, help="Run id stamped on the verdict.")
@click.option("--out", "out", default=None, help="File (*.json) or directory for preflight-verdict.json.")
@click.option("--strict", is_flag=True, default=False, help="Accepted by every command; no effect here.")
def preflight_command(
    contract: str, probes: str, observations: str, run_id: str, out: str | None, strict: bool
) -> None:
    """Reduce stored observations against the planned legs into a PreflightVerdict (exit 0 passed, 3 not)."""
    if not run_id.strip():
        raise UsageError("--run-id must not be empty or whitespace")
    inputs = {"contract": contract, "probes": probes, "observations": observations}
    check_single_stdin(inputs)
    target = out_path(out, "preflight-verdict")
    check_out_not_input(target, inputs)
    contract_value = read_json("contract", contract, "EvalContract")
    probe_values = _as_list(read_json("probes", probes, "Probe"), "probes", "Probe")
    observation_values = _as_list(read_json("observations", observations, "ProbeObservation"), "observations", "ProbeObservation")

    def sink(sink_run_id: str, stage: str, message: str) -> None:
        """One progress line on stderr (§2.6 sink)."""
        click.echo(printable(f"eval-quality: {stage}: {sink_run_id}: {message}"), err=True)

    verdict = preflight_from_observations(contract_value, probe_values, run_id, observation_values, sink=sink)
    wire = to_wire(verdict) if hasattr(verdict, "model_dump") else verdict
    write_artifact(wire, target)
    code = exit_code_of(CommandOutcome(kind="preflight", passed=bool(wire["passed"])), strict=strict)
    if code:
        raise click.exceptions.Exit(code)
