"""flows/watch.py without a flow run: run names, progress on a terminal and in a pipe, one-line tables,
and the console filter that keeps Prefect from printing our lines twice."""

from __future__ import annotations

import io
import logging
import re
import threading
import time
from datetime import UTC, datetime

from rich.console import Console

from flows.watch import LegProgress, _QuietConsole, run_name, suite_names
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


WIDTHS = (80, 120, 200, "piped")


def _print(renderables, width) -> list[str]:
    """What the console prints at ``width`` columns, or piped: a non-terminal stream with COLUMNS unset."""
    buffer = io.StringIO()
    out = make_console(buffer) if width == "piped" else Console(file=buffer, width=width, color_system=None)
    for renderable in renderables:
        out.print(renderable)
    return buffer.getvalue().splitlines()


def _rows_and_details(lines: list[str], row_start: re.Pattern[str]) -> list[tuple[str, dict[str, str]]]:
    """Each table row's line and the long texts written under it (``header: text``, wrapped lines joined)."""
    rows: list[tuple[str, dict[str, str]]] = []
    current: str | None = None
    indent = 0
    for line in lines:
        depth = len(line) - len(line.lstrip(" "))
        detail = re.match(r"^ +([a-z-]+): (.*)$", line)
        if row_start.match(line):
            rows.append((line, {}))
            current = None
        elif rows and current is not None and depth == indent + 2:  # a wrapped line of the text above
            rows[-1][1][current] += " " + line.strip()
        elif rows and detail:
            current, indent = detail.group(1), depth
            rows[-1][1][current] = detail.group(2)
        else:
            current = None
    return [(row, {k: " ".join(v.split()) for k, v in details.items()}) for row, details in rows]


def _whole(text: str, row: str, details: dict[str, str], header: str, previous: dict[str, str]) -> bool:
    """A long text is whole on its row, or whole under it, or under it ``as above`` the same text."""
    if text in ("", "-"):
        return True
    below = details.get(header)
    if below == "as above":
        return previous.get(header) == text
    return below == " ".join(text.split()) or (below is None and text in row)


def test_strength_tables_keep_key_cells_whole_and_long_text_whole_under_the_row(conformance, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # piped: 120 columns, never rich's 80
    from types import SimpleNamespace

    from flows.contract_strength import strength_tables
    from flows.strength_report import contract_table_rows
    from tests.integration.flows.strength_samples import tea_documents

    documents = tea_documents(conformance)  # the reference's contracts: long bases, qualifications, fault outcomes
    run = SimpleNamespace(documents=documents)
    for width in WIDTHS:
        lines = _print(strength_tables(run), width)
        limit = 120 if width == "piped" else width
        assert max(len(line) for line in lines) <= limit, width
        assert "…" not in "".join(lines)  # nothing cut: what does not fit is written whole under its row
        rows = iter(_rows_and_details(lines, re.compile(r"^P-\d{3} ")))
        for name, document in sorted(documents.items()):
            previous: dict[str, str] = {}
            for expected in contract_table_rows(document):
                row, details = next(rows)
                # Key cells whole, in order, on the row's one line.
                key = [expected[k] for k in ("probe", "class")]
                assert re.match(r"^" + r"\s+".join(map(re.escape, key)) + r"\s", row), (width, name, row)
                assert re.search(rf"\s{re.escape(expected['legs'])}\s+{expected['verdict']}\s+{expected['exit']}(\s|$)", row), (
                    width, name, row)
                for header in ("pre-flight", "basis", "qualification"):
                    assert _whole(expected[header], row, details, header, previous), (width, name, header, row, details)
                    if expected[header] not in ("", "-"):
                        previous[header] = expected[header]
                    else:
                        previous.pop(header, None)
        assert next(rows, None) is None
    # At 200 columns the reference's long pre-flight outcome and qualification sit inline on their rows.
    wide = _print(strength_tables(SimpleNamespace(documents={"ci": documents["ci"]})), 200)
    assert any(line.startswith("P-001") and "failed: seeded-fault-fired, seeded-faults-scoped" in line
               and "condition-artifact-channel-contract-local" in line for line in wide)


def test_preflight_table_keeps_suite_probe_counts_whole_and_writes_a_long_outcome_under_its_row(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    from flows.report import ProbePreflight, SuiteFailure, render_table

    fault = "fault: budget-exhausted: ProbeObservation: " + "the leg exceeded its elapsed budget " * 2
    rows = [
        ProbePreflight("notes-tools", "P-001", 9, 6, 0, 1.0, "passed", None, collapsed=3),
        ProbePreflight("notes-tools", "P-002", 9, 1, 0, 1.0, fault.strip(), None, collapsed=8),
        ProbePreflight("review", "P-003", 5, 0, 5, 0.0, "failed: seeded-fault-fired, seeded-faults-scoped", None),
    ]
    failure = SuiteFailure("trace", "contract.json: " + "unknown key 'colour' at /behaviors/0/oracles/1 " * 6)
    for width in WIDTHS:
        lines = _print([render_table(rows, (failure,))], width)
        assert max(len(line) for line in lines) <= (120 if width == "piped" else width), width
        assert "…" not in "".join(lines)
        found = _rows_and_details(lines, re.compile(r"^(notes-tools|review|trace) "))
        assert len(found) == 4
        for (line, details), row in zip(found, rows, strict=False):
            counts = [str(n) for n in (row.legs_planned, row.spawned, row.collapsed, row.from_cache)]
            assert re.match(r"^" + r"\s+".join(map(re.escape, [row.suite, row.probe_id, *counts])) + r"(\s|$)", line)
            assert _whole(row.outcome, line, details, "outcome", {}), (width, line, details)
        line, details = found[3]
        assert re.match(r"^trace\s+-\s+\?\s+0\s+0\s+0(\s|$)", line)
        assert _whole(f"could not run: {failure.message}", line, details, "outcome", {}), (width, line, details)
    # 200 columns hold the fault outcome inline; 80 write it under its row, which then shows the mark.
    assert any("budget-exhausted" in line and line.startswith("notes-tools  P-002") for line in _print([render_table(rows)], 200))
    narrow = _print([render_table(rows)], 80)
    assert [line for line in narrow if line.startswith("notes-tools  P-002")][0].rstrip().endswith("↓")


def test_log_text_is_120_columns_whatever_the_console(monkeypatch):
    from flows.report import ProbePreflight, render_table
    from flows.watch import PIPED_WIDTH, as_log_text

    monkeypatch.setenv("COLUMNS", "40")
    rows = [ProbePreflight("notes", "P-001", 9, 1, 0, 1.0, "failed: " + "seeded-fault-fired, " * 10, None)]
    text = as_log_text(render_table(rows))
    assert max(len(line) for line in text.splitlines()) <= PIPED_WIDTH
    assert any(re.match(r"^notes\s+P-001\s+9\s+1\s+0\s+0", line) for line in text.splitlines())
    assert "\x1b[" not in text  # no colour codes in the Logs tab


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


def test_console_lines_stay_one_line_however_long(monkeypatch):
    from flows.watch import RunLog, print_line

    monkeypatch.delenv("COLUMNS", raising=False)
    long = "suite x could not run: /tmp/" + "deep/" * 40 + "contract.json: Expecting property name enclosed in double quotes"
    assert len(long) > 200
    for stream in (io.StringIO(), _Terminal()):
        console = make_console(stream)
        RunLog(console).warning(long)
        print_line(console, "gate: " + long)
        plain = re.sub(r"\x1b\[[0-9;]*m", "", stream.getvalue())  # a terminal's warning is coloured
        assert plain.splitlines() == [long, "gate: " + long], type(stream).__name__
    # The control: rich's own print breaks the same text at the piped width.
    piped = io.StringIO()
    make_console(piped).print(long, markup=False, highlight=False)
    assert len(piped.getvalue().splitlines()) > 1
