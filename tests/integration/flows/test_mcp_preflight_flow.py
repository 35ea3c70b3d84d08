"""The pre-flight flow runs the notes-tools suite live (real tool-server sessions, one per distinct leg)
on the embedded Prefect server, and each leg's task run is named per tool call:
``notes-tools/<probe>/<leg-id> (<toolName>)``, its state saying ``tool result`` or ``tool error``."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from flows.preflight import run_preflight_flow
from flows.settings import FlowSettings

pytestmark = pytest.mark.slow

SUITE = Path(__file__).resolve().parents[3] / "corpus" / "suites" / "notes-tools"


def _task_runs(flow_run_name_prefix: str, at_least: int) -> dict[str, object]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.client.schemas.sorting import FlowRunSort

    deadline = time.monotonic() + 60
    with get_client(sync_client=True) as client:
        flow_runs = client.read_flow_runs(sort=FlowRunSort.START_TIME_DESC, limit=5)
        flow_run_id = next(run.id for run in flow_runs if run.name.startswith(flow_run_name_prefix))
        while True:
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            final = {run.name: run for run in runs if run.state is not None and run.state.is_final()}
            # Count the leg runs only: compile/plan/reduce runs reach the server too, and counting them
            # returned before the last leg's final state was recorded (events arrive asynchronously).
            legs_final = sum(1 for name in final if name.startswith("notes-tools/"))
            if legs_final >= at_least or time.monotonic() > deadline:
                return final
            time.sleep(0.25)


def test_the_tool_server_suite_preflights_live_and_its_legs_are_named_per_tool_call(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    shutil.copytree(SUITE, suites / "notes-tools", ignore=shutil.ignore_patterns("trials"))
    settings = FlowSettings(home=tmp_path / "home", suites_dir=suites, out_dir=tmp_path / "out", concurrency=2,
                            baseline=tmp_path / "expected-preflight.json")
    run = run_preflight_flow(settings)
    assert run.spawned > 0 and run.from_cache == 0
    assert [probe.outcome for probe in run.probes] == ["passed"] * len(run.probes) and run.probes
    probes = {probe.probe_id for probe in run.probes}
    legs = run.spawned + run.collapsed
    runs = _task_runs("preflight 1 suite ", legs)
    leg_runs = {name: task_run for name, task_run in runs.items() if name.startswith("notes-tools/")}
    assert len(leg_runs) == legs
    for name, task_run in leg_runs.items():
        match = re.fullmatch(r"notes-tools/(P-\d{3})/([a-z0-9-]+) \((search_notes|create_note)\)", name)
        assert match and match.group(1) in probes, name
        if task_run.state.name == "Completed":
            assert re.fullmatch(r"tool (result|error) in \d+\.\d\d s", task_run.state.message), task_run.state.message
        else:
            assert task_run.state.name == "Cached"
            assert task_run.state.message.removeprefix("collapsed onto ") in leg_runs, task_run.state.message
    assert {name.rsplit(" (", 1)[1].rstrip(")") for name in leg_runs} == {"search_notes", "create_note"}
