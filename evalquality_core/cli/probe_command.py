"""``eval-quality probe``: run one ProbeRequest through its adapter and print the observation.

A cli request runs through the command-line adapter, an api request through the HTTP adapter, an mcp
request through the stdio MCP adapter (one tool-server session), each under the registry's entries of
its kind.

Our addition to the reference CLI (whose commands never spawn): a way to try one leg by hand, under a
suite's target registry. ``--targets`` is a ``targets.toml``; its ``{python}`` placeholder is this
interpreter and ``--set name=value`` fills any other. A relative ``cwd`` in the registry resolves
against ``--workdir`` (default: the current directory). The observation (a non-zero exit included)
is written as canonical JSON plus a newline; a refusal or fault (forbidden-target, budget-exhausted,
port-failure, …) is one line ``eval-quality: <code>: <artifactPath>: <detail>`` and exit 5. An api
request runs under the registry's ``kind = "api"`` entries (``--set port=8080`` fills ``{port}``); a
4xx/5xx answer is an observation (exit 0), as a non-zero exit is.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from evalquality_core.adapters.command_line import CommandLineAdapter, kill_all_live_groups
from evalquality_core.adapters.mcp_stdio import McpStdioAdapter
from evalquality_core.artifacts.port_messages import (
    ApiProbeRequest,
    McpProbeRequest,
    observation_to_wire,
    read_probe_request,
)
from evalquality_core.cli.flags import FlagGrammarCommand
from evalquality_core.cli.io import (
    UsageError,
    check_out_not_input,
    check_single_stdin,
    out_path,
    read_bytes,
    read_json,
    write_artifact,
)
from evalquality_core.cli.main import cli
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.targets import parse_targets

if TYPE_CHECKING:
    from evalquality_core.adapters.http import HttpAdapter


def _substitutions(pairs: tuple[str, ...]) -> dict[str, str]:
    values = {"python": sys.executable}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f'--set expects name=value, got "{pair}"')
        values[name] = value
    return values


@cli.command(name="probe", cls=FlagGrammarCommand)
@click.option("--request", "request_path", required=True, help="The ProbeRequest JSON file, or - for stdin.")
@click.option("--targets", "targets_path", required=True, help="The suite's targets.toml (the target registry).")
@click.option("--workdir", default=None, help="Where a relative cwd of the registry resolves (default: here).")
@click.option("--set", "settings", multiple=True, help="Fill a {name} placeholder of the registry: name=value.")
@click.option("--out", default=None, help="A .json file, or a directory for probe-observation.json.")
def probe_command(
    request_path: str, targets_path: str, workdir: str | None, settings: tuple[str, ...], out: str | None
) -> None:
    """Run one ProbeRequest under the registry's policy and print its ProbeObservation."""
    given = {"request": request_path, "targets": targets_path, "workdir": workdir, "out": out}
    for flag, value in given.items():
        if value == "":  # §7.2: an empty value is a usage error (not "here", not the current directory)
            raise UsageError(f"--{flag} needs a non-empty value")
    inputs = {"request": request_path, "targets": targets_path}
    check_single_stdin(inputs)
    destination = out_path(out, "probe-observation")
    check_out_not_input(destination, inputs)
    raw_targets = read_bytes("targets", targets_path)
    try:
        text = raw_targets.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RuntimeFault("schema-parse-failure", targets_path, f"--targets is not UTF-8 at offset {exc.start}") from None
    registry = parse_targets(text, targets_path)
    request = read_probe_request(read_json("request", request_path, "ProbeRequest"))
    if workdir is not None and not Path(workdir).is_dir():
        raise UsageError(f'--workdir "{workdir}" is not a directory')
    adapter: CommandLineAdapter | HttpAdapter | McpStdioAdapter
    if isinstance(request, McpProbeRequest):
        adapter = McpStdioAdapter(registry.to_mcp_policy(_substitutions(settings)), workdir=workdir or ".")
    elif isinstance(request, ApiProbeRequest):  # api entries of the registry, through the HTTP adapter
        # Imported here: httpx costs about 0.1 s to import, and only an api request needs it.
        from evalquality_core.adapters.http import HttpAdapter

        adapter = HttpAdapter(registry.to_api_policy(_substitutions(settings)))
    else:
        adapter = CommandLineAdapter(registry.to_policy(_substitutions(settings)), workdir=workdir or ".")
    try:
        observation = adapter.probe(request)
    except BaseException as exc:
        if not isinstance(exc, Exception):  # Ctrl-C and friends: leave no target running
            kill_all_live_groups()
        raise
    write_artifact(observation_to_wire(observation), destination)
