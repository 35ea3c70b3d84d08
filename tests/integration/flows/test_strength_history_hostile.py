"""A hostile ``strength-history.json`` never breaks a night (real ``python -m flows.contract_strength``).

A malformed entry (not an object, a key missing, a wrong type, a bad value) is left out of the report
with one warning line naming the file and the entry's index, and stays in the file when the run
appends; a file that is not a history at all is one line, exit 74, before anything runs, and is left
byte for byte as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.flows.test_contract_strength import make_corpus

PROJECT = Path(__file__).resolve().parents[3]
PROG = "python -m flows.contract_strength"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("strength-history-hostile")]


def _good(at: str, caught: int) -> dict:
    """A well-formed entry of the second shape, written by hand as an older run of this flow would have."""
    return {
        "historyVersion": 2, "at": at, "flowRunId": f"run-{at}", "flowRunName": f"nightly {at[:10]}", "exitCode": 0,
        "suites": {"notes": {
            "contractId": "notes-cli", "aggregateRefusal": None, "classes": {},
            "strength": {"defect": {"caught": caught, "exercised": 1, "rate": float(caught)}, "gameability": None},
            "probes": {"P-001": {"class": "defect", "verdict": "PASS", "preflight": "passed"}},
        }},
    }


def _night(corpus: Path, out: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALQUALITY_HOME": str(home)}
    for name in ("EVALQUALITY_SUITES", "EVALQUALITY_STRENGTH_BASELINE", "EVALQUALITY_LEG_CACHE"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "flows.contract_strength", "--concurrency", "2", "--suites", str(corpus / "suites"),
         "--out", str(out), "--baseline", str(corpus / "expected-strength.json")],
        cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600,
    )


def test_malformed_history_entries_are_skipped_with_one_line_each_and_kept(tmp_path):
    corpus, out = make_corpus(tmp_path), tmp_path / "out"
    out.mkdir()
    missing_at = _good("2026-11-27T02:00:00Z", 1)
    del missing_at["at"]
    bad_value = _good("2026-11-29T02:00:00Z", 1)
    bad_value["suites"]["notes"]["strength"]["defect"]["caught"] = "one"  # the chart would int() it
    entries = [
        _good("2026-11-26T02:00:00Z", 1),
        "garbage",  # not an object
        missing_at,  # a key missing
        {**_good("2026-11-28T02:00:00Z", 1), "suites": {"notes": ["not", "an", "object"]}},  # wrong type
        _good("2026-11-28T03:00:00Z", 0),
        bad_value,  # a bad value, just before this run: what "since the previous run" compares with
    ]
    history = out / "strength-history.json"
    history.write_text(json.dumps({"nights": entries}))

    result = _night(corpus, out, tmp_path / "home")

    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    warned = [line for line in result.stderr.splitlines() if "history entry" in line]
    assert len(warned) == 4, result.stderr[-3000:]
    for index, line in zip((1, 2, 3, 5), warned, strict=True):
        assert f"{history}: history entry {index} skipped (" in line, line
    assert "not an object" in warned[0] and "at: missing" in warned[1]
    assert "suites.notes: expected an object" in warned[2]
    assert "suites.notes.strength.defect.caught: expected a whole number" in warned[3]
    # Nothing already there is lost: every entry as it was, then this run's.
    recorded = json.loads(history.read_text())["nights"]
    assert recorded[:6] == entries and len(recorded) == 7
    assert recorded[6]["suites"]["notes"]["strength"]["defect"]["caught"] == 1
    # The report compares with the last well-formed entry (caught 0 then), not the malformed one.
    page = (out / "strength-report.html").read_text()
    assert "defect strength 0/1 (0.00) -&gt; 1/1 (1.00)" in page
    assert "2026-11-28T03:00:00Z" in page


def test_a_history_file_that_is_not_json_is_one_line_74_and_left_untouched(tmp_path):
    corpus, out = make_corpus(tmp_path), tmp_path / "out"
    out.mkdir()
    history = out / "strength-history.json"
    history.write_bytes(b'{"nights": [ {"at": "2026-11-26T02:00:00Z",\n  truncated by a full disk')

    result = _night(corpus, out, tmp_path / "home")

    lines = result.stderr.strip().splitlines()
    assert result.returncode == 74, result.stderr[-3000:]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert lines[0].startswith(f"{PROG}: {history}: not a strength history (not JSON: ")
    assert "left as it is" in lines[0]
    assert history.read_bytes() == b'{"nights": [ {"at": "2026-11-26T02:00:00Z",\n  truncated by a full disk'
    assert not (out / "strength-report.html").exists()
    assert not (tmp_path / "home" / "leg-cache").exists(), "nothing ran"


@pytest.mark.parametrize("content", ['["a list, not an object"]', '{"nights": {"not": "a list"}}'])
def test_json_that_is_not_a_history_is_one_line_74_and_left_untouched(tmp_path, content):
    corpus, out = make_corpus(tmp_path), tmp_path / "out"
    out.mkdir()
    history = out / "strength-history.json"
    history.write_text(content)

    result = _night(corpus, out, tmp_path / "home")

    assert result.returncode == 74, result.stderr[-3000:]
    assert result.stderr.strip() == (
        f'{PROG}: {history}: not a strength history (expected an object with a "nights" list); left as it is: '
        "repair it or move it aside, then run again"
    )
    assert history.read_text() == content
