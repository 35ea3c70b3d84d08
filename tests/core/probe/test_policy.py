"""``CommandTargetPolicy`` and the pure decisions (preflight-adapter.md §4.1–4.2)."""

from __future__ import annotations

from typing import Any

import pytest

from evalquality_core.artifacts.port_messages import read_probe_request
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.policy import (
    MAX_ELAPSED_MS,
    evaluate_environment,
    evaluate_request,
    evaluate_target,
    forbidden_target_fault,
    parse_command_target_policy,
)


def entry(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "interfaceId": "notes",
        "executable": "notes",
        "target": "/usr/bin/python3",
        "targetArgs": ["notes.py"],
        "permittedSubcommandPaths": [["add"], ["list"]],
        "permittedEnvironmentKeys": ["NOTES_HOME"],
        "cwd": ".",
        "artifacts": {"store": "notes.json"},
        "maxElapsedMs": 1000,
        "maxOutputBytes": 4096,
    }
    base.update(overrides)
    return base


def policy(*entries: dict[str, Any]) -> Any:
    return parse_command_target_policy({"authorizations": list(entries)})


def test_an_empty_policy_authorizes_nothing() -> None:
    decision = evaluate_target(policy(), "notes", "notes", [])
    assert (decision.allowed, decision.reason) == (False, "interface-not-authorized")
    assert decision.detail == 'no authorization names interface "notes" and executable "notes" together'


def test_unknown_executable_of_a_known_interface() -> None:
    decision = evaluate_target(policy(entry()), "notes", "rm", [])
    assert (decision.allowed, decision.reason) == (False, "executable-not-authorized")


def test_subcommand_paths_match_whole_and_exactly() -> None:
    p = policy(entry())
    assert evaluate_target(p, "notes", "notes", ["add"]).allowed
    for path in ([], ["add", "now"], ["ad"], ["list", "add"]):
        decision = evaluate_target(p, "notes", "notes", path)
        assert (decision.allowed, decision.reason) == (False, "subcommand-not-authorized"), path
    assert evaluate_target(p, "notes", "notes", ["add", "now"]).detail == (
        'subcommand path [add, now] is not among the authorized paths for interface "notes" and executable "notes"'
    )


def test_empty_path_means_no_subcommand() -> None:
    p = policy(entry(permittedSubcommandPaths=[[]]))
    assert evaluate_target(p, "notes", "notes", []).allowed
    assert not evaluate_target(p, "notes", "notes", ["add"]).allowed


def test_first_matching_authorization_in_declaration_order_wins() -> None:
    p = policy(
        entry(permittedSubcommandPaths=[["list"]], cwd="first"),
        entry(permittedSubcommandPaths=[["add"]], cwd="second"),
        entry(permittedSubcommandPaths=[["add"]], cwd="third"),
    )
    decision = evaluate_target(p, "notes", "notes", ["add"])
    assert decision.authorization is not None and decision.authorization.cwd == "second"


def test_environment_keys_exact_and_case_sensitive() -> None:
    authorization = policy(entry()).authorizations[0]
    assert evaluate_environment(authorization, ["NOTES_HOME"]).allowed
    assert evaluate_environment(authorization, []).allowed
    denied = evaluate_environment(authorization, ["NOTES_HOME", "notes_home"])
    assert (denied.allowed, denied.reason) == (False, "environment-key-not-authorized")
    assert denied.detail == 'environment key "notes_home" is not permitted by this authorization'
    path = evaluate_environment(authorization, ["pAtH"])
    assert path.detail == 'environment key "pAtH" is never permitted: it would choose which binary runs'


def request(**channels: Any) -> Any:
    return read_probe_request({
        "kind": "cli", "probeId": "p", "interfaceId": "notes", "operationId": "add-note", "executable": "notes",
        "subcommandPath": ["add"],
        "channels": {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}, **channels},
    })


def test_evaluate_request_checks_target_then_environment() -> None:
    p = policy(entry())
    assert evaluate_request(p, request()).allowed
    decision = evaluate_request(p, request(environment={"HOME": "/root"}))
    assert decision.reason == "environment-key-not-authorized"
    fault = forbidden_target_fault(decision)
    assert (fault.code, fault.artifact_path, fault.reason) == ("forbidden-target", "ProbeRequest", "environment-key-not-authorized")
    # the target is judged before the environment: an unmapped pair never reaches the key check
    assert evaluate_request(policy(), request(environment={"HOME": "/"})).reason == "interface-not-authorized"


def test_an_allowed_decision_is_not_a_fault() -> None:
    with pytest.raises(ValueError):
        forbidden_target_fault(evaluate_request(policy(entry()), request()))


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        ({"permittedEnvironmentKeys": ["HOME", "PATH"]}, "/authorizations/0/permittedEnvironmentKeys"),
        ({"permittedEnvironmentKeys": ["path"]}, "/authorizations/0/permittedEnvironmentKeys"),
        ({"permittedEnvironmentKeys": ["1BAD"]}, "/authorizations/0/permittedEnvironmentKeys/0"),
        ({"permittedSubcommandPaths": []}, "/authorizations/0/permittedSubcommandPaths"),
        ({"maxElapsedMs": 0}, "/authorizations/0/maxElapsedMs"),
        ({"maxElapsedMs": MAX_ELAPSED_MS + 1}, "/authorizations/0/maxElapsedMs"),
        ({"maxOutputBytes": 0}, "/authorizations/0/maxOutputBytes"),
        ({"executable": "/bin/sh"}, "/authorizations/0/executable"),
        ({"target": ""}, "/authorizations/0/target"),
        ({"artifacts": {"Bad Id": "x"}}, "/authorizations/0/artifacts/Bad Id"),
        ({"surprise": True}, "/authorizations/0/surprise"),
    ],
)
def test_parse_refusals_name_the_pointer(change: dict[str, Any], pointer: str) -> None:
    with pytest.raises(RuntimeFault) as caught:
        parse_command_target_policy({"authorizations": [entry(**change)]})
    fault = caught.value
    assert (fault.code, fault.artifact_path) == ("schema-parse-failure", "CommandTargetPolicy")
    assert fault.detail.startswith("input does not conform to the CommandTargetPolicy schema: ")
    assert pointer in fault.detail


def test_permitted_environment_keys_has_no_default() -> None:
    bare = entry()
    del bare["permittedEnvironmentKeys"]
    with pytest.raises(RuntimeFault) as caught:
        parse_command_target_policy({"authorizations": [bare]})
    assert "/authorizations/0/permittedEnvironmentKeys: Field required" in caught.value.detail


def test_the_root_pointer_is_shown_as_root() -> None:
    with pytest.raises(RuntimeFault) as caught:
        parse_command_target_policy(["not", "an", "object"])
    assert "(root)" in caught.value.detail


def test_the_elapsed_cap_accepts_its_maximum() -> None:
    assert policy(entry(maxElapsedMs=MAX_ELAPSED_MS)).authorizations[0].max_elapsed_ms == 2_147_483_647
