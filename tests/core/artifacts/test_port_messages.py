"""ProbeRequest / ProbeObservation (preflight-adapter.md §3.1–3.2, §8), against the reference's stored observations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.artifacts.port_messages import (
    CliProbeRequest,
    observation_to_wire,
    read_probe_observation,
    read_probe_request,
    request_cache_key,
    request_to_wire,
    restamp_observation,
)
from evalquality_core.faults import RuntimeFault

OBSERVATION_FILES = (
    "chains/skill-defect/reconstructed-inputs/preflight-observations.json",
    "chains/tutorial-skill/observations.json",
    "chains/tutorial-workflow/observations.json",
)


def cli_request(**changes: Any) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "kind": "cli", "probeId": "witness-frontend", "interfaceId": "skill-runner", "operationId": "run-skill",
        "executable": "skill-runner", "subcommandPath": [],
        "channels": {
            "argument": {}, "option": {"skill": "checklist-selection"}, "environment": {},
            "stdin": {"kind": "json", "value": {"prompt": "the rules, then a frontend case"}},
        },
    }
    wire.update(changes)
    return wire


@pytest.mark.parametrize("name", OBSERVATION_FILES)
def test_reference_observations_read_and_round_trip(conformance: Path, name: str) -> None:
    for wire in json.loads((conformance / name).read_text()):
        assert observation_to_wire(read_probe_observation(wire)) == wire


def test_a_request_round_trips() -> None:
    request = read_probe_request(cli_request())
    assert isinstance(request, CliProbeRequest)
    assert request_to_wire(request) == cli_request()


@pytest.mark.parametrize("executable", ["/usr/bin/x", "./x", "http://x", "x.sh", "Upper", ""])
def test_the_executable_is_a_logical_name(executable: str) -> None:
    with pytest.raises(RuntimeFault) as caught:
        read_probe_request(cli_request(executable=executable))
    assert (caught.value.code, caught.value.artifact_path) == ("schema-parse-failure", "ProbeRequest.executable")


@pytest.mark.parametrize("key", ["1ABC", "A-B", "A B", ""])
def test_environment_key_names(key: str) -> None:
    channels = {**cli_request()["channels"], "environment": {key: "v"}}
    with pytest.raises(RuntimeFault):
        read_probe_request(cli_request(channels=channels))


@pytest.mark.parametrize(
    "change",
    [
        {"extra": 1},
        {"kind": "web"},
        {"subcommandPath": ["a/b"]},
        {"channels": {"argument": {}, "option": {}, "environment": {}}},
        {"channels": {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "text"}}},
        {"channels": {"argument": {}, "option": {}, "environment": {"K": 1}, "stdin": {"kind": "absent"}}},
    ],
)
def test_strict_requests(change: dict[str, Any]) -> None:
    with pytest.raises(RuntimeFault) as caught:
        read_probe_request(cli_request(**change))
    assert caught.value.code == "schema-parse-failure"


def test_api_and_mcp_requests_read() -> None:
    api = {
        "kind": "api", "probeId": "read-a", "interfaceId": "thing-service", "operationId": "get-thing", "method": "GET",
        "pathTemplate": "/things/{id}",
        "channels": {"path": {"id": "t-1"}, "query": {}, "header": {"accept": "application/json"},
                     "body": {"kind": "raw", "base64": "aGk=", "contentType": "text/plain"}},
    }
    assert request_to_wire(read_probe_request(api)) == api
    with pytest.raises(RuntimeFault):
        read_probe_request({**api, "method": "get"})
    mcp = {"kind": "mcp", "probeId": "a", "interfaceId": "b", "operationId": "c", "toolName": "search",
           "channels": {"arguments": {"q": 1}}}
    assert request_to_wire(read_probe_request(mcp)) == mcp


def test_observation_refusals() -> None:
    good = {"kind": "cli", "probeId": "p", "interfaceId": "i", "operationId": "o", "exitCode": -9,
            "stdout": {"kind": "absent"}, "stderr": {"kind": "text", "value": ""}, "artifacts": {}}
    assert read_probe_observation(good).exit_code == -9
    for bad in ({**good, "exitCode": True}, {**good, "exitCode": 1.5}, {**good, "elapsedMs": 3},
                {**good, "stdout": {"kind": "json"}}):
        with pytest.raises(RuntimeFault):
            read_probe_observation(bad)
    with pytest.raises(RuntimeFault) as caught:
        read_probe_observation({**good, "artifacts": {"x": {"kind": "blob"}}}, code="port-contract-violation")
    assert caught.value.code == "port-contract-violation"


def test_the_cache_key_ignores_only_the_probe_id() -> None:
    base = request_cache_key(read_probe_request(cli_request()))
    assert base.startswith("sha256:")
    assert request_cache_key(read_probe_request(cli_request(probeId="another-leg"))) == base
    assert request_cache_key(cli_request(probeId="x")) == base  # wire JSON gives the same key
    changed = cli_request()
    changed["channels"] = {**changed["channels"], "option": {"skill": "other"}}
    assert request_cache_key(read_probe_request(changed)) != base
    assert request_cache_key(read_probe_request(cli_request(operationId="run-other"))) != base


def test_restamp_carries_the_new_triple() -> None:
    stored = read_probe_observation({"kind": "cli", "probeId": "first-leg", "interfaceId": "i", "operationId": "o",
                                     "exitCode": 0, "stdout": {"kind": "absent"}, "stderr": {"kind": "absent"},
                                     "artifacts": {}})
    asking = read_probe_request(cli_request(probeId="second-leg"))
    again = restamp_observation(stored, asking)
    assert (again.probe_id, again.interface_id, again.operation_id) == ("second-leg", "skill-runner", "run-skill")
    assert again.exit_code == 0
