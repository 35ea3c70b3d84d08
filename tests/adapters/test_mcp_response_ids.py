"""JSON-RPC responses must answer a request in flight (issue 33), against a real hostile tool server
(``tests/fixtures/mcp/misnumbering_server.py``): matched by id in value and type, only against
requests written in full and not yet answered. Anything else is a ``port-failure`` of the session
naming the id the server sent; the forged answer is never observed. And a response cut mid-line by a
stall is ``budget-exhausted``, never an answer."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.adapters.command_line import live_process_groups
from evalquality_core.adapters.mcp_stdio import McpStdioAdapter
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.mcp_policy import parse_mcp_target_policy
from tests.adapters.mcp_subject import FIXTURES, authorization, request

SERVER = FIXTURES / "misnumbering_server.py"


def _adapter(mode: str, workdir: Path, **overrides: Any) -> McpStdioAdapter:
    entry = authorization(targetArgs=[str(SERVER), mode], tools=["call"], **overrides)
    return McpStdioAdapter(parse_mcp_target_policy({"authorizations": [entry]}), workdir=workdir)


def _fault_of(adapter: McpStdioAdapter) -> RuntimeFault:
    with pytest.raises(RuntimeFault) as caught:
        adapter.probe(request("call", {}))
    return caught.value


@pytest.mark.parametrize(
    ("mode", "detail"),
    [
        # (a) an answer for id 2 written before the client wrote request 2
        ("early", "the server sent a response with id 2 during initialize, which answers no request in flight"
                  " (ids in flight: none)"),
        # (b) the right number as a string
        ("string-id", 'the server sent a response with id "2" during tools/call, which answers no request in flight'
                      " (ids in flight: 2)"),
        # (c) an id the client never sent
        ("unknown-id", "the server sent a response with id 99 during tools/call, which answers no request in flight"
                       " (ids in flight: 2)"),
        # a second answer to a request already answered
        ("twice", "the server sent a response with id 1 during initialize, which answers no request in flight"
                  " (ids in flight: none)"),
    ],
)
def test_a_response_to_no_request_in_flight_is_a_port_failure(mode: str, detail: str, tmp_path: Path) -> None:
    fault = _fault_of(_adapter(mode, tmp_path))
    assert (fault.code, fault.artifact_path, fault.detail) == ("port-failure", "ProbeObservation", detail)
    assert live_process_groups() == frozenset()


def test_the_control_server_answering_its_call_is_observed(tmp_path: Path) -> None:
    """The same server, numbering right: its real answer is the observation (the faults above are the ids')."""
    observation = _adapter("right", tmp_path).probe(request("call", {}))
    assert observation.model_dump(mode="json", by_alias=True)["result"] == {"kind": "json", "value": {"real": True}}


def test_a_long_forged_id_is_quoted_escaped_and_cut(tmp_path: Path) -> None:
    script = tmp_path / "long_id_server.py"
    script.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    message = json.loads(line)\n"
        "    sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': 'x\\n\\u2028' * 200, 'result': {}}) + '\\n')\n"
        "    sys.stdout.flush()\n",
        encoding="utf-8",
    )
    entry = authorization(targetArgs=[str(script)], tools=["call"])
    adapter = McpStdioAdapter(parse_mcp_target_policy({"authorizations": [entry]}), workdir=tmp_path)
    fault = _fault_of(adapter)
    assert fault.code == "port-failure"
    assert "\n" not in fault.detail and "\u2028" not in fault.detail
    assert fault.detail.startswith('the server sent a response with id "x\\n\\u2028x\\n')
    quoted = fault.detail.split("with id ", 1)[1].split(" during ", 1)[0]
    assert len(quoted) == 80 and quoted.endswith("\u2026")


def test_a_response_cut_mid_line_by_a_stall_is_budget_exhausted(tmp_path: Path) -> None:
    """Half a response and then silence: the deadline ends the session; the half is never an answer."""
    started = time.monotonic()
    fault = _fault_of(_adapter("partial-stall", tmp_path, maxElapsedMs=1500))
    assert (fault.code, fault.artifact_path) == ("budget-exhausted", "McpProbeRequest")
    assert "maxElapsedMs (1500ms) during tools/call" in fault.detail
    assert time.monotonic() - started < 10
    assert live_process_groups() == frozenset()
