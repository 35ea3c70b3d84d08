"""``../shared/conformance/latest/`` through the command line (issue 11): compile of every contract as
``expected-compile.json`` says (in process: 21 verdicts of one command, tests/cli_in_process.py), and as real
child processes the byte-identical brief, the skill-defect chain's pre-flight and score (``expected.json``),
and 7.0.0's rule that every input's stamp is checked before any input's shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_score import sealed_with_corpus
from tests.cli_in_process import run_in_process
from tests.conftest import CONFORMANCE

LATEST = CONFORMANCE / "latest"
CHAIN = LATEST / "chains" / "skill-defect"
EQ = [sys.executable, "-m", "evalquality_core"]


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*EQ, *args], input=stdin, capture_output=True, timeout=180)


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module", autouse=True)
def latest() -> Path:
    if not LATEST.is_dir():
        pytest.skip(f"conformance data absent: {LATEST}")
    return LATEST


def test_compile_every_contract_as_the_index_says() -> None:
    entries = [e for e in _load(LATEST / "corpus-dev/expected-compile.json")["entries"] if e["kind"] == "contract"]
    results = [run_in_process("compile", "--in", str(LATEST / "corpus-dev" / e["path"])) for e in entries]
    for entry, result in zip(entries, results, strict=True):
        raw = (LATEST / "corpus-dev" / entry["path"]).read_bytes()
        if entry["expect"] == "compiles":
            assert result.returncode == 0, (entry["path"], result.stderr)
            assert result.stdout == raw, entry["path"]  # the contract back, unchanged, at its stamp 7
        else:
            assert result.returncode == 4, entry["path"]
            assert result.stderr.decode().startswith(f"eval-quality: {entry['expect']}: "), entry["path"]


def test_seal_writes_the_reference_brief_byte_for_byte(tmp_path: Path) -> None:
    folder = LATEST / "corpus-dev/compile-seal-example"
    result = run("seal", "--in", str(folder / "contract.json"), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "sealed-evaluator-brief.json").read_bytes() == (folder / "brief.json").read_bytes()


def test_preflight_writes_the_stored_verdict(tmp_path: Path) -> None:
    expected = _load(CHAIN / "expected.json")["preflight"]
    result = run("preflight", "--contract", str(CHAIN / "eval-contract.json"), "--probes", str(CHAIN / "probe.json"),
                 "--observations", str(CHAIN / "reconstructed-inputs/preflight-observations.json"),
                 "--run-id", expected["runId"], "--out", str(tmp_path / "verdict.json"))
    assert result.returncode == 0, result.stderr
    assert _load(tmp_path / "verdict.json") == _load(CHAIN / "preflight-verdict.json")


def _score_args(tmp_path: Path) -> tuple[list[str], Path]:
    inputs = CHAIN / "reconstructed-inputs"
    record, root = sealed_with_corpus(tmp_path, CHAIN / "sealed-run-record.json", inputs / "isolation-manifest.json")
    corpus_digest = _load(CHAIN / "expected.json")["score"]["inputs"]["corpusDigest"]
    return [
        "score", "--record", str(record), "--contract", str(CHAIN / "eval-contract.json"),
        "--probe", str(CHAIN / "probe.json"), "--preflight-verdict", str(CHAIN / "preflight-verdict.json"),
        "--policy", str(inputs / "scoring-policy.json"), "--corpus-digest", corpus_digest,
        "--isolation-manifest", str(inputs / "isolation-manifest.json"),
        "--evaluator-configuration", str(inputs / "evaluator-configuration.json"), "--corpus-root", str(root),
    ], root


def test_score_gives_the_reference_evidence_artifact(tmp_path: Path) -> None:
    args, _ = _score_args(tmp_path)
    result = run(*args, "--out", str(tmp_path / "out"))
    expected = _load(CHAIN / "expected.json")["score"]
    assert result.returncode == expected["exitCode"] == 0, result.stderr
    assert _load(tmp_path / "out" / "evidence-artifact.json") == _load(CHAIN / "evidence-artifact.json")


def test_score_checks_every_stamp_before_any_shape(tmp_path: Path) -> None:
    """7.0.0: a manifest at a stamp we do not read is named even though the contract's shape is also bad."""
    args, _ = _score_args(tmp_path)
    contract = _load(CHAIN / "eval-contract.json")
    contract["unknownKey"] = True
    bad_contract = tmp_path / "contract.json"
    bad_contract.write_text(json.dumps(contract))
    manifest = _load(CHAIN / "reconstructed-inputs/isolation-manifest.json")
    manifest["schemaVersion"] = 9
    bad_manifest = tmp_path / "manifest.json"
    bad_manifest.write_text(json.dumps(manifest))
    args[args.index("--contract") + 1] = str(bad_contract)
    args[args.index("--isolation-manifest") + 1] = str(bad_manifest)
    result = run(*args)
    assert result.returncode == 5
    assert result.stderr.decode().startswith("eval-quality: schema-version-mismatch: IsolationManifest.schemaVersion: ")
    probe = _load(CHAIN / "probe.json")
    probe["schemaVersion"] = 4
    bad_probe = tmp_path / "probe.json"
    bad_probe.write_text(json.dumps(probe))
    args[args.index("--probe") + 1] = str(bad_probe)
    result = run(*args)
    assert result.stderr.decode().startswith("eval-quality: schema-version-mismatch: Probe[probeId=P-001].schemaVersion: ")


def test_aggregate_strength_checks_every_stamp_before_any_shape(tmp_path: Path) -> None:
    evidence = _load(CHAIN / "evidence-artifact.json")
    evidence["schemaVersion"] = 2
    path = tmp_path / "evidence.json"
    path.write_text(json.dumps(evidence))
    policy = _load(CHAIN / "reconstructed-inputs/scoring-policy.json")
    policy["unknownKey"] = 1
    policy_path = tmp_path / "policy.json"
    policy_path.write_text(json.dumps(policy))
    floors = tmp_path / "floors.json"
    floors.write_text("{}")
    result = run("aggregate-strength", "--evidence", str(path), "--floors", str(floors), "--policy", str(policy_path))
    assert result.returncode == 5
    assert result.stderr.decode().startswith("eval-quality: schema-version-mismatch: EvidenceArtifact[0].schemaVersion: ")
