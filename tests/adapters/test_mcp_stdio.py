"""The stdio MCP adapter against real server processes: what becomes an observation, what is a fault,
the caps, and the trust boundary (denials start nothing, nothing outlives a session, abort)."""

from __future__ import annotations

import errno
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.adapters.command_line import kill_all_live_groups, live_process_groups
from evalquality_core.adapters.mcp_stdio import McpStdioAdapter
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.mcp_policy import parse_mcp_target_policy
from tests.adapters.mcp_subject import FIXTURES, SERVER, CountingMechanism, authorization, request


def adapter_for(*entries: dict[str, Any], workdir: Path | None = None, **kwargs: Any) -> McpStdioAdapter:
    return McpStdioAdapter(parse_mcp_target_policy({"authorizations": list(entries)}), workdir=workdir, **kwargs)


def wire(observation: Any) -> dict[str, Any]:
    return observation.model_dump(mode="json", by_alias=True)


def fault_of(call: Any) -> RuntimeFault:
    with pytest.raises(RuntimeFault) as caught:
        call()
    return caught.value


def test_a_tool_call_is_observed_with_its_structured_content(tmp_path: Path) -> None:
    observation = adapter_for(authorization(), workdir=tmp_path).probe(request("describe_note", {"note_id": "n-7"}))
    assert wire(observation) == {
        "kind": "mcp", "probeId": "leg-1", "interfaceId": "fixture-mcp", "operationId": "call", "isError": False,
        "result": {"kind": "json", "value": {"noteId": "n-7", "title": "Groceries", "body": "eggs", "tags": ["home"]}},
    }


def test_errors_the_server_answers_are_observations(tmp_path: Path) -> None:
    adapter = adapter_for(authorization(), workdir=tmp_path)
    rpc = adapter.probe(request("rpc_error", {"message": "no such note"}))
    assert rpc.is_error is True
    assert wire(rpc)["result"] == {"kind": "json", "value": {"code": -32602, "message": "no such note",
                                                             "data": {"hint": "no such note"}}}
    tool = adapter.probe(request("tool_error", {"reason": "disk full"}))
    assert (tool.is_error, wire(tool)["result"], tool.exit_code) == (True, {"kind": "absent"}, None)
    assert "exitCode" not in wire(tool)


@pytest.mark.parametrize(("tool", "arguments", "code"), [("die", {"code": 3}, 3), ("die_by_signal", {}, -9)])
def test_a_server_dying_after_the_handshake_is_an_observation_with_its_signed_exit_code(
    tool: str, arguments: dict[str, Any], code: int, tmp_path: Path
) -> None:
    observation = adapter_for(authorization(), workdir=tmp_path).probe(request(tool, arguments))
    assert wire(observation)["isError"] is True
    assert wire(observation)["result"] == {"kind": "absent"}
    assert wire(observation)["exitCode"] == code


def test_the_server_sees_path_and_its_declared_environment_only_in_its_cwd(tmp_path: Path) -> None:
    (tmp_path / "server-home").mkdir()
    entry = authorization(cwd="server-home", serverEnvironment={"EVALQ_FIXTURE": "on"})
    adapter = adapter_for(entry, workdir=tmp_path, search_path=os.path.dirname(sys.executable))
    declared = adapter.probe(request("environment", {"name": "EVALQ_FIXTURE"}))
    assert wire(declared)["result"]["value"] == {"value": "on", "cwd": str(tmp_path / "server-home")}
    os.environ["EVALQ_HOST_SECRET"] = "hunter2"
    try:
        leaked = adapter.probe(request("environment", {"name": "EVALQ_HOST_SECRET"}))
    finally:
        del os.environ["EVALQ_HOST_SECRET"]
    assert wire(leaked)["result"]["value"]["value"] is None


@pytest.mark.parametrize(
    ("req", "reason"),
    [
        (request("echo", {"value": "x"}, interface="unknown-server"), "interface-not-authorized"),
        (request("rm_rf", {}), "tool-not-authorized"),
        ({"kind": "cli", "probeId": "leg-1", "interfaceId": "fixture-mcp", "operationId": "run", "executable": "echo",
          "subcommandPath": [], "channels": {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}}},
         "interface-not-authorized"),
    ],
)
def test_denials_start_no_process(req: dict[str, Any], reason: str, tmp_path: Path) -> None:
    counting = CountingMechanism()
    adapter = adapter_for(authorization(), workdir=tmp_path, mechanism=counting)
    fault = fault_of(lambda: adapter.probe(req))
    assert (fault.code, fault.reason, fault.artifact_path) == ("forbidden-target", reason, "ProbeRequest")
    assert counting.calls == 0


def test_a_refused_handshake_a_malformed_frame_and_a_missing_server_are_port_failures(tmp_path: Path) -> None:
    refusing = authorization(targetArgs=[str(FIXTURES / "refusing_server.py")])
    fault = fault_of(lambda: adapter_for(refusing, workdir=tmp_path).probe(request("echo", {"value": "x"})))
    assert fault.code == "port-failure" and "refused the initialize handshake" in fault.detail
    garbage = authorization(targetArgs=[str(SERVER), "--garbage-first"])
    fault = fault_of(lambda: adapter_for(garbage, workdir=tmp_path).probe(request("echo", {"value": "x"})))
    assert fault.code == "port-failure" and "not a JSON-RPC message: starting up..." in fault.detail
    missing = authorization(target=str(tmp_path / "no-such-server"))
    fault = fault_of(lambda: adapter_for(missing, workdir=tmp_path).probe(request("echo", {"value": "x"})))
    assert fault.code == "port-failure" and "ENOENT" in fault.detail
    exits = authorization(targetArgs=["-c", "import sys; sys.stderr.write('no config'); sys.exit(4)"])
    fault = fault_of(lambda: adapter_for(exits, workdir=tmp_path).probe(request("echo", {"value": "x"})))
    assert fault.code == "port-failure"
    assert fault.detail == "the server exited during initialize (exit code 4); its stderr began: no config"


def test_a_result_outside_the_value_domain_is_a_port_contract_violation(tmp_path: Path) -> None:
    fault = fault_of(lambda: adapter_for(authorization(), workdir=tmp_path).probe(request("huge_number")))
    assert fault.code == "port-contract-violation"


def test_stdout_and_stderr_are_capped_separately(tmp_path: Path) -> None:
    adapter = adapter_for(authorization(maxOutputBytes=65536), workdir=tmp_path)
    # 60 000 bytes of stderr fit a 64 KiB cap even though stdout also carries the handshake and result.
    assert adapter.probe(request("stderr_flood", {"size": 60000})).is_error is False
    fault = fault_of(lambda: adapter.probe(request("stderr_flood", {"size": 70000})))
    assert fault.code == "budget-exhausted" and "on its own stderr" in fault.detail
    flood = adapter_for(authorization(tools=["flood"], maxOutputBytes=65536), workdir=tmp_path)
    fault = fault_of(lambda: flood.probe(request("flood", {"size": 70000})))
    assert (fault.code, fault.artifact_path) == ("budget-exhausted", "McpProbeRequest")
    assert "on stdout during tools/call" in fault.detail


def test_the_elapsed_cap_covers_the_handshake(tmp_path: Path) -> None:
    silent = authorization(targetArgs=["-c", "import time; time.sleep(600)"], maxElapsedMs=400)
    started = time.monotonic()
    fault = fault_of(lambda: adapter_for(silent, workdir=tmp_path).probe(request("echo", {"value": "x"})))
    assert fault.code == "budget-exhausted" and "during initialize" in fault.detail
    assert time.monotonic() - started < 5


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


def test_nothing_the_server_started_outlives_the_session(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    observation = adapter_for(authorization(), workdir=tmp_path).probe(request("spawn_grandchild", {"pidfile": str(pidfile)}))
    pid = int(pidfile.read_text())
    assert wire(observation)["result"]["value"] == {"pid": pid}
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
    assert live_process_groups() == frozenset()


def test_an_abort_mid_call_kills_the_session_promptly(tmp_path: Path) -> None:
    adapter = adapter_for(authorization(tools=["hang"]), workdir=tmp_path)
    abort = threading.Event()
    seen: list[int] = []

    def abort_once_running() -> None:
        while not live_process_groups():
            time.sleep(0.01)
        seen.extend(live_process_groups())
        time.sleep(0.3)
        abort.set()

    watcher = threading.Thread(target=abort_once_running)
    watcher.start()
    fault = fault_of(lambda: adapter.probe(request("hang", {"seconds": 600}), abort=abort))
    aborted_after = time.monotonic()
    watcher.join()
    assert fault.code == "aborted"
    assert time.monotonic() - aborted_after < 1
    assert seen and not any(_alive(pgid) for pgid in seen)


def test_kill_all_live_groups_reaches_a_session(tmp_path: Path) -> None:
    """The flows' interrupt handler kills command legs and tool-server sessions alike."""
    adapter = adapter_for(authorization(tools=["hang"]), workdir=tmp_path)
    results: list[Any] = []

    def call() -> None:
        try:
            results.append(adapter.probe(request("hang", {"seconds": 600})))
        except RuntimeFault as fault:  # killed during the handshake: the session never opened
            results.append(fault)

    worker = threading.Thread(target=call)
    worker.start()
    deadline = time.monotonic() + 20
    while not live_process_groups() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert kill_all_live_groups()
    worker.join(timeout=20)
    assert not worker.is_alive()
    # Killed mid-call it is what the server did (gone, −9); killed mid-handshake, nothing answered.
    outcome = results[0]
    assert getattr(outcome, "exit_code", None) == -9 or getattr(outcome, "code", None) == "port-failure"
    assert live_process_groups() == frozenset()


def test_the_server_path_keeps_absolute_entries_only(tmp_path: Path) -> None:
    """The launch path every leg takes: a relative PATH entry would let the workspace answer a bare name."""
    python_dir = os.path.dirname(sys.executable)
    adapter = adapter_for(authorization(), workdir=tmp_path, search_path=f".:bin::{python_dir}")
    seen = adapter.probe(request("environment", {"name": "PATH"}))
    assert wire(seen)["result"]["value"]["value"] == python_dir


def test_e2big_from_a_mechanism_is_launch_too_large(tmp_path: Path) -> None:
    def too_large(spec: Any, abort: Any) -> Any:
        raise OSError(errno.E2BIG, "Argument list too long", spec.argv[0])

    fault = fault_of(lambda: adapter_for(authorization(), workdir=tmp_path, mechanism=too_large).probe(request("echo", {"value": "x"})))
    assert (fault.code, fault.port_failure_reason) == ("port-failure", "launch-too-large")
    assert fault.detail.startswith(f'could not start tool server "{sys.executable}"')


def test_the_wire_is_the_handshake_then_one_call_each_frame_one_line(tmp_path: Path) -> None:
    """§4.9: initialize (protocol 2025-06-18, no client capabilities), notifications/initialized, tools/call
    with the arguments only in the frame; a server's ping is answered, any other request refused, its
    notifications ignored; newline-delimited, one JSON message a line."""
    entry = authorization(server=FIXTURES / "recording_server.py", tools=["record"])
    arguments = {"title": "line one\nline two \u2028 \U0001f389", "n": 3}
    observation = adapter_for(entry, workdir=tmp_path).probe(request("record", arguments))
    assert (observation.is_error, wire(observation)["result"]) == (False, {"kind": "json", "value": arguments})
    lines = (tmp_path / "frames.jsonl").read_text(encoding="utf-8").splitlines()
    frames = [json.loads(line) for line in lines]
    assert frames == [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "eval-quality", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "record", "arguments": arguments}},
        {"jsonrpc": "2.0", "id": "srv-ping", "result": {}},
        {"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "the eval-quality client offers no methods"}},
    ]
    assert all(line.isascii() for line in lines)  # escaped: no raw U+2028 or newline can split a frame
