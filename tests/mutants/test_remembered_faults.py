"""What a mutants run remembers on disk is read back only from a regular file under the input cap:
a FIFO or an oversized file planted where a remembered fault lives is not remembered (and never hangs)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from tasks.mutants import _fault_path, remember_fault, remembered_fault

KEY = "ab" * 32


def test_a_remembered_fault_reads_back_bound_to_its_key(tmp_path: Path) -> None:
    remember_fault(str(tmp_path), KEY, "budget-exhausted", "the leg ran past 2000 ms")
    assert remembered_fault(str(tmp_path), KEY) == {"code": "budget-exhausted", "detail": "the leg ran past 2000 ms"}
    # Filed under another key, it answers nothing.
    os.replace(_fault_path(str(tmp_path), KEY), _fault_path(str(tmp_path), "cd" * 32))
    assert remembered_fault(str(tmp_path), "cd" * 32) is None


def test_a_fifo_planted_as_a_remembered_fault_is_not_read_and_does_not_hang(tmp_path: Path) -> None:
    path = _fault_path(str(tmp_path), KEY)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    answers: list[object] = []
    reader = threading.Thread(target=lambda: answers.append(remembered_fault(str(tmp_path), KEY)), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "reading a planted FIFO blocked"
    assert answers == [None]


def test_an_oversized_remembered_fault_is_not_read(tmp_path: Path, monkeypatch) -> None:
    remember_fault(str(tmp_path), KEY, "budget-exhausted", "x" * 4096)
    monkeypatch.setenv("EVALQUALITY_MAX_INPUT_BYTES", "1024")
    assert remembered_fault(str(tmp_path), KEY) is None
    monkeypatch.setenv("EVALQUALITY_MAX_INPUT_BYTES", str(1 << 20))
    assert remembered_fault(str(tmp_path), KEY) is not None
