"""The command-line probe conformance arm: 6 shared + 10 command cases, as a table (preflight-adapter.md §5).

``run_command_line_probe_conformance(subject, clock=...)`` runs every row of ``COMMAND_PROBE_CASES``
against any ``ProbePort`` the subject builds, and returns a report that passes only when all sixteen
outcomes are present and pass (a short list fails). No pytest import: a library user runs the arm
against their own adapter. ``build`` is called fresh for every case, so call counts are absolute.

The one decision that is not obvious: this module may not start threads or read a clock, so
``prompt-abort`` hands the port an abort signal that turns set ``abort_delay_s`` after the call began
(measured with the injected ``clock``), instead of aborting from another task. A port that polls its
signal sees it set mid-call; one that ignores it runs into its elapsed budget and fails the case.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from evalquality_core.artifacts.port_messages import (
    CliProbeObservation,
    CliProbeRequest,
    JsonPayload,
    read_probe_observation,
    read_probe_request,
)
from evalquality_core.faults import RUNTIME_FAULT_CODES, RuntimeFault
from evalquality_core.probe.policy import CommandTargetPolicy
from evalquality_core.probe.port import ProbePort

__all__ = [
    "COMMAND_PROBE_CASES",
    "CONFORMANCE_OUTCOME_COUNTS",
    "SCENARIOS",
    "CommandProbeSubject",
    "ConformanceCase",
    "ConformanceOutcome",
    "ConformanceReport",
    "PortInstance",
    "format_conformance_report",
    "run_command_line_probe_conformance",
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


@dataclass(frozen=True)
class CommandProbeSubject:
    """What the arm runs against (§5.3). ``build(scenario)`` serves the shared six;
    ``build_under_policy()`` returns a fresh port enforcing ``policy`` for the ten command cases.
    Requests may be wire JSON or parsed models."""

    name: str
    sample_request: Any
    build: Callable[[Scenario], PortInstance]
    policy: CommandTargetPolicy
    build_under_policy: Callable[[], PortInstance]
    authorized_request: Any
    unmapped_interface_request: Any
    unmapped_executable_request: Any
    unauthorized_subcommand_request: Any
    unauthorized_environment_key_request: Any
    non_zero_exit_request: Any
    injection_request: Any
    injection_argument_value: str
    artifact_request: Any
    artifact_id: str
    artifact_expected_text: str
    over_elapsed_request: Any
    over_output_request: Any
    abort_budget_ms: int = 1000
    abort_delay_s: float = 0.2


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


Check = Callable[[CommandProbeSubject, Clock], str | None]


@dataclass(frozen=True)
class ConformanceCase:
    """One row of the arm: the spec's id, its title, and the check (``None`` = pass, else why not)."""

    id: str
    title: str
    check: Check


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


def _scenario(subject: CommandProbeSubject, scenario: Scenario, body: Callable[[PortInstance], str | None]) -> str | None:
    return _with_port(lambda: subject.build(scenario), scenario, body)


def _policy_port(subject: CommandProbeSubject, body: Callable[[PortInstance], str | None]) -> str | None:
    return _with_port(subject.build_under_policy, "policy", body)


def _wire_of(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True)
    return value


def _schema_valid(value: Any) -> CliProbeObservation | None:
    try:
        observation = read_probe_observation(_wire_of(value))
    except RuntimeFault:
        return None
    return observation if isinstance(observation, CliProbeObservation) else None


def _echo_problem(request: Any, value: Any) -> str | None:
    observation = _schema_valid(value)
    if observation is None:
        return "the resolved value is not a schema-valid ProbeObservation"
    parsed = _parsed(request)
    for field, wire in (("kind", "kind"), ("probe_id", "probeId"), ("interface_id", "interfaceId"), ("operation_id", "operationId")):
        observed, asked = getattr(observation, field), getattr(parsed, field)
        if observed != asked:
            return f'observed {wire} "{observed}" for a request carrying "{asked}", so the answer does not correlate with the question'
    return None


def _parsed(request: Any) -> Any:
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


def _expect_denial(subject: CommandProbeSubject, request: Any) -> str | None:
    def body(instance: PortInstance) -> str | None:
        problem = _expect_code(_call(instance, request), "forbidden-target")
        if problem is not None:
            return problem
        calls = _calls(instance)
        return None if calls == 0 else f"made {calls} underlying call(s) on a denial path, expected 0"

    return _policy_port(subject, body)


def _expect_resolves(subject: CommandProbeSubject, request: Any, extra: Callable[[CliProbeObservation], str | None] | None = None) -> str | None:
    def body(instance: PortInstance) -> str | None:
        settled = _call(instance, request)
        if not settled.resolved:
            assert settled.error is not None
            return f"rejected with {_describe(settled.error)}, expected an observation"
        problem = _echo_problem(request, settled.value)
        if problem is not None or extra is None:
            return problem
        observation = _schema_valid(settled.value)
        assert observation is not None
        return extra(observation)

    return _policy_port(subject, body)


def _expect_budget(subject: CommandProbeSubject, request: Any) -> str | None:
    return _policy_port(subject, lambda instance: _expect_code(_call(instance, request), "budget-exhausted"))


def _matching(policy: CommandTargetPolicy, request: CliProbeRequest) -> list[Any]:
    return [a for a in policy.authorizations if a.interface_id == request.interface_id and a.executable == request.executable]


# ---------------------------------------------------------------------------------------------
# The shared six (§5.2)


def _typed_fault(subject: CommandProbeSubject, clock: Clock) -> str | None:
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


def _single_call_on_success(subject: CommandProbeSubject, clock: Clock) -> str | None:
    def body(instance: PortInstance) -> str | None:
        settled = _call(instance, subject.sample_request)
        if not settled.resolved:
            assert settled.error is not None
            return f"rejected with {_describe(settled.error)}, expected an observation"
        calls = _calls(instance)
        return None if calls == 1 else f"made {calls} underlying calls for one successful invocation, expected 1"

    return _scenario(subject, "resolves", body)


def _single_call_on_failure(subject: CommandProbeSubject, clock: Clock) -> str | None:
    def body(instance: PortInstance) -> str | None:
        _call(instance, subject.sample_request)
        calls = _calls(instance)
        return None if calls == 1 else f"made {calls} underlying calls for one failing invocation, expected 1 (no internal retry)"

    return _scenario(subject, "fails", body)


class _AbortAfter:
    """An abort signal that turns set ``delay`` seconds after it is armed (read through ``clock``)."""

    def __init__(self, clock: Clock, delay: float) -> None:
        self._clock = clock
        self.aborted_at = clock() + delay

    def is_set(self) -> bool:
        return self._clock() >= self.aborted_at


def _prompt_abort(subject: CommandProbeSubject, clock: Clock) -> str | None:
    def body(instance: PortInstance) -> str | None:
        signal = _AbortAfter(clock, subject.abort_delay_s)
        settled = _call(instance, subject.sample_request, abort=signal)
        late_ms = (clock() - signal.aborted_at) * 1000.0
        if settled.resolved:
            return "resolved under a hanging mechanism, expected a rejection with code \"aborted\""
        problem = _expect_code(settled, "aborted")
        if problem is not None:
            return problem
        if late_ms > subject.abort_budget_ms:
            return f"the call had not settled {subject.abort_budget_ms}ms after the signal aborted (it took {late_ms:.0f}ms)"
        return None

    return _scenario(subject, "hangs", body)


def _no_in_band_error(subject: CommandProbeSubject, clock: Clock) -> str | None:
    def body(instance: PortInstance) -> str | None:
        settled = _call(instance, subject.sample_request)
        if settled.resolved:
            return "resolved with an in-band error instead of rejecting with a declared RuntimeFault"
        assert settled.error is not None
        if _fault_view(settled.error) is None:
            return f"rejected with {_describe(settled.error)}, which is not a declared RuntimeFault"
        return None

    return _scenario(subject, "in-band-error", body)


def _schema_valid_return(subject: CommandProbeSubject, clock: Clock) -> str | None:
    def body(instance: PortInstance) -> str | None:
        settled = _call(instance, subject.sample_request)
        if not settled.resolved:
            assert settled.error is not None
            return f"rejected with {_describe(settled.error)}, expected an observation"
        return None if _schema_valid(settled.value) is not None else "the resolved value is not a schema-valid ProbeObservation"

    return _scenario(subject, "resolves", body)


# ---------------------------------------------------------------------------------------------
# The ten command cases (§5.3)


def _allow_authorized(subject: CommandProbeSubject, clock: Clock) -> str | None:
    return _expect_resolves(subject, subject.authorized_request)


def _observe_nonzero_exit(subject: CommandProbeSubject, clock: Clock) -> str | None:
    def nonzero(observation: CliProbeObservation) -> str | None:
        if observation.kind != "cli":
            return f'observed an observation of kind "{observation.kind}", expected a non-zero exit'
        if observation.exit_code == 0:
            return "observed exit code 0 for a request that should exit non-zero"
        return None

    return _expect_resolves(subject, subject.non_zero_exit_request, nonzero)


def _deny_unmapped_interface(subject: CommandProbeSubject, clock: Clock) -> str | None:
    request = _parsed(subject.unmapped_interface_request)
    if any(a.interface_id == request.interface_id for a in subject.policy.authorizations):
        return f'subject is inconsistent: its policy names interface "{request.interface_id}"'
    return _expect_denial(subject, subject.unmapped_interface_request)


def _deny_unmapped_executable(subject: CommandProbeSubject, clock: Clock) -> str | None:
    request = _parsed(subject.unmapped_executable_request)
    if not isinstance(request, CliProbeRequest):
        return "subject is inconsistent: the unmapped-executable request is not a cli request"
    if _matching(subject.policy, request):
        return f'subject is inconsistent: its policy maps interface "{request.interface_id}" and executable "{request.executable}"'
    return _expect_denial(subject, subject.unmapped_executable_request)


def _deny_unauthorized_subcommand(subject: CommandProbeSubject, clock: Clock) -> str | None:
    request = _parsed(subject.unauthorized_subcommand_request)
    if not isinstance(request, CliProbeRequest):
        return "subject is inconsistent: the unauthorized-subcommand request is not a cli request"
    matching = _matching(subject.policy, request)
    if not matching:
        return "subject is inconsistent: the pair is unmapped, so the case cannot tell an unmapped pair from an unauthorized subcommand"
    if any(list(request.subcommand_path) in [list(p) for p in a.permitted_subcommand_paths] for a in matching):
        return "subject is inconsistent: the request's subcommand path is permitted"
    return _expect_denial(subject, subject.unauthorized_subcommand_request)


def _deny_unauthorized_environment_key(subject: CommandProbeSubject, clock: Clock) -> str | None:
    request = _parsed(subject.unauthorized_environment_key_request)
    if not isinstance(request, CliProbeRequest):
        return "subject is inconsistent: the unauthorized-environment-key request is not a cli request"
    matching = _matching(subject.policy, request)
    if not matching:
        return "subject is inconsistent: the pair is unmapped, so the case cannot tell an unmapped pair from an unauthorized environment key"
    permitted = {key for a in matching for key in a.permitted_environment_keys}
    if all(key in permitted for key in request.channels.environment):
        return "subject is inconsistent: the request declares no environment key outside permittedEnvironmentKeys"
    return _expect_denial(subject, subject.unauthorized_environment_key_request)


def _argument_passed_literally(subject: CommandProbeSubject, clock: Clock) -> str | None:
    def literal(observation: CliProbeObservation) -> str | None:
        stdout = observation.stdout
        if not isinstance(stdout, JsonPayload) or not isinstance(stdout.value, dict) or not isinstance(stdout.value.get("argv"), list):
            return "stdout is not a json object carrying an argv array"
        argv = stdout.value["argv"]
        if argv != [subject.injection_argument_value]:
            return f"the target saw argv {argv!r}, expected exactly [{subject.injection_argument_value!r}]"
        return None

    return _expect_resolves(subject, subject.injection_request, literal)


def _capture_declared_artifact(subject: CommandProbeSubject, clock: Clock) -> str | None:
    def captured(observation: CliProbeObservation) -> str | None:
        found = observation.artifacts.get(subject.artifact_id)
        expected = {"kind": "text", "value": subject.artifact_expected_text}
        got = None if found is None else found.model_dump(mode="json", by_alias=True)
        if got != expected:
            return f'artifact "{subject.artifact_id}" came back {got!r}, expected {expected!r}'
        return None

    return _expect_resolves(subject, subject.artifact_request, captured)


def _cap_elapsed(subject: CommandProbeSubject, clock: Clock) -> str | None:
    return _expect_budget(subject, subject.over_elapsed_request)


def _cap_output_bytes(subject: CommandProbeSubject, clock: Clock) -> str | None:
    return _expect_budget(subject, subject.over_output_request)


#: The arm, in the spec's order: the shared six (prefix ``probe``), then the ten command cases.
COMMAND_PROBE_CASES: tuple[ConformanceCase, ...] = (
    ConformanceCase("probe/typed-fault", "a mechanism failure rejects with a declared RuntimeFault", _typed_fault),
    ConformanceCase("probe/single-underlying-call-on-success", "one invocation makes exactly one underlying call on success", _single_call_on_success),
    ConformanceCase("probe/single-underlying-call-on-failure", "one invocation makes exactly one underlying call on failure", _single_call_on_failure),
    ConformanceCase("probe/prompt-abort", "an abort during the call rejects promptly with aborted", _prompt_abort),
    ConformanceCase("probe/no-in-band-error", "an in-band error rejects instead of resolving", _no_in_band_error),
    ConformanceCase("probe/schema-valid-return", "a resolved value passes the ProbeObservation schema", _schema_valid_return),
    ConformanceCase("command/allow-authorized-invocation", "an authorized invocation resolves with a correlated observation", _allow_authorized),
    ConformanceCase("command/observe-nonzero-exit", "a non-zero exit is an observation, not a fault", _observe_nonzero_exit),
    ConformanceCase("command/deny-unmapped-interface", "an unmapped interface is refused before any process starts", _deny_unmapped_interface),
    ConformanceCase("command/deny-unmapped-executable", "an unmapped executable is refused before any process starts", _deny_unmapped_executable),
    ConformanceCase("command/deny-unauthorized-subcommand", "an unlisted subcommand path is refused before any process starts", _deny_unauthorized_subcommand),
    ConformanceCase("command/deny-unauthorized-environment-key", "an unpermitted environment key is refused before any process starts", _deny_unauthorized_environment_key),
    ConformanceCase("command/argument-passed-literally", "an argument reaches the target as one literal argv element", _argument_passed_literally),
    ConformanceCase("command/capture-declared-artifact", "a declared artifact is read back and tagged", _capture_declared_artifact),
    ConformanceCase("command/cap-elapsed", "a run past maxElapsedMs rejects with budget-exhausted", _cap_elapsed),
    ConformanceCase("command/cap-output-bytes", "output past maxOutputBytes rejects with budget-exhausted", _cap_output_bytes),
)


def run_command_line_probe_conformance(
    subject: CommandProbeSubject, *, clock: Clock, cases: tuple[ConformanceCase, ...] = COMMAND_PROBE_CASES
) -> ConformanceReport:
    """Run every case against ``subject``; ``clock`` is a monotonic seconds clock (``time.monotonic``)."""
    outcomes = []
    for case in cases:
        try:
            detail = case.check(subject, clock)
        except Exception as error:  # a broken subject fails its case, never the whole run
            detail = f"the case could not run: {_describe(error)}"
        outcomes.append(ConformanceOutcome(case.id, case.title, detail is None, detail or ""))
    passed = len(outcomes) == CONFORMANCE_OUTCOME_COUNTS["command-probe"] and all(o.passed for o in outcomes)
    return ConformanceReport(subject.name, "command-probe", tuple(outcomes), passed)


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
