"""Two ``python -m flows.preflight`` processes ("machines": separate homes, Prefect servers and workspaces)
sharing one leg cache on a throwaway PostgreSQL cluster (``EVALQUALITY_LEG_CACHE=postgresql://…``).

Process starts are counted independently (the fixture system appends to a marker file, see
tests/fixtures/skill_suite.py): run concurrently, the two spawn every distinct request exactly once
between them; after one is SIGKILLed, every entry it wrote verifies and the other spawns exactly the
requests it had not answered.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tasks.leg_cache import open_leg_cache
from tests.fixtures.skill_suite import build_skill_suite, marker_events, set_delay
from tests.postgres_cluster import Cluster
from tests.prefect_db import seed_prefect_home, shared_server

PROJECT_ROOT = Path(__file__).resolve().parents[3]
PROBES = 4
#: witness-frontend (= both control legs), witness-backend, the fault witness's clean twin (one request on
#: the clean system, shared by every probe), and one seeded-fault leg per probe's mutation.
DISTINCT_REQUESTS = 3 + PROBES
LEGS = 6 * PROBES

pytestmark = pytest.mark.slow


def _machine(root: Path, name: str, url: str, migrated: Path) -> dict[str, str]:
    """The environment of one 'machine': its own eval-quality and Prefect homes (its Prefect database
    already migrated, as on a machine that ran Prefect before), the shared cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_"))}
    home = root / name
    seed_prefect_home(home / "prefect", migrated)
    return {
        **env, "EVALQUALITY_HOME": str(home), "PREFECT_HOME": str(home / "prefect"), "EVALQUALITY_LEG_CACHE": url,
        "PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120", **shared_server(),
    }


def _command(suites: Path, out: Path, baseline: Path) -> list[str]:
    return [sys.executable, "-m", "flows.preflight", "--suites", str(suites), "--out", str(out),
            "--baseline", str(baseline), "--update-baseline", "--concurrency", "2"]


def _keys(url: str) -> list[str]:
    cache = open_leg_cache(url, "default", f"check-{time.monotonic_ns()}")
    try:
        keys = cache.store.keys()
        assert all(cache.lookup(key) is not None for key in keys)  # every entry verifies
        return keys
    finally:
        cache.close()


def test_two_processes_spawn_every_distinct_request_once(
    conformance, cluster: Cluster, migrated_prefect_db: Path, tmp_path: Path
) -> None:
    url = cluster.create_database("shared_concurrent")
    suites = tmp_path / "suites"
    _, marker = build_skill_suite(conformance, suites, probes=PROBES, delay_s=0.5)
    runs = [
        subprocess.Popen(
            _command(suites, tmp_path / f"out-{name}", tmp_path / f"base-{name}.json"), cwd=PROJECT_ROOT,
            env=_machine(tmp_path, name, url, migrated_prefect_db), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for name in ("a", "b")
    ]
    outputs = [run.communicate(timeout=400) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    summaries = [json.loads((tmp_path / f"out-{name}" / "preflight-summary.json").read_text()) for name in "ab"]
    spawned = [summary["legsSpawned"] for summary in summaries]
    assert sum(spawned) == len(marker_events(marker)) == DISTINCT_REQUESTS, spawned
    # Every planned leg is answered once: spawned here, from the shared cache, or collapsed onto a twin.
    assert all(
        summary["legsSpawned"] + summary["legsFromCache"] + summary["legsCollapsed"] == LEGS for summary in summaries
    )
    assert len(_keys(url)) == DISTINCT_REQUESTS
    for probe in range(1, PROBES + 1):  # both machines reach the same verdicts
        name = f"skill/preflight-P-{probe:03d}.json"
        assert (tmp_path / "out-a" / name).read_bytes() == (tmp_path / "out-b" / name).read_bytes()


def test_a_sigkilled_process_loses_nothing_it_answered(
    conformance, cluster: Cluster, migrated_prefect_db: Path, tmp_path: Path
) -> None:
    url = cluster.create_database("shared_killed")
    suites = tmp_path / "suites"
    _, marker = build_skill_suite(conformance, suites, probes=PROBES, delay_s=1.0)
    killed = subprocess.Popen(
        _command(suites, tmp_path / "out-a", tmp_path / "base-a.json"), cwd=PROJECT_ROOT,
        env=_machine(tmp_path, "a", url, migrated_prefect_db), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        while len(_keys(url)) < 2:  # two legs answered (and stored) before the kill
            assert killed.poll() is None, "the flow ended before it could be killed half way"
            assert time.monotonic() < deadline, "the flow never got two legs done"
            time.sleep(0.05)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)  # the 'machine' dies: the flow and its embedded server
        killed.wait()
    time.sleep(1.5)  # legs the dead run left running finish on their own (they are in their own sessions)
    answered = len(_keys(url))
    assert 1 <= answered < DISTINCT_REQUESTS
    starts_before = len(marker_events(marker))

    set_delay(marker, 0.0)
    other = subprocess.run(
        _command(suites, tmp_path / "out-b", tmp_path / "base-b.json"), cwd=PROJECT_ROOT,
        env=_machine(tmp_path, "b", url, migrated_prefect_db), capture_output=True, text=True, timeout=400,
    )
    assert other.returncode == 0, other.stdout + other.stderr
    summary = json.loads((tmp_path / "out-b" / "preflight-summary.json").read_text())
    assert summary["legsSpawned"] == len(marker_events(marker)) - starts_before == DISTINCT_REQUESTS - answered
    # Every leg answered: by machine a's cache, a spawn here, or an identical leg of this run (a clean
    # twin left unanswered by the killed run is spawned once and its other probes' twins collapse onto it).
    assert summary["legsSpawned"] + summary["legsFromCache"] + summary["legsCollapsed"] == LEGS
    assert [row["outcome"] for row in summary["probes"]] == ["passed"] * PROBES
    assert len(_keys(url)) == DISTINCT_REQUESTS
