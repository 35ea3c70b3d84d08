"""``python -m flows.preflight`` over an HTTP suite whose service stalls mid-answer (issue 33): the
notes-api suite cut to P-001, its server changed so that every GET answers a 200 head with no
``Content-Length``, half the body, and then an hour of silence. Each such leg is a
``budget-exhausted`` fault at ``max_elapsed_ms``; the probe's pre-flight does not pass (no verdict is
written; its row names the fault); no GET answer is ever stored in the leg cache, so a second run asks
the service again instead of reading a truncated answer back."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[3]
SUITE = PROJECT_ROOT / "corpus" / "suites" / "notes-api"

pytestmark = pytest.mark.slow

#: The stall, put in front of the server's one answering method (GET only: the writes still answer).
_ANSWER = '''        self.send_response_only(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))'''
_STALLING_ANSWER = '''        if self.command == "GET":  # the stall: no length, half the body, then silence
            self.send_response_only(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            time.sleep(3600)
''' + _ANSWER


def _stalling_suite(root: Path) -> Path:
    suite = root / "notes-api"
    shutil.copytree(SUITE, suite, ignore=shutil.ignore_patterns("trials", "evidence"))
    for probe in (suite / "probes").glob("*.json"):
        if probe.stem != "P-001":
            probe.unlink()
    targets = suite / "targets.toml"
    text = targets.read_text()
    assert "max_elapsed_ms = 10000\n" in text
    targets.write_text(text.replace("max_elapsed_ms = 10000\n", "max_elapsed_ms = 1000\n"))
    server = suite / "system" / "notes_api.py"
    code = server.read_text()
    assert _ANSWER in code and "import datetime\n" in code
    server.write_text(code.replace(_ANSWER, _STALLING_ANSWER).replace("import datetime\n", "import datetime\nimport time\n", 1))
    return suite


def _run(suites: Path, out: Path, home: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "flows.preflight", "--suites", str(suites), "--out", str(out),
               "--baseline", str(home.parent / "baseline.json"), "--update-baseline", "--concurrency", "2"]
    done = subprocess.run(command, cwd=PROJECT_ROOT, env={**os.environ, "EVALQUALITY_HOME": str(home)},
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads((out / "preflight-summary.json").read_text())


def _stored_methods(home: Path) -> list[str]:
    """The method of every request the leg cache holds an answer for (entries read as stored, no helper)."""
    with sqlite3.connect(home / "leg-cache" / "legs.sqlite3") as database:
        entries = [json.loads(text) for (text,) in database.execute("SELECT entry FROM legs")]
    return sorted(entry["record"]["request"].get("method", entry["record"]["request"]["kind"]) for entry in entries)


def test_a_stalling_service_fails_preflight_and_nothing_it_half_said_is_cached(tmp_path: Path) -> None:
    suites, out, home = tmp_path / "suites", tmp_path / "out", tmp_path / "home"
    _stalling_suite(suites)
    first = _run(suites, out, home)
    row = first["probes"][0]
    assert row["outcome"].startswith("fault: budget-exhausted: exceeded maxElapsedMs (1000ms)"), row
    assert row["verdict_file"] is None  # the pre-flight did not pass: no verdict at all
    assert first["legsFaulted"] >= 1
    stored = _stored_methods(home)
    assert "GET" not in stored, stored  # the writes answered and are cached; no half-said GET is
    second = _run(suites, out, home)
    # The faulted GET legs run again (nothing answered them from the cache); the rest is read back.
    assert second["legsSpawned"] == first["legsFaulted"] >= 1
    assert second["legsFromCache"] == len(stored)
    assert second["probes"][0]["outcome"] == row["outcome"]
    assert "GET" not in _stored_methods(home)
