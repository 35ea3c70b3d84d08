"""flows/watch.py without a flow run: run names, progress on a terminal and in a pipe, one-line tables,
and the console filter that keeps Prefect from printing our lines twice."""

from __future__ import annotations

import io
import logging
import re
import threading
import time
from datetime import UTC, datetime

from flows.watch import LegProgress, _QuietConsole, one_line_table, run_name, suite_names
from flows.watch import console as make_console


def test_run_names_say_what_ran_and_when(tmp_path):
    for name in ("notes", "review", "nested/trace"):
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "contract.json").write_text("{}")
    (tmp_path / "not-a-suite").mkdir()
    assert suite_names(tmp_path) == ["nested/trace", "notes", "review"]
    at = datetime(2026, 12, 1, 2, 0, 31, tzinfo=UTC)
    assert run_name("preflight", tmp_path, at) == "preflight 3 suites 2026-12-01T02:00Z"
    assert run_name("preflight", tmp_path / "notes", at) == "preflight 1 suite 2026-12-01T02:00Z"
    assert run_name("contract-strength", tmp_path, at, deployment="nightly") == "nightly 2026-12-01"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_a_bar_on_a_terminal_and_periodic_lines_in_a_pipe():
    piped = io.StringIO()
    with LegProgress(4, stream=piped, interval=0.05) as progress:
        progress.on_event("start", "s/P-001/a")
        progress.on_event("spawned", "s/P-001/a")
        progress.on_event("start", "s/P-001/b")
        deadline = time.monotonic() + 5
        while "progress:" not in piped.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # six intervals with nothing done: no new line (a line only when the count moved)
        assert len(piped.getvalue().splitlines()) == 1
        progress.on_event("collapsed", "s/P-001/b")
        while len(piped.getvalue().splitlines()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    lines = piped.getvalue().splitlines()
    assert re.fullmatch(r"progress: 1/4 legs done \(1 spawned, 0 collapsed, 0 from cache, 0 faulted\), 1 running, \d+ s",
                        lines[0])
    assert lines[1].startswith("progress: 2/4 legs done (1 spawned, 1 collapsed, 0 from cache, 0 faulted), 0 running")

    terminal = _Terminal()
    with LegProgress(2, stream=terminal) as bar:
        threads = [threading.Thread(target=bar.on_event, args=(event, "leg")) for event in ("start", "cache")]
        for thread in threads:
            thread.start()
            thread.join()
        bar._bar.refresh()
        assert "spawned 0 · collapsed 0 · from cache 1" in terminal.getvalue()
    assert "progress:" not in terminal.getvalue()  # a terminal gets the bar, not the lines


def test_one_line_table_fits_the_width_and_cuts_only_flexible_columns(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # another test of the worker may have left one set
    rows = [["P-001", "defect", "failed: " + "seeded-fault-fired, " * 10, "Invalid", "oracle resolved " * 20]]
    buffer = io.StringIO()
    console = make_console(buffer)
    assert console.width == 120
    console.print(one_line_table("t", ["probe", "class", "pre-flight", "verdict", "basis"], rows, 120,
                                 flexible=("pre-flight", "basis")))
    body = [line for line in buffer.getvalue().splitlines() if "P-001" in line]
    assert len(body) == 1 and len(body[0]) <= 120
    assert "Invalid" in body[0] and "defect" in body[0] and body[0].count("…") == 2


def test_prefect_console_handler_skips_our_lines_and_run_logger_info():
    quiet = _QuietConsole()

    def record(name: str, level: int, **extra: object) -> logging.LogRecord:
        item = logging.LogRecord(name, level, __file__, 1, "m", None, None)
        item.__dict__.update(extra)
        return item

    assert not quiet.filter(record("prefect.flow_runs", logging.WARNING, evalquality_printed=True))
    assert not quiet.filter(record("prefect.task_runs", logging.INFO))
    assert quiet.filter(record("prefect.task_runs", logging.ERROR))
    assert quiet.filter(record("prefect.client", logging.INFO))
