"""The pre-flight baseline gate (harness.md A.5) and the report's outcome spelling and cost line."""

from __future__ import annotations

import json
import os

from flows.baseline import gate
from flows.report import PreflightRun, ProbePreflight, SuiteFailure, outcome_of, summary_line


def _row(
    probe: str, outcome: str = "passed", legs: int | None = 5, spawned: int = 0, cached: int = 5, collapsed: int = 0
) -> ProbePreflight:
    return ProbePreflight("notes", probe, legs, spawned, cached, 1.25 * spawned, outcome, None, collapsed=collapsed)


def _run(*rows: ProbePreflight, failures: tuple[SuiteFailure, ...] = ()) -> PreflightRun:
    return PreflightRun(tuple(rows), failures, 0, 0.0)


def test_outcome_spelling_is_sorted_unique_failed_kinds():
    verdict = {
        "passed": False,
        "checks": [
            {"kind": "seeded-faults-scoped", "outcome": "failed"},
            {"kind": "interface-present", "outcome": "satisfied"},
            {"kind": "seeded-fault-fired", "outcome": "failed"},
            {"kind": "seeded-faults-scoped", "outcome": "failed"},
            {"kind": "input-sensitivity", "outcome": "exempt"},
        ],
    }
    assert outcome_of(verdict) == "failed: seeded-fault-fired, seeded-faults-scoped"  # harness.md A.5's example
    assert outcome_of({"passed": True, "checks": []}) == "passed"


def test_summary_line():
    run = _run(_row("P-001", spawned=3, cached=2), _row("P-002", spawned=0, cached=5))
    assert summary_line(run) == "3 legs run and 7 answered from cache, 3.8 s spent in legs"
    # A fresh clone's first run: repeats of a request collapse onto its one spawn; none came from cache.
    fresh = _run(_row("P-001", spawned=2, cached=0, collapsed=3))
    assert summary_line(fresh) == (
        "2 legs run and 0 answered from cache (3 collapsed onto an identical leg of this run), 2.5 s spent in legs"
    )


def test_missing_baseline_exits_2_and_update_writes_it(tmp_path):
    path = tmp_path / "expected-preflight.json"
    run = _run(_row("P-001"), _row("P-002", "failed: state-reset", legs=4))
    assert gate(run, path).exit_code == 2
    assert gate(run, path, update=True).exit_code == 0
    assert json.loads(path.read_text())["probes"] == {
        "notes/P-001": {"outcome": "passed", "legs": 5},
        "notes/P-002": {"outcome": "failed: state-reset", "legs": 4},
    }
    assert gate(run, path).exit_code == 0


def test_a_baseline_that_cannot_be_used_says_why_on_one_line_and_exits_2(tmp_path, monkeypatch):
    run = _run(_row("P-001"))
    missing = tmp_path / "missing.json"
    assert gate(run, missing).lines == (f"no baseline at {missing}; run with --update-baseline to record one",)
    cases = {
        "malformed.json": (b"{bad", "is not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2"),
        "list.json": (b"[]", "has no 'probes' table"),
        "latin1.json": (b'{"about": "caf\xe9"}', "is not UTF-8 text"),
        "folder.json": (None, "is a directory, not a file"),
        "fifo.json": ("fifo", "is not a regular file"),
        "huge.json": (b'{"probes": {}}' + b" " * 300, "larger than 256 bytes; nothing was parsed"),
    }
    monkeypatch.setenv("EVALQUALITY_MAX_INPUT_BYTES", "256")
    for name, (data, says) in cases.items():
        path = tmp_path / name
        if data is None:
            path.mkdir()
        elif data == "fifo":
            os.mkfifo(path)  # nobody writes to it: reading it as a file would block the gate forever
        else:
            path.write_bytes(data)
        result = gate(run, path)
        assert result.exit_code == 2, name
        assert len(result.lines) == 1 and "\n" not in result.lines[0], result.lines
        assert result.lines[0].startswith(f"baseline {path}") and says in result.lines[0], result.lines
        assert result.lines[0].endswith("; fix it, or run with --update-baseline to record a new one")
        writable = isinstance(data, bytes)
        assert gate(run, path if writable else tmp_path / f"fresh-{name}", update=True).exit_code == 0


def test_movement_in_either_direction_and_leg_counts_exit_2(tmp_path):
    path = tmp_path / "expected-preflight.json"
    gate(_run(_row("P-001"), _row("P-002", "failed: state-reset")), path, update=True)
    better = gate(_run(_row("P-001"), _row("P-002")), path)
    assert better.exit_code == 2 and "notes/P-002: outcome moved from 'failed: state-reset' to 'passed'" in better.lines
    worse = gate(_run(_row("P-001", "fault: budget-exhausted: x"), _row("P-002", "failed: state-reset")), path)
    assert worse.exit_code == 2
    legs = gate(_run(_row("P-001", legs=None), _row("P-002", "failed: state-reset")), path)
    assert legs.lines == ("notes/P-001: planned legs moved from 5 to None",)
    missing = gate(_run(_row("P-001")), path)
    assert missing.lines == ("notes/P-002: in the baseline but not run",)


def test_a_suite_that_could_not_run_exits_2_even_when_probes_match(tmp_path):
    path = tmp_path / "expected-preflight.json"
    gate(_run(_row("P-001")), path, update=True)
    result = gate(_run(_row("P-001"), failures=(SuiteFailure("trace", "no probes"),)), path)
    assert result.exit_code == 2 and result.lines[0] == "suite trace could not run: no probes"


def test_markdown_report_rows_and_cost_line():
    from flows.report import markdown_report

    text = markdown_report(_run(_row("P-001", spawned=2, cached=3), failures=(SuiteFailure("trace", "a|b"),)))
    # Names and messages are Markdown literals (ASCII punctuation escaped): a "|" cannot end the cell.
    assert "| notes | P\\-001 | 5 | 2 | 0 | 3 | passed |" in text.splitlines()
    assert "| trace | - | ? | 0 | 0 | 0 | could not run\\: a\\|b |" in text.splitlines()
    assert text.splitlines()[-1] == "2 legs run and 3 answered from cache, 2.5 s spent in legs"
