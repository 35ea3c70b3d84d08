"""The mcp probe conformance arm: 6 shared + 8 mcp cases = 14 (preflight-adapter.md §5.5).

``run_mcp_probe_conformance(subject, clock=...)`` runs every row of ``MCP_PROBE_CASES`` through the
harness of ``probe.conformance`` (same scenarios as the other arms) and returns a report that passes
only with all fourteen outcomes present and passing. The shared six accept only an ``mcp``
observation as schema-valid.

The eight mcp cases, in the spec's order: an authorized tool call resolves with a correlated
observation; an error answer is an observation (``isError`` true, a result that is not absent); an
unmapped interface and an unauthorized tool are refused with no underlying call; an argument arrives
as declared (``result[argumentEchoResultKey] == argumentEchoValue``); the structured result is the
observation's result (a json object with every ``structuredResultKeys`` key); a session past
``maxElapsedMs`` and output past ``maxOutputBytes`` are ``budget-exhausted``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from evalquality_core.artifacts.port_messages import JsonPayload, McpProbeObservation, McpProbeRequest
from evalquality_core.probe.conformance import (
    DENIED,
    OVER_BUDGET,
    ConformanceCase,
    ObservationKind,
    ProbeArm,
    ProbeSubject,
    Resolves,
    allow_authorized_case,
    deny_unmapped_interface_case,
    parsed_request,
    request_case,
    shared_probe_cases,
)
from evalquality_core.probe.mcp_policy import McpTargetPolicy

__all__ = ["MCP_PROBE_ARM", "MCP_PROBE_CASES", "McpProbeSubject", "run_mcp_probe_conformance"]

#: The member of the observation union the mcp arm accepts.
MCP_OBSERVATION = ObservationKind(McpProbeObservation, "the resolved value is not a schema-valid mcp ProbeObservation")


@dataclass(frozen=True, kw_only=True)
class McpProbeSubject(ProbeSubject):
    """What the arm runs against. ``build(scenario)`` serves the shared six (same contract as the
    command arm's); ``build_under_policy()`` returns a fresh port enforcing ``policy`` for the eight
    mcp cases. Requests may be wire JSON or parsed models."""

    policy: McpTargetPolicy
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


def _unauthorized_tool_problem(subject: McpProbeSubject) -> str | None:
    request = parsed_request(subject.unauthorized_tool_request)
    if not isinstance(request, McpProbeRequest):
        return "the unauthorized-tool request is not an mcp request"
    authorization = next((a for a in subject.policy.authorizations if a.interface_id == request.interface_id), None)
    if authorization is None:
        return "the interface is unmapped, so the case cannot tell an unmapped interface from an unauthorized tool"
    if request.tool_name in authorization.tools:
        return f'tool "{request.tool_name}" is in the authorization\'s tools'
    return None


def _error_result(observation: McpProbeObservation, subject: McpProbeSubject) -> str | None:
    if not observation.is_error:
        return "observed isError false for a call that should answer with an error"
    if observation.result.kind == "absent":
        return "observed isError true with an absent result, expected the error the server answered"
    return None


def _argument_echoed(observation: McpProbeObservation, subject: McpProbeSubject) -> str | None:
    key, expected = subject.argument_echo_result_key, subject.argument_echo_value
    result = observation.result
    if not isinstance(result, JsonPayload) or not isinstance(result.value, dict) or key not in result.value:
        return f'the result is not a json object carrying "{key}"'
    got = result.value[key]
    if got != expected or type(got) is not type(expected):
        return f"the tool saw {key} = {got!r}, expected exactly {expected!r}"
    return None


def _structured_result(observation: McpProbeObservation, subject: McpProbeSubject) -> str | None:
    result = observation.result
    if not isinstance(result, JsonPayload) or not isinstance(result.value, dict):
        return f"the result is {result.kind}, expected the tool's structured content as a json object"
    missing = [k for k in subject.structured_result_keys if k not in result.value]
    return None if not missing else f"the result lacks key(s) {', '.join(missing)} of the structured content"


#: One of the arm's own cases: ``_case(id, title, request, expect, consistency=None)``.
_case = partial(request_case, kind=MCP_OBSERVATION)


#: The arm, in the spec's order: the shared six (prefix ``probe``), then the eight mcp cases.
MCP_PROBE_CASES: tuple[ConformanceCase[McpProbeSubject], ...] = (
    *shared_probe_cases(MCP_OBSERVATION),
    allow_authorized_case("mcp/allow-authorized-tool-call", "an authorized tool call resolves with a correlated observation", kind=MCP_OBSERVATION),
    _case("mcp/observe-error-result", "an error answer is an observation with isError and a result",
          lambda s: s.error_result_request, Resolves(_error_result)),
    deny_unmapped_interface_case("mcp/deny-unmapped-interface", "an unmapped interface is refused before any server starts",
                                 lambda s: s.unmapped_interface_request, kind=MCP_OBSERVATION),
    _case("mcp/deny-unauthorized-tool", "a tool the authorization does not list is refused before any server starts",
          lambda s: s.unauthorized_tool_request, DENIED, _unauthorized_tool_problem),
    _case("mcp/arguments-passed-as-declared", "an argument reaches the tool exactly as declared",
          lambda s: s.argument_echo_request, Resolves(_argument_echoed)),
    _case("mcp/observe-declared-result-channel", "the structured content is the observation's result",
          lambda s: s.structured_result_request, Resolves(_structured_result)),
    _case("mcp/cap-elapsed", "a session past maxElapsedMs rejects with budget-exhausted", lambda s: s.over_elapsed_request, OVER_BUDGET),
    _case("mcp/cap-result-bytes", "output past maxOutputBytes rejects with budget-exhausted", lambda s: s.over_output_request, OVER_BUDGET),
)

MCP_PROBE_ARM: ProbeArm[McpProbeSubject] = ProbeArm("mcp-probe", MCP_PROBE_CASES)

#: ``run_mcp_probe_conformance(subject, *, clock, cases=MCP_PROBE_CASES)`` → the report.
run_mcp_probe_conformance = MCP_PROBE_ARM.run
