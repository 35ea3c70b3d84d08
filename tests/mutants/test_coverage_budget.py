"""A traced coverage run gets ``COVERAGE_BUDGET_SCALE`` times its target's budget (suite/line_coverage.py).

Real child processes: a copy of the ``notes`` suite whose system sleeps 1.5 s only when it runs under a
tracer, with a 1000 ms budget (room for an untraced start on a loaded machine). Untraced it answers in
time; traced it needs more than its own budget, and within four times that its lines are recorded
instead of "reaches everything" (``None``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalquality_core.compile.pipeline import compile_contract
from evalquality_core.suite import line_coverage
from evalquality_core.suite.load import adapter_for, load_suite
from flows.mutants import _distinct_legs
from tasks.preflight import plan_preflight

ROOT = Path(__file__).resolve().parents[2]
SLOW_WHEN_TRACED = "import sys, time\nif sys.gettrace() is not None:\n    time.sleep(1.5)\n"


def _slow_traced_notes(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    shutil.copytree(ROOT / "corpus" / "suites" / "notes", notes, ignore=shutil.ignore_patterns("mutants"))
    targets = notes / "targets.toml"
    targets.write_text(targets.read_text().replace("max_elapsed_ms = 10000", "max_elapsed_ms = 1000"))
    script = notes / "system" / "notes.py"
    text = script.read_text()
    script.write_text(text.replace("import json\n", SLOW_WHEN_TRACED + "import json\n", 1))
    return notes


def _one_leg(notes: Path) -> list[tuple[str, dict]]:
    from tasks.suites import load_suite as load_flow_suite

    suite = load_flow_suite(notes)
    plan = plan_preflight(compile_contract(dict(suite.contract)), [dict(p) for p in suite.probes], "x")
    return [next(leg for leg in _distinct_legs(plan) if leg[0] == "list-notes-witness-a")]


def test_a_traced_run_slower_than_its_budget_still_records_its_lines(tmp_path: Path) -> None:
    notes = _slow_traced_notes(tmp_path)
    suite = load_suite(notes)
    [(leg_id, request)] = _one_leg(notes)
    untraced = adapter_for(suite).probe(dict(request), workdir=_staged(suite, tmp_path / "ws"))
    assert untraced.exit_code == 0  # the system answers within its own budget when nothing traces it
    coverage = line_coverage.record_coverage(suite, [(leg_id, request)], jobs=1)
    assert coverage is not None and coverage[leg_id] is not None, coverage
    assert coverage[leg_id]["system/notes.py"]  # its lines, not "reaches everything"


def test_without_the_scaled_budget_the_same_run_would_reach_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: at its target's own budget the traced run runs out and is recorded as ``None``."""
    monkeypatch.setattr(line_coverage, "COVERAGE_BUDGET_SCALE", 1)
    notes = _slow_traced_notes(tmp_path)
    [(leg_id, request)] = _one_leg(notes)
    coverage = line_coverage.record_coverage(load_suite(notes), [(leg_id, request)], jobs=1)
    assert coverage is not None and coverage[leg_id] is None, coverage


@pytest.mark.parametrize("suite", ["notes", "notes-api", "notes-tools"])
def test_the_scaled_registry_multiplies_every_budget_and_nothing_else(suite: str) -> None:
    """Command, HTTP and tool-server entries alike (one corpus suite of each kind)."""
    from evalquality_core.probe.targets import parse_targets

    registry = parse_targets((ROOT / "corpus" / "suites" / suite / "targets.toml").read_text())
    scaled = registry.with_budgets_scaled(4)
    for kind in ("entries", "api_entries", "mcp_entries"):
        before, after = getattr(registry, kind), getattr(scaled, kind)
        assert [e["maxElapsedMs"] for e in after] == [4 * e["maxElapsedMs"] for e in before], kind
        assert [{**e, "maxElapsedMs": 0} for e in after] == [{**e, "maxElapsedMs": 0} for e in before], kind
    assert scaled.api_entries or scaled.mcp_entries or suite == "notes"  # each kind is really exercised
    assert registry.with_budgets_scaled(1) == registry


def _staged(suite, where: Path) -> Path:
    from evalquality_core.suite.staging import stage_workspace

    return stage_workspace(suite.root, where).root
