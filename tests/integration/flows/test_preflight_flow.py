"""``python -m flows.preflight`` as a real subprocess over a slow fixture suite (prefect.md §8: few flow tests).

One scenario, three runs in one temp eval-quality home: a run SIGKILLed half way, a re-run that completes
and re-spawns none of the legs the killed run had answered, and a third run that spawns nothing. Process
starts are counted independently (the fixture system appends to a marker file) and must agree with the
flow's own counters; the verdicts must equal those of an uninterrupted pre-flight (the core pipeline
over the same adapter, no Prefect).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalquality_core.adapters.command_line import CommandLineAdapter
from evalquality_core.artifacts.base import to_wire
from evalquality_core.canonical.json import serialize_artifact
from evalquality_core.pipeline import run_preflight
from flows.lifecycle import orphaned_servers, reap_orphaned_servers
from tasks.leg_cache import LegCache
from tasks.suites import load_suite
from tasks.workspace import leg_workspace
from tests.adapters.test_command_line import is_dead
from tests.fixtures.skill_suite import build_skill_suite, marker_events, set_delay
from tests.polling import wait_for

PROJECT_ROOT = Path(__file__).resolve().parents[3]
#: The flows inherit the test process's Prefect home (tests/conftest.py), so their embedded servers do too.
PREFECT_HOME = os.environ["PREFECT_HOME"]
PROBES = 3
#: witness-frontend (= both control legs), witness-backend, the fault witness's clean twin (one request on
#: the clean system, shared by every probe), and one seeded-fault leg per probe's mutation.
DISTINCT_REQUESTS = 3 + PROBES
LEGS = 6 * PROBES

# The flow's own server's end, and orphaned servers reaped at start, are asserted here: no worker server.
pytestmark = [pytest.mark.slow, pytest.mark.own_prefect_server]


def _command(suites: Path, out: Path, baseline: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "flows.preflight",
        "--suites", str(suites), "--out", str(out), "--baseline", str(baseline), "--concurrency", "1", *extra,
    ]


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["EVALQUALITY_HOME"] = str(home)
    return env


def _uninterrupted_verdicts(suite_dir: Path, scratch: Path) -> dict[str, bytes]:
    """The verdicts of a plain, sequential pre-flight per probe (pipeline.run_preflight, same adapter)."""
    suite = load_suite(suite_dir)

    class StagingPort:
        def __init__(self, probe):
            self.probe_doc = probe

        def probe(self, request):
            with leg_workspace(scratch) as workspace:
                suite.stager(self.probe_doc, request.probe_id)(workspace)
                return CommandLineAdapter(suite.policy, workdir=workspace).probe(request)

    verdicts = {}
    for probe in suite.probes:
        run_id = f"preflight-{suite.name}-{probe['probeId']}".lower()
        verdict = run_preflight(suite.contract, [probe], run_id, StagingPort(probe), clean_witness_legs=True)
        verdicts[probe["probeId"]] = serialize_artifact(to_wire(verdict))
    return verdicts


def _cached_entries(home: Path) -> int:
    cache = LegCache(home / "leg-cache")
    try:
        return cache.entry_count()
    finally:
        cache.close()


def test_killed_run_resumes_without_respawning_and_rerun_spawns_nothing(conformance, tmp_path):
    suites, home, out, baseline = tmp_path / "suites", tmp_path / "home", tmp_path / "out", tmp_path / "base.json"
    suite_dir, marker = build_skill_suite(conformance, suites, probes=PROBES, delay_s=0.0)
    reference = _uninterrupted_verdicts(suite_dir, tmp_path / "scratch")
    marker.unlink()  # count only the flow's process starts from here on
    set_delay(marker, 1.0)

    # Run 1: SIGKILL the flow alone once two legs have finished; its embedded server ends with it
    # (flows/embedded_server.py: PR_SET_PDEATHSIG), so no reaper is needed for it.
    killed = subprocess.Popen(
        _command(suites, out, baseline), cwd=PROJECT_ROOT, env=_env(home), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 180
        while len(marker_events(marker, "end")) < 2:
            assert killed.poll() is None, "the flow ended before it could be killed half way"
            assert time.monotonic() < deadline, "the flow never got two legs done"
            time.sleep(0.05)
    finally:
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
    assert wait_for(lambda: all(is_dead(pid) for pid in orphaned_servers(PREFECT_HOME)), timeout_s=30)
    # A server Prefect started itself (a flow called as a library, then killed) is orphaned instead:
    # plant one, and the next run's start reaps it.
    orphans = [_plant_orphaned_server()]
    answered_before_kill = _cached_entries(home)
    assert 1 <= answered_before_kill < DISTINCT_REQUESTS
    time.sleep(1.5)  # let any orphaned leg of the killed run finish writing its marker line
    starts_before = len(marker_events(marker))

    # Run 2: completes, spawning exactly the requests the killed run had not answered.
    set_delay(marker, 0.3)
    resumed = subprocess.run(
        _command(suites, out, baseline, "--update-baseline"), cwd=PROJECT_ROOT,
        env={**_env(home), "EVALQUALITY_PROGRESS_SECONDS": "0.2"}, capture_output=True, text=True, timeout=300,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    # Piped, the run says its plan and reports progress in one line at a time (no bar, no traceback).
    assert f"suite skill: {PROBES} probe(s), {LEGS} legs planned" in resumed.stderr
    progress = [line for line in resumed.stderr.splitlines() if line.startswith("progress: ")]
    assert progress and all(re.fullmatch(rf"progress: \d+/{LEGS} legs done \(.*\), \d+ running, \d+ s", p) for p in progress)
    assert "Traceback" not in resumed.stdout + resumed.stderr
    summary = json.loads((out / "preflight-summary.json").read_text())
    resumed_starts = len(marker_events(marker)) - starts_before
    assert summary["legsSpawned"] == resumed_starts == DISTINCT_REQUESTS - answered_before_kill
    assert summary["legsSpawned"] + summary["legsFromCache"] + summary["legsCollapsed"] == LEGS
    assert [row["outcome"] for row in summary["probes"]] == ["passed"] * PROBES
    for probe_id, verdict in reference.items():
        assert (out / "skill" / f"preflight-{probe_id}.json").read_bytes() == verdict
    assert list((home / "workspaces").iterdir()) == []  # the killed run's workspaces were reclaimed
    assert all(is_dead(pid) for pid in orphans)  # ... and the orphaned server was reaped

    # Run 3: nothing left to spawn; the independent count agrees; the baseline matches (exit 0).
    again = subprocess.run(
        _command(suites, out, baseline), cwd=PROJECT_ROOT, env=_env(home), capture_output=True, text=True, timeout=300,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"0 legs run and {LEGS} answered from cache" in again.stdout
    assert json.loads((out / "preflight-summary.json").read_text())["legsSpawned"] == 0
    assert len(marker_events(marker)) == starts_before + resumed_starts
    assert "Traceback" not in again.stdout + again.stderr and "WARNING" not in again.stderr


def _plant_orphaned_server() -> int:
    """A real embedded server started as Prefect starts its own (``SubprocessASGIServer``), whose parent
    has exited: what a killed process that ran a flow as a library leaves behind."""
    launch = (
        "import os, subprocess, sys; print(subprocess.Popen([sys.executable, '-m', 'uvicorn', '--factory', "
        "'prefect.server.api.server:create_app', '--host', '127.0.0.1', '--port', '0', '--log-level', 'error'], "
        "env={**os.environ, 'PREFECT_UI_ENABLED': '0', 'PREFECT__SERVER_EPHEMERAL': '1'}, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True).pid)"
    )
    pid = int(subprocess.run([sys.executable, "-c", launch], capture_output=True, text=True, check=True).stdout)
    assert wait_for(lambda: pid in orphaned_servers(PREFECT_HOME), timeout_s=10), "the planted server is no orphan"
    return pid


def test_sigterm_kills_every_live_leg(conformance, tmp_path):
    suites, home, out = tmp_path / "suites", tmp_path / "home", tmp_path / "out"
    _, marker = build_skill_suite(conformance, suites, probes=1, delay_s=120, max_elapsed_ms=600_000)
    flow = subprocess.Popen(
        [*_command(suites, out, tmp_path / "base.json")[:-2], "--concurrency", "4"],
        cwd=PROJECT_ROOT, env=_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    legs: list[int] = []
    try:
        deadline = time.monotonic() + 180
        # frontend (= both controls), backend, the witness's clean twin and the fault leg
        while len(marker_events(marker)) < 4:
            assert flow.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        legs = [event["pid"] for event in marker_events(marker)]
        assert not any(is_dead(pid) for pid in legs)
        flow.send_signal(signal.SIGTERM)
        flow.wait(60)
        # The system sleeps 120 s; only the flow's kill can have ended it this soon.
        stop = time.monotonic() + 10
        while not all(is_dead(pid) for pid in legs) and time.monotonic() < stop:
            time.sleep(0.05)
        assert not [pid for pid in legs if not is_dead(pid)]
        assert len(marker_events(marker)) == 4  # queued repeats never started after the signal
        assert _cached_entries(home) == 0  # a killed leg is a fault, never cached
        # SIGTERM ends the flow through SystemExit, so atexit stops its embedded server too.
        assert wait_for(lambda: not orphaned_servers(PREFECT_HOME), timeout_s=10)
    finally:
        _kill_leftovers(flow, legs)
        reap_orphaned_servers(PREFECT_HOME)


def _kill_leftovers(flow: subprocess.Popen, pids: list[int]) -> None:
    """Leave no process behind when an assertion failed half way."""
    if flow.poll() is None:
        os.killpg(flow.pid, signal.SIGKILL)
        flow.wait()
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
