"""The api arm (preflight-adapter.md §5.4) against the real HTTP adapter and a real loopback server,
and its non-vacuity (§5.6): for every case, a mutant of the real adapter that breaks exactly that
behaviour fails exactly that case — and the arm as a whole."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from evalquality_core.adapters.http import (
    ApiTarget,
    HopResponse,
    HttpAdapter,
    HttpHop,
    assemble_api_observation,
)
from evalquality_core.artifacts.port_messages import read_probe_request, restamp_observation
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.api_conformance import API_PROBE_CASES, run_api_probe_conformance
from evalquality_core.probe.api_policy import ApiTargetDecision
from evalquality_core.probe.conformance import CONFORMANCE_OUTCOME_COUNTS, format_conformance_report
from tests.adapters.http_server import LoopbackServer
from tests.adapters.http_subject import SERVICE, make_subject


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


def test_the_real_adapter_passes_all_nineteen(server: LoopbackServer) -> None:
    report = run_api_probe_conformance(make_subject(server), clock=time.monotonic)
    assert report.passed, format_conformance_report(report)
    assert len(report.outcomes) == CONFORMANCE_OUTCOME_COUNTS["environment-probe"] == 19
    assert [o.id for o in report.outcomes] == [case.id for case in API_PROBE_CASES]


def test_a_short_list_never_passes(server: LoopbackServer) -> None:
    report = run_api_probe_conformance(make_subject(server), clock=time.monotonic, cases=API_PROBE_CASES[:18])
    assert all(o.passed for o in report.outcomes) and not report.passed


# ---------------------------------------------------------------------------------------------
# Mutants


class PortWrapper:
    """A port that rewrites the request or the answer of the real adapter."""

    def __init__(self, inner: Any, around: Callable[[Any, Any, Any], Any]) -> None:
        self.inner = inner
        self.around = around

    def probe(self, request: Any, *, abort: Any = None) -> Any:
        return self.around(self.inner, request, abort)


def _port(around: Callable[[Any, Any, Any], Any]) -> Callable[[Any], Any]:
    return lambda adapter: PortWrapper(adapter, around)


def _plain_error_on_failure(inner: Any, request: Any, abort: Any) -> Any:
    try:
        return inner.probe(request, abort=abort)
    except RuntimeFault as fault:
        if fault.code == "port-failure":
            raise ConnectionError("socket hang up") from None
        raise


def _call_twice(mechanism: Any) -> Any:
    def run(hop: HttpHop, abort: Any) -> HopResponse:
        mechanism(hop, abort)
        return mechanism(hop, abort)

    return run


def _retry_on_failure(mechanism: Any) -> Any:
    def run(hop: HttpHop, abort: Any) -> HopResponse:
        try:
            return mechanism(hop, abort)
        except RuntimeFault as fault:
            if fault.code != "port-failure":
                raise
            return mechanism(hop, abort)

    return run


def _ignore_abort(inner: Any, request: Any, abort: Any) -> Any:
    return inner.probe(request)


def _in_band_error_resolves(inner: Any, request: Any, abort: Any) -> Any:
    try:
        return inner.probe(request, abort=abort)
    except RuntimeFault as fault:
        if fault.code != "port-contract-violation":
            raise
        return assemble_api_observation(read_probe_request(request), 599, (), b'{"error":"odd status"}')


def _drop_required_field(inner: Any, request: Any, abort: Any) -> Any:
    wire = inner.probe(request, abort=abort).model_dump(mode="json", by_alias=True)
    del wire["headers"]
    return wire


def _deny_the_authorized(inner: Any, request: Any, abort: Any) -> Any:
    if request["probeId"] == "authorized":
        raise RuntimeFault("forbidden-target", "ProbeRequest", "mutant", reason="address-not-authorized")
    return inner.probe(request, abort=abort)


def _fault_on_5xx(inner: Any, request: Any, abort: Any) -> Any:
    observation = inner.probe(request, abort=abort)
    if observation.status >= 500:
        raise RuntimeFault("port-failure", "ProbeObservation", "mutant: the server failed")
    return observation


def _fallback_interface(inner: Any, request: Any, abort: Any) -> Any:
    rewritten = {**request, "interfaceId": SERVICE} if request["interfaceId"] == "no-such-interface" else request
    return restamp_observation(inner.probe(rewritten, abort=abort), read_probe_request(request))


def _allowing(address_class: str | None = None, *, any_method: bool = False, any_scheme: bool = False) -> type[HttpAdapter]:
    """An adapter whose first-hop decision lets one more thing through."""

    class Mutant(HttpAdapter):
        def _decide(self, interface_id: str, target: ApiTarget, method: str) -> ApiTargetDecision:
            if any_method:
                method = "GET"
            if any_scheme:
                authorization = next(a for a in self.policy.authorizations if a.interface_id == interface_id)
                target = replace(target, scheme=authorization.scheme)
            decision = super()._decide(interface_id, target, method)
            if decision.reason == "address-not-authorized" and decision.address_class == address_class:
                authorization = next(a for a in self.policy.authorizations if a.interface_id == interface_id)
                address = self.resolver(target.host, target.port)[0]
                return ApiTargetDecision(True, authorization, None, "mutant", decision.address_class, address)
            return decision

    return Mutant


class _NoRedirectCheck(HttpAdapter):
    def _decide_redirect(self, interface_id: str, target: ApiTarget, method: str) -> ApiTargetDecision:
        authorization = next(a for a in self.policy.authorizations if a.interface_id == interface_id)
        address = self.resolver(target.host, target.port)[0]
        return ApiTargetDecision(True, authorization, None, "mutant", "loopback", address)


class _OffByOneRedirects(HttpAdapter):
    @staticmethod
    def _redirects_exhausted(followed: int, caps: Any) -> bool:
        return followed > caps.max_redirects


def _truncate_oversize(mechanism: Any) -> Any:
    def run(hop: HttpHop, abort: Any) -> HopResponse:
        try:
            return mechanism(hop, abort)
        except RuntimeFault as fault:
            if "maxResponseBytes" not in fault.detail:
                raise
            return HopResponse(200, (("content-type", "text/plain"),), b"x" * hop.max_response_bytes, None)

    return run


def _timeout_as_504(mechanism: Any) -> Any:
    def run(hop: HttpHop, abort: Any) -> HopResponse:
        try:
            return mechanism(hop, abort)
        except RuntimeFault as fault:
            if "maxElapsedMs" not in fault.detail:
                raise
            return HopResponse(504, (), b"", None)

    return run


#: case id → the hooks of a mutant that breaks only that behaviour.
MUTANTS: dict[str, dict[str, Any]] = {
    "probe/typed-fault": {"scenario_port": _port(_plain_error_on_failure)},
    "probe/single-underlying-call-on-success": {"scenario_mechanism_wrap": _call_twice},
    "probe/single-underlying-call-on-failure": {"scenario_mechanism_wrap": _retry_on_failure},
    "probe/prompt-abort": {"scenario_port": _port(_ignore_abort)},
    "probe/no-in-band-error": {"scenario_port": _port(_in_band_error_resolves)},
    "probe/schema-valid-return": {"scenario_port": _port(_drop_required_field)},
    "probe/allow-authorized-loopback": {"policy_port": _port(_deny_the_authorized)},
    "probe/observe-anomalous-status": {"policy_port": _port(_fault_on_5xx)},
    "probe/deny-unmapped-interface": {"policy_port": _port(_fallback_interface)},
    "probe/deny-unauthorized-loopback": {"adapter_class": _allowing("loopback")},
    "probe/deny-private": {"adapter_class": _allowing("private")},
    "probe/deny-link-local": {"adapter_class": _allowing("link-local")},
    "probe/deny-metadata": {"adapter_class": _allowing("metadata")},
    "probe/deny-unauthorized-method": {"adapter_class": _allowing(any_method=True)},
    "probe/deny-unauthorized-scheme": {"adapter_class": _allowing(any_scheme=True)},
    "probe/deny-on-redirect": {"adapter_class": _NoRedirectCheck},
    "probe/cap-redirects": {"adapter_class": _OffByOneRedirects},
    "probe/cap-response-bytes": {"policy_mechanism_wrap": _truncate_oversize},
    "probe/cap-elapsed": {"policy_mechanism_wrap": _timeout_as_504},
}


def test_every_case_has_a_mutant() -> None:
    assert list(MUTANTS) == [case.id for case in API_PROBE_CASES]


@pytest.mark.parametrize("case_id", list(MUTANTS))
def test_a_mutant_fails_exactly_its_own_case(case_id: str, server: LoopbackServer) -> None:
    subject = make_subject(server, name=f"mutant of {case_id}", **MUTANTS[case_id])
    report = run_api_probe_conformance(subject, clock=time.monotonic)
    failed = [outcome.id for outcome in report.outcomes if not outcome.passed]
    assert failed == [case_id], format_conformance_report(report)
    assert not report.passed
