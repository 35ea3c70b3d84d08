"""``EVALQUALITY_PROGRESS_SECONDS`` past the one time bound (issue 33): a piped ``python -m flows.preflight``
with the variable at ``1e30`` runs as with the default, instead of its progress thread dying in an
``OverflowError`` traceback (a wait longer than the platform's clock holds)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.skill_suite import build_skill_suite

PROJECT_ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def test_a_progress_interval_past_the_bound_is_ignored_not_a_traceback(conformance: Path, tmp_path: Path) -> None:
    suites, out, home = tmp_path / "suites", tmp_path / "out", tmp_path / "home"
    build_skill_suite(conformance, suites, delay_s=0.5)  # legs still running when the progress thread first waits
    done = subprocess.run(
        [sys.executable, "-m", "flows.preflight", "--suites", str(suites), "--out", str(out),
         "--baseline", str(tmp_path / "baseline.json"), "--update-baseline", "--concurrency", "1"],
        cwd=PROJECT_ROOT, env={**os.environ, "EVALQUALITY_HOME": str(home), "EVALQUALITY_PROGRESS_SECONDS": "1e30"},
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "OverflowError" not in done.stderr, done.stderr
    assert (out / "preflight-summary.json").is_file()
