"""The api probe conformance arm: 6 shared + 13 api cases = 19, as a table (preflight-adapter.md §5.4).

``run_api_probe_conformance(subject, clock=...)`` runs every row of ``API_PROBE_CASES`` against any
``ProbePort`` the subject builds and returns a report that passes only with all nineteen outcomes
present and passing. It shares the harness of the command arm (``probe.conformance``: fresh build
per case, structural fault view, the abort signal that turns set after ``abort_delay_s``); only the
response check differs (any schema-valid observation, api or not, for the shared six).

A subject is inconsistent — and the case fails with a sentence saying so, never passes — when its
own policy would make the case meaningless (a "denied" interface the policy maps to that very
address, an "unmapped" interface it names, a method it authorizes, a redirect cap it does not set).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalquality_core.artifacts.port_messages import (
    ApiProbeObservation,
    ApiProbeRequest,
    read_probe_observation,
)
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.api_policy import ProbeTargetAuthorization, ProbeTargetPolicy
from evalquality_core.probe.conformance import (
    CONFORMANCE_OUTCOME_COUNTS,
    Clock,
    ConformanceCase,
    ConformanceOutcome,
    ConformanceReport,
    PortInstance,
    Scenario,
    _AbortAfter,
    _call,
    _calls,
    _describe,
    _expect_code,
    _fault_view,
    _parsed,
    _Settled,
    _wire_of,
    _with_port,
)

__all__ = ["API_PROBE_CASES", "ApiProbeSubject", "DeniedAddressRequests", "run_api_probe_conformance"]


@dataclass(frozen=True)
class DeniedAddressRequests:
    """Requests whose mapped target resolves into each denied class (no authorization names it)."""

    loopback: Any
    private: Any
    link_local: Any
    metadata: Any


@dataclass(frozen=True)
class ApiProbeSubject:
    """What the arm runs against (§5.4). ``build(scenario)`` serves the shared six;
    ``build_under_policy()`` returns a fresh port enforcing ``policy`` for the thirteen api cases."""

    name: str
    sample_request: Any
    build: Callable[[Scenario], PortInstance]
    policy: ProbeTargetPolicy
    build_under_policy: Callable[[], PortInstance]
    authorized_request: Any
    unmapped_request: Any
    denied_address_requests: DeniedAddressRequests
    unauthorized_method_request: Any
    unauthorized_scheme_request: Any
    redirecting_request: Any
    over_redirect_request: Any
    oversize_response_request: Any
    slow_request: Any
    faulting_request: Any
    abort_budget_ms: int = 1000
    abort_delay_s: float = 0.2


Check = Callable[[ApiProbeSubject, Clock], str | None]


def _observation(value: Any) -> Any | None:
    try:
        return read_probe_observation(_wire_of(value))
    except RuntimeFault:
        return None


def _scenario(subject: ApiProbeSubject, scenario: Scenario, body: Callable[[PortInstance], str | None]) -> str | None:
    return _with_port(lambda: subject.build(scenario), scenario, body)


def _policy_port(subject: ApiProbeSubject, body: Callable[[PortInstance], str | None]) -> str | None:
    return _with_port(subject.build_under_policy, "policy", body)


def _authorizations(subject: ApiProbeSubject, request: Any) -> list[ProbeTargetAuthorization]:
    interface = _parsed(request).interface_id
    return [a for a in subject.policy.authorizations if a.interface_id == interface]


# ---------------------------------------------------------------------------------------------
# The shared six (§5.2), with an observation of any kind accepted as schema-valid


def _typed_fault(subject: ApiProbeSubject, clock: Clock) -> str | None:
    def body(instance: PortInstance) -> str | None:
        settled = _call(instance, subject.sample_request)
        if settled.resolved:
            return "resolved under a failing mechanism, expected a declared RuntimeFault"
        assert settled.error is not None
        fault = _fault_view(settled.error)
        if fault is None:
            return f"rejected with {_describe(settled.error)}, which is not a declared RuntimeFault"
        if not fault.artifact_path:
            return f'rejected with code "{fault.code}" and an empty artifactPath'
        return None

    return _scenario(subject, "fails", body)


def _single_call_on_success(subject: ApiProbeSubject, clock: Clock) -> str | None:
    def body(instance: PortInstance) -> str | None:
        settled = _call(instance, subject.sample_request)
        if not settled.resolved:
            assert settled.error is not None
            return f"rejected with {_describe(settled.error)}, expected an observation"
        calls = _calls(instance)
        return None if calls == 1 else f"made {calls} underlying calls for one successful invocation, expected 1"

    return _scenario(subject, "resolves", body)


def _single_call_on_failure(subject: ApiProbeSubject, clock: Clock) -> str | None:
    def body(instance: PortInstance) -> str | None:
        _call(instance, subject.sample_request)
        calls = _calls(instance)
        return None if calls == 1 else f"made {calls} underlying calls for one failing invocation, expected 1 (no internal retry)"

    return _scenario(subject, "fails", body)


def _prompt_abort(subject: ApiProbeSubject, clock: Clock) -> str | None:
    def body(instance: PortInstance) -> str | None:
        signal = _AbortAfter(clock, subject.abort_delay_s)
        settled = _call(instance, subject.sample_request, abort=signal)
        late_ms = (clock() - signal.aborted_at) * 1000.0
        if settled.resolved:
            return 'resolved under a hanging mechanism, expected a rejection with code "aborted"'
        problem = _expect_code(settled, "aborted")
        if problem is not None:
            return problem
        if late_ms > subject.abort_budget_ms:
            return f"the call had not settled {subject.abort_budget_ms}ms after the signal aborted (it took {late_ms:.0f}ms)"
        return None

    return _scenario(subject, "hangs", body)


def _no_in_band_error(subject: ApiProbeSubject, clock: Clock) -> str | None:
    def body(instance: PortInstance) -> str | None:
        settled = _call(instance, subject.sample_request)
        if settled.resolved:
            return "resolved with an in-band error instead of rejecting with a declared RuntimeFault"
        assert settled.error is not None
        if _fault_view(settled.error) is None:
            return f"rejected with {_describe(settled.error)}, which is not a declared RuntimeFault"
        return None

    return _scenario(subject, "in-band-error", body)


def _schema_valid_return(subject: ApiProbeSubject, clock: Clock) -> str | None:
    def body(instance: PortInstance) -> str | None:
        settled = _call(instance, subject.sample_request)
        if not settled.resolved:
            assert settled.error is not None
            return f"rejected with {_describe(settled.error)}, expected an observation"
        return None if _observation(settled.value) is not None else "the resolved value is not a schema-valid ProbeObservation"

    return _scenario(subject, "resolves", body)


# ---------------------------------------------------------------------------------------------
# The thirteen api cases (§5.4)


def _echo_problem(request: Any, value: Any) -> str | None:
    observation = _observation(value)
    if observation is None:
        return "the resolved value is not a schema-valid ProbeObservation"
    parsed = _parsed(request)
    for field, wire in (("kind", "kind"), ("probe_id", "probeId"), ("interface_id", "interfaceId"), ("operation_id", "operationId")):
        observed, asked = getattr(observation, field), getattr(parsed, field)
        if observed != asked:
            return f'observed {wire} "{observed}" for a request carrying "{asked}", so the answer does not correlate with the question'
    return None


def _expect_resolves(subject: ApiProbeSubject, request: Any, extra: Callable[[Any], str | None] | None = None) -> str | None:
    def body(instance: PortInstance) -> str | None:
        settled = _call(instance, request)
        if not settled.resolved:
            assert settled.error is not None
            return f"rejected with {_describe(settled.error)}, expected an observation"
        problem = _echo_problem(request, settled.value)
        if problem is not None or extra is None:
            return problem
        return extra(_observation(settled.value))

    return _policy_port(subject, body)


def _expect_rejection(subject: ApiProbeSubject, request: Any, code: str, calls: int | None) -> str | None:
    def body(instance: PortInstance) -> str | None:
        settled: _Settled = _call(instance, request)
        problem = _expect_code(settled, code)
        if problem is not None:
            return problem
        if calls is None:
            return None
        made = _calls(instance)
        return None if made == calls else f"made {made} underlying call(s), expected {calls}"

    return _policy_port(subject, body)


def _allow_authorized_loopback(subject: ApiProbeSubject, clock: Clock) -> str | None:
    return _expect_resolves(subject, subject.authorized_request)


def _observe_anomalous_status(subject: ApiProbeSubject, clock: Clock) -> str | None:
    def status_500(observation: Any) -> str | None:
        if not isinstance(observation, ApiProbeObservation):
            return f'observed an observation of kind "{observation.kind}", expected status 500'
        return None if observation.status == 500 else f"observed status {observation.status}, expected 500"

    return _expect_resolves(subject, subject.faulting_request, status_500)


def _deny_unmapped_interface(subject: ApiProbeSubject, clock: Clock) -> str | None:
    if _authorizations(subject, subject.unmapped_request):
        return f'subject is inconsistent: its policy names interface "{_parsed(subject.unmapped_request).interface_id}"'
    return _expect_rejection(subject, subject.unmapped_request, "forbidden-target", 0)


def _denied_address(pick: Callable[[DeniedAddressRequests], Any]) -> Check:
    def check(subject: ApiProbeSubject, clock: Clock) -> str | None:
        request = pick(subject.denied_address_requests)
        if not _authorizations(subject, request):
            return "subject is inconsistent: the policy does not map the interface, so the case cannot tell an unmapped interface from a denied address"
        return _expect_rejection(subject, request, "forbidden-target", 0)

    return check


def _deny_unauthorized_method(subject: ApiProbeSubject, clock: Clock) -> str | None:
    request = _parsed(subject.unauthorized_method_request)
    if not isinstance(request, ApiProbeRequest):
        return "subject is inconsistent: the unauthorized-method request is not an api request"
    authorizations = _authorizations(subject, request)
    if not authorizations:
        return "subject is inconsistent: the interface is unmapped, so the case cannot tell it from an unauthorized method"
    if any(request.method in a.methods for a in authorizations):
        return f'subject is inconsistent: method "{request.method}" is authorized'
    return _expect_rejection(subject, subject.unauthorized_method_request, "forbidden-target", 0)


def _deny_unauthorized_scheme(subject: ApiProbeSubject, clock: Clock) -> str | None:
    if not _authorizations(subject, subject.unauthorized_scheme_request):
        return "subject is inconsistent: the interface is unmapped, so the case cannot tell it from an unauthorized scheme"
    return _expect_rejection(subject, subject.unauthorized_scheme_request, "forbidden-target", 0)


def _deny_on_redirect(subject: ApiProbeSubject, clock: Clock) -> str | None:
    authorizations = _authorizations(subject, subject.redirecting_request)
    if not authorizations or authorizations[0].max_redirects < 1:
        return "subject is inconsistent: the redirecting request's authorization allows no redirect to re-check"
    return _expect_rejection(subject, subject.redirecting_request, "forbidden-target", 1)


def _cap_redirects(subject: ApiProbeSubject, clock: Clock) -> str | None:
    authorizations = _authorizations(subject, subject.over_redirect_request)
    if not authorizations:
        return "subject is inconsistent: the over-redirect request's interface is unmapped"
    return _expect_rejection(subject, subject.over_redirect_request, "budget-exhausted", authorizations[0].max_redirects + 1)


def _cap_response_bytes(subject: ApiProbeSubject, clock: Clock) -> str | None:
    return _expect_rejection(subject, subject.oversize_response_request, "budget-exhausted", None)


def _cap_elapsed(subject: ApiProbeSubject, clock: Clock) -> str | None:
    return _expect_rejection(subject, subject.slow_request, "budget-exhausted", None)


#: The arm, in the spec's order: the shared six (prefix ``probe``), then the thirteen api cases.
API_PROBE_CASES: tuple[ConformanceCase, ...] = (
    ConformanceCase("probe/typed-fault", "a mechanism failure rejects with a declared RuntimeFault", _typed_fault),
    ConformanceCase("probe/single-underlying-call-on-success", "one invocation makes exactly one underlying call on success", _single_call_on_success),
    ConformanceCase("probe/single-underlying-call-on-failure", "one invocation makes exactly one underlying call on failure", _single_call_on_failure),
    ConformanceCase("probe/prompt-abort", "an abort during the call rejects promptly with aborted", _prompt_abort),
    ConformanceCase("probe/no-in-band-error", "an in-band error rejects instead of resolving", _no_in_band_error),
    ConformanceCase("probe/schema-valid-return", "a resolved value passes the ProbeObservation schema", _schema_valid_return),
    ConformanceCase("probe/allow-authorized-loopback", "an authorized loopback target resolves with a correlated observation", _allow_authorized_loopback),
    ConformanceCase("probe/observe-anomalous-status", "a 500 from an authorized target is an observation, not a fault", _observe_anomalous_status),
    ConformanceCase("probe/deny-unmapped-interface", "an interface the mapping does not name is refused before a packet leaves", _deny_unmapped_interface),
    ConformanceCase("probe/deny-unauthorized-loopback", "a loopback address no authorization names is denied", _denied_address(lambda d: d.loopback)),
    ConformanceCase("probe/deny-private", "a private RFC 1918 address is denied", _denied_address(lambda d: d.private)),
    ConformanceCase("probe/deny-link-local", "a link-local address is denied", _denied_address(lambda d: d.link_local)),
    ConformanceCase("probe/deny-metadata", "a cloud metadata address is denied", _denied_address(lambda d: d.metadata)),
    ConformanceCase("probe/deny-unauthorized-method", "a method the authorization does not list is denied", _deny_unauthorized_method),
    ConformanceCase("probe/deny-unauthorized-scheme", "a scheme the authorization does not name is denied", _deny_unauthorized_scheme),
    ConformanceCase("probe/deny-on-redirect", "a redirect to a target the policy denies is refused after one call", _deny_on_redirect),
    ConformanceCase("probe/cap-redirects", "a redirect chain past maxRedirects rejects with budget-exhausted", _cap_redirects),
    ConformanceCase("probe/cap-response-bytes", "a response past maxResponseBytes rejects with budget-exhausted", _cap_response_bytes),
    ConformanceCase("probe/cap-elapsed", "an exchange past maxElapsedMs rejects with budget-exhausted", _cap_elapsed),
)


def run_api_probe_conformance(
    subject: ApiProbeSubject, *, clock: Clock, cases: tuple[ConformanceCase, ...] = API_PROBE_CASES
) -> ConformanceReport:
    """Run every case against ``subject``; ``clock`` is a monotonic seconds clock (``time.monotonic``)."""
    outcomes = []
    for case in cases:
        try:
            detail = case.check(subject, clock)
        except Exception as error:  # a broken subject fails its case, never the whole run
            detail = f"the case could not run: {_describe(error)}"
        outcomes.append(ConformanceOutcome(case.id, case.title, detail is None, detail or ""))
    passed = len(outcomes) == CONFORMANCE_OUTCOME_COUNTS["environment-probe"] and all(o.passed for o in outcomes)
    return ConformanceReport(subject.name, "environment-probe", tuple(outcomes), passed)
