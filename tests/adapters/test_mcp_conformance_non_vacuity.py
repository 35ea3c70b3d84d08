"""Non-vacuity of the mcp arm (preflight-adapter.md §5.6): for every case, a mutant of the real stdio
adapter that breaks exactly that behaviour fails exactly that case, and the arm as a whole.

The mutants run against the standard-library fixture server (``plain_server.py``, same tools, starts
in milliseconds): fourteen runs of the arm against the SDK server would cost minutes of CI for no
extra proof. ``test_mcp_conformance.py`` runs the unmutated arm against the SDK server, and the last
test here runs it against this server too, so both subjects are known to pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.adapters.mcp_stdio import McpCallResult, McpSessionSpec
from evalquality_core.artifacts.port_messages import (
    AbsentPayload,
    McpProbeObservation,
    read_probe_request,
    restamp_observation,
)
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.conformance import format_conformance_report
from evalquality_core.probe.mcp_conformance import MCP_PROBE_CASES, run_mcp_probe_conformance
from tests.adapters.mcp_subject import INTERFACE, PLAIN_SERVER, make_mcp_subject


class PortWrapper:
    """A port that rewrites the request or the answer of the real adapter."""

    def __init__(self, inner: Any, around: Callable[[Any, Any, Any], Any]) -> None:
        self.inner = inner
        self.around = around

    def probe(self, request: Any, *, abort: Any = None) -> Any:
        return self.around(self.inner, request, abort)


def scenario_port(around: Callable[[Any, Any, Any], Any]) -> dict[str, Any]:
    return {"scenario_port": lambda adapter: PortWrapper(adapter, around)}


def policy_port(around: Callable[[Any, Any, Any], Any]) -> dict[str, Any]:
    return {"policy_port": lambda adapter: PortWrapper(adapter, around)}


def _plain_error_on_spawn_failure(inner: Any, request: Any, abort: Any) -> Any:
    try:
        return inner.probe(request, abort=abort)
    except RuntimeFault as fault:
        if "could not start" in fault.detail:
            raise OSError("spawn failed") from None
        raise


def _call_twice_on_success(mechanism: Any) -> Any:
    def run(spec: McpSessionSpec, abort: Any) -> McpCallResult:
        mechanism(spec, abort)
        return mechanism(spec, abort)

    return run


def _retry_on_failure(mechanism: Any) -> Any:
    def run(spec: McpSessionSpec, abort: Any) -> McpCallResult:
        try:
            return mechanism(spec, abort)
        except RuntimeFault as fault:
            if fault.code != "port-failure":
                raise
            return mechanism(spec, abort)

    return run


def _ignore_abort(inner: Any, request: Any, abort: Any) -> Any:
    return inner.probe(request)


def _malformed_frame_as_observation(inner: Any, request: Any, abort: Any) -> Any:
    try:
        return inner.probe(request, abort=abort)
    except RuntimeFault as fault:
        if "not a JSON-RPC message" not in fault.detail:
            raise
        parsed = read_probe_request(request)
        return McpProbeObservation(kind="mcp", probe_id=parsed.probe_id, interface_id=parsed.interface_id,
                                   operation_id=parsed.operation_id, is_error=True, result=AbsentPayload(kind="absent"))


def _drop_required_field(inner: Any, request: Any, abort: Any) -> Any:
    wire = inner.probe(request, abort=abort).model_dump(mode="json", by_alias=True)
    del wire["isError"]
    return wire


def _deny_the_authorized_request(inner: Any, request: Any, abort: Any) -> Any:
    if request["channels"]["arguments"] == {"value": "hello"}:
        raise RuntimeFault("forbidden-target", "ProbeRequest", "mutant", reason="tool-not-authorized")
    return inner.probe(request, abort=abort)


def _fault_on_error_result(inner: Any, request: Any, abort: Any) -> Any:
    observation = inner.probe(request, abort=abort)
    if observation.is_error:
        raise RuntimeFault("port-failure", "ProbeObservation", "mutant: the tool answered with an error")
    return observation


def _rewrite_and_restamp(rewrite: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[Any, Any, Any], Any]:
    def around(inner: Any, request: dict[str, Any], abort: Any) -> Any:
        observation = inner.probe(rewrite(request), abort=abort)
        return restamp_observation(observation, read_probe_request(request))

    return around


def _fallback_interface(request: dict[str, Any]) -> dict[str, Any]:
    known = {INTERFACE, "fixture-mcp-slow", "fixture-mcp-flood"}
    return request if request["interfaceId"] in known else {**request, "interfaceId": INTERFACE}


def _fallback_tool(request: dict[str, Any]) -> dict[str, Any]:
    known = {"echo", "describe_note", "rpc_error", "hang", "flood"}
    return request if request["toolName"] in known else {**request, "toolName": "echo", "channels": {"arguments": {"value": "x"}}}


def _ascii_arguments(mechanism: Any) -> Any:
    def run(spec: McpSessionSpec, abort: Any) -> McpCallResult:
        # The classic encoding bug: arguments squeezed through a lossy codec on their way out.
        mangled = {k: v.encode("ascii", "replace").decode("ascii") if isinstance(v, str) else v
                   for k, v in spec.arguments.items()}
        return mechanism(replace(spec, arguments=mangled), abort)

    return run


def _first_key_only(inner: Any, request: Any, abort: Any) -> Any:
    observation = inner.probe(request, abort=abort)
    value = getattr(observation.result, "value", None)
    if isinstance(value, dict) and len(value) > 2:  # a "summary" of a rich result: its first key
        first = next(iter(value))
        return observation.model_copy(update={"result": observation.result.model_copy(update={"value": {first: value[first]}})})
    return observation


def _timeout_as_observation(mechanism: Any) -> Any:
    def run(spec: McpSessionSpec, abort: Any) -> McpCallResult:
        try:
            return mechanism(spec, abort)
        except RuntimeFault as fault:
            if "maxElapsedMs" in fault.detail:
                return McpCallResult(is_error=True, has_result=False, result=None)
            raise

    return run


def _output_cap_as_denial(mechanism: Any) -> Any:
    def run(spec: McpSessionSpec, abort: Any) -> McpCallResult:
        try:
            return mechanism(spec, abort)
        except RuntimeFault as fault:
            if "maxOutputBytes" in fault.detail:
                raise RuntimeFault("forbidden-target", "ProbeRequest", "mutant", reason="tool-not-authorized") from None
            raise

    return run


#: case id → the hooks of a mutant that breaks only that behaviour.
MUTANTS: dict[str, dict[str, Any]] = {
    "probe/typed-fault": scenario_port(_plain_error_on_spawn_failure),
    "probe/single-underlying-call-on-success": {"scenario_mechanism": _call_twice_on_success},
    "probe/single-underlying-call-on-failure": {"scenario_mechanism": _retry_on_failure},
    "probe/prompt-abort": scenario_port(_ignore_abort),
    "probe/no-in-band-error": scenario_port(_malformed_frame_as_observation),
    "probe/schema-valid-return": scenario_port(_drop_required_field),
    "mcp/allow-authorized-tool-call": policy_port(_deny_the_authorized_request),
    "mcp/observe-error-result": policy_port(_fault_on_error_result),
    "mcp/deny-unmapped-interface": policy_port(_rewrite_and_restamp(_fallback_interface)),
    "mcp/deny-unauthorized-tool": policy_port(_rewrite_and_restamp(_fallback_tool)),
    "mcp/arguments-passed-as-declared": {"policy_mechanism": _ascii_arguments},
    "mcp/observe-declared-result-channel": policy_port(_first_key_only),
    "mcp/cap-elapsed": {"policy_mechanism": _timeout_as_observation},
    "mcp/cap-result-bytes": {"policy_mechanism": _output_cap_as_denial},
}


def test_every_case_has_a_mutant() -> None:
    assert list(MUTANTS) == [case.id for case in MCP_PROBE_CASES]


@pytest.mark.parametrize("case_id", list(MUTANTS))
def test_a_mutant_fails_exactly_its_own_case(case_id: str, tmp_path: Path) -> None:
    subject = make_mcp_subject(tmp_path, name=f"mutant of {case_id}", server=PLAIN_SERVER, **MUTANTS[case_id])
    report = run_mcp_probe_conformance(subject, clock=time.monotonic)
    failed = [outcome.id for outcome in report.outcomes if not outcome.passed]
    assert failed == [case_id], [(o.id, o.detail) for o in report.outcomes if not o.passed]
    assert not report.passed
    lines = format_conformance_report(report).splitlines()
    assert lines[0] == f'FAIL mcp-probe conformance for "mutant of {case_id}": 13/14 assertions passed'


def test_the_unmutated_adapter_passes_against_the_plain_server_too(tmp_path: Path) -> None:
    report = run_mcp_probe_conformance(make_mcp_subject(tmp_path, server=PLAIN_SERVER), clock=time.monotonic)
    assert report.passed, format_conformance_report(report)
