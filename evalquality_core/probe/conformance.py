"""The probe conformance harness (preflight-adapter.md §5): one runner, the shared six, and the expectations
every arm's own cases are rows of.

An arm is a :class:`ProbeArm`: the port name it reports (its §5.1 outcome count) and its table of
cases, the shared six of :func:`shared_probe_cases` (prefix ``probe``) followed by its own. The arms
live beside this module: command line (``command_conformance.py``, 6 + 10), api
(``api_conformance.py``, 6 + 13) and mcp (``mcp_conformance.py``, 6 + 8). :func:`run_probe_conformance`
runs an arm's rows against any ``ProbePort`` the subject builds and returns a report that passes only
when every outcome is present and passes (a short list fails). No pytest import, no thread, no clock
of its own: ``build`` is called fresh for every case, so call counts are absolute, and the clock is
injected.

The one decision that is not obvious: this module may not start threads or read a clock, so
``prompt-abort`` hands the port an abort signal that turns set ``abort_delay_s`` after the call began
(measured with the injected ``clock``), instead of aborting from another task. A port that polls its
signal sees it set mid-call; one that ignores it runs into its elapsed budget and fails the case.

An arm's own cases are mostly data: a :func:`request_case` row names the subject's request and the
expectation, :class:`Resolves` (a correlated observation of the arm's kind, then an optional check of
it) or :class:`Rejects` (a declared fault code, and how many underlying calls the port may have made),
plus an optional consistency rule: a subject whose own policy would make the case meaningless fails it
with a sentence saying so, never passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from evalquality_core.artifacts.port_messages import read_probe_observation, read_probe_request
from evalquality_core.faults import RUNTIME_FAULT_CODES, RuntimeFault
from evalquality_core.probe.port import ProbePort

__all__ = [
    "CONFORMANCE_OUTCOME_COUNTS",
    "DENIED",
    "OVER_BUDGET",
    "SCENARIOS",
    "Clock",
    "ConformanceCase",
    "ConformanceOutcome",
    "ConformanceReport",
    "ObservationKind",
    "allow_authorized_case",
    "deny_unmapped_interface_case",
    "PortInstance",
    "ProbeArm",
    "ProbeSubject",
    "Rejects",
    "Resolves",
    "Scenario",
    "format_conformance_report",
    "parsed_request",
    "request_case",
    "run_probe_conformance",
    "shared_probe_cases",
    "unmapped_interface_problem",
]

Scenario = Literal["resolves", "fails", "in-band-error", "hangs"]
SCENARIOS: tuple[Scenario, ...] = ("resolves", "fails", "in-band-error", "hangs")

#: §5.1: how many outcomes each arm must report (a shorter list never passes).
CONFORMANCE_OUTCOME_COUNTS: dict[str, int] = {
    "corpus": 6,
    "clock": 6,
    "file-system": 12,
    "environment-probe": 19,
    "command-probe": 16,
    "mcp-probe": 14,
}

Clock = Callable[[], float]


@dataclass(frozen=True)
class PortInstance:
    """A freshly built port, the count of its underlying calls, and an optional ``dispose``."""

    port: ProbePort
    underlying_calls: Callable[[], int]
    dispose: Callable[[], None] | None = None


@dataclass(frozen=True, kw_only=True)
class ProbeSubject:
    """What every arm's subject carries (each arm's subject adds its policy and its requests).

    ``build(scenario)`` serves the shared six; ``build_under_policy()`` returns a fresh port enforcing the
    subject's policy for the arm's own cases; ``authorized_request`` is the request that policy allows.
    Requests may be wire JSON or parsed models. ``prompt-abort`` sets its signal ``abort_delay_s`` into the
    call and allows ``abort_budget_ms`` after that for the port to settle.
    """

    name: str
    sample_request: Any
    build: Callable[[Scenario], PortInstance]
    build_under_policy: Callable[[], PortInstance]
    authorized_request: Any
    abort_budget_ms: int = 1000
    abort_delay_s: float = 0.2


S = TypeVar("S", bound=ProbeSubject)


@dataclass(frozen=True)
class ConformanceCase(Generic[S]):
    """One row of an arm: the spec's id, its title, and the check (``None`` = pass, else why not)."""

    id: str
    title: str
    check: Callable[[S, Clock], str | None]


@dataclass(frozen=True)
class ConformanceOutcome:
    """One assertion's result: ``<prefix>/<assertion>`` id, its title, pass/fail and why."""

    id: str
    title: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class ConformanceReport:
    """All outcomes of one arm against one subject; ``passed`` needs the full count, all passing."""

    subject: str
    port: str
    outcomes: tuple[ConformanceOutcome, ...]
    passed: bool


@dataclass(frozen=True)
class ProbeArm(Generic[S]):
    """One conformance arm: the port name it reports (§5.1) and its cases, the shared six first."""

    port: str
    cases: tuple[ConformanceCase[S], ...]

    def run(self, subject: S, *, clock: Clock, cases: tuple[ConformanceCase[S], ...] | None = None) -> ConformanceReport:
        """Run every case (or ``cases``) against ``subject``; ``clock`` is a monotonic seconds clock
        (``time.monotonic``). The report passes only with the arm's full count of outcomes, all passing."""
        return run_probe_conformance(self, subject, clock=clock, cases=cases)


@dataclass(frozen=True)
class ObservationKind:
    """The member of the observation union an arm accepts (``None``: any), and how it says a value is not one."""

    member: type | None
    invalid: str = "the resolved value is not a schema-valid ProbeObservation"

    def read(self, value: Any) -> Any | None:
        """The observation ``value`` is, when it is a schema-valid one of this kind; else ``None``."""
        try:
            observation = read_probe_observation(_wire_of(value))
        except RuntimeFault:
            return None
        return observation if self.member is None or isinstance(observation, self.member) else None


@dataclass(frozen=True)
class Resolves:
    """The request resolves with an observation of the arm's kind that echoes the request's identity;
    ``then(observation, subject)`` (if given) says what else must hold of it."""

    then: Callable[[Any, Any], str | None] | None = None


@dataclass(frozen=True)
class Rejects:
    """The request rejects with a declared fault of ``code``; ``calls`` is how many underlying calls the port
    may have made (a number, a function of the subject, or ``None`` for not counted)."""

    code: str
    calls: int | Callable[[Any], int] | None = None


#: Refused by the policy before anything is called.
DENIED = Rejects("forbidden-target", calls=0)
#: Cut off at a budget (the calls it took are not counted).
OVER_BUDGET = Rejects("budget-exhausted")


# ---------------------------------------------------------------------------------------------
# Harness plumbing


class _CaseFailed(Exception):
    """A check's early exit with its failure detail."""


def _fault_view(error: BaseException) -> RuntimeFault | None:
    # Structural, not isinstance (§5.1): a declared code and a string artifact path.
    code = getattr(error, "code", None)
    path = getattr(error, "artifact_path", None)
    if isinstance(error, Exception) and isinstance(code, str) and code in RUNTIME_FAULT_CODES and isinstance(path, str):
        return error  # type: ignore[return-value]
    return None


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


@dataclass
class _Settled:
    value: Any = None
    error: BaseException | None = None

    @property
    def resolved(self) -> bool:
        return self.error is None


def _call(instance: PortInstance, request: Any, abort: Any = None) -> _Settled:
    try:
        if abort is None:
            return _Settled(value=instance.port.probe(request))
        return _Settled(value=instance.port.probe(request, abort=abort))
    except Exception as error:  # a port must raise a declared fault; anything else is judged below
        return _Settled(error=error)


def _calls(instance: PortInstance) -> int:
    try:
        return instance.underlying_calls()
    except Exception as error:
        raise _CaseFailed(f"underlyingCalls() threw {_describe(error)}") from None


def _with_port(build: Callable[[], PortInstance], label: str, body: Callable[[PortInstance], str | None]) -> str | None:
    try:
        instance = build()
    except Exception as error:
        return f"build('{label}') threw {_describe(error)}"
    try:
        detail = body(instance)
    except _CaseFailed as failed:
        detail = str(failed)
    if instance.dispose is not None:
        try:
            instance.dispose()
        except Exception as error:
            suffix = f"dispose() threw {_describe(error)}"
            detail = suffix if detail is None else f"{detail}; {suffix}"
    return detail


def _wire_of(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True) if hasattr(value, "model_dump") else value


def parsed_request(request: Any) -> Any:
    """A subject's request as a parsed model (it may be given as wire JSON or as a model)."""
    return request if hasattr(request, "kind") and not isinstance(request, dict) else read_probe_request(request)


def _expect_code(settled: _Settled, expected: str) -> str | None:
    if settled.resolved:
        return f'resolved, expected a rejection with code "{expected}"'
    assert settled.error is not None
    fault = _fault_view(settled.error)
    if fault is None:
        return f"rejected with {_describe(settled.error)}, which is not a declared RuntimeFault"
    if fault.code != expected:
        return f'rejected with code "{fault.code}", expected "{expected}"'
    return None


def _observation_of(settled: _Settled, kind: ObservationKind) -> Any:
    """The schema-valid observation a call resolved with; raises ``_CaseFailed`` saying why there is none."""
    if not settled.resolved:
        assert settled.error is not None
        raise _CaseFailed(f"rejected with {_describe(settled.error)}, expected an observation")
    observation = kind.read(settled.value)
    if observation is None:
        raise _CaseFailed(kind.invalid)
    return observation


#: The identity an observation echoes from its request: (model field, wire name).
_ECHOED = (("kind", "kind"), ("probe_id", "probeId"), ("interface_id", "interfaceId"), ("operation_id", "operationId"))


def _resolves(settled: _Settled, request: Any, expect: Resolves, kind: ObservationKind, subject: Any) -> str | None:
    observation = _observation_of(settled, kind)
    parsed = parsed_request(request)
    for field, wire in _ECHOED:
        observed, asked = getattr(observation, field), getattr(parsed, field)
        if observed != asked:
            return f'observed {wire} "{observed}" for a request carrying "{asked}", so the answer does not correlate with the question'
    return None if expect.then is None else expect.then(observation, subject)


def _rejects(settled: _Settled, instance: PortInstance, expect: Rejects, subject: Any) -> str | None:
    problem = _expect_code(settled, expect.code)
    if problem is not None or expect.calls is None:
        return problem
    expected = expect.calls(subject) if callable(expect.calls) else expect.calls
    made = _calls(instance)
    if made == expected:
        return None
    where = " on a denial path" if expected == 0 else ""
    return f"made {made} underlying call(s){where}, expected {expected}"


def request_case(
    id: str,
    title: str,
    request: Callable[[S], Any],
    expect: Resolves | Rejects,
    consistency: Callable[[S], str | None] | None = None,
    *,
    kind: ObservationKind,
) -> ConformanceCase[S]:
    """One of an arm's own cases as data: ``request(subject)`` sent to a fresh policy port must meet ``expect``.

    ``consistency(subject)`` runs first; a sentence from it fails the case as ``subject is inconsistent: …``.
    """

    def check(subject: S, clock: Clock) -> str | None:
        if consistency is not None:
            problem = consistency(subject)
            if problem is not None:
                return f"subject is inconsistent: {problem}"
        sent = request(subject)

        def body(instance: PortInstance) -> str | None:
            settled = _call(instance, sent)
            if isinstance(expect, Resolves):
                return _resolves(settled, sent, expect, kind, subject)
            return _rejects(settled, instance, expect, subject)

        return _with_port(subject.build_under_policy, "policy", body)

    return ConformanceCase(id, title, check)


def allow_authorized_case(id: str, title: str, *, kind: ObservationKind) -> ConformanceCase[Any]:
    """Every arm's first own case: the subject's ``authorized_request`` resolves with a correlated observation."""
    return request_case(id, title, lambda subject: subject.authorized_request, Resolves(), kind=kind)


def deny_unmapped_interface_case(id: str, title: str, request: Callable[[Any], Any], *, kind: ObservationKind) -> ConformanceCase[Any]:
    """Every arm's ``deny-unmapped-interface``: refused with no underlying call, for a subject whose policy
    does not name that interface (:func:`unmapped_interface_problem`)."""
    return request_case(id, title, request, DENIED, unmapped_interface_problem(request), kind=kind)


def unmapped_interface_problem(request: Callable[[Any], Any]) -> Callable[[Any], str | None]:
    """The consistency rule of every ``deny-unmapped-interface`` case: the subject's policy must not name
    the interface its "unmapped" request asks for."""

    def problem(subject: Any) -> str | None:
        interface = parsed_request(request(subject)).interface_id
        if any(a.interface_id == interface for a in subject.policy.authorizations):
            return f'its policy names interface "{interface}"'
        return None

    return problem


# ---------------------------------------------------------------------------------------------
# The shared six (§5.2)


class _AbortAfter:
    """An abort signal that turns set ``delay`` seconds after it is armed (read through ``clock``)."""

    def __init__(self, clock: Clock, delay: float) -> None:
        self._clock = clock
        self.aborted_at = clock() + delay

    def is_set(self) -> bool:
        return self._clock() >= self.aborted_at


def _scenario_case(
    id: str, title: str, scenario: Scenario, judge: Callable[[Any, PortInstance, Clock], str | None]
) -> ConformanceCase[Any]:
    """A shared-six row: ``judge(subject, instance, clock)`` over a fresh port built for ``scenario``."""

    def check(subject: Any, clock: Clock) -> str | None:
        return _with_port(lambda: subject.build(scenario), scenario, lambda instance: judge(subject, instance, clock))

    return ConformanceCase(id, title, check)


def _typed_fault(subject: Any, instance: PortInstance, clock: Clock) -> str | None:
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


def _single_call_on_success(subject: Any, instance: PortInstance, clock: Clock) -> str | None:
    settled = _call(instance, subject.sample_request)
    if not settled.resolved:
        assert settled.error is not None
        return f"rejected with {_describe(settled.error)}, expected an observation"
    calls = _calls(instance)
    return None if calls == 1 else f"made {calls} underlying calls for one successful invocation, expected 1"


def _single_call_on_failure(subject: Any, instance: PortInstance, clock: Clock) -> str | None:
    _call(instance, subject.sample_request)
    calls = _calls(instance)
    return None if calls == 1 else f"made {calls} underlying calls for one failing invocation, expected 1 (no internal retry)"


def _prompt_abort(subject: Any, instance: PortInstance, clock: Clock) -> str | None:
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


def _no_in_band_error(subject: Any, instance: PortInstance, clock: Clock) -> str | None:
    settled = _call(instance, subject.sample_request)
    if settled.resolved:
        return "resolved with an in-band error instead of rejecting with a declared RuntimeFault"
    assert settled.error is not None
    if _fault_view(settled.error) is None:
        return f"rejected with {_describe(settled.error)}, which is not a declared RuntimeFault"
    return None


def _schema_valid_return(kind: ObservationKind) -> Callable[[Any, PortInstance, Clock], str | None]:
    def judge(subject: Any, instance: PortInstance, clock: Clock) -> str | None:
        settled = _call(instance, subject.sample_request)
        if not settled.resolved:
            assert settled.error is not None
            return f"rejected with {_describe(settled.error)}, expected an observation"
        return None if kind.read(settled.value) is not None else "the resolved value is not a schema-valid ProbeObservation"

    return judge


def shared_probe_cases(kind: ObservationKind) -> tuple[ConformanceCase[Any], ...]:
    """The six cases every arm starts with (§5.2, prefix ``probe``); ``kind`` is what "schema-valid" reads."""
    return (
        _scenario_case("probe/typed-fault", "a mechanism failure rejects with a declared RuntimeFault", "fails", _typed_fault),
        _scenario_case("probe/single-underlying-call-on-success", "one invocation makes exactly one underlying call on success",
                       "resolves", _single_call_on_success),
        _scenario_case("probe/single-underlying-call-on-failure", "one invocation makes exactly one underlying call on failure",
                       "fails", _single_call_on_failure),
        _scenario_case("probe/prompt-abort", "an abort during the call rejects promptly with aborted", "hangs", _prompt_abort),
        _scenario_case("probe/no-in-band-error", "an in-band error rejects instead of resolving", "in-band-error", _no_in_band_error),
        _scenario_case("probe/schema-valid-return", "a resolved value passes the ProbeObservation schema", "resolves",
                       _schema_valid_return(kind)),
    )


# ---------------------------------------------------------------------------------------------
# The runner and the report


def run_probe_conformance(
    arm: ProbeArm[S], subject: S, *, clock: Clock, cases: tuple[ConformanceCase[S], ...] | None = None
) -> ConformanceReport:
    """Run every case of ``arm`` (or ``cases``) against ``subject``; ``clock`` is a monotonic seconds clock."""
    outcomes = []
    for case in arm.cases if cases is None else cases:
        try:
            detail = case.check(subject, clock)
        except Exception as error:  # a broken subject fails its case, never the whole run
            detail = f"the case could not run: {_describe(error)}"
        outcomes.append(ConformanceOutcome(case.id, case.title, detail is None, detail or ""))
    passed = len(outcomes) == CONFORMANCE_OUTCOME_COUNTS[arm.port] and all(o.passed for o in outcomes)
    return ConformanceReport(subject.name, arm.port, tuple(outcomes), passed)


def format_conformance_report(report: ConformanceReport) -> str:
    """``PASS|FAIL <port> conformance for "<subject>": n/m assertions passed`` plus one line per outcome."""
    passes = sum(1 for o in report.outcomes if o.passed)
    lines = [
        f'{"PASS" if report.passed else "FAIL"} {report.port} conformance for "{report.subject}": '
        f"{passes}/{CONFORMANCE_OUTCOME_COUNTS.get(report.port, len(report.outcomes))} assertions passed"
    ]
    for outcome in report.outcomes:
        if outcome.passed:
            lines.append(f"pass {outcome.id}: {outcome.title}")
        else:
            lines.append(f"FAIL {outcome.id}: {outcome.title} - {outcome.detail}")
    return "\n".join(lines)
