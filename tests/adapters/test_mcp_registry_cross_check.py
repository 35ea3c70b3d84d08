"""``kind = "mcp"`` entries of targets.toml cross-checked against the contract both ways, as cli and api
entries are (``probe.targets.cross_check_mcp_targets``), and ``eval-quality suite check`` naming the
file and the entry in one line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.probe.targets import cross_check_mcp_targets, parse_targets
from tests.adapters.test_mcp_policy import CLI_TABLE

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SUITE = PROJECT_ROOT / "corpus" / "suites" / "notes-tools"
REFERENCE = PROJECT_ROOT.parent / "shared" / "conformance" / "latest" / "corpus-dev" / "contracts" / "notes-tool-server.json"
REGISTRY = (SUITE / "targets.toml").read_text(encoding="utf-8")


def contract() -> dict[str, Any]:
    return json.loads((SUITE / "contract.json").read_text(encoding="utf-8"))


def test_the_suites_registry_and_contract_agree() -> None:
    coverage = cross_check_mcp_targets(parse_targets(REGISTRY), [contract()])
    assert coverage.ok and coverage.problems() == []


def test_the_reference_contract_cross_checks_with_the_suites_registry() -> None:
    if not REFERENCE.exists():
        pytest.skip(f"{REFERENCE} is absent")
    coverage = cross_check_mcp_targets(parse_targets(REGISTRY), [json.loads(REFERENCE.read_text(encoding="utf-8"))])
    assert coverage.ok, coverage.problems()


def test_every_problem_names_its_entry() -> None:
    wire = contract()
    wire["contractId"] = "c-one"
    [interface] = wire["permittedInterfaces"]
    interface["operations"].append({**interface["operations"][0], "operationId": "delete-note", "toolName": "delete_note"})
    wire["permittedInterfaces"].append({**interface, "logicalId": "fiction-server"})
    text = REGISTRY.replace('tools = ["search_notes", "create_note"]', 'tools = ["search_notes", "create_note", "purge"]')
    text += text[text.index("[[target]]"):].replace('"notes-tool-server"', '"spare-server"')
    coverage = cross_check_mcp_targets(parse_targets(text), [wire])
    assert coverage.problems() == [
        'contract "c-one" declares tool server "fiction-server", which no kind = "mcp" entry registers',
        'target[0] ("notes-tool-server") does not list tool "delete_note", which contract "c-one" calls in operation '
        '"delete-note"',
        'target[1] registers tool server "spare-server", which no contract names',
        'target[0] ("notes-tool-server") lists tool "purge", which no operation of a contract calls',
    ]


def test_a_tool_server_the_contract_declares_as_a_command_is_named_so() -> None:
    wire = contract()
    wire["permittedInterfaces"][0]["kind"] = "cli"
    coverage = cross_check_mcp_targets(parse_targets(CLI_TABLE + REGISTRY), [wire])
    assert coverage.problems() == [
        'target[1] registers tool server "notes-tool-server", which the contract declares as a cli interface, not mcp'
    ]


def _suite_check(tmp_path: Path, edit_registry: Any = None, edit_contract: Any = None) -> subprocess.CompletedProcess[str]:
    suite = tmp_path / "notes-tools"
    shutil.copytree(SUITE, suite, ignore=shutil.ignore_patterns("trials", "evidence"))
    if edit_registry is not None:
        (suite / "targets.toml").write_text(edit_registry(REGISTRY), encoding="utf-8")
    if edit_contract is not None:
        wire = contract()
        edit_contract(wire)
        (suite / "contract.json").write_text(json.dumps(wire), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "evalquality_core", "suite", "check", str(suite)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def _rename_interface(wire: dict[str, Any]) -> None:
    """The contract's tool server under another id, everywhere it is named (so it still compiles)."""
    renamed = json.loads(json.dumps(wire).replace('"notes-tool-server"', '"notes-tools-v2"'))
    wire.clear()
    wire.update(renamed)


@pytest.mark.parametrize(
    ("edit_registry", "edit_contract", "says"),
    [
        (lambda t: t.replace('tools = ["search_notes", "create_note"]', 'tools = ["search_notes"]'), None,
         'target[0] ("notes-tool-server") does not list tool "create_note", which contract "notes-tools" calls '
         'in operation "create-note"'),
        (lambda t: t.replace('interface_id = "notes-tool-server"', 'interface_id = "notes-tools-v2"'), None,
         'declares tool server "notes-tool-server", which no kind = "mcp" entry registers'),
        (None, _rename_interface, 'declares tool server "notes-tools-v2", which no kind = "mcp" entry registers'),
        (lambda t: t.replace('tools = ["search_notes", "create_note"]', 'tools = ["search_notes", "create_note", "purge"]'),
         None, 'target[0] ("notes-tool-server") lists tool "purge", which no operation of a contract calls'),
    ],
    ids=["unlisted-tool", "unknown-interface-id", "unregistered-server", "uncalled-tool"],
)
def test_suite_check_refuses_a_registry_the_contract_disagrees_with_in_one_line(
    tmp_path: Path, edit_registry: Any, edit_contract: Any, says: str
) -> None:
    proc = _suite_check(tmp_path, edit_registry, edit_contract)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("eval-quality: suite check: registry: ")
    assert f"{tmp_path / 'notes-tools' / 'targets.toml'}: " in line
    assert says in line
    assert "fix: register every tool server and tool the contract calls, and nothing else" in line
