"""The api probe conformance arm: 6 shared + 13 api cases = 19, as a table (preflight-adapter.md §5.4).

``run_api_probe_conformance(subject, clock=...)`` runs every row of ``API_PROBE_CASES`` through the
harness of ``probe.conformance`` and returns a report that passes only with all nineteen outcomes
present and passing. The shared six accept an observation of any kind as schema-valid.

A subject is inconsistent — and the case fails with a sentence saying so, never passes — when its
own policy would make the case meaningless (a "denied" interface the policy maps to that very
address, an "unmapped" interface it names, a method it authorizes, a redirect cap it does not set).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from evalquality_core.artifacts.port_messages import ApiProbeObservation, ApiProbeRequest
from evalquality_core.probe.api_policy import ProbeTargetAuthorization, ProbeTargetPolicy
from evalquality_core.probe.conformance import (
    DENIED,
    OVER_BUDGET,
    ConformanceCase,
    ObservationKind,
    ProbeArm,
    ProbeSubject,
    Rejects,
    Resolves,
    allow_authorized_case,
    deny_unmapped_interface_case,
    parsed_request,
    request_case,
    shared_probe_cases,
)

__all__ = ["API_PROBE_ARM", "API_PROBE_CASES", "ApiProbeSubject", "DeniedAddressRequests", "run_api_probe_conformance"]

#: The api arm reads any member of the observation union as schema-valid.
ANY_OBSERVATION = ObservationKind(None)


@dataclass(frozen=True)
class DeniedAddressRequests:
    """Requests whose mapped target resolves into each denied class (no authorization names it)."""

    loopback: Any
    private: Any
    link_local: Any
    metadata: Any


@dataclass(frozen=True, kw_only=True)
class ApiProbeSubject(ProbeSubject):
    """What the arm runs against (§5.4). ``build(scenario)`` serves the shared six;
    ``build_under_policy()`` returns a fresh port enforcing ``policy`` for the thirteen api cases."""

    policy: ProbeTargetPolicy
    unmapped_request: Any
    denied_address_requests: DeniedAddressRequests
    unauthorized_method_request: Any
    unauthorized_scheme_request: Any
    redirecting_request: Any
    over_redirect_request: Any
    oversize_response_request: Any
    slow_request: Any
    faulting_request: Any


def _authorizations(subject: ApiProbeSubject, request: Any) -> list[ProbeTargetAuthorization]:
    interface = parsed_request(request).interface_id
    return [a for a in subject.policy.authorizations if a.interface_id == interface]


# ---------------------------------------------------------------------------------------------
# What makes a subject inconsistent for a case


def _mapped(request: Callable[[ApiProbeSubject], Any], unmapped: str) -> Callable[[ApiProbeSubject], str | None]:
    """The case needs the request's interface mapped; ``unmapped`` says why, when it is not."""
    return lambda subject: None if _authorizations(subject, request(subject)) else unmapped


def _unauthorized_method_problem(subject: ApiProbeSubject) -> str | None:
    request = parsed_request(subject.unauthorized_method_request)
    if not isinstance(request, ApiProbeRequest):
        return "the unauthorized-method request is not an api request"
    authorizations = _authorizations(subject, request)
    if not authorizations:
        return "the interface is unmapped, so the case cannot tell it from an unauthorized method"
    if any(request.method in a.methods for a in authorizations):
        return f'method "{request.method}" is authorized'
    return None


def _redirect_problem(subject: ApiProbeSubject) -> str | None:
    authorizations = _authorizations(subject, subject.redirecting_request)
    if not authorizations or authorizations[0].max_redirects < 1:
        return "the redirecting request's authorization allows no redirect to re-check"
    return None


def _one_past_the_redirect_cap(subject: ApiProbeSubject) -> int:
    return _authorizations(subject, subject.over_redirect_request)[0].max_redirects + 1


def _status_500(observation: Any, subject: ApiProbeSubject) -> str | None:
    if not isinstance(observation, ApiProbeObservation):
        return f'observed an observation of kind "{observation.kind}", expected status 500'
    return None if observation.status == 500 else f"observed status {observation.status}, expected 500"


#: One of the arm's own cases: ``_case(id, title, request, expect, consistency=None)``.
_case = partial(request_case, kind=ANY_OBSERVATION)


_DENIED_ADDRESS = "the policy does not map the interface, so the case cannot tell an unmapped interface from a denied address"


def _denied_address(id: str, title: str, pick: Callable[[DeniedAddressRequests], Any]) -> ConformanceCase[ApiProbeSubject]:
    request: Callable[[ApiProbeSubject], Any] = lambda s: pick(s.denied_address_requests)  # noqa: E731
    return _case(id, title, request, DENIED, _mapped(request, _DENIED_ADDRESS))


#: The arm, in the spec's order: the shared six (prefix ``probe``), then the thirteen api cases.
API_PROBE_CASES: tuple[ConformanceCase[ApiProbeSubject], ...] = (
    *shared_probe_cases(ANY_OBSERVATION),
    allow_authorized_case("probe/allow-authorized-loopback", "an authorized loopback target resolves with a correlated observation", kind=ANY_OBSERVATION),
    _case("probe/observe-anomalous-status", "a 500 from an authorized target is an observation, not a fault",
          lambda s: s.faulting_request, Resolves(_status_500)),
    deny_unmapped_interface_case("probe/deny-unmapped-interface", "an interface the mapping does not name is refused before a packet leaves",
                                 lambda s: s.unmapped_request, kind=ANY_OBSERVATION),
    _denied_address("probe/deny-unauthorized-loopback", "a loopback address no authorization names is denied", lambda d: d.loopback),
    _denied_address("probe/deny-private", "a private RFC 1918 address is denied", lambda d: d.private),
    _denied_address("probe/deny-link-local", "a link-local address is denied", lambda d: d.link_local),
    _denied_address("probe/deny-metadata", "a cloud metadata address is denied", lambda d: d.metadata),
    _case("probe/deny-unauthorized-method", "a method the authorization does not list is denied",
          lambda s: s.unauthorized_method_request, DENIED, _unauthorized_method_problem),
    _case("probe/deny-unauthorized-scheme", "a scheme the authorization does not name is denied",
          lambda s: s.unauthorized_scheme_request, DENIED,
          _mapped(lambda s: s.unauthorized_scheme_request,
                  "the interface is unmapped, so the case cannot tell it from an unauthorized scheme")),
    _case("probe/deny-on-redirect", "a redirect to a target the policy denies is refused after one call",
          lambda s: s.redirecting_request, Rejects("forbidden-target", calls=1), _redirect_problem),
    _case("probe/cap-redirects", "a redirect chain past maxRedirects rejects with budget-exhausted",
          lambda s: s.over_redirect_request, Rejects("budget-exhausted", calls=_one_past_the_redirect_cap),
          _mapped(lambda s: s.over_redirect_request, "the over-redirect request's interface is unmapped")),
    _case("probe/cap-response-bytes", "a response past maxResponseBytes rejects with budget-exhausted",
          lambda s: s.oversize_response_request, OVER_BUDGET),
    _case("probe/cap-elapsed", "an exchange past maxElapsedMs rejects with budget-exhausted", lambda s: s.slow_request, OVER_BUDGET),
)

API_PROBE_ARM: ProbeArm[ApiProbeSubject] = ProbeArm("environment-probe", API_PROBE_CASES)

#: ``run_api_probe_conformance(subject, *, clock, cases=API_PROBE_CASES)`` → the report.
run_api_probe_conformance = API_PROBE_ARM.run
