"""The command-line probe conformance arm: 6 shared + 10 command cases = 16 (preflight-adapter.md §5.3).

``run_command_line_probe_conformance(subject, clock=...)`` runs every row of ``COMMAND_PROBE_CASES``
through the harness of ``probe.conformance`` (fresh build per case, structural fault view, the abort
signal that turns set after ``abort_delay_s``) and returns a report that passes only when all sixteen
outcomes are present and pass. The shared six accept only a ``cli`` observation as schema-valid. The
ten command cases are rows of data: the subject's request, what must happen to it, and the rule that
makes a subject inconsistent for that case.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from evalquality_core.artifacts.port_messages import CliProbeObservation, CliProbeRequest, JsonPayload
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
from evalquality_core.probe.policy import CommandTargetPolicy

__all__ = [
    "COMMAND_PROBE_ARM",
    "COMMAND_PROBE_CASES",
    "CommandProbeSubject",
    "run_command_line_probe_conformance",
]

#: The member of the observation union the command arm accepts.
CLI_OBSERVATION = ObservationKind(CliProbeObservation)


@dataclass(frozen=True, kw_only=True)
class CommandProbeSubject(ProbeSubject):
    """What the arm runs against (§5.3). ``build(scenario)`` serves the shared six;
    ``build_under_policy()`` returns a fresh port enforcing ``policy`` for the ten command cases.
    Requests may be wire JSON or parsed models."""

    policy: CommandTargetPolicy
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


def _matching(policy: CommandTargetPolicy, request: CliProbeRequest) -> list[Any]:
    return [a for a in policy.authorizations if a.interface_id == request.interface_id and a.executable == request.executable]


# ---------------------------------------------------------------------------------------------
# What makes a subject inconsistent for a case


def _unmapped_executable_problem(subject: CommandProbeSubject) -> str | None:
    request = parsed_request(subject.unmapped_executable_request)
    if not isinstance(request, CliProbeRequest):
        return "the unmapped-executable request is not a cli request"
    if _matching(subject.policy, request):
        return f'its policy maps interface "{request.interface_id}" and executable "{request.executable}"'
    return None


def _unauthorized_problem(
    request_of: Callable[[CommandProbeSubject], Any], label: str, allowed: Callable[[CliProbeRequest, list[Any]], str | None]
) -> Callable[[CommandProbeSubject], str | None]:
    """The rule of a case that needs a cli request whose (interface, executable) pair the policy maps, and
    which ``allowed(request, matching authorizations)`` finds nothing authorizing (``None``)."""

    def problem(subject: CommandProbeSubject) -> str | None:
        request = parsed_request(request_of(subject))
        if not isinstance(request, CliProbeRequest):
            return f"the unauthorized-{label} request is not a cli request"
        matching = _matching(subject.policy, request)
        if not matching:
            return f"the pair is unmapped, so the case cannot tell an unmapped pair from an unauthorized {label.replace('-', ' ')}"
        return allowed(request, matching)

    return problem


def _subcommand_permitted(request: CliProbeRequest, matching: list[Any]) -> str | None:
    if any(list(request.subcommand_path) in [list(p) for p in a.permitted_subcommand_paths] for a in matching):
        return "the request's subcommand path is permitted"
    return None


def _environment_permitted(request: CliProbeRequest, matching: list[Any]) -> str | None:
    permitted = {key for a in matching for key in a.permitted_environment_keys}
    if all(key in permitted for key in request.channels.environment):
        return "the request declares no environment key outside permittedEnvironmentKeys"
    return None


# ---------------------------------------------------------------------------------------------
# What else must hold of a resolved observation


def _exits_non_zero(observation: CliProbeObservation, subject: CommandProbeSubject) -> str | None:
    return "observed exit code 0 for a request that should exit non-zero" if observation.exit_code == 0 else None


def _argument_literal(observation: CliProbeObservation, subject: CommandProbeSubject) -> str | None:
    stdout = observation.stdout
    if not isinstance(stdout, JsonPayload) or not isinstance(stdout.value, dict) or not isinstance(stdout.value.get("argv"), list):
        return "stdout is not a json object carrying an argv array"
    argv = stdout.value["argv"]
    if argv != [subject.injection_argument_value]:
        return f"the target saw argv {argv!r}, expected exactly [{subject.injection_argument_value!r}]"
    return None


def _artifact_captured(observation: CliProbeObservation, subject: CommandProbeSubject) -> str | None:
    found = observation.artifacts.get(subject.artifact_id)
    expected = {"kind": "text", "value": subject.artifact_expected_text}
    got = None if found is None else found.model_dump(mode="json", by_alias=True)
    if got != expected:
        return f'artifact "{subject.artifact_id}" came back {got!r}, expected {expected!r}'
    return None


#: One of the arm's own cases: ``_case(id, title, request, expect, consistency=None)``.
_case = partial(request_case, kind=CLI_OBSERVATION)


#: The arm, in the spec's order: the shared six (prefix ``probe``), then the ten command cases.
COMMAND_PROBE_CASES: tuple[ConformanceCase[CommandProbeSubject], ...] = (
    *shared_probe_cases(CLI_OBSERVATION),
    allow_authorized_case("command/allow-authorized-invocation", "an authorized invocation resolves with a correlated observation", kind=CLI_OBSERVATION),
    _case("command/observe-nonzero-exit", "a non-zero exit is an observation, not a fault",
          lambda s: s.non_zero_exit_request, Resolves(_exits_non_zero)),
    deny_unmapped_interface_case("command/deny-unmapped-interface", "an unmapped interface is refused before any process starts",
                                 lambda s: s.unmapped_interface_request, kind=CLI_OBSERVATION),
    _case("command/deny-unmapped-executable", "an unmapped executable is refused before any process starts",
          lambda s: s.unmapped_executable_request, DENIED, _unmapped_executable_problem),
    _case("command/deny-unauthorized-subcommand", "an unlisted subcommand path is refused before any process starts",
          lambda s: s.unauthorized_subcommand_request, DENIED,
          _unauthorized_problem(lambda s: s.unauthorized_subcommand_request, "subcommand", _subcommand_permitted)),
    _case("command/deny-unauthorized-environment-key", "an unpermitted environment key is refused before any process starts",
          lambda s: s.unauthorized_environment_key_request, DENIED,
          _unauthorized_problem(lambda s: s.unauthorized_environment_key_request, "environment-key", _environment_permitted)),
    _case("command/argument-passed-literally", "an argument reaches the target as one literal argv element",
          lambda s: s.injection_request, Resolves(_argument_literal)),
    _case("command/capture-declared-artifact", "a declared artifact is read back and tagged",
          lambda s: s.artifact_request, Resolves(_artifact_captured)),
    _case("command/cap-elapsed", "a run past maxElapsedMs rejects with budget-exhausted", lambda s: s.over_elapsed_request, OVER_BUDGET),
    _case("command/cap-output-bytes", "output past maxOutputBytes rejects with budget-exhausted",
          lambda s: s.over_output_request, OVER_BUDGET),
)

COMMAND_PROBE_ARM: ProbeArm[CommandProbeSubject] = ProbeArm("command-probe", COMMAND_PROBE_CASES)

#: ``run_command_line_probe_conformance(subject, *, clock, cases=COMMAND_PROBE_CASES)`` → the report.
run_command_line_probe_conformance = COMMAND_PROBE_ARM.run
