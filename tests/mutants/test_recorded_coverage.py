"""Recorded coverage decides which mutants are NoCoverage, so it is a verified entry of the coverage store
(tasks/mutants.py), bound by its key and record digest like the outcome store's entries: an altered
entry, one moved under another key, or one of the wrong shape is not used (and is deleted, so the
coverage is recorded again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.mutants import close_plan_store, recorded_coverage, store_coverage
from tests.mutants.store_rows import plant, rows

KEY = "ab" * 32
RUNS = {"leg-1": {"system/notes.py": [3, 4, 9]}, "leg-2": None, "plan": {"system/notes.py": [3]}}




def test_recorded_coverage_reads_back_bound_to_its_key(tmp_path: Path) -> None:
    store_coverage(str(tmp_path), KEY, RUNS)
    assert recorded_coverage(str(tmp_path), KEY) == RUNS
    assert recorded_coverage(str(tmp_path), "cd" * 32) is None
    close_plan_store(str(tmp_path))


@pytest.mark.parametrize("tamper", ["drop-a-line", "moved", "not-an-entry", "wrong-shape"])
def test_tampered_coverage_is_not_used_and_is_deleted(tmp_path: Path, tamper: str) -> None:
    store_coverage(str(tmp_path), KEY, RUNS)
    close_plan_store(str(tmp_path))
    text = rows(tmp_path, "coverage")[KEY]
    if tamper == "drop-a-line":  # leg-1 no longer reaches line 9: a mutant there would read NoCoverage
        plant(tmp_path, "coverage", KEY, text.replace("[3,4,9]", "[3,4]"))
    elif tamper == "moved":
        store_coverage(str(tmp_path), "cd" * 32, {"leg-1": {}})
        close_plan_store(str(tmp_path))
        plant(tmp_path, "coverage", KEY, rows(tmp_path, "coverage")["cd" * 32])
    elif tamper == "not-an-entry":
        plant(tmp_path, "coverage", KEY, json.dumps({"key": KEY, "runs": {}}))
    else:
        store_coverage(str(tmp_path), KEY, {"leg-1": {"system/notes.py": "everything"}})
        close_plan_store(str(tmp_path))
    assert recorded_coverage(str(tmp_path), KEY) is None
    close_plan_store(str(tmp_path))
    assert KEY not in rows(tmp_path, "coverage")
