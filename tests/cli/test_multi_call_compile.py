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


def test_the_preflight_cli_reduces_stored_multi_call_observations(tmp_path: Path) -> None:
    """``eval-quality preflight`` (the reference's surface: no clean twins) over stored observations of a
    multi-call leg: the read-back call decides; exit 0 when the no-op DELETE's read finds the post, 3
    (pre-flight not passed) when it does not."""
    from evalquality_core.preflight.plan import plan_preflight
    from tests.core.preflight.test_multi_call import _suite, delete_observations

    contract, _, noop = _suite()
    plan = plan_preflight(contract, [noop], "r")
    (tmp_path / "contract.json").write_text(json.dumps(contract))
    (tmp_path / "probes.json").write_text(json.dumps([noop]))

    def run(fault_read_status: int) -> subprocess.CompletedProcess[str]:
        (tmp_path / "observations.json").write_text(json.dumps(delete_observations(plan, fault_read_status, 404)))
        return subprocess.run(
            [sys.executable, "-m", "evalquality_core", "preflight", "--contract", str(tmp_path / "contract.json"),
             "--probes", str(tmp_path / "probes.json"), "--observations", str(tmp_path / "observations.json"), "--run-id", "r"],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )

    caught = run(200)
    assert caught.returncode == 0, caught.stderr
    fired = [c for c in json.loads(caught.stdout)["checks"] if c["kind"] == "seeded-fault-fired"]
    assert fired == [{"kind": "seeded-fault-fired", "interfaceId": "posts", "operationId": "delete-post", "outcome": "satisfied", "note": "D-002"}]
    missed = run(404)
    assert missed.returncode == 3 and "Traceback" not in missed.stderr
