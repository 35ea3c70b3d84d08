"""The conformance subject for the real stdio MCP adapter: a real tool server (the ``mcp`` SDK) run
by this interpreter, ``tests/fixtures/mcp/tool_server.py``.

``make_mcp_subject`` also takes mutation hooks so the non-vacuity test can break exactly one
behaviour at a time (preflight-adapter.md §5.6), as ``command_subject`` does for the command arm.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalquality_core.adapters.mcp_stdio import (
    McpCallResult,
    McpSessionSpec,
    McpStdioAdapter,
    run_mcp_session,
)
from evalquality_core.probe.conformance import PortInstance, Scenario
from evalquality_core.probe.mcp_conformance import McpProbeSubject
from evalquality_core.probe.mcp_policy import McpTargetPolicy, parse_mcp_target_policy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mcp"
SERVER = FIXTURES / "tool_server.py"
#: The standard-library server with the arm's tools (fast to start; used by the non-vacuity test).
PLAIN_SERVER = FIXTURES / "plain_server.py"
INTERFACE = "fixture-mcp"
#: Newlines, quotes, a backslash, non-ASCII, an astral character, U+2028 and shell syntax: every
#: way a frame could be split or an argument re-encoded on its way to the tool.
ECHO_VALUE = 'line one\nline "two" \\ \u00fc\u00df \U0001f389 \u2028 $(id); `rm -rf /` | cat'
TOOLS = ["echo", "describe_note", "rpc_error", "tool_error", "die", "die_by_signal", "spawn_grandchild",
         "environment", "stderr_flood", "huge_number"]


def authorization(interface: str = INTERFACE, server: Path = SERVER, **overrides: Any) -> dict[str, Any]:
    """One wire-shaped authorization launching a fixture server with this interpreter."""
    entry: dict[str, Any] = {
        "interfaceId": interface,
        "target": sys.executable,
        "targetArgs": [str(server)],
        "tools": TOOLS,
        "cwd": ".",
        "serverEnvironment": {"EVALQ_FIXTURE": "on"},
        "maxElapsedMs": 60000,
        "maxOutputBytes": 1 << 20,
    }
    entry.update(overrides)
    return entry


def request(tool: str, arguments: dict[str, Any] | None = None, *, interface: str = INTERFACE,
            probe_id: str = "leg-1") -> dict[str, Any]:
    """A wire-shaped mcp request."""
    return {
        "kind": "mcp",
        "probeId": probe_id,
        "interfaceId": interface,
        "operationId": "call",
        "toolName": tool,
        "channels": {"arguments": arguments or {}},
    }


def conformance_policy(server: Path = SERVER) -> McpTargetPolicy:
    """The policy the eight mcp cases run under (one interface per budget: keyed by interfaceId)."""
    slow_ms = 5000 if server == SERVER else 800  # so the SDK server is cut off in the tool call, not at start
    return parse_mcp_target_policy({"authorizations": [
        authorization(server=server),
        authorization("fixture-mcp-slow", server=server, tools=["hang"], maxElapsedMs=slow_ms),
        authorization("fixture-mcp-flood", server=server, tools=["flood"], maxOutputBytes=65536),
    ]})


def scenario_policy(scenario: Scenario, workdir: Path, server: Path = SERVER) -> McpTargetPolicy:
    """The policy behind each shared-six scenario; the sample request always calls ``echo``."""
    if scenario == "resolves":
        entry = authorization(server=server)
    elif scenario == "fails":  # nothing answers: the target file does not exist
        entry = authorization(target=str(workdir / "no-such-server"))
    elif scenario == "in-band-error":  # the server answers, but with a frame that is not JSON-RPC
        entry = authorization(targetArgs=[str(server), "--garbage-first"])
    else:  # hangs: a process that never answers initialize
        entry = authorization(targetArgs=["-c", "import time; time.sleep(600)"], maxElapsedMs=3000)
    return parse_mcp_target_policy({"authorizations": [entry]})


Mechanism = Callable[[McpSessionSpec, Any], McpCallResult]


class CountingMechanism:
    """Counts underlying calls (sessions) around a mechanism (``run_mcp_session`` unless given)."""

    def __init__(self, inner: Mechanism = run_mcp_session) -> None:
        self.inner = inner
        self.calls = 0

    def __call__(self, spec: McpSessionSpec, abort: Any) -> McpCallResult:
        self.calls += 1
        return self.inner(spec, abort)


def make_mcp_subject(
    workdir: Path,
    *,
    name: str = "stdio mcp adapter",
    server: Path = SERVER,
    scenario_mechanism: Callable[[Mechanism], Mechanism] | None = None,
    scenario_port: Callable[[Any], Any] | None = None,
    policy_mechanism: Callable[[Mechanism], Mechanism] | None = None,
    policy_port: Callable[[Any], Any] | None = None,
) -> McpProbeSubject:
    """The subject (against ``server``); the optional hooks wrap the (counted) mechanism or the port of the shared six
    (``scenario_*``) or of the eight mcp cases (``policy_*``)."""
    counter = [0]

    def fresh_dir(label: str) -> Path:
        counter[0] += 1
        path = workdir / f"{label}-{counter[0]}"
        path.mkdir(parents=True)
        return path

    def build(scenario: Scenario) -> PortInstance:
        where = fresh_dir(scenario)
        counting = CountingMechanism()
        mechanism: Mechanism = counting if scenario_mechanism is None else scenario_mechanism(counting)
        adapter: Any = McpStdioAdapter(scenario_policy(scenario, where, server), workdir=where, mechanism=mechanism)
        if scenario_port is not None:
            adapter = scenario_port(adapter)
        return PortInstance(port=adapter, underlying_calls=lambda: counting.calls)

    policy = conformance_policy(server)

    def build_under_policy() -> PortInstance:
        where = fresh_dir("policy")
        counting = CountingMechanism()
        mechanism: Mechanism = counting if policy_mechanism is None else policy_mechanism(counting)
        adapter: Any = McpStdioAdapter(policy, workdir=where, mechanism=mechanism)
        if policy_port is not None:
            adapter = policy_port(adapter)
        return PortInstance(port=adapter, underlying_calls=lambda: counting.calls)

    return McpProbeSubject(
        name=name,
        sample_request=request("echo", {"value": "sample"}),
        build=build,
        policy=policy,
        build_under_policy=build_under_policy,
        authorized_request=request("echo", {"value": "hello"}),
        error_result_request=request("rpc_error", {"message": "note not found"}),
        unmapped_interface_request=request("echo", {"value": "x"}, interface="no-such-server"),
        unauthorized_tool_request=request("delete_everything", {"confirm": True}),
        argument_echo_request=request("echo", {"value": ECHO_VALUE}),
        argument_echo_result_key="value",
        argument_echo_value=ECHO_VALUE,
        structured_result_request=request("describe_note", {"note_id": "n-1"}),
        structured_result_keys=("noteId", "title", "body", "tags"),
        over_elapsed_request=request("hang", {"seconds": 600}, interface="fixture-mcp-slow"),
        over_output_request=request("flood", {"size": 1 << 20}, interface="fixture-mcp-flood"),
    )
