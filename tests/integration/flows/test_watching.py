"""Watching a pre-flight run through Prefect itself: names, tags, leg states, logs and the gate's final state.

Real flow runs on the embedded server (temp ``PREFECT_HOME`` from tests/conftest.py) over a two-probe
fixture suite, read back through the Prefect client: the task-run names, the leg states (``Completed``
with the exit code for a spawn, ``Cached`` naming the leg it collapsed onto or the earlier run that
answered it), the flow-run name and tags, the run logger's lines, and a moved gate ending the flow run
``Failed`` with one line naming what moved.
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path

import pytest

from flows.preflight import run_preflight_flow
from flows.settings import FlowSettings
from tests.fixtures.skill_suite import build_skill_suite, marker_events

pytestmark = pytest.mark.slow

PROBES = 2
#: Six legs a probe: witness-frontend and both control legs share one request, witness-backend, the fault
#: leg, and the fault witness's clean twin (the same request on the clean system for every probe).
LEGS = 6 * PROBES
DISTINCT = 3 + PROBES


def _settings(tmp_path: Path, suites: Path) -> FlowSettings:
    return FlowSettings(
        home=tmp_path / "home", suites_dir=suites, out_dir=tmp_path / "out", concurrency=2,
        baseline=tmp_path / "expected-preflight.json",
    )


def _read_back(flow_run_id, expected_task_runs: int):
    """The flow run and its task runs once the server has recorded every one in a final state."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    deadline = time.monotonic() + 60
    with get_client(sync_client=True) as client:
        while True:
            flow_run = client.read_flow_run(flow_run_id)
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            final = [run for run in runs if run.state is not None and run.state.is_final()]
            if len(final) >= expected_task_runs and flow_run.state.is_final() or time.monotonic() > deadline:
                return flow_run, {run.name: run for run in final}
            time.sleep(0.25)


def _logs(flow_run_id) -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogHandler

    for handler in logging.getLogger("prefect.flow_runs").handlers:
        if isinstance(handler, APILogHandler):
            handler.flush()  # logs are sent in batches: send what is queued, then read it back
    deadline = time.monotonic() + 90
    with get_client(sync_client=True) as client:
        while True:
            logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
            messages = [log.message for log in logs]
            if any("legs run and" in message for message in messages) or time.monotonic() > deadline:
                return messages
            time.sleep(0.25)


def _flow_run_id(run_name_prefix: str):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.sorting import FlowRunSort

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(sort=FlowRunSort.START_TIME_DESC, limit=5)
    return next(run.id for run in runs if run.name.startswith(run_name_prefix) and run.flow_id)


def test_leg_states_names_tags_logs_and_a_moved_gate(conformance, tmp_path):
    suites = tmp_path / "suites"
    _, marker = build_skill_suite(conformance, suites, probes=PROBES)
    settings = _settings(tmp_path, suites)

    first = run_preflight_flow(settings, gate_on_baseline=True, update_baseline=True)
    assert first.gate_exit == 0 and first.spawned == DISTINCT == len(marker_events(marker))
    # spawn-leg's results stay in memory: its storage (where Prefect names them) holds the stages'
    # results only, never a leg's (Prefect names an unkeyed result by a bare uuid hex).
    from tasks.preflight import spawn_leg

    stored = [path.name for path in Path(spawn_leg.result_storage.basepath).iterdir()]
    assert any(name.startswith("plan-preflight-") for name in stored)
    assert not [name for name in stored if re.fullmatch(r"[0-9a-f]{32}", name)]
    assert (first.spawned, first.collapsed, first.from_cache) == (DISTINCT, LEGS - DISTINCT, 0)
    first_id = _flow_run_id("preflight 1 suite ")
    task_runs = 1 + PROBES + LEGS + PROBES  # compile, plan per probe, the legs, reduce per probe
    flow_run, runs = _read_back(first_id, task_runs)

    # The flow run is named by what it ran and when, and tagged with its suites.
    assert re.fullmatch(r"preflight 1 suite \d{4}-\d\d-\d\dT\d\d:\d\dZ", flow_run.name)
    assert "suite:skill" in flow_run.tags and flow_run.state.name == "Completed"
    # Every task run has a human name.
    names = set(runs)
    assert {"compile/skill", "plan/skill/P-001", "plan/skill/P-002", "reduce/skill/P-001", "reduce/skill/P-002"} <= names
    legs = {name: run for name, run in runs.items() if name.count("/") == 2 and not name.startswith(("plan/", "reduce/"))}
    assert len(legs) == LEGS
    # Task runs carry no tags (each tag costs a concurrency-slot round trip to the server per task run);
    # a leg's name starts with its suite instead, and the flow run carries the suite tags.
    assert all(name.startswith("skill/") and not run.tags for name, run in legs.items())
    # A spawned leg is Completed with its exit code and seconds; a repeat is Cached, collapsed onto it.
    spawned = {name: run for name, run in legs.items() if run.state.name == "Completed"}
    collapsed = {name: run for name, run in legs.items() if run.state.name == "Cached"}
    assert len(spawned) == DISTINCT and len(collapsed) == LEGS - DISTINCT
    assert all(re.fullmatch(r"exit -?\d+ in \d+\.\d\d s", run.state.message) for run in spawned.values())
    for run in collapsed.values():
        onto = run.state.message.removeprefix("collapsed onto ")
        assert onto in spawned, run.state.message
    # The plan per suite, each spawned leg's outcome and the cost line reached the run logger.
    messages = _logs(first_id)
    assert f"suite skill: {PROBES} probe(s), {LEGS} legs planned" in messages
    leg_lines = [m for m in _task_logs(legs) if ": spawned, exit" in m]
    assert sorted(line.split(":")[0] for line in leg_lines) == sorted(spawned)
    assert any(m.startswith(f"{DISTINCT} legs run and 0 answered from cache ({LEGS - DISTINCT} collapsed") for m in messages)

    # The next run: every leg Cached, naming the run that answered it.
    second = run_preflight_flow(settings, gate_on_baseline=True)
    assert (second.spawned, second.collapsed, second.from_cache, second.gate_exit) == (0, 0, LEGS, 0)
    second_id = _flow_run_id("preflight 1 suite ")
    assert second_id != first_id
    _, runs = _read_back(second_id, task_runs)
    cached = [run for name, run in runs.items() if name in legs]
    assert len(cached) == LEGS and all(run.state.name == "Cached" for run in cached)
    for run in cached:
        assert run.state.message.startswith(f"from cache: answered by run {flow_run.name} ({first_id}) as skill/")

    # A moved baseline: the flow run ends Failed with one line naming what moved; the exit code stays 2.
    baseline = json.loads(settings.baseline.read_text())
    baseline["probes"]["skill/P-002"]["outcome"] = "failed: seeded-fault-fired"
    settings.baseline.write_text(json.dumps(baseline))
    moved = run_preflight_flow(settings, gate_on_baseline=True)
    assert moved.gate_exit == 2
    moved_run, _ = _read_back(_flow_run_id("preflight 1 suite "), 0)
    assert moved_run.state.type.value == "FAILED"
    assert moved_run.state.message == (
        "pre-flight baseline gate exit 2: skill/P-002: outcome moved from 'failed: seeded-fault-fired' to 'passed'"
    )


def _task_logs(legs) -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterTaskRunId

    with get_client(sync_client=True) as client:
        ids = [run.id for run in legs.values()]
        return [log.message for log in client.read_logs(LogFilter(task_run_id=LogFilterTaskRunId(any_=ids)))]
