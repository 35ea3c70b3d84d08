"""The conformance subject for the real command-line adapter: fixture scripts run by this interpreter.

Every target is ``sys.executable`` with a fixture script under ``tests/fixtures/commands/`` as its fixed
leading argument, so the arm exercises real child processes. ``make_subject`` also takes mutation hooks
so the non-vacuity test can break exactly one behaviour at a time (preflight-adapter.md §5.6).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalquality_core.adapters.command_line import CommandLineAdapter, LaunchSpec, ProcessResult, run_process
from evalquality_core.probe.command_conformance import CommandProbeSubject
from evalquality_core.probe.conformance import PortInstance, Scenario
from evalquality_core.probe.policy import CommandTargetPolicy, parse_command_target_policy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "commands"
INTERFACE = "fixture-cli"
INJECTION_VALUE = "literal-$(echo pwned); `id` | cat > /dev/null"
ARTIFACT_TEXT = "hello-artifact"


def authorization(executable: str, script: str, **overrides: Any) -> dict[str, Any]:
    """One wire-shaped authorization running ``script`` with this interpreter."""
    entry: dict[str, Any] = {
        "interfaceId": INTERFACE,
        "executable": executable,
        "target": sys.executable,
        "targetArgs": [str(FIXTURES / script)],
        "permittedSubcommandPaths": [[]],
        "permittedEnvironmentKeys": ["EVALQ_COLOUR"],
        "cwd": ".",
        "artifacts": {},
        "maxElapsedMs": 20000,
        "maxOutputBytes": 1 << 20,
    }
    entry.update(overrides)
    return entry


def request(executable: str, *, probe_id: str = "leg-1", interface: str = INTERFACE, subcommand: list[str] | None = None,
            option: dict[str, Any] | None = None, argument: dict[str, Any] | None = None,
            environment: dict[str, str] | None = None, stdin: dict[str, Any] | None = None) -> dict[str, Any]:
    """A wire-shaped cli request."""
    return {
        "kind": "cli",
        "probeId": probe_id,
        "interfaceId": interface,
        "operationId": "run",
        "executable": executable,
        "subcommandPath": subcommand or [],
        "channels": {
            "argument": argument or {},
            "option": option or {},
            "environment": environment or {},
            "stdin": stdin or {"kind": "absent"},
        },
    }


def conformance_policy() -> CommandTargetPolicy:
    """The policy the ten command cases run under."""
    return parse_command_target_policy({"authorizations": [
        authorization("argv-echo", "print_argv.py"),
        authorization("failing", "exit_code.py"),
        authorization("artifact-writer", "write_artifact.py", artifacts={"report": "out/report.txt"}),
        authorization("sleeper", "sleep_tree.py", maxElapsedMs=400),
        authorization("flooder", "flood.py", maxOutputBytes=4096),
    ]})


def scenario_policy(scenario: Scenario, workdir: Path) -> CommandTargetPolicy:
    """The policy behind each shared-six scenario; the sample request always asks for ``argv-echo``."""
    if scenario == "resolves":
        entry = authorization("argv-echo", "print_argv.py")
    elif scenario == "fails":  # nothing answers: the target file does not exist
        entry = authorization("argv-echo", "print_argv.py", target=str(workdir / "no-such-interpreter"))
    elif scenario == "in-band-error":  # the run ends, but its declared artifact cannot be read back
        (workdir / "report-is-a-directory").mkdir(exist_ok=True)
        entry = authorization("argv-echo", "print_argv.py", artifacts={"report": "report-is-a-directory"})
    else:  # hangs
        entry = authorization("argv-echo", "sleep_tree.py", maxElapsedMs=3000)
    return parse_command_target_policy({"authorizations": [entry]})


Mechanism = Callable[[LaunchSpec, Any], ProcessResult]
PortWrapper = Callable[[Any], Any]


class CountingMechanism:
    """Counts underlying calls around a mechanism (``run_process`` unless given)."""

    def __init__(self, inner: Mechanism = run_process) -> None:
        self.inner = inner
        self.calls = 0

    def __call__(self, spec: LaunchSpec, abort: Any) -> ProcessResult:
        self.calls += 1
        return self.inner(spec, abort)


def make_subject(
    workdir: Path,
    *,
    name: str = "command-line adapter",
    scenario_mechanism: Callable[[Mechanism], Mechanism] | None = None,
    scenario_port: PortWrapper | None = None,
    policy_mechanism: Callable[[Mechanism], Mechanism] | None = None,
    policy_port: Callable[[Any, CommandTargetPolicy], Any] | None = None,
) -> CommandProbeSubject:
    """The subject; the optional hooks wrap the (counted) mechanism or the port of the shared six
    (``scenario_*``) or of the ten command cases (``policy_*``)."""
    counter = [0]

    def fresh_dir(label: str) -> Path:
        counter[0] += 1
        path = workdir / f"{label}-{counter[0]}"
        path.mkdir(parents=True)
        return path

    def build(scenario: Scenario) -> PortInstance:
        where = fresh_dir(scenario)
        counting = CountingMechanism(run_process)
        mechanism: Mechanism = counting if scenario_mechanism is None else scenario_mechanism(counting)
        adapter: Any = CommandLineAdapter(scenario_policy(scenario, where), workdir=where, mechanism=mechanism)
        if scenario_port is not None:
            adapter = scenario_port(adapter)
        return PortInstance(port=adapter, underlying_calls=lambda: counting.calls)

    policy = conformance_policy()

    def build_under_policy() -> PortInstance:
        where = fresh_dir("policy")
        counting = CountingMechanism(run_process)
        mechanism: Mechanism = counting if policy_mechanism is None else policy_mechanism(counting)
        adapter: Any = CommandLineAdapter(policy, workdir=where, mechanism=mechanism)
        if policy_port is not None:
            adapter = policy_port(adapter, policy)
        return PortInstance(port=adapter, underlying_calls=lambda: counting.calls)

    return CommandProbeSubject(
        name=name,
        sample_request=request("argv-echo", option={"colour": "blue"}),
        build=build,
        policy=policy,
        build_under_policy=build_under_policy,
        authorized_request=request("argv-echo", option={"colour": "blue"}, environment={"EVALQ_COLOUR": "blue"}),
        unmapped_interface_request=request("argv-echo", interface="no-such-interface"),
        unmapped_executable_request=request("rm", argument={"path": "/"}),
        unauthorized_subcommand_request=request("argv-echo", subcommand=["delete"]),
        unauthorized_environment_key_request=request("argv-echo", environment={"SECRET_TOKEN": "hunter2"}),
        non_zero_exit_request=request("failing", argument={"code": 7}),
        injection_request=request("argv-echo", argument={"value": INJECTION_VALUE}),
        injection_argument_value=INJECTION_VALUE,
        artifact_request=request("artifact-writer", argument={"text": ARTIFACT_TEXT, "path": "out/report.txt"}),
        artifact_id="report",
        artifact_expected_text=ARTIFACT_TEXT,
        over_elapsed_request=request("sleeper"),
        over_output_request=request("flooder", argument={"total": "forever"}),
    )
