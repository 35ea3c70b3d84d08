"""The mcp probe conformance arm: 6 shared + 8 mcp cases = 14 (preflight-adapter.md §5.5).

``run_mcp_probe_conformance(subject, clock=...)`` runs every row of ``MCP_PROBE_CASES`` against any
``ProbePort`` the subject builds and returns a report that passes only with all fourteen outcomes
present and passing. The shared six are the command arm's own checks (``probe/`` prefix, same
harness, same scenarios); only "schema-valid return" reads the mcp member of the observation union.
No pytest import, no thread, no clock of its own (``clock`` is injected, as in the command arm).

The eight mcp cases, in the spec's order: an authorized tool call resolves with a correlated
observation; an error answer is an observation (``isError`` true, a result that is not absent); an
unmapped interface and an unauthorized tool are refused with no underlying call; an argument arrives
as declared (``result[argumentEchoResultKey] == argumentEchoValue``); the structured result is the
observation's result (a json object with every ``structuredResultKeys`` key); a session past
``maxElapsedMs`` and output past ``maxOutputBytes`` are ``budget-exhausted``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalquality_core.artifacts.port_messages import (
    JsonPayload,
    McpProbeObservation,
    McpProbeRequest,
    read_probe_observation,
)
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.conformance import (
    CONFORMANCE_OUTCOME_COUNTS,
    Clock,
    ConformanceOutcome,
    ConformanceReport,
    PortInstance,
    Scenario,
    _call,
    _calls,
    _describe,
    _expect_code,
    _no_in_band_error,
    _parsed,
    _prompt_abort,
    _scenario,
    _single_call_on_failure,
    _single_call_on_success,
    _typed_fault,
    _with_port,
)
from evalquality_core.probe.mcp_policy import McpTargetPolicy

__all__ = [
    "MCP_PROBE_CASES",
    "McpConformanceCase",
    "McpProbeSubject",
    "run_mcp_probe_conformance",
]


@dataclass(frozen=True)
class McpProbeSubject:
    """What the arm runs against. ``build(scenario)`` serves the shared six (same contract as the
    command arm's); ``build_under_policy()`` returns a fresh port enforcing ``policy`` for the eight
    mcp cases. Requests may be wire JSON or parsed models."""

    name: str
    sample_request: Any
    build: Callable[[Scenario], PortInstance]
    policy: McpTargetPolicy
    build_under_policy: Callable[[], PortInstance]
    authorized_request: Any
    error_result_request: Any
    unmapped_interface_request: Any
    unauthorized_tool_request: Any
    argument_echo_request: Any
    argument_echo_result_key: str
    argument_echo_value: Any
    structured_result_request: Any
    structured_result_keys: tuple[str, ...]
    over_elapsed_request: Any
    over_output_request: Any
    abort_budget_ms: int = 1000
    abort_delay_s: float = 0.2


McpCheck = Callable[[McpProbeSubject, Clock], str | None]


@dataclass(frozen=True)
class McpConformanceCase:
    """One row of the arm: the spec's id, its title, the check (``None`` = pass, else why not)."""

    id: str
    title: str
    check: McpCheck


def _wire_of(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True) if hasattr(value, "model_dump") else value


def _mcp_observation(value: Any) -> McpProbeObservation | None:
    try:
        observation = read_probe_observation(_wire_of(value))
    except RuntimeFault:
        return None
    return observation if isinstance(observation, McpProbeObservation) else None


def _policy_port(subject: McpProbeSubject, body: Callable[[PortInstance], str | None]) -> str | None:
    return _with_port(subject.build_under_policy, "policy", body)


def _expect_resolves(
    subject: McpProbeSubject, request: Any, extra: Callable[[McpProbeObservation], str | None] | None = None
) -> str | None:
    def body(instance: PortInstance) -> str | None:
        settled = _call(instance, request)
        if not settled.resolved:
            assert settled.error is not None
            return f"rejected with {_describe(settled.error)}, expected an observation"
        observation = _mcp_observation(settled.value)
        if observation is None:
            return "the resolved value is not a schema-valid mcp ProbeObservation"
        parsed = _parsed(request)
        for field, wire in (("probe_id", "probeId"), ("interface_id", "interfaceId"), ("operation_id", "operationId")):
            observed, asked = getattr(observation, field), getattr(parsed, field)
            if observed != asked:
                return f'observed {wire} "{observed}" for a request carrying "{asked}", so the answer does not correlate with the question'
        return None if extra is None else extra(observation)

    return _policy_port(subject, body)


def _expect_denial(subject: McpProbeSubject, request: Any) -> str | None:
    def body(instance: PortInstance) -> str | None:
        problem = _expect_code(_call(instance, request), "forbidden-target")
        if problem is not None:
            return problem
        calls = _calls(instance)
        return None if calls == 0 else f"made {calls} underlying call(s) on a denial path, expected 0"

    return _policy_port(subject, body)


def _expect_budget(subject: McpProbeSubject, request: Any) -> str | None:
    return _policy_port(subject, lambda instance: _expect_code(_call(instance, request), "budget-exhausted"))


# ---------------------------------------------------------------------------------------------
# The shared six's one mcp-specific check


def _schema_valid_return(subject: McpProbeSubject, clock: Clock) -> str | None:
    def body(instance: PortInstance) -> str | None:
        settled = _call(instance, subject.sample_request)
        if not settled.resolved:
            assert settled.error is not None
            return f"rejected with {_describe(settled.error)}, expected an observation"
        return None if _mcp_observation(settled.value) is not None else "the resolved value is not a schema-valid ProbeObservation"

    return _scenario(subject, "resolves", body)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# The eight mcp cases (§5.5)


def _allow_authorized(subject: McpProbeSubject, clock: Clock) -> str | None:
    return _expect_resolves(subject, subject.authorized_request)


def _observe_error_result(subject: McpProbeSubject, clock: Clock) -> str | None:
    def error_result(observation: McpProbeObservation) -> str | None:
        if not observation.is_error:
            return "observed isError false for a call that should answer with an error"
        if observation.result.kind == "absent":
            return "observed isError true with an absent result, expected the error the server answered"
        return None

    return _expect_resolves(subject, subject.error_result_request, error_result)


def _deny_unmapped_interface(subject: McpProbeSubject, clock: Clock) -> str | None:
    request = _parsed(subject.unmapped_interface_request)
    if any(a.interface_id == request.interface_id for a in subject.policy.authorizations):
        return f'subject is inconsistent: its policy names interface "{request.interface_id}"'
    return _expect_denial(subject, subject.unmapped_interface_request)


def _deny_unauthorized_tool(subject: McpProbeSubject, clock: Clock) -> str | None:
    request = _parsed(subject.unauthorized_tool_request)
    if not isinstance(request, McpProbeRequest):
        return "subject is inconsistent: the unauthorized-tool request is not an mcp request"
    authorization = next((a for a in subject.policy.authorizations if a.interface_id == request.interface_id), None)
    if authorization is None:
        return "subject is inconsistent: the interface is unmapped, so the case cannot tell an unmapped interface from an unauthorized tool"
    if request.tool_name in authorization.tools:
        return f'subject is inconsistent: tool "{request.tool_name}" is in the authorization\'s tools'
    return _expect_denial(subject, subject.unauthorized_tool_request)


def _arguments_passed_as_declared(subject: McpProbeSubject, clock: Clock) -> str | None:
    key, expected = subject.argument_echo_result_key, subject.argument_echo_value

    def echoed(observation: McpProbeObservation) -> str | None:
        result = observation.result
        if not isinstance(result, JsonPayload) or not isinstance(result.value, dict) or key not in result.value:
            return f'the result is not a json object carrying "{key}"'
        got = result.value[key]
        if got != expected or type(got) is not type(expected):
            return f'the tool saw {key} = {got!r}, expected exactly {expected!r}'
        return None

    return _expect_resolves(subject, subject.argument_echo_request, echoed)


def _observe_declared_result_channel(subject: McpProbeSubject, clock: Clock) -> str | None:
    def structured(observation: McpProbeObservation) -> str | None:
        result = observation.result
        if not isinstance(result, JsonPayload) or not isinstance(result.value, dict):
            return f"the result is {result.kind}, expected the tool's structured content as a json object"
        missing = [k for k in subject.structured_result_keys if k not in result.value]
        return None if not missing else f"the result lacks key(s) {', '.join(missing)} of the structured content"

    return _expect_resolves(subject, subject.structured_result_request, structured)


def _cap_elapsed(subject: McpProbeSubject, clock: Clock) -> str | None:
    return _expect_budget(subject, subject.over_elapsed_request)


def _cap_result_bytes(subject: McpProbeSubject, clock: Clock) -> str | None:
    return _expect_budget(subject, subject.over_output_request)


#: The arm, in the spec's order: the shared six (prefix ``probe``), then the eight mcp cases.
MCP_PROBE_CASES: tuple[McpConformanceCase, ...] = (
    McpConformanceCase("probe/typed-fault", "a mechanism failure rejects with a declared RuntimeFault", _typed_fault),  # type: ignore[arg-type]
    McpConformanceCase("probe/single-underlying-call-on-success", "one invocation makes exactly one underlying call on success", _single_call_on_success),  # type: ignore[arg-type]
    McpConformanceCase("probe/single-underlying-call-on-failure", "one invocation makes exactly one underlying call on failure", _single_call_on_failure),  # type: ignore[arg-type]
    McpConformanceCase("probe/prompt-abort", "an abort during the call rejects promptly with aborted", _prompt_abort),  # type: ignore[arg-type]
    McpConformanceCase("probe/no-in-band-error", "an in-band error rejects instead of resolving", _no_in_band_error),  # type: ignore[arg-type]
    McpConformanceCase("probe/schema-valid-return", "a resolved value passes the ProbeObservation schema", _schema_valid_return),
    McpConformanceCase("mcp/allow-authorized-tool-call", "an authorized tool call resolves with a correlated observation", _allow_authorized),
    McpConformanceCase("mcp/observe-error-result", "an error answer is an observation with isError and a result", _observe_error_result),
    McpConformanceCase("mcp/deny-unmapped-interface", "an unmapped interface is refused before any server starts", _deny_unmapped_interface),
    McpConformanceCase("mcp/deny-unauthorized-tool", "a tool the authorization does not list is refused before any server starts", _deny_unauthorized_tool),
    McpConformanceCase("mcp/arguments-passed-as-declared", "an argument reaches the tool exactly as declared", _arguments_passed_as_declared),
    McpConformanceCase("mcp/observe-declared-result-channel", "the structured content is the observation's result", _observe_declared_result_channel),
    McpConformanceCase("mcp/cap-elapsed", "a session past maxElapsedMs rejects with budget-exhausted", _cap_elapsed),
    McpConformanceCase("mcp/cap-result-bytes", "output past maxOutputBytes rejects with budget-exhausted", _cap_result_bytes),
)


def run_mcp_probe_conformance(
    subject: McpProbeSubject, *, clock: Clock, cases: tuple[McpConformanceCase, ...] = MCP_PROBE_CASES
) -> ConformanceReport:
    """Run every case against ``subject``; ``clock`` is a monotonic seconds clock (``time.monotonic``)."""
    outcomes = []
    for case in cases:
        try:
            detail = case.check(subject, clock)
        except Exception as error:  # a broken subject fails its case, never the whole run
            detail = f"the case could not run: {_describe(error)}"
        outcomes.append(ConformanceOutcome(case.id, case.title, detail is None, detail or ""))
    passed = len(outcomes) == CONFORMANCE_OUTCOME_COUNTS["mcp-probe"] and all(o.passed for o in outcomes)
    return ConformanceReport(subject.name, "mcp-probe", tuple(outcomes), passed)
