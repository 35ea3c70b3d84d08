"""Agents as systems under test (issue 34), through the real strength flow as a child process.

The suite is ``eval-quality suite init --kind agent`` (a real child-process stand-in agent: slow, seeded
transient failures), run by ``python -m flows.contract_strength`` with its own EVALQUALITY_HOME and
PREFECT_HOME, on the worker's embedded Prefect server (``shared_server()``: each run sets its vendors'
global concurrency limits on it). What each run did is read from the
flow's own outputs: ``agent-night.json`` (every spawned attempt), the pre-flight verdicts, stderr.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.suite_cli import eq
from tests.prefect_db import seed_prefect_home, shared_server

pytestmark = pytest.mark.slow

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def agent_starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``suite init --kind agent`` once (the real CLI); tests copy it before changing anything."""
    where = tmp_path_factory.mktemp("agent-starter")
    proc = eq("suite", "init", "agent", "--kind", "agent", cwd=where, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return where / "agent"


def _suites(tmp_path: Path, starter: Path, *, knobs: dict[str, Any] | None = None, vendors: int | None = None) -> Path:
    suites = tmp_path / "suites"
    suite = Path(shutil.copytree(starter, suites / "agent"))
    if knobs:
        toml = suite / "system" / "agent.toml"
        text = toml.read_text()
        for name, value in knobs.items():
            text, count = re.subn(rf"(?m)^{name} = .*$", f"{name} = {json.dumps(value)}", text)
            assert count == 1, name
        toml.write_text(text)
    if vendors is not None:
        registry = suite / "targets.toml"
        text, count = re.subn(r"(?m)^standin = \d+$", f"standin = {vendors}", registry.read_text())
        assert count == 1
        registry.write_text(text)
    return suites


def _night(tmp_path: Path, migrated: Path, suites: Path, *flags: str, out: str = "out") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_"))}
    prefect_home = tmp_path / "prefect"
    if not prefect_home.exists():
        seed_prefect_home(prefect_home, migrated)
    env.update({
        "EVALQUALITY_HOME": str(tmp_path / "home"), "PREFECT_HOME": str(prefect_home),
        "PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "EVALQUALITY_PROGRESS_SECONDS": "0", **shared_server(),
    })
    return subprocess.run(
        [sys.executable, "-m", "flows.contract_strength", "--suites", str(suites), "--out", str(tmp_path / out),
         "--baseline", str(tmp_path / "baseline.json"), "--concurrency", "4", *flags],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
    )


def _ledger(tmp_path: Path, out: str = "out") -> dict[str, Any]:
    path = tmp_path / out / "agent-night.json"
    return json.loads(path.read_text()) if path.exists() else {"attempts": [], "stopped": None, "spent": 0}


def _most_at_once(rows: list[dict[str, Any]]) -> int:
    """The most attempts whose [started, ended] intervals overlap at one instant."""
    events = sorted([(row["started"], 1) for row in rows] + [(row["ended"], -1) for row in rows])
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def test_transient_exits_are_retried_and_the_rerun_spawns_nothing(
    tmp_path: Path, migrated_prefect_db: Path, agent_starter: Path
) -> None:
    """Every third request or so fails its first one or two calls with exit 4 or 5 (transient): each
    is retried, the leg ends with the system's answer, every probe's pre-flight passes as it does with no
    flakiness at all; a rerun answers every leg from the cache (no attempt, nothing charged)."""
    suites = _suites(tmp_path, agent_starter, knobs={"latency_ms": 100, "transient_rate": 0.5})
    first = _night(tmp_path, migrated_prefect_db, suites, "--update-baseline")
    assert first.returncode == 0 and "Traceback" not in first.stderr, (first.stdout[-3000:], first.stderr[-3000:])
    rows = _ledger(tmp_path)["attempts"]
    retried = {row["key"] for row in rows if row["attempt"] > 1}
    assert retried, rows  # the seed makes some requests flaky at this rate
    failed = [row for row in rows if row["decision"] == "retry"]
    assert failed and {row["exitCode"] for row in failed} <= {4, 5}
    assert {row["class"] for row in failed} <= {"transport", "timeout"}
    # Each leg's last attempt is its answer (exit 0 or the notes CLI's own refusal, never 4 or 5).
    last = {}
    for row in rows:
        last[row["key"]] = max(last.get(row["key"], 0), row["attempt"])
    finals = [row for row in rows if row["attempt"] == last[row["key"]]]
    assert all(row["decision"] == "answer" and row["exitCode"] not in (3, 4, 5, 6) for row in finals), finals
    probes = json.loads((tmp_path / "baseline.json").read_text())["agent"]["probes"]
    assert {pid: (row["preflight"], row["verdict"]) for pid, row in probes.items()} == {
        pid: ("passed", "PASS") for pid in ("P-001", "P-002", "P-003")}
    again = _night(tmp_path, migrated_prefect_db, suites, out="out2")
    assert again.returncode == 0, (again.stdout[-3000:], again.stderr[-3000:])
    assert _ledger(tmp_path, "out2")["attempts"] == []


def test_a_non_transient_class_is_never_retried_nor_cached(
    tmp_path: Path, migrated_prefect_db: Path, agent_starter: Path
) -> None:
    """Exit 3 (environment-configuration, not transient) ends each leg at its first attempt as a fault;
    the night cannot measure the suite (no PASS), and the rerun calls every leg again (nothing cached)."""
    suites = _suites(tmp_path, agent_starter, knobs={"latency_ms": 50, "configuration_error": True})
    first = _night(tmp_path, migrated_prefect_db, suites)
    assert first.returncode not in (0, 70) and "Traceback" not in first.stderr, (first.stdout[-3000:], first.stderr[-3000:])
    rows = _ledger(tmp_path)["attempts"]
    assert rows and all((row["attempt"], row["exitCode"], row["class"], row["decision"]) == (1, 3, "configuration", "fault")
                        for row in rows), rows
    summary = (tmp_path / "out" / "preflight-summary.json").read_text()
    assert "environment-configuration" in summary and "never retried" in summary, summary[:2000]
    again = _night(tmp_path, migrated_prefect_db, suites, out="out2")
    assert "Traceback" not in again.stderr, again.stderr[-3000:]
    assert {row["key"] for row in _ledger(tmp_path, "out2")["attempts"]} == {row["key"] for row in rows}


def test_legs_of_one_vendor_never_run_more_at_once_than_its_limit(
    tmp_path: Path, migrated_prefect_db: Path, agent_starter: Path
) -> None:
    """[vendors] standin = 1 with 4 legs' worth of workers: the legs' calls never overlap (a Prefect
    global concurrency limit the flow creates itself on the embedded server)."""
    suites = _suites(tmp_path, agent_starter, knobs={"latency_ms": 400, "transient_rate": 0.0}, vendors=1)
    done = _night(tmp_path, migrated_prefect_db, suites, "--update-baseline")
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    rows = _ledger(tmp_path)["attempts"]
    assert len(rows) >= 8, rows
    assert _most_at_once(rows) == 1, sorted((row["started"], row["ended"]) for row in rows)


def test_a_night_budget_stops_cleanly_and_the_next_run_pays_only_for_the_rest(
    tmp_path: Path, migrated_prefect_db: Path, agent_starter: Path
) -> None:
    """A wall clock spent before the first leg starts nothing; a cost budget of 5 calls (0.01 each)
    answers 5 legs and refuses the rest: exit 69 and one line, no traceback; the next run (no budget)
    spawns only legs the stopped one did not answer, and the night then passes."""
    suites = _suites(tmp_path, agent_starter, knobs={"latency_ms": 100, "transient_rate": 0.0})
    clock = _night(tmp_path, migrated_prefect_db, suites, "--night-seconds", "1", out="out-clock")
    assert clock.returncode == 69 and "Traceback" not in clock.stderr, (clock.stdout[-3000:], clock.stderr[-3000:])
    stopped = [line for line in clock.stderr.splitlines() if "stopped:" in line]
    assert len(stopped) == 1 and "wall clock of 1 s" in stopped[0] and "exit 69" in stopped[0], clock.stderr[-3000:]
    ledger = _ledger(tmp_path, "out-clock")
    assert ledger["attempts"] == [] and ledger["legsRefused"] > 0, ledger

    cost = _night(tmp_path, migrated_prefect_db, suites, "--night-cost", "0.05", out="out-cost")
    assert cost.returncode == 69 and "Traceback" not in cost.stderr, (cost.stdout[-3000:], cost.stderr[-3000:])
    stopped = [line for line in cost.stderr.splitlines() if "stopped:" in line]
    assert len(stopped) == 1 and "cost budget of 0.05" in stopped[0], cost.stderr[-3000:]
    ledger = _ledger(tmp_path, "out-cost")
    answered = {row["key"] for row in ledger["attempts"] if row["decision"] == "answer"}
    assert len(ledger["attempts"]) == 5 and len(answered) == 5 and ledger["spent"] == pytest.approx(0.05), ledger

    rest = _night(tmp_path, migrated_prefect_db, suites, "--update-baseline", out="out-rest")
    assert rest.returncode == 0, (rest.stdout[-3000:], rest.stderr[-3000:])
    spawned = {row["key"] for row in _ledger(tmp_path, "out-rest")["attempts"]}
    assert spawned and not spawned & answered, (spawned, answered)
    probes = json.loads((tmp_path / "baseline.json").read_text())["agent"]["probes"]
    assert {row["verdict"] for row in probes.values()} == {"PASS"}


@pytest.mark.parametrize(("flags", "names"), [
    (["--night-cost", "abc"], ["--night-cost", "'abc'", "above 0"]),
    (["--night-seconds", "-3"], ["--night-seconds", "above 0"]),
    (["--night-seconds", "60", "--update-baseline"], ["--update-baseline", "night budget"]),
])
def test_a_bad_night_budget_is_a_one_line_usage_error(tmp_path: Path, flags: list[str], names: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_"))}
    env["EVALQUALITY_HOME"] = str(tmp_path / "home")
    proc = subprocess.run([sys.executable, "-m", "flows.contract_strength", *flags], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 64 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and all(name in lines[0] for name in names), lines
