"""The environment-probe port: one synchronous method, ``probe(request) -> observation``.

preflight-adapter.md §3 and §3.4. The rules every implementation keeps (the conformance arm in
``probe/conformance.py`` checks them against real processes):

1. **One underlying call per invocation.** No retry, no cache, no fallback inside a port (§8); a
   harness cache sits *above* the port, keyed by ``request_cache_key``.
2. **Every answer is an observation.** A non-zero exit, a 4xx/5xx, a tool error: the call returns.
3. **Everything else is a declared ``RuntimeFault``** with a non-empty artifact path, never a plain
   exception: ``aborted`` (the abort signal was set before or during the call), ``schema-parse-failure``
   (the request fails its schema), ``forbidden-target`` with a reason (a policy denial, decided before
   any process starts or any byte is sent), ``budget-exhausted`` (a time or byte cap, never
   ``forbidden-target``), ``port-failure`` (nothing answered: spawn failure, transport error), and
   ``port-contract-violation`` (the answer fails the observation schema).
4. **The observation echoes** the request's ``kind``, ``probeId``, ``interfaceId`` and ``operationId``.
5. **Prompt abort.** When ``abort`` becomes set during a call, the call ends with ``aborted`` within a
   second, having killed whatever it started.

The port is synchronous (style.md §4): concurrency comes from the caller's threads (Prefect's runner).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from evalquality_core.artifacts.port_messages import (
    ApiProbeObservation,
    ApiProbeRequest,
    CliProbeObservation,
    CliProbeRequest,
    McpProbeObservation,
    McpProbeRequest,
)

__all__ = ["AbortSignal", "AnyObservation", "AnyRequest", "ProbePort"]

AnyRequest = CliProbeRequest | ApiProbeRequest | McpProbeRequest
AnyObservation = CliProbeObservation | ApiProbeObservation | McpProbeObservation


@runtime_checkable
class AbortSignal(Protocol):
    """What a port polls to learn that its caller gave up; ``threading.Event`` satisfies it."""

    def is_set(self) -> bool:
        """True once the caller has aborted."""
        ...


@runtime_checkable
class ProbePort(Protocol):
    """``probe(request, *, abort)``: run one request and return its observation (rules above).

    ``request`` may be a parsed model or its wire JSON (a port parses it, step 2 of §3.4).
    """

    def probe(self, request: AnyRequest | dict[str, object], *, abort: AbortSignal | None = None) -> AnyObservation:
        """Run ``request`` once and return what it answered, or raise a declared ``RuntimeFault``."""
        ...
