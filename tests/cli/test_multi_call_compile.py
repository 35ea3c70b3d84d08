"""Multi-call legs through the real CLI (issue 34): ``eval-quality compile`` as a child process accepts
the json-server suite's contract (a DELETE witnessed on its path id, each leg reading the collection
after its delete) and refuses a leg's call naming an undeclared operation on one line, exit 4, naming
the call's path (README exit codes: 4 structural failure)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CONTRACT = Path(__file__).resolve().parents[1] / "integration" / "suites" / "json-server" / "contract.json"


def _compile(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalquality_core", "compile", "--in", str(path)],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_a_multi_call_witness_compiles(tmp_path: Path) -> None:
    result = _compile(CONTRACT)
    assert result.returncode == 0, result.stderr
    compiled = json.loads(result.stdout)
    delete = next(op for op in compiled["permittedInterfaces"][0]["operations"] if op["operationId"] == "delete-post")
    assert [leg["calls"][0]["callId"] for leg in delete["sensitivityWitness"]["legs"]] == ["after-delete-a", "after-delete-b"]


def test_a_call_naming_an_undeclared_operation_is_one_line_exit_4(tmp_path: Path) -> None:
    contract = json.loads(CONTRACT.read_text())
    delete = next(op for op in contract["permittedInterfaces"][0]["operations"] if op["operationId"] == "delete-post")
    delete["sensitivityWitness"]["legs"][1]["calls"][0]["operationId"] = "list-all"
    bad = tmp_path / "contract.json"
    bad.write_text(json.dumps(contract))
    result = _compile(bad)
    assert result.returncode == 4
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "unreachable-check-evidence" in result.stderr
    assert "permittedInterfaces[0].operations[3].sensitivityWitness.legs[1].calls[0]" in result.stderr
    assert '"list-all"' in result.stderr
