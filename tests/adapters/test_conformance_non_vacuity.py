"""Non-vacuity of the command arm (preflight-adapter.md §5.6): for every case, a mutant of the real
adapter that breaks exactly that behaviour fails exactly that case, and the arm as a whole."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.adapters.command_line import LaunchSpec, ProcessResult
from evalquality_core.artifacts.port_messages import AbsentPayload, read_probe_request, restamp_observation
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.conformance import (
    COMMAND_PROBE_CASES,
    format_conformance_report,
    run_command_line_probe_conformance,
)
from evalquality_core.probe.observation import assemble_cli_observation
from tests.adapters.command_subject import INTERFACE, make_subject


class PortWrapper:
    """A port that rewrites the request or the answer of the real adapter."""

    def __init__(self, inner: Any, around: Callable[[Any, dict[str, Any], Any], Any]) -> None:
        self.inner = inner
        self.around = around

    def probe(self, request: Any, *, abort: Any = None) -> Any:
        return self.around(self.inner, request, abort)


def scenario_port(around: Callable[[Any, dict[str, Any], Any], Any]) -> dict[str, Any]:
    return {"scenario_port": lambda adapter: PortWrapper(adapter, around)}


def policy_port(around: Callable[[Any, dict[str, Any], Any], Any]) -> dict[str, Any]:
    return {"policy_port": lambda adapter, _policy: PortWrapper(adapter, around)}


def _plain_error_on_spawn_failure(inner: Any, request: Any, abort: Any) -> Any:
    try:
        return inner.probe(request, abort=abort)
    except RuntimeFault as fault:
        if "could not start" in fault.detail:
            raise OSError("spawn failed") from None
        raise


def _call_twice_on_success(mechanism: Any) -> Any:
    def run(spec: LaunchSpec, abort: Any) -> ProcessResult:
        mechanism(spec, abort)
        return mechanism(spec, abort)

    return run


def _retry_on_failure(mechanism: Any) -> Any:
    def run(spec: LaunchSpec, abort: Any) -> ProcessResult:
        try:
            return mechanism(spec, abort)
        except RuntimeFault as fault:
            if fault.code != "port-failure":
                raise
            return mechanism(spec, abort)

    return run


def _ignore_abort(inner: Any, request: Any, abort: Any) -> Any:
    return inner.probe(request)


def _resolve_in_band_error(inner: Any, request: Any, abort: Any) -> Any:
    try:
        return inner.probe(request, abort=abort)
    except RuntimeFault as fault:
        if "is not read" not in fault.detail:
            raise
        return assemble_cli_observation(read_probe_request(request), 0, b'{"error": "artifact unreadable"}', b"", {})


def _drop_required_field(inner: Any, request: Any, abort: Any) -> Any:
    wire = inner.probe(request, abort=abort).model_dump(mode="json", by_alias=True)
    del wire["stderr"]
    return wire


def _deny_the_authorized_request(inner: Any, request: Any, abort: Any) -> Any:
    if request["channels"]["environment"]:
        raise RuntimeFault("forbidden-target", "ProbeRequest", "mutant", reason="interface-not-authorized")
    return inner.probe(request, abort=abort)


def _fault_on_nonzero_exit(inner: Any, request: Any, abort: Any) -> Any:
    observation = inner.probe(request, abort=abort)
    if observation.exit_code != 0:
        raise RuntimeFault("port-failure", "ProbeObservation", "mutant: non-zero exit")
    return observation


def _rewrite_and_restamp(rewrite: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[Any, dict[str, Any], Any], Any]:
    def around(inner: Any, request: dict[str, Any], abort: Any) -> Any:
        observation = inner.probe(rewrite(request), abort=abort)
        return restamp_observation(observation, read_probe_request(request))

    return around


def _fallback_interface(request: dict[str, Any]) -> dict[str, Any]:
    return {**request, "interfaceId": INTERFACE} if request["interfaceId"] != INTERFACE else request


def _fallback_executable(request: dict[str, Any]) -> dict[str, Any]:
    known = {"argv-echo", "failing", "artifact-writer", "sleeper", "flooder"}
    return request if request["executable"] in known else {**request, "executable": "argv-echo"}


def _drop_subcommand(request: dict[str, Any]) -> dict[str, Any]:
    return {**request, "subcommandPath": []}


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


def _timeout_as_observation(mechanism: Any) -> Any:
    def run(spec: LaunchSpec, abort: Any) -> ProcessResult:
        try:
            return mechanism(spec, abort)
        except RuntimeFault as fault:
            if "maxElapsedMs" in fault.detail:
                return ProcessResult(-9, b"", b"")
            raise

    return run


def _output_cap_as_denial(mechanism: Any) -> Any:
    def run(spec: LaunchSpec, abort: Any) -> ProcessResult:
        try:
            return mechanism(spec, abort)
        except RuntimeFault as fault:
            if "maxOutputBytes" in fault.detail:
                raise RuntimeFault("forbidden-target", "ProbeRequest", "mutant", reason="executable-not-authorized") from None
            raise

    return run


#: case id → the hooks of a mutant that breaks only that behaviour.
MUTANTS: dict[str, dict[str, Any]] = {
    "probe/typed-fault": scenario_port(_plain_error_on_spawn_failure),
    "probe/single-underlying-call-on-success": {"scenario_mechanism": _call_twice_on_success},
    "probe/single-underlying-call-on-failure": {"scenario_mechanism": _retry_on_failure},
    "probe/prompt-abort": scenario_port(_ignore_abort),
    "probe/no-in-band-error": scenario_port(_resolve_in_band_error),
    "probe/schema-valid-return": scenario_port(_drop_required_field),
    "command/allow-authorized-invocation": policy_port(_deny_the_authorized_request),
    "command/observe-nonzero-exit": policy_port(_fault_on_nonzero_exit),
    "command/deny-unmapped-interface": policy_port(_rewrite_and_restamp(_fallback_interface)),
    "command/deny-unmapped-executable": policy_port(_rewrite_and_restamp(_fallback_executable)),
    "command/deny-unauthorized-subcommand": policy_port(_rewrite_and_restamp(_drop_subcommand)),
    "command/deny-unauthorized-environment-key": policy_port(_rewrite_and_restamp(_drop_unpermitted_keys)),
    "command/argument-passed-literally": {"policy_mechanism": _through_a_shell},
    "command/capture-declared-artifact": policy_port(_never_read_artifacts),
    "command/cap-elapsed": {"policy_mechanism": _timeout_as_observation},
    "command/cap-output-bytes": {"policy_mechanism": _output_cap_as_denial},
}


def test_every_case_has_a_mutant() -> None:
    assert list(MUTANTS) == [case.id for case in COMMAND_PROBE_CASES]


@pytest.mark.parametrize("case_id", list(MUTANTS))
def test_a_mutant_fails_exactly_its_own_case(case_id: str, tmp_path: Path) -> None:
    subject = make_subject(tmp_path, name=f"mutant of {case_id}", **MUTANTS[case_id])
    report = run_command_line_probe_conformance(subject, clock=time.monotonic)
    failed = [outcome.id for outcome in report.outcomes if not outcome.passed]
    assert failed == [case_id], [(o.id, o.detail) for o in report.outcomes if not o.passed]
    assert not report.passed
    lines = format_conformance_report(report).splitlines()
    assert lines[0] == f'FAIL command-probe conformance for "mutant of {case_id}": 15/16 assertions passed'
    assert [line.split(":")[0] for line in lines[1:]].count(f"FAIL {case_id}") == 1
