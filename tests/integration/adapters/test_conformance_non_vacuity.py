"""Non-vacuity of the three conformance arms (preflight-adapter.md §5.6): for every case of the command (16),
api (19) and mcp (14) arm, a mutant of the real adapter that breaks exactly that behaviour fails exactly that
case, and the arm as a whole.

One table of mutants per arm (case id → the subject hooks that plant it), one test over all three. The
recurring ways of breaking an adapter are in ``mutants.py``; what is specific to one kind of adapter (a
shell that joins argv, an adapter letting a private address through, a lossy argument codec) is here,
beside its table. The mcp mutants run against the standard-library fixture server (``plain_server.py``,
same tools, starts in milliseconds); ``test_conformance_arms.py`` runs every arm unmutated (the mcp one
against both servers), so every subject is known to pass.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.adapters.command_line import LaunchSpec, ProcessResult
from evalquality_core.adapters.http import ApiTarget, HopResponse, HttpAdapter, assemble_api_observation
from evalquality_core.adapters.mcp_stdio import McpCallResult, McpSessionSpec
from evalquality_core.artifacts.port_messages import AbsentPayload, McpProbeObservation, read_probe_request
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.api_policy import ApiTargetDecision
from evalquality_core.probe.conformance import CONFORMANCE_OUTCOME_COUNTS, format_conformance_report
from evalquality_core.probe.observation import assemble_cli_observation
from tests.adapters import command_subject, http_subject, mcp_subject
from tests.adapters.conformance_arms import ARMS, Arm, arm_id, loopback_server, subject_of  # noqa: F401 (a fixture)
from tests.adapters.mutants import (
    call_twice,
    code_is,
    deny_when,
    detail_has,
    drop_field,
    fault_when,
    ignore_abort,
    mechanism_on_fault,
    port_on_fault,
    raising,
    retry_on_port_failure,
    rewrite_and_restamp,
    wrapping,
)


def scenario_port(around: Any) -> dict[str, Any]:
    """Hooks wrapping the port of the shared six."""
    return {"scenario_port": wrapping(around)}


def policy_port(around: Any) -> dict[str, Any]:
    """Hooks wrapping the port of the arm's own cases."""
    return {"policy_port": wrapping(around)}


def _spawn_failure_as_plain_error() -> Any:
    return port_on_fault(detail_has("could not start"), raising(lambda: OSError("spawn failed")))


# ---- the command arm -------------------------------------------------------------------------


def _fallback_executable(request: dict[str, Any]) -> dict[str, Any]:
    known = {"argv-echo", "failing", "artifact-writer", "sleeper", "flooder"}
    return request if request["executable"] in known else {**request, "executable": "argv-echo"}


def _drop_unpermitted_keys(request: dict[str, Any]) -> dict[str, Any]:
    channels = dict(request["channels"])
    channels["environment"] = {k: v for k, v in channels["environment"].items() if k == "EVALQ_COLOUR"}
    return {**request, "channels": channels}


def _through_a_shell(mechanism: Any) -> Any:
    def run(spec: LaunchSpec, abort: Any) -> ProcessResult:
        joined = " ".join(spec.argv)  # the classic injection bug: no quoting
        return mechanism(LaunchSpec(("/bin/sh", "-c", joined), spec.cwd, spec.env, spec.stdin,
                                    spec.max_elapsed_ms, spec.max_output_bytes), abort)

    return run


def _never_read_artifacts(inner: Any, request: Any, abort: Any) -> Any:
    observation = inner.probe(request, abort=abort)
    absent = {key: AbsentPayload(kind="absent") for key in observation.artifacts}
    return observation.model_copy(update={"artifacts": absent})


COMMAND_MUTANTS: dict[str, dict[str, Any]] = {
    "probe/typed-fault": scenario_port(_spawn_failure_as_plain_error()),
    "probe/single-underlying-call-on-success": {"scenario_mechanism": call_twice},
    "probe/single-underlying-call-on-failure": {"scenario_mechanism": retry_on_port_failure},
    "probe/prompt-abort": scenario_port(ignore_abort),
    "probe/no-in-band-error": scenario_port(port_on_fault(detail_has("is not read"), lambda request: assemble_cli_observation(
        read_probe_request(request), 0, b'{"error": "artifact unreadable"}', b"", {}))),
    "probe/schema-valid-return": scenario_port(drop_field("stderr")),
    "command/allow-authorized-invocation": policy_port(deny_when(lambda r: bool(r["channels"]["environment"]), "interface-not-authorized")),
    "command/observe-nonzero-exit": policy_port(fault_when(lambda o: o.exit_code != 0, "mutant: non-zero exit")),
    "command/deny-unmapped-interface": policy_port(rewrite_and_restamp(
        lambda r: r if r["interfaceId"] == command_subject.INTERFACE else {**r, "interfaceId": command_subject.INTERFACE})),
    "command/deny-unmapped-executable": policy_port(rewrite_and_restamp(_fallback_executable)),
    "command/deny-unauthorized-subcommand": policy_port(rewrite_and_restamp(lambda r: {**r, "subcommandPath": []})),
    "command/deny-unauthorized-environment-key": policy_port(rewrite_and_restamp(_drop_unpermitted_keys)),
    "command/argument-passed-literally": {"policy_mechanism": _through_a_shell},
    "command/capture-declared-artifact": policy_port(_never_read_artifacts),
    "command/cap-elapsed": {"policy_mechanism": mechanism_on_fault(detail_has("maxElapsedMs"), lambda _: ProcessResult(-9, b"", b""))},
    "command/cap-output-bytes": {"policy_mechanism": mechanism_on_fault(detail_has("maxOutputBytes"), raising(
        lambda: RuntimeFault("forbidden-target", "ProbeRequest", "mutant", reason="executable-not-authorized")))},
}


# ---- the api arm -----------------------------------------------------------------------------


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


def _fallback_service(request: dict[str, Any]) -> dict[str, Any]:
    return {**request, "interfaceId": http_subject.SERVICE} if request["interfaceId"] == "no-such-interface" else request


API_MUTANTS: dict[str, dict[str, Any]] = {
    "probe/typed-fault": scenario_port(port_on_fault(code_is("port-failure"), raising(lambda: ConnectionError("socket hang up")))),
    "probe/single-underlying-call-on-success": {"scenario_mechanism_wrap": call_twice},
    "probe/single-underlying-call-on-failure": {"scenario_mechanism_wrap": retry_on_port_failure},
    "probe/prompt-abort": scenario_port(ignore_abort),
    "probe/no-in-band-error": scenario_port(port_on_fault(code_is("port-contract-violation"), lambda request: assemble_api_observation(
        read_probe_request(request), 599, (), b'{"error":"odd status"}'))),
    "probe/schema-valid-return": scenario_port(drop_field("headers")),
    "probe/allow-authorized-loopback": policy_port(deny_when(lambda r: r["probeId"] == "authorized", "address-not-authorized")),
    "probe/observe-anomalous-status": policy_port(fault_when(lambda o: o.status >= 500, "mutant: the server failed")),
    "probe/deny-unmapped-interface": policy_port(rewrite_and_restamp(_fallback_service)),
    "probe/deny-unauthorized-loopback": {"adapter_class": _allowing("loopback")},
    "probe/deny-private": {"adapter_class": _allowing("private")},
    "probe/deny-link-local": {"adapter_class": _allowing("link-local")},
    "probe/deny-metadata": {"adapter_class": _allowing("metadata")},
    "probe/deny-unauthorized-method": {"adapter_class": _allowing(any_method=True)},
    "probe/deny-unauthorized-scheme": {"adapter_class": _allowing(any_scheme=True)},
    "probe/deny-on-redirect": {"adapter_class": _NoRedirectCheck},
    "probe/cap-redirects": {"adapter_class": _OffByOneRedirects},
    "probe/cap-response-bytes": {"policy_mechanism_wrap": mechanism_on_fault(detail_has("maxResponseBytes"), lambda hop: HopResponse(
        200, (("content-type", "text/plain"),), b"x" * hop.max_response_bytes, None))},
    "probe/cap-elapsed": {"policy_mechanism_wrap": mechanism_on_fault(detail_has("maxElapsedMs"), lambda _: HopResponse(504, (), b"", None))},
}


# ---- the mcp arm -----------------------------------------------------------------------------


def _malformed_frame_as_observation(request: Any) -> McpProbeObservation:
    parsed = read_probe_request(request)
    return McpProbeObservation(kind="mcp", probe_id=parsed.probe_id, interface_id=parsed.interface_id,
                               operation_id=parsed.operation_id, is_error=True, result=AbsentPayload(kind="absent"))


def _fallback_interface(request: dict[str, Any]) -> dict[str, Any]:
    known = {mcp_subject.INTERFACE, "fixture-mcp-slow", "fixture-mcp-flood"}
    return request if request["interfaceId"] in known else {**request, "interfaceId": mcp_subject.INTERFACE}


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


MCP_MUTANTS: dict[str, dict[str, Any]] = {
    "probe/typed-fault": scenario_port(_spawn_failure_as_plain_error()),
    "probe/single-underlying-call-on-success": {"scenario_mechanism": call_twice},
    "probe/single-underlying-call-on-failure": {"scenario_mechanism": retry_on_port_failure},
    "probe/prompt-abort": scenario_port(ignore_abort),
    "probe/no-in-band-error": scenario_port(port_on_fault(detail_has("not a JSON-RPC message"), _malformed_frame_as_observation)),
    "probe/schema-valid-return": scenario_port(drop_field("isError")),
    "mcp/allow-authorized-tool-call": policy_port(deny_when(lambda r: r["channels"]["arguments"] == {"value": "hello"}, "tool-not-authorized")),
    "mcp/observe-error-result": policy_port(fault_when(lambda o: o.is_error, "mutant: the tool answered with an error")),
    "mcp/deny-unmapped-interface": policy_port(rewrite_and_restamp(_fallback_interface)),
    "mcp/deny-unauthorized-tool": policy_port(rewrite_and_restamp(_fallback_tool)),
    "mcp/arguments-passed-as-declared": {"policy_mechanism": _ascii_arguments},
    "mcp/observe-declared-result-channel": policy_port(_first_key_only),
    "mcp/cap-elapsed": {"policy_mechanism": mechanism_on_fault(detail_has("maxElapsedMs"), lambda _: McpCallResult(
        is_error=True, has_result=False, result=None))},
    "mcp/cap-result-bytes": {"policy_mechanism": mechanism_on_fault(detail_has("maxOutputBytes"), raising(
        lambda: RuntimeFault("forbidden-target", "ProbeRequest", "mutant", reason="tool-not-authorized")))},
}


# ---- the three arms, one test ----------------------------------------------------------------

#: arm port → its table of mutants (case id → the subject hooks that plant it).
MUTANTS: dict[str, dict[str, dict[str, Any]]] = {
    "command-probe": COMMAND_MUTANTS,
    "environment-probe": API_MUTANTS,
    "mcp-probe": MCP_MUTANTS,
}


@pytest.mark.parametrize("arm", ARMS, ids=arm_id)
def test_every_case_has_a_mutant(arm: Arm) -> None:
    assert list(MUTANTS[arm.port]) == arm.case_ids


@pytest.mark.parametrize(("arm", "case_id"), [(arm, case_id) for arm in ARMS for case_id in MUTANTS[arm.port]], ids=arm_id)
def test_a_mutant_fails_exactly_its_own_case(arm: Arm, case_id: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    hooks = {**arm.mutant_options, **MUTANTS[arm.port][case_id]}
    report = arm.run(subject_of(arm, request, tmp_path, name=f"mutant of {case_id}", **hooks), clock=time.monotonic)
    failed = [outcome.id for outcome in report.outcomes if not outcome.passed]
    assert failed == [case_id], format_conformance_report(report)
    assert not report.passed
    lines = format_conformance_report(report).splitlines()
    total = CONFORMANCE_OUTCOME_COUNTS[arm.port]
    assert lines[0] == f'FAIL {arm.port} conformance for "mutant of {case_id}": {total - 1}/{total} assertions passed'
    assert [line.split(":")[0] for line in lines[1:]].count(f"FAIL {case_id}") == 1
