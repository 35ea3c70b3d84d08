"""Watching runs on a real Prefect server, as a daily user does: ``python -m flows.preflight`` as a child
process against a server this test starts on loopback (and stops), read back through the Prefect client.

What the embedded-server tests (test_watching.py) cannot show: the flow-run URL printed at the start and
pointing at the run the server holds, periodic one-line progress in a piped log, a faulted leg ending
``Failed`` with its one-line reason (and logged as a warning), the console table and the run log's table
with every key cell whole, the ``preflight-report`` artifact, and a pre-flight run as a subflow showing in
its parent run under the subflow run's own name (not Prefect's ``preflight-0``).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from uuid import UUID

import pytest

from tests.fixtures.skill_suite import build_skill_suite, marker_events
from tests.ports import server_port

# One module fixture runs the flow(s) every test here reads: one worker builds it once (--dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("watching-server")]

PROJECT = Path(__file__).resolve().parents[3]
PROBES = 2
LEGS_PER_PROBE = 6  # see test_watching.py
LEGS = LEGS_PER_PROBE * PROBES  # per suite


def _start_server():
    """A Prefect server process on a free loopback port (the worker's temp PREFECT_HOME)."""
    from prefect.server.api.server import SubprocessASGIServer

    # A port of its own (without one it is the process's embedded singleton), below the ephemeral range.
    process = SubprocessASGIServer(port=server_port())
    process.start(timeout=120)
    return process


class _Servers:
    """The module's Prefect server, started once and shared (a start costs 10-30 s): ``url()`` starts one
    if none runs; ``take()`` hands the running one to a test that will stop it itself (the next ``url()``
    starts a fresh one), so every test in this module pays at most one start between them."""

    def __init__(self) -> None:
        self.process = None

    def url(self) -> str:
        if self.process is None:
            self.process = _start_server()
        return self.process.api_url

    def take(self):
        self.url()
        process, self.process = self.process, None
        return process

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


@pytest.fixture(scope="module")
def servers():
    """The module's shared server holder; whatever server it still holds is stopped after the module."""
    holder = _Servers()
    try:
        yield holder
    finally:
        holder.stop()


@pytest.fixture
def server(servers: _Servers) -> str:
    """The API URL of the module's running Prefect server."""
    return servers.url()


def _client(api_url: str):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: api_url}):
        return get_client(sync_client=True)


def _paged(read, **kwargs):
    found, offset = [], 0
    while True:
        page = read(offset=offset, limit=200, **kwargs)
        found += page
        offset += len(page)
        if len(page) < 200:
            return found


def _read_back(api_url: str, flow_run_id: UUID, task_runs: int, log_says: str):
    """The flow run, its final task runs by name, its log messages and artifacts, once all are recorded."""
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterId,
        LogFilter,
        LogFilterFlowRunId,
    )
    from prefect.client.schemas.sorting import LogSort

    deadline = time.monotonic() + 90
    with _client(api_url) as client:
        while True:
            flow_run = client.read_flow_run(flow_run_id)
            runs = _paged(client.read_task_runs, flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            final = {run.name: run for run in runs if run.state is not None and run.state.is_final()}
            logs = _paged(client.read_logs, log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])),
                          sort=LogSort.TIMESTAMP_ASC)
            messages = [log.message for log in logs]
            done = len(final) >= task_runs and flow_run.state.is_final() and any(log_says in m for m in messages)
            if done or time.monotonic() > deadline:
                artifacts = client.read_artifacts(
                    artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
                return flow_run, final, logs, artifacts
            time.sleep(0.5)


def test_a_piped_cli_run_on_a_real_server(conformance, tmp_path, server):
    suites = tmp_path / "suites"
    build_skill_suite(conformance, suites, probes=PROBES)
    # Every leg of "slow" sleeps 3 s against a 400 ms budget: each spawn is killed and ends in a fault.
    build_skill_suite(conformance, suites, probes=PROBES, name="slow", delay_s=3.0, max_elapsed_ms=400)
    env = {
        **os.environ, "PREFECT_API_URL": server, "EVALQUALITY_HOME": str(tmp_path / "home"),
        "EVALQUALITY_PROGRESS_SECONDS": "0.5", "EVALQUALITY_CONCURRENCY": "4",
    }
    env.pop("COLUMNS", None)  # piped: 120 columns
    done = subprocess.run(
        [sys.executable, "-m", "flows.preflight", "--suites", str(suites), "--out", str(tmp_path / "out"),
         "--baseline", str(tmp_path / "expected-preflight.json"), "--update-baseline"],
        cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr

    # The flow-run URL is printed at the start and names the run the server holds.
    ui = server.removesuffix("/api")
    first = done.stderr.splitlines()[0]
    match = re.fullmatch(re.escape(ui) + r"/flow-runs/flow-run/([0-9a-f-]{36})", first.removeprefix("flow run: "))
    assert first.startswith("flow run: ") and match, done.stderr[:500]
    flow_run_id = UUID(match.group(1))
    # Piped: no progress bar, periodic one-line progress instead.
    progress = [line for line in done.stderr.splitlines() if line.startswith("progress: ")]
    assert progress and all(re.fullmatch(
        rf"progress: \d+/{2 * LEGS} legs done \(\d+ spawned, \d+ collapsed, \d+ from cache, \d+ faulted\), "
        r"\d+ running, \d+ s", line) for line in progress), progress
    assert "\x1b[" not in done.stderr + done.stdout  # no terminal control codes in a piped log

    # compile, a plan per probe and the legs of each suite; a reduce per probe of "skill" only: every probe
    # of "slow" faults in its legs, so it never reaches its reduce (waiting for those ran into the deadline).
    task_runs = 2 * (1 + PROBES + LEGS) + PROBES
    flow_run, runs, logs, artifacts = _read_back(server, flow_run_id, task_runs, "legs run (")
    assert re.fullmatch(r"preflight 2 suites \d{4}-\d\d-\d\dT\d\d:\d\dZ", flow_run.name)
    assert {"eval-quality", "preflight", "suite:skill", "suite:slow"} <= set(flow_run.tags)
    assert flow_run.state.name == "Completed"

    # A faulted leg: Failed, its message the fault's one line; the good suite's legs Completed or Cached.
    slow_legs = {name: run for name, run in runs.items() if name.startswith("slow/")}
    assert len(slow_legs) == LEGS
    failed = [run for run in slow_legs.values() if run.state.type.value == "FAILED"]
    assert failed, {name: (run.state.name, run.state.message) for name, run in slow_legs.items()}
    for run in failed:
        assert run.state.name == "Failed"
        assert re.match(r"^budget-exhausted: ", run.state.message) and "\n" not in run.state.message, run.state.message
        assert "Traceback" not in run.state.message
    skill_legs = {name: run for name, run in runs.items() if name.startswith("skill/")}
    assert {run.state.name for run in skill_legs.values()} == {"Completed", "Cached"}
    assert {"compile/skill", "compile/slow", "plan/slow/P-002", "reduce/skill/P-001"} <= set(runs)
    assert len(runs) == task_runs and not any(name.startswith("reduce/slow/") for name in runs), sorted(runs)

    messages = [log.message for log in logs]
    warnings = [log.message for log in logs if log.level >= 30]
    # The plan, each fault (a warning), the table with every key cell whole, and the cost line.
    assert f"suite slow: {PROBES} probe(s), {LEGS} legs planned" in messages
    assert any(re.fullmatch(r"slow/P-00\d: fault: budget-exhausted: .*", m) for m in warnings), warnings
    [table] = [m for m in messages if m.startswith("Pre-flight\n")]
    assert len(table.splitlines()) >= 3 + 2 * PROBES and max(map(len, table.splitlines())) <= 120
    for suite in ("skill", "slow"):
        for probe in ("P-001", "P-002"):
            assert re.search(rf"^{suite}\s+{probe}\s+{LEGS_PER_PROBE}\s+\d+\s+\d+\s+\d+(\s|$)", table, re.M), table
    cost = [m for m in messages if " legs run (" in m]
    assert cost and "timed out or faulted" in cost[0] and cost[0].endswith("s spent in legs")
    # The console printed the same table on stdout, key cells whole.
    assert re.search(rf"^slow\s+P-001\s+{LEGS_PER_PROBE}\s+\d+\s+\d+\s+\d+\s+(fault: budget-exhausted|↓)", done.stdout, re.M), done.stdout
    # The documented artifact.
    assert [(a.key, a.type) for a in artifacts] == [("preflight-report", "markdown")]


def test_a_preflight_subflow_shows_under_its_own_run_name_in_the_parent(conformance, tmp_path, server):
    """A flow calling the pre-flight flow (as contract-strength does) lists it as a task run that Prefect
    would name ``preflight-0``; it carries the subflow run's name instead."""
    from prefect import flow
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.preflight import preflight

    suites = tmp_path / "suites"
    build_skill_suite(conformance, suites, probes=1)

    @flow(name="parent-of-preflight")
    def parent() -> None:
        preflight(
            suites_dir=str(suites), out_dir=str(tmp_path / "out"), cache_dir=str(tmp_path / "cache"),
            workspaces_dir=str(tmp_path / "ws"), scope="suite",
        )

    with temporary_settings({PREFECT_API_URL: server}):
        parent_state = parent(return_state=True)
        from prefect.logging.handlers import APILogHandler

        for handler in logging.getLogger("prefect.flow_runs").handlers:
            if isinstance(handler, APILogHandler):
                handler.flush()  # send the queued run logs now, not to a server this test will have stopped
    parent_id = parent_state.state_details.flow_run_id
    with _client(server) as client:
        deadline = time.monotonic() + 60
        while True:
            tracking = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[parent_id])))
            children = client.read_flow_runs(flow_run_filter=FlowRunFilter(parent_flow_run_id={"any_": [parent_id]}))
            if (tracking and children and tracking[0].name == children[0].name) or time.monotonic() > deadline:
                break
            time.sleep(0.25)
    assert len(tracking) == 1 and len(children) == 1
    assert re.fullmatch(r"preflight 1 suite \d{4}-\d\d-\d\dT\d\d:\d\dZ", children[0].name)
    assert tracking[0].name == children[0].name


def test_a_server_that_stops_mid_run_is_one_line_and_69(conformance, tmp_path, servers):
    """The server goes away while legs run: the CLI kills its legs and exits 69 within seconds, with one
    line naming PREFECT_API_URL and the fix (not minutes of retries and a multi-line error every event).
    The module's server is taken over (this test stops it), so no second server is started for it."""
    suites = tmp_path / "suites"
    _, marker = build_skill_suite(conformance, suites, probes=PROBES, delay_s=20.0, max_elapsed_ms=60000)
    server = servers.take()
    env = {**os.environ, "PREFECT_API_URL": server.api_url, "EVALQUALITY_HOME": str(tmp_path / "home"),
           "EVALQUALITY_PROGRESS_SECONDS": "0"}
    run = subprocess.Popen(
        [sys.executable, "-m", "flows.preflight", "--suites", str(suites), "--out", str(tmp_path / "out"),
         "--baseline", str(tmp_path / "none.json")],
        cwd=PROJECT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and len(marker_events(marker)) < 1:  # a leg is running
            assert run.poll() is None, run.communicate()
            time.sleep(0.2)
    finally:
        server.stop()
    stopped = time.monotonic()
    try:
        out, err = run.communicate(timeout=120)
    finally:
        run.kill()
    lines = [line for line in err.splitlines() if line.strip()]
    assert run.returncode == 69, err[-3000:]
    assert time.monotonic() - stopped < 60
    assert "Traceback" not in err, err[-3000:]
    assert lines[-1] == (
        f"python -m flows.preflight: PREFECT_API_URL={server.api_url} stopped answering during the run "
        + lines[-1].split("stopped answering during the run ", 1)[1]
    )
    assert "start that server again (or unset PREFECT_API_URL)" in lines[-1]
    # Before it: the flow-run URL and the plan, and at most one batch of Prefect's lost-connection
    # chatter that raced the watchdog's first check (a refused /health each second, three in a row).
    assert lines[0].startswith("flow run: ") and len(lines) <= 5, err
    # No leg outlived the run: every leg that started was killed (its sleep never reached its end).
    time.sleep(1)
    assert marker_events(marker) and not marker_events(marker, "end")
