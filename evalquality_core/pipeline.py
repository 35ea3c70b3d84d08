"""Prefect-free orchestration of the stages (style.md §5): the only stage-composing module that calls a port.

``run_preflight`` plans, sends each leg through the probe port once, sequentially and in plan order
(preflight-adapter.md §2.6: a reset would change the fixture under another operation's witness), and
reduces. ``preflight_from_observations`` is the same without a port, for the CLI. This module decides
nothing: every rule lives in the stage it calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from evalquality_core.artifacts.port_messages import read_probe_observation, read_probe_request
from evalquality_core.evaluate.pointers import as_wire
from evalquality_core.faults import RuntimeFault
from evalquality_core.preflight.plan import PreflightPlan, plan_preflight
from evalquality_core.preflight.reduce import reduce_preflight

#: Receives one diagnostic line per pre-flight event: ``(run_id, stage, message)``.
Sink = Callable[[str, str, str], None]


class ProbePortLike(Protocol):
    """The environment-probe port as the pipeline uses it: one request in, one observation out."""

    def probe(self, request: Any) -> Any:
        """Send one request; return its observation or raise a ``RuntimeFault``."""


def invoke_port(port: ProbePortLike, request_wire: Any) -> Any:
    """The single awaiting seam (§2.6 ``invokePort``): parse, call once, parse the answer; never retry or cache.

    A request failing its schema is ``schema-parse-failure``; a ``RuntimeFault`` from the port passes
    through unchanged; anything else the port raises is ``port-failure``; an answer failing its schema is
    ``port-contract-violation``.
    """
    request = read_probe_request(request_wire, "ProbeRequest")
    try:
        answer = port.probe(request)
    except RuntimeFault:
        raise
    except Exception as exc:  # the port's own failure, whatever it is, is a port failure (§3.3)
        raise RuntimeFault("port-failure", "ProbeObservation", f"the probe port raised {type(exc).__name__}: {exc}") from exc
    return read_probe_observation(as_wire(answer), "ProbeObservation", code="port-contract-violation")


def _emit(sink: Sink | None, run_id: str, message: str) -> None:
    if sink is not None:
        sink(run_id, "preflight", message)


def run_preflight(
    contract: Any, probes: Sequence[Any], run_id: str, port: ProbePortLike, *, sink: Sink | None = None
) -> Any:
    """Plan, probe each leg once in plan order, reduce (§2.6): → ``PreflightVerdict``.

    A ``RuntimeFault`` from any leg propagates at once: a failed probe is a fault, a failed pre-flight
    is a verdict.
    """
    plan = plan_preflight(contract, probes, run_id)
    observations = []
    for leg in plan.legs:
        _emit(sink, run_id, f'leg "{leg.leg_id}": planned')
        observations.append(invoke_port(port, leg.request))
        _emit(sink, run_id, f'leg "{leg.leg_id}": observed')
    return _reduce(plan, observations, sink)


def preflight_from_observations(
    contract: Any, probes: Sequence[Any], run_id: str, observations: Sequence[Any], *, sink: Sink | None = None
) -> Any:
    """Pre-flight over observations gathered elsewhere (§2.6): plan, match answers by probe id, reduce."""
    parsed = [
        read_probe_observation(as_wire(observation), f"ProbeObservation[{index}]")
        for index, observation in enumerate(observations)
    ]
    plan = plan_preflight(contract, probes, run_id)
    answered = {observation.probe_id for observation in parsed}
    for leg in plan.legs:
        _emit(sink, run_id, f'leg "{leg.leg_id}": planned')
        _emit(sink, run_id, f'leg "{leg.leg_id}": ' + ("observed" if leg.leg_id in answered else "no observation"))
    return _reduce(plan, parsed, sink)


def _reduce(plan: PreflightPlan, observations: Sequence[Any], sink: Sink | None) -> Any:
    verdict = reduce_preflight(plan, observations)
    passed = as_wire(verdict)["passed"]
    _emit(sink, plan.run_id, f"reduced {len(plan.legs)} leg(s): {'passed' if passed else 'failed'}")
    return verdict
