"""``ProbeRouter``: one probe port over the sibling adapters, choosing by the request's ``kind``.

A suite's registry may hold command targets and tool servers side by side; whoever runs a suite's
plan (the reference evaluator, the generator, ``eval-quality probe``) sends each request to the
adapter of its kind: cli → ``CommandLineAdapter``, mcp → ``McpStdioAdapter``. A kind with no adapter
is refused as that adapter would refuse it (``forbidden-target``, ``interface-not-authorized``),
before anything starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from evalquality_core.adapters.command_line import CommandLineAdapter
from evalquality_core.adapters.mcp_stdio import McpStdioAdapter
from evalquality_core.artifacts.port_messages import (
    ApiProbeRequest,
    CliProbeRequest,
    McpProbeRequest,
    read_probe_request,
)
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.port import AbortSignal

__all__ = ["ProbeRouter"]

_TYPED = (CliProbeRequest, ApiProbeRequest, McpProbeRequest)


class ProbeRouter:
    """``ProbeRouter({"cli": CommandLineAdapter(...), "mcp": McpStdioAdapter(...)})``;
    ``probe(request, *, abort=None, workdir=None)`` is the chosen adapter's answer."""

    def __init__(self, adapters: Mapping[str, CommandLineAdapter | McpStdioAdapter]) -> None:
        self.adapters = dict(adapters)

    def probe(
        self,
        request: Any,
        *,
        abort: AbortSignal | None = None,
        workdir: str | os.PathLike[str] | None = None,
    ) -> Any:
        """Parse the request once, then hand it to the adapter of its kind."""
        parsed = request if isinstance(request, _TYPED) else read_probe_request(request)
        adapter = self.adapters.get(parsed.kind)
        if adapter is None:
            raise RuntimeFault(
                "forbidden-target",
                "ProbeRequest",
                f"no adapter here runs {parsed.kind} requests; no {parsed.kind} target is ever authorized",
                reason="interface-not-authorized",
            )
        return adapter.probe(parsed, abort=abort, workdir=workdir)

    def probe_calls(
        self,
        requests: list[Any],
        *,
        abort: AbortSignal | None = None,
        workdir: str | os.PathLike[str] | None = None,
    ) -> list[Any]:
        """A multi-call leg (adapters/leg_calls.py): all its requests to the adapter of the first one's
        kind, which answers them in one server or session when it can, else one after another."""
        parsed = [request if isinstance(request, _TYPED) else read_probe_request(request) for request in requests]
        adapter = self.adapters.get(parsed[0].kind)
        if adapter is None or any(one.kind != parsed[0].kind for one in parsed):
            raise RuntimeFault(
                "forbidden-target",
                "ProbeRequest",
                f"no adapter here runs a leg of {' and '.join(sorted({one.kind for one in parsed}))} calls",
                reason="interface-not-authorized",
            )
        if hasattr(adapter, "probe_calls"):
            return list(adapter.probe_calls(parsed, abort=abort, workdir=workdir))
        return [adapter.probe(one, abort=abort, workdir=workdir) for one in parsed]
