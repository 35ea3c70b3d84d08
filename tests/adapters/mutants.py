"""Building blocks for mutants of the real adapters (preflight-adapter.md §5.6, non-vacuity).

A mutant breaks exactly one behaviour of a real adapter, at one of two places a conformance subject
lets a test hook in: around the *port* (``PortWrapper``: rewrite the request or the answer) or around
the *mechanism* (the counted function that spawns a process, opens a session or sends a hop). Each
helper here is one way of breaking things that recurs across the command, api and mcp arms; the
kind-specific mutants (a shell that joins argv, an adapter that lets a private address through, ...)
stay beside their arm's table in ``test_conformance_non_vacuity.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalquality_core.artifacts.port_messages import read_probe_request, restamp_observation
from evalquality_core.faults import RuntimeFault

#: ``around(inner_port, request, abort)`` → what the mutated port answers.
Around = Callable[[Any, Any, Any], Any]
#: ``mechanism(spec, abort)`` → the mechanism's result (a process result, a call result, a hop response).
Mechanism = Callable[[Any, Any], Any]
MechanismWrap = Callable[[Mechanism], Mechanism]
FaultMatch = Callable[[RuntimeFault], bool]


class PortWrapper:
    """A port that rewrites the request or the answer of the real adapter."""

    def __init__(self, inner: Any, around: Around) -> None:
        self.inner = inner
        self.around = around

    def probe(self, request: Any, *, abort: Any = None) -> Any:
        """The mutated answer."""
        return self.around(self.inner, request, abort)


def wrapping(around: Around) -> Callable[..., PortWrapper]:
    """A port hook for a subject (``scenario_port`` / ``policy_port``); extra arguments (a policy) are ignored."""
    return lambda adapter, *_: PortWrapper(adapter, around)


def detail_has(text: str) -> FaultMatch:
    """Matches a fault whose detail mentions ``text``."""
    return lambda fault: text in fault.detail


def code_is(code: str) -> FaultMatch:
    """Matches a fault of ``code``."""
    return lambda fault: fault.code == code


def raising(error: Callable[[], BaseException]) -> Callable[[Any], Any]:
    """An answer that raises a fresh ``error()`` instead (a plain exception, or a fault of the wrong code)."""

    def answer(_: Any) -> Any:
        raise error()

    return answer


def port_on_fault(match: FaultMatch, answer: Callable[[Any], Any]) -> Around:
    """Where the real port rejects with a matching fault, answer ``answer(request)`` instead."""

    def around(inner: Any, request: Any, abort: Any) -> Any:
        try:
            return inner.probe(request, abort=abort)
        except RuntimeFault as fault:
            if not match(fault):
                raise
        return answer(request)

    return around


def mechanism_on_fault(match: FaultMatch, answer: Callable[[Any], Any]) -> MechanismWrap:
    """Where the mechanism raises a matching fault, return ``answer(spec)`` instead."""

    def wrap(mechanism: Mechanism) -> Mechanism:
        def run(spec: Any, abort: Any) -> Any:
            try:
                return mechanism(spec, abort)
            except RuntimeFault as fault:
                if not match(fault):
                    raise
            return answer(spec)

        return run

    return wrap


def call_twice(mechanism: Mechanism) -> Mechanism:
    """Two underlying calls for one invocation."""

    def run(spec: Any, abort: Any) -> Any:
        mechanism(spec, abort)
        return mechanism(spec, abort)

    return run


def retry_on_port_failure(mechanism: Mechanism) -> Mechanism:
    """An internal retry after a mechanism failure."""

    def run(spec: Any, abort: Any) -> Any:
        try:
            return mechanism(spec, abort)
        except RuntimeFault as fault:
            if fault.code != "port-failure":
                raise
        return mechanism(spec, abort)

    return run


def ignore_abort(inner: Any, request: Any, abort: Any) -> Any:
    """The abort signal never reaches the real port."""
    return inner.probe(request)


def drop_field(name: str) -> Around:
    """The answer, as wire JSON, without one required field."""

    def around(inner: Any, request: Any, abort: Any) -> Any:
        wire = inner.probe(request, abort=abort).model_dump(mode="json", by_alias=True)
        del wire[name]
        return wire

    return around


def deny_when(asked: Callable[[Any], bool], reason: str) -> Around:
    """A denial (``forbidden-target`` with ``reason``) for the requests ``asked`` picks out."""

    def around(inner: Any, request: Any, abort: Any) -> Any:
        if asked(request):
            raise RuntimeFault("forbidden-target", "ProbeRequest", "mutant", reason=reason)
        return inner.probe(request, abort=abort)

    return around


def fault_when(observed: Callable[[Any], bool], detail: str) -> Around:
    """A ``port-failure`` instead of the observations ``observed`` picks out."""

    def around(inner: Any, request: Any, abort: Any) -> Any:
        observation = inner.probe(request, abort=abort)
        if observed(observation):
            raise RuntimeFault("port-failure", "ProbeObservation", detail)
        return observation

    return around


def rewrite_and_restamp(rewrite: Callable[[dict[str, Any]], dict[str, Any]]) -> Around:
    """Ask the real port a rewritten question, and stamp its answer with the original identity."""

    def around(inner: Any, request: dict[str, Any], abort: Any) -> Any:
        observation = inner.probe(rewrite(request), abort=abort)
        return restamp_observation(observation, read_probe_request(request))

    return around
