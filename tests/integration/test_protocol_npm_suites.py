"""Issue 34 on real third-party systems installed from npm (``tests/npm_memory.py``): json-server 0.17.4
over HTTP and ``@modelcontextprotocol/server-memory`` over MCP stdio, as suites a user writes
(``tests/npm_suites.py``), driven through the real CLI (``eval-quality suite generate|trials``,
``score``, ``explain``) as child processes.

* Volatile parts of an answer: json-server stamps ``Date``, an ``ETag`` of the body and a ``Location``
  with the port and the new id, and mints a random id per created post. Declared (``volatileHeaders``,
  ``volatilePointers``), the generator's determinism check (the clean arm run again after the
  rollback) passes and ``generate --check`` holds; undeclared, it fails in one line naming the step and
  the field.
* Protocol-level success indicators: a contract whose indicator is the HTTP status (json-server) or
  the tool's ``isError`` (server-memory) has no coverage gap and scores PASS; without
  ``protocolSuccessIndicator`` ``explain`` names the operation behind the gap.

The packages are installed once per session; if the registry cannot be reached the tests FAIL.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.npm_suites import json_server_suite, memory_pass_suite

pytestmark = pytest.mark.slow

EQ = [sys.executable, "-m", "evalquality_core"]


def eq(*args: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``eval-quality <args>`` as a child process."""
    return subprocess.run([*EQ, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    """The run exited 0 (else show its stderr)."""
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    return proc






def score(suite: Path, probe: str, out: Path) -> dict[str, Any]:
    """``eval-quality score`` of a probe's three stored trials, as README's walkthrough does."""
    trials = suite / "trials" / probe
    digest = ok(eq("suite", "digest", str(suite), cwd=out.parent)).stdout.strip()
    ok(eq("score", *(arg for n in (1, 2, 3) for arg in ("--record", str(trials / f"trial-{n}" / "sealed-run-record.json"))),
          "--contract", str(suite / "contract.json"), "--probe", str(suite / "probes" / f"{probe}.json"),
          "--preflight-verdict", str(trials / "preflight-verdict.json"), "--policy", str(suite / "scoring-policy.json"),
          "--isolation-manifest", str(trials / "trial-1" / "isolation-manifest.json"),
          "--evaluator-configuration", str(trials / "trial-1" / "evaluator-configuration.json"),
          "--corpus-digest", digest, "--out", str(out), cwd=out.parent))
    return json.loads(out.read_text())


def without_protocol_indicator(suite: Path) -> Path:
    """A copy of the suite's contract with every ``protocolSuccessIndicator`` removed."""
    contract = json.loads((suite / "contract.json").read_text())
    for interface in contract["permittedInterfaces"]:
        for operation in interface["operations"]:
            operation["responseDescriptor"].pop("protocolSuccessIndicator", None)
    path = suite.parent / "contract-without-protocol-indicator.json"
    path.write_text(json.dumps(contract))
    return path


# ---------------------------------------------------------------- json-server


@pytest.mark.parametrize(
    ("headers", "pointers", "fields"),
    [
        # Nothing declared: the created post's random id is the first difference (record keys in order).
        (False, False, ('at response-body /id',)),
        # Only the ids declared: the ETag (a digest of the body, id included) or the Date differs.
        (False, True, ('at response header "date"', 'at response header "etag"')),
    ],
    ids=["nothing-declared", "headers-undeclared"],
)
def test_json_server_undeclared_volatile_parts_fail_the_determinism_check_naming_step_and_field(
    json_server_modules: Path, tmp_path: Path, headers: bool, pointers: bool, fields: tuple[str, ...]
) -> None:
    suite = json_server_suite(tmp_path / "suites", json_server_modules, volatile_headers=headers, volatile_pointers=pointers)
    done = eq("suite", "generate", str(suite), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, (done.returncode, done.stderr[-3000:])
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "P-001" in lines[0] and "the system is not deterministic" in lines[0], lines[0]
    assert 'step "create" answered differently' in lines[0], lines[0]
    assert any(field in lines[0] for field in fields), lines[0]


def test_json_server_with_volatile_parts_declared_passes_and_its_http_status_contract_reaches_pass(
    json_server_modules: Path, tmp_path: Path
) -> None:
    suite = json_server_suite(tmp_path / "suites", json_server_modules)
    # The determinism check (clean arm again after the rollback) holds, volatile parts aside.
    generated = ok(eq("suite", "generate", str(suite), cwd=tmp_path))
    assert "P-001: read-only-deployment; O-001 true -> false" in generated.stdout, generated.stdout
    # The evidence is the raw answer; a new run (another Date, ETag, Location and id) equals it once the
    # volatile parts are left out, so the stored bytes stand and --check holds.
    stored = (suite / "evidence" / "P-001" / "baseline.json").read_bytes()
    create = json.loads(stored)["observations"][0]
    assert create["responseStatus"] == 201 and len(create["responseBody"]["id"]) == 7, create
    assert {"date", "etag", "location"} <= {name.lower() for name in create["responseHeaders"]}, create
    assert ok(eq("suite", "generate", "--check", str(suite), cwd=tmp_path)).stdout.strip().endswith("up to date")
    assert (suite / "evidence" / "P-001" / "baseline.json").read_bytes() == stored
    # A clean contract whose success indicator is the HTTP status: no gap, and PASS on both probes.
    assert ok(eq("explain", "--contract", str(suite / "contract.json"), cwd=tmp_path)).stdout.strip().endswith("no coverage gap")
    ok(eq("suite", "trials", str(suite), cwd=tmp_path, timeout=1200))
    for probe in ("P-001", "P-002"):
        evidence = score(suite, probe, tmp_path / f"{probe}-evidence.json")
        assert (evidence["contractVerdict"], evidence["verdictBasis"], evidence["coverageGaps"]) == ("PASS", [], []), probe
    # The same contract without the protocol-level indicator has a gap, and explain names the operation.
    explained = ok(eq("explain", "--contract", str(without_protocol_indicator(suite)), cwd=tmp_path)).stdout
    assert "1 coverage gap(s): success-indicator-separation" in explained.splitlines()[0], explained
    # Both operations now declare no indicator at all (successIndicator null), so both are named.
    assert [line for line in explained.splitlines() if line.startswith("  gap at:")] == [
        "  gap at: create-post (POST /posts, interface posts)", "  gap at: list-posts (GET /posts, interface posts)"]


# ---------------------------------------------------------------- server-memory


def test_server_memory_contract_with_is_error_as_its_indicator_reaches_pass(memory_server_modules: Path, tmp_path: Path) -> None:
    suite = memory_pass_suite(tmp_path / "suites", memory_server_modules)
    assert ok(eq("explain", "--contract", str(suite / "contract.json"), cwd=tmp_path)).stdout.strip().endswith("no coverage gap")
    ok(eq("suite", "generate", str(suite), cwd=tmp_path))
    ok(eq("suite", "trials", str(suite), cwd=tmp_path, timeout=1200))
    evidence = score(suite, "P-001", tmp_path / "P-001-evidence.json")
    assert (evidence["contractVerdict"], evidence["verdictBasis"], evidence["coverageGaps"]) == ("PASS", [], [])
    # The malformed create really answered isError (what O-003 reads as response-status 1).
    record = json.loads((suite / "trials" / "P-001" / "trial-1" / "sealed-run-record.json").read_text())
    answered = [(o["operationId"], o["responseStatus"]) for o in record["observations"]]
    assert answered == [("create-entities", 0), ("read-graph", 0), ("create-entities", 1)], answered
    explained = ok(eq("explain", "--contract", str(without_protocol_indicator(suite)), cwd=tmp_path)).stdout
    assert "  gap at: create-entities (tool create_entities, interface memory)" in explained.splitlines(), explained
    assert "  gap at: read-graph (tool read_graph, interface memory)" in explained.splitlines(), explained
