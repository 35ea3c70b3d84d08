"""Issue 34 keys of contract 7, through the real CLI (``eval-quality explain|compile`` as child
processes) on the contracts of the npm suites (``tests/npm_suites.py``; no package is installed here):

* ``responseDescriptor.protocolSuccessIndicator: "response-status"`` satisfies success-indicator
  separation when a listed oracle reads the status beside a payload; ``explain`` names the operation
  behind a gap;
* a witness may not read a header the operation declares in ``volatileHeaders``;
* both keys are refused below contract 7, naming where.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.npm_suites import json_server_contract, memory_contract

EQ = [sys.executable, "-m", "evalquality_core"]


def eq(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``eval-quality <args>`` as a child process."""
    return subprocess.run([*EQ, *args], cwd=cwd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def write(tmp_path: Path, contract: dict[str, Any], name: str = "contract.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(contract))
    return path


def one_line(proc: subprocess.CompletedProcess[str], code: int) -> str:
    assert proc.returncode == code and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def explain(tmp_path: Path, contract: dict[str, Any]) -> list[str]:
    done = eq("explain", "--contract", str(write(tmp_path, contract)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_http_status_as_indicator_leaves_no_gap(tmp_path: Path) -> None:
    assert explain(tmp_path, json_server_contract())[0].endswith("no coverage gap")
    assert explain(tmp_path, memory_contract())[0].endswith("no coverage gap")


def test_without_the_protocol_indicator_explain_names_the_operation_behind_the_gap(tmp_path: Path) -> None:
    contract = json_server_contract()
    for operation in contract["permittedInterfaces"][0]["operations"]:
        del operation["responseDescriptor"]["protocolSuccessIndicator"]
    lines = explain(tmp_path, contract)
    assert lines[0].endswith("1 coverage gap(s): success-indicator-separation")
    assert [line for line in lines if line.startswith("  gap at:")] == [
        "  gap at: create-post (POST /posts, interface posts)",
        "  gap at: list-posts (GET /posts, interface posts)",
    ]


def test_an_oracle_that_does_not_read_the_status_does_not_witness_it(tmp_path: Path) -> None:
    contract = json_server_contract()
    first = contract["oracles"][0]
    first["check"] = first["check"]["operands"][1]  # the title echo alone, no status
    lines = explain(tmp_path, contract)
    assert lines[0].endswith("1 coverage gap(s): success-indicator-separation"), lines
    assert "  gap at: create-post (POST /posts, interface posts)" in lines


def test_explain_names_tools_and_sibling_groups(tmp_path: Path) -> None:
    contract = memory_contract()
    contract["siblingGroups"] = None
    for operation in contract["permittedInterfaces"][0]["operations"]:
        del operation["responseDescriptor"]["protocolSuccessIndicator"]
    gaps = [line for line in explain(tmp_path, contract) if line.startswith("  gap at:")]
    assert gaps == [
        "  gap at: create-entities (tool create_entities, interface memory)",
        "  gap at: read-graph (tool read_graph, interface memory)",
        '  gap at: siblingGroups is null (declare the groups, or {"operations": [], "parameters": []} for none)',
    ]


def test_a_witness_reading_a_volatile_header_is_refused_naming_it(tmp_path: Path) -> None:
    contract = json_server_contract()
    witness = contract["permittedInterfaces"][0]["operations"][0]["sensitivityWitness"]
    witness["relation"] = {"op": "not", "operands": [{"op": "equality", "operands": [
        {"pointer": "/interactions/create-post-witness-a/response-headers/etag"},
        {"pointer": "/interactions/create-post-witness-b/response-headers/etag"}]}]}
    line = one_line(eq("compile", "--in", str(write(tmp_path, contract)), "--out", str(tmp_path / "out.json"), cwd=tmp_path), 4)
    assert line.startswith("eval-quality: malformed-operator-expression: EvalContract.permittedInterfaces[0].operations[0]"
                           ".sensitivityWitness.relation"), line
    assert 'reads declared volatile header "etag"' in line, line
    # The same relation compiles when the header is not declared volatile.
    del contract["permittedInterfaces"][0]["operations"][0]["volatileHeaders"]
    done = eq("compile", "--in", str(write(tmp_path, contract)), "--out", str(tmp_path / "out.json"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_the_keys_are_refused_below_contract_7_naming_where(tmp_path: Path) -> None:
    contract = json_server_contract() | {"schemaVersion": 6}
    line = one_line(eq("compile", "--in", str(write(tmp_path, contract)), "--out", str(tmp_path / "out.json"), cwd=tmp_path), 5)
    assert "permittedInterfaces[0].operations[0].volatileHeaders is not a key at schemaVersion 6" in line, line
    assert "permittedInterfaces[0].operations[0].responseDescriptor.protocolSuccessIndicator is not a key at schemaVersion 6" in line
    nulled = json_server_contract()
    nulled["permittedInterfaces"][0]["operations"][0]["volatileHeaders"] = None
    line = one_line(eq("compile", "--in", str(write(tmp_path, nulled)), "--out", str(tmp_path / "out.json"), cwd=tmp_path), 5)
    assert "volatileHeaders is a list of header names when present; leave the key off instead of null" in line, line
