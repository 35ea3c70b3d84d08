"""The mcp target policy (preflight-adapter.md §4.9) and its ``kind = "mcp"`` entries in targets.toml."""

from __future__ import annotations

from typing import Any

import pytest

from evalquality_core.artifacts.port_messages import read_probe_request
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.mcp_policy import evaluate_mcp_request, parse_mcp_target_policy
from evalquality_core.probe.targets import parse_targets
from tests.adapters.mcp_subject import authorization, request

MCP_TABLE = """
[[target]]
kind = "mcp"
interface_id = "notes-tools"
target = "{python}"
target_args = ["{suite}/server.py", "--store", "notes.json"]
tools = ["add_note", "get_note"]
cwd = "."
server_environment = { NOTES_MODE = "strict" }
max_elapsed_ms = 30000
max_output_bytes = 1048576
"""

CLI_TABLE = """
[[target]]
interface_id = "notes-cli"
executable = "notes"
target = "{python}"
target_args = []
permitted_subcommand_paths = [["add"]]
permitted_environment_keys = []
cwd = "."
artifacts = {}
max_elapsed_ms = 20000
max_output_bytes = 1048576
"""


def test_a_registry_holds_command_and_tool_server_entries_side_by_side() -> None:
    registry = parse_targets(CLI_TABLE + MCP_TABLE)
    assert registry.pairs() == [("notes-cli", "notes")]
    assert registry.placeholders == {"python", "suite"}
    policy = registry.to_mcp_policy({"python": "/usr/bin/python3", "suite": "/s"})
    [entry] = policy.authorizations
    assert entry.model_dump(mode="json", by_alias=True) == {
        "interfaceId": "notes-tools", "target": "/usr/bin/python3", "targetArgs": ["/s/server.py", "--store", "notes.json"],
        "tools": ["add_note", "get_note"], "cwd": ".", "serverEnvironment": {"NOTES_MODE": "strict"},
        "maxElapsedMs": 30000, "maxOutputBytes": 1048576,
    }
    assert [a.executable for a in registry.to_policy({"python": "p", "suite": "s"}).authorizations] == ["notes"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('tools = ["add_note", "get_note"]', "tools = []"), "/authorizations/0/tools"),
        (lambda t: t.replace("max_elapsed_ms = 30000\n", ""), "lacks required key(s) max_elapsed_ms"),
        (lambda t: t.replace('cwd = "."', 'cwd = "."\nartifacts = {}'), "unknown key(s) artifacts"),
        (lambda t: t.replace('kind = "mcp"', 'kind = "grpc"'), "has kind 'grpc'"),
        (lambda t: t.replace("max_elapsed_ms = 30000", "max_elapsed_ms = 2147483648"), "max_elapsed_ms must be a whole number of milliseconds from 1 to 2147483647"),
        (lambda t: t + t, "registers tool server 'notes-tools' a second time"),
    ],
)
def test_a_bad_mcp_entry_is_one_schema_parse_failure(edit: Any, message: str) -> None:
    with pytest.raises(RuntimeFault) as caught:
        parse_targets(edit(MCP_TABLE), "suite/targets.toml")
    assert caught.value.code == "schema-parse-failure"
    assert caught.value.artifact_path == "suite/targets.toml"
    assert message in caught.value.detail


def test_a_missing_placeholder_value_is_refused() -> None:
    with pytest.raises(RuntimeFault, match="no value given for placeholder"):
        parse_targets(MCP_TABLE).to_mcp_policy({"python": "p"})


def test_the_policy_refuses_two_entries_for_one_interface() -> None:
    with pytest.raises(RuntimeFault, match="two authorizations name interface"):
        parse_mcp_target_policy({"authorizations": [authorization(), authorization(tools=["other"])]})


def test_decisions_interface_first_then_the_tool_literally() -> None:
    policy = parse_mcp_target_policy({"authorizations": [authorization(tools=["echo"])]})

    def decide(req: dict[str, Any]) -> tuple[bool, str | None]:
        decision = evaluate_mcp_request(policy, read_probe_request(req))
        return decision.allowed, decision.reason

    assert decide(request("echo")) == (True, None)
    assert decide(request("Echo")) == (False, "tool-not-authorized")
    assert decide(request("echo", interface="elsewhere")) == (False, "interface-not-authorized")
    assert decide(request("nope", interface="elsewhere")) == (False, "interface-not-authorized")
    assert parse_mcp_target_policy({"authorizations": []}).authorizations == []
