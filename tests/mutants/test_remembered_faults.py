"""Remembered mutant-leg faults live in the outcome store's verified SQLite entries (tasks/mutants.py):
bound to their leg key by the entry's key and record digest, never by a file name. A planted file in the
old ``mutant-faults/`` folder, an entry altered after it was written, one stored under another key, or
text that is not an entry at all is not remembered (and is deleted, so the leg runs again)."""

from __future__ import annotations

import json
from pathlib import Path

from tasks.mutants import close_plan_store, remember_fault, remembered_fault
from tests.mutants.store_rows import plant, rows

KEY = "ab" * 32




def test_a_remembered_fault_reads_back_bound_to_its_key(tmp_path: Path) -> None:
    remember_fault(str(tmp_path), KEY, "budget-exhausted", "the leg ran past 2000 ms")
    assert remembered_fault(str(tmp_path), KEY) == {"code": "budget-exhausted", "detail": "the leg ran past 2000 ms"}
    assert remembered_fault(str(tmp_path), "cd" * 32) is None
    close_plan_store(str(tmp_path))


def test_a_planted_file_where_faults_used_to_live_is_not_remembered(tmp_path: Path) -> None:
    planted = tmp_path / "mutant-faults" / f"{KEY}.json"
    planted.parent.mkdir(parents=True)
    planted.write_text(json.dumps({"key": KEY, "code": "budget-exhausted", "detail": "maxElapsedMs 1"}))
    assert remembered_fault(str(tmp_path), KEY) is None
    close_plan_store(str(tmp_path))


def test_altered_moved_or_malformed_entries_are_not_remembered_and_are_deleted(tmp_path: Path) -> None:
    cache = tmp_path
    remember_fault(str(cache), KEY, "forbidden-target", "denied")
    entry = rows(cache, "mutant-outcomes")[f"leg-fault/{KEY}"]
    # The record altered to say Timeout, its digest left as written.
    plant(cache, "mutant-outcomes", f"leg-fault/{KEY}", entry.replace("forbidden-target", "budget-exhausted"))
    assert remembered_fault(str(cache), KEY) is None
    assert f"leg-fault/{KEY}" not in rows(cache, "mutant-outcomes")
    # A whole, consistent entry moved under another leg's key.
    plant(cache, "mutant-outcomes", f"leg-fault/{'cd' * 32}", entry)
    assert remembered_fault(str(cache), "cd" * 32) is None
    # Not an entry at all, and a truncated one.
    for text in ("Timeout", entry[: len(entry) // 2]):
        plant(cache, "mutant-outcomes", f"leg-fault/{KEY}", text)
        assert remembered_fault(str(cache), KEY) is None
    assert rows(cache, "mutant-outcomes") == {}
    close_plan_store(str(cache))
