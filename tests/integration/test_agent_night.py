"""Agents as systems under test (issue 34), through the real strength flow as a child process.

The suite is ``eval-quality suite init --kind agent`` (a real child-process stand-in agent: slow, seeded
transient failures), run by ``python -m flows.contract_strength`` with its own EVALQUALITY_HOME and
PREFECT_HOME (embedded Prefect server, no server set up by hand). What each run did is read from the
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

from tests.cli.test_suite_commands import eq
from tests.prefect_db import seed_prefect_home

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
        "EVALQUALITY_PROGRESS_SECONDS": "0",
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
