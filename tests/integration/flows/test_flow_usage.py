"""Bad flags and settings for the flows' entry points: one line, exit 64, no traceback, nothing run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[3]

CASES = [
    pytest.param(["--concurrency", "0"], {}, "--concurrency must be at least 1", id="concurrency-zero"),
    pytest.param(["--concurrency", "many"], {}, "invalid int value", id="concurrency-not-a-number"),
    pytest.param(["--bogus"], {}, "unrecognized arguments: --bogus", id="unknown-flag"),
    # Never a prefix of another flag: "--suite notes" must not become "--suites notes" (which would then
    # say that folder does not exist), nor "--conc 4" a run at concurrency 4.
    pytest.param(["--suite", "notes"], {}, "unrecognized arguments: --suite notes", id="suite-is-not-suites"),
    pytest.param(["--conc", "4"], {}, "unrecognized arguments: --conc 4", id="abbreviated-flag"),
    pytest.param([], {"EVALQUALITY_CONCURRENCY": "lots"}, "EVALQUALITY_CONCURRENCY='lots'", id="bad-setting"),
]


@pytest.mark.parametrize("flow", ["flows.preflight", "flows.contract_strength"])
@pytest.mark.parametrize(("args", "env", "says"), CASES)
def test_a_bad_flag_or_setting_is_one_line_and_exit_64(tmp_path, flow, args, env, says):
    home = tmp_path / "home"
    result = subprocess.run(
        [sys.executable, "-m", flow, *args],
        cwd=PROJECT_ROOT, env={**os.environ, "EVALQUALITY_HOME": str(home), **env},
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 64, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"python -m {flow}: usage: "), result.stderr
    assert says in lines[0]
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (home / "leg-cache").exists()  # nothing ran
