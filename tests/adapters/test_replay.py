"""The replay adapter: stored answers by request key or probeId, re-stamped; misses and denials."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalquality_core.adapters.replay import ReplayAdapter
from evalquality_core.artifacts.port_messages import observation_to_wire
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.policy import parse_command_target_policy
from tests.adapters.command_subject import authorization, request


def stored(probe_id: str, value: object) -> dict[str, object]:
    return {"kind": "cli", "probeId": probe_id, "interfaceId": "fixture-cli", "operationId": "run", "exitCode": 0,
            "stdout": {"kind": "json", "value": value}, "stderr": {"kind": "text", "value": ""}, "artifacts": {}}


def test_answers_by_request_and_restamps() -> None:
    adapter = ReplayAdapter.from_pairs([(request("argv-echo", probe_id="leg-1", argument={"a": "1"}), stored("leg-1", 1))])
    observation = adapter.probe(request("argv-echo", probe_id="leg-7", argument={"a": "1"}))
    assert observation.probe_id == "leg-7"
    assert observation_to_wire(observation)["stdout"] == {"kind": "json", "value": 1}
    with pytest.raises(RuntimeFault) as caught:
        adapter.probe(request("argv-echo", argument={"a": "2"}))
    assert caught.value.code == "port-failure" and "run it live first" in caught.value.detail
    assert adapter.calls == 2


def test_reference_observations_by_probe_id(conformance: Path) -> None:
    observations = json.loads((conformance / "chains/skill-defect/reconstructed-inputs/preflight-observations.json").read_text())
    adapter = ReplayAdapter.by_probe_id(observations)
    asked = {
        "kind": "cli", "probeId": "witness-backend", "interfaceId": "skill-runner", "operationId": "run-skill",
        "executable": "skill-runner", "subcommandPath": [],
        "channels": {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}},
    }
    answer = observation_to_wire(adapter.probe(asked))
    assert answer == next(o for o in observations if o["probeId"] == "witness-backend")


def test_a_policy_refuses_before_any_lookup() -> None:
    policy = parse_command_target_policy({"authorizations": [authorization("argv-echo", "print_argv.py")]})
    adapter = ReplayAdapter.from_pairs([(request("argv-echo"), stored("leg-1", 1))], policy=policy)
    with pytest.raises(RuntimeFault) as caught:
        adapter.probe(request("argv-echo", environment={"SECRET": "x"}))
    assert (caught.value.code, caught.value.reason) == ("forbidden-target", "environment-key-not-authorized")
    assert adapter.calls == 0


def test_a_duplicate_probe_id_is_refused() -> None:
    with pytest.raises(RuntimeFault) as caught:
        ReplayAdapter.by_probe_id([stored("leg-1", 1), stored("leg-1", 2)])
    assert caught.value.code == "port-contract-violation"
