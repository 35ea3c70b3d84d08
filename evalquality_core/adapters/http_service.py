"""HTTP services as systems under test: start a suite's server per call, probe it, stop it.

A suite whose system is an HTTP service declares, in its ``targets.toml``, how to start it::

    [service]
    command = ["{python}", "../system/notes_api.py", "--port", "{port}"]
    cwd = "work"                 # relative to the staged workspace root
    port_placeholder = "port"    # the placeholder the chosen port fills, here and in [[target]] api entries
    ready_timeout_ms = 10000     # how long it may take to accept a TCP connection on that port

``ServiceAdapter.probe(request, workdir=<staged workspace>)`` answers an api request by starting a
**fresh server** from the staged workspace (clean or mutated system, the leg's fixtures) on an
ephemeral loopback port, waiting until the port accepts a connection, sending the request through
the HTTP adapter under the registry's api entries (``{port}`` filled), and stopping the server —
SIGKILL to its whole process group — when the call ends, however it ends (answer, fault, abort).
State that must outlive one call lives in the workspace's files (a run of several calls in one
workspace sees earlier writes), never in a server process. A cli request goes to the command-line
adapter under the same registry. The server's group is tracked with the command adapter's live
groups, so a flow's interrupt handler (``kill_all_live_groups``) and process exit kill it too, and
a workspace reclaimed after a killed run has its leftover processes killed first (tasks/workspace.py).

Readiness is a TCP connect to 127.0.0.1:<port>; a server that exits first, or is not ready in time,
is ``port-failure`` naming why (with the tail of its stderr). Choosing the port binds port 0 and
releases it before the server binds it: another process could take it in between, which shows up as
a server that exits at start (``port-failure``), never as a probe of the wrong server — the policy
still names only 127.0.0.1 on that port.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from evalquality_core.adapters.command_line import (
    CommandLineAdapter,
    kill_process_group,
    track_process_group,
    untrack_process_group,
)
from evalquality_core.adapters.http import HttpAdapter, TimedApiObservation
from evalquality_core.artifacts.port_messages import (
    ApiProbeRequest,
    CliProbeRequest,
    McpProbeRequest,
    read_probe_request,
)
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.port import AbortSignal
from evalquality_core.probe.targets import TargetRegistry

__all__ = ["ServiceAdapter", "ServiceDeclaration", "free_loopback_port", "running_service"]

_POLL_S = 0.01
_STDERR_TAIL = 400
_TYPED = (CliProbeRequest, ApiProbeRequest, McpProbeRequest)


@dataclass(frozen=True)
class ServiceDeclaration:
    """How a suite's HTTP service is started (module docstring); templates unfilled."""

    command: tuple[str, ...]
    cwd: str
    port_placeholder: str
    ready_timeout_ms: int

    @classmethod
    def from_registry(cls, registry: TargetRegistry) -> ServiceDeclaration | None:
        """The registry's ``[service]`` table, or ``None`` when it declares none."""
        if registry.service is None:
            return None
        table = registry.service
        return cls(tuple(table["command"]), table["cwd"], table["port_placeholder"], table["ready_timeout_ms"])

    def argv(self, values: Mapping[str, str]) -> list[str]:
        """The command with every placeholder filled (an unknown one is refused)."""
        filled = []
        for part in self.command:
            try:
                filled.append(part.format_map(dict(values)))
            except (KeyError, ValueError) as exc:
                raise RuntimeFault("schema-parse-failure", "targets.toml", f"service command {part!r}: no value for {exc}") from None
        return filled


def free_loopback_port() -> int:
    """An ephemeral port on 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(handle: Any) -> str:
    handle.seek(0)
    text: str = handle.read().decode("utf-8", errors="replace").strip()
    return text[-_STDERR_TAIL:] if text else "nothing on stderr"


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@contextmanager
def running_service(
    declaration: ServiceDeclaration,
    workspace: str | os.PathLike[str],
    substitutions: Mapping[str, str],
    abort: AbortSignal | None = None,
) -> Iterator[int]:
    """Start the service in ``workspace`` on a fresh loopback port, yield the port once it accepts
    connections, and SIGKILL its process group on exit (normal or not)."""
    port = free_loopback_port()
    values = {**substitutions, declaration.port_placeholder: str(port)}
    argv = declaration.argv(values)
    cwd = os.path.join(os.fspath(workspace), declaration.cwd)
    env = {"PATH": os.environ.get("PATH", "")}
    with tempfile.TemporaryFile() as stderr:
        try:
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                shell=False, start_new_session=True, close_fds=True,
            )
        except OSError as exc:
            raise RuntimeFault("port-failure", "ProbeObservation", f'could not start service "{argv[0]}" in "{cwd}": {exc}') from None
        track_process_group(proc.pid)
        try:
            deadline = time.monotonic() + declaration.ready_timeout_ms / 1000.0
            while not _accepts(port):
                if abort is not None and abort.is_set():
                    raise RuntimeFault("aborted", "ProbeObservation", "the caller aborted while the service was starting")
                if proc.poll() is not None:
                    raise RuntimeFault(
                        "port-failure", "ProbeObservation",
                        f"the service exited ({proc.returncode}) before accepting connections on port {port}: {_tail(stderr)}",
                    )
                if time.monotonic() >= deadline:
                    raise RuntimeFault(
                        "port-failure", "ProbeObservation",
                        f"the service did not accept connections on port {port} within {declaration.ready_timeout_ms} ms",
                    )
                time.sleep(_POLL_S)
            yield port
        finally:
            kill_process_group(proc.pid)
            untrack_process_group(proc.pid)
            proc.wait()
            kill_process_group(proc.pid)


class ServiceAdapter:
    """The ``ProbePort`` of a suite registry: api requests to a fresh service per call, cli requests
    to the command-line adapter. ``substitutions`` fill the registry's other placeholders
    (``{python}``)."""

    def __init__(self, registry: TargetRegistry, substitutions: Mapping[str, str], *, workdir: str | os.PathLike[str] | None = None) -> None:
        self.registry = registry
        self.substitutions = dict(substitutions)
        self.declaration = ServiceDeclaration.from_registry(registry)
        self.workdir = None if workdir is None else os.fspath(workdir)
        self._cli: CommandLineAdapter | None = None

    def _command_line(self) -> CommandLineAdapter:
        if self._cli is None:
            self._cli = CommandLineAdapter(self.registry.to_policy(self.substitutions), workdir=self.workdir)
        return self._cli

    def probe(self, request: Any, *, abort: AbortSignal | None = None, workdir: str | os.PathLike[str] | None = None) -> Any:
        """Run one request (cli or api) in ``workdir`` and return its observation."""
        return self.probe_timed(request, abort=abort, workdir=workdir).observation

    def probe_timed(self, request: Any, *, abort: AbortSignal | None = None, workdir: str | os.PathLike[str] | None = None) -> Any:
        """``probe``, with the elapsed milliseconds of the exchange (service start-up excluded)."""
        if abort is not None and abort.is_set():
            raise RuntimeFault("aborted", "ProbeRequest", "the caller aborted before the probe started")
        parsed = request if isinstance(request, _TYPED) else read_probe_request(request)
        if not isinstance(parsed, ApiProbeRequest):
            return self._command_line().probe_timed(parsed, abort=abort, workdir=workdir)
        if self.declaration is None:
            raise RuntimeFault(
                "forbidden-target", "ProbeRequest", "the registry declares no [service] to answer api requests",
                reason="interface-not-authorized",
            )
        where = os.fspath(workdir) if workdir is not None else self.workdir
        if where is None:
            raise RuntimeFault("port-failure", "ProbeObservation", "an api request needs a staged workspace to start its service in")
        # The interface must be one the registry authorizes before anything is started.
        if parsed.interface_id not in self.registry.api_interfaces():
            raise RuntimeFault(
                "forbidden-target", "ProbeRequest", f'no authorization names interface "{parsed.interface_id}"',
                reason="interface-not-authorized",
            )
        with running_service(self.declaration, where, self.substitutions, abort) as port:
            values = {**self.substitutions, self.declaration.port_placeholder: str(port)}
            adapter = HttpAdapter(self.registry.to_api_policy(values))
            timed: TimedApiObservation = adapter.probe_timed(parsed, abort=abort)
        return timed
