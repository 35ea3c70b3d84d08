"""A manifestation witness that also holds on the clean system fails the real pre-flight (issue 33).

``python -m flows.preflight`` as a subprocess over a copy of ``corpus/suites/notes`` in a temp folder,
with a temp eval-quality home. The copy as committed matches its recorded baseline (the corpus
baseline's ``notes/*`` rows). In a second copy, probe P-001's witness asks to patch a note that does not
exist: the mutated system (its store write deleted) leaves the store untouched, so the witness "fires",
but the clean system leaves it untouched too (an unknown note is refused before anything is written),
so the witness does not tell the defect from clean behaviour. That copy must fail pre-flight, naming
P-001 and why, while every other probe still passes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[3]
NOTES = PROJECT_ROOT / "corpus" / "suites" / "notes"
BASELINE = PROJECT_ROOT / "corpus" / "expected-preflight.json"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("witness-clean-flow")]


def _copy_notes(root: Path) -> Path:
    """A copy of the notes suite under ``root/notes`` (its stored trials and evidence are not read here)."""
    suite = root / "notes"
    shutil.copytree(NOTES, suite, ignore=shutil.ignore_patterns("trials", "evidence", "__pycache__"))
    return suite


def _notes_baseline(path: Path) -> Path:
    """The corpus baseline's ``notes/*`` rows: what the committed notes suite is recorded to do."""
    recorded = json.loads(BASELINE.read_text(encoding="utf-8"))
    rows = {name: row for name, row in recorded["probes"].items() if name.startswith("notes/")}
    assert len(rows) == 6
    path.write_text(json.dumps({"probes": rows}), encoding="utf-8")
    return path


def _preflight(suites: Path, out: Path, baseline: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALQUALITY_HOME": str(home), "PREFECT_HOME": str(home / "prefect")}
    return subprocess.run(
        [sys.executable, "-m", "flows.preflight", "--suites", str(suites), "--out", str(out),
         "--baseline", str(baseline), "--concurrency", "2"],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600,
    )


def _verdict(out: Path, probe_id: str) -> dict:
    return json.loads((out / "notes" / f"preflight-{probe_id}.json").read_text(encoding="utf-8"))


def test_a_witness_that_holds_on_the_clean_system_fails_preflight(tmp_path):
    home = tmp_path / "home"
    baseline = _notes_baseline(tmp_path / "baseline.json")

    # The committed suite, unchanged: every probe passes and matches its baseline row.
    _copy_notes(tmp_path / "as-committed")
    result = _preflight(tmp_path / "as-committed", tmp_path / "out-committed", baseline, home)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every probe matched the outcome the baseline records" in result.stdout + result.stderr

    # P-001's witness now holds on the clean system as well.
    hostile = _copy_notes(tmp_path / "hostile")
    probe_path = hostile / "probes" / "P-001.json"
    probe = json.loads(probe_path.read_text(encoding="utf-8"))
    witness = probe["defects"][0]["manifestationWitness"]
    assert witness["legId"] == "silent-write-leg"
    witness["inputs"]["option"]["id"] = "n-404"  # no such note: neither system writes the store
    probe_path.write_text(json.dumps(probe, indent=1), encoding="utf-8")

    out = tmp_path / "out-hostile"
    result = _preflight(tmp_path / "hostile", out, baseline, home)
    said = result.stdout + result.stderr
    assert result.returncode == 2, said  # a verdict moved against the baseline
    assert "Traceback" not in said
    assert "notes/P-001: outcome moved from 'passed' to 'failed: seeded-faults-scoped'" in said, said
    verdict = _verdict(out, "P-001")
    assert verdict["passed"] is False
    failed = [check for check in verdict["checks"] if check["outcome"] == "failed"]
    assert failed == [{
        "kind": "seeded-faults-scoped",
        "interfaceId": "notes",
        "operationId": "patch-note",
        "outcome": "failed",
        "note": 'D-001: the manifestation witness also holds on the clean system for its own inputs '
        '(clean leg "silent-write-leg-clean"), so it does not tell the defect from clean behaviour',
    }]
    # The witness still fires on its own fault leg: only the clean leg tells this witness apart.
    fired = next(check for check in verdict["checks"] if check["kind"] == "seeded-fault-fired")
    assert fired["outcome"] == "satisfied"
    # No other probe moved.
    for probe_id in ("P-002", "P-003", "P-004", "P-005", "P-006"):
        assert _verdict(out, probe_id)["passed"] is True, probe_id
        assert f"notes/{probe_id}:" not in said
