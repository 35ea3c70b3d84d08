"""The json/text/absent tags and the assembled cli observation (preflight-adapter.md §4.7)."""

from __future__ import annotations

import pytest

from evalquality_core.artifacts.port_messages import read_probe_request
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.observation import (
    assemble_cli_observation,
    observed_from_bytes,
    observed_from_text,
)


@pytest.mark.parametrize(
    ("text", "wire"),
    [
        ("", {"kind": "text", "value": ""}),
        ("null", {"kind": "json", "value": None}),
        (" \n{\"a\": [1, 2.5]}\r\n\t", {"kind": "json", "value": {"a": [1, 2.5]}}),
        ('"quoted"', {"kind": "json", "value": "quoted"}),
        ("false", {"kind": "json", "value": False}),
        ('{"a": 1, "a": 2}', {"kind": "json", "value": {"a": 2}}),  # JSON.parse: the last duplicate wins
        ("NaN", {"kind": "text", "value": "NaN"}),
        ("[Infinity]", {"kind": "text", "value": "[Infinity]"}),
        ("9007199254740993", {"kind": "text", "value": "9007199254740993"}),
        ("[1, 2", {"kind": "text", "value": "[1, 2"}),
        ("ok\n", {"kind": "text", "value": "ok\n"}),
        ("\ufeff{}", {"kind": "text", "value": "\ufeff{}"}),
        ("{'a': 1}", {"kind": "text", "value": "{'a': 1}"}),
    ],
)
def test_body_from_text(text: str, wire: dict[str, object]) -> None:
    assert observed_from_text(text).model_dump(mode="json") == wire


def test_absent_and_invalid_utf8() -> None:
    assert observed_from_bytes(None).model_dump() == {"kind": "absent"}
    assert observed_from_bytes(b"caf\xe9").model_dump() == {"kind": "text", "value": "caf\ufffd"}
    assert observed_from_bytes("é".encode()).model_dump() == {"kind": "text", "value": "é"}


def test_assembly_echoes_the_request() -> None:
    request = read_probe_request({
        "kind": "cli", "probeId": "witness-a", "interfaceId": "skill-runner", "operationId": "run-skill",
        "executable": "skill-runner", "subcommandPath": [],
        "channels": {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}},
    })
    observation = assemble_cli_observation(request, 3, b'{"selected": []}', b"warn", {"report": None, "log": b"x"})
    assert observation.model_dump(mode="json", by_alias=True) == {
        "kind": "cli", "probeId": "witness-a", "interfaceId": "skill-runner", "operationId": "run-skill",
        "exitCode": 3,
        "stdout": {"kind": "json", "value": {"selected": []}},
        "stderr": {"kind": "text", "value": "warn"},
        "artifacts": {"report": {"kind": "absent"}, "log": {"kind": "text", "value": "x"}},
    }


def test_an_assembly_that_fails_the_schema_is_a_contract_violation() -> None:
    request = read_probe_request({
        "kind": "cli", "probeId": "p", "interfaceId": "i", "operationId": "o", "executable": "e", "subcommandPath": [],
        "channels": {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}},
    })
    with pytest.raises(RuntimeFault) as caught:
        assemble_cli_observation(request, 0, b"", b"", {"Not An Id": None})
    assert caught.value.code == "port-contract-violation"
    assert caught.value.artifact_path.startswith("ProbeObservation.artifacts")
