"""flows/settings.py ``flow_run_settings``: on the embedded server our flow runs send no heartbeats.

Heartbeats only feed a server's zombie detection, which nothing can run on a server that lives and dies
with the flow's process, and Prefect joins the heartbeat thread (asleep in 1 s steps) at the end of every
flow run. Read back from the embedded server's own event store: a flow run through ``run_preflight_flow``
has no heartbeat event, while the control (a flow run with Prefect's defaults) has one.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowFilter, FlowFilterName
from prefect.client.schemas.sorting import FlowRunSort
from prefect.runtime import flow_run
from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

from flows.preflight import run_preflight_flow
from flows.settings import FlowSettings, flow_run_settings

# What Prefect does with no server named (an embedded run's settings) is the subject: no worker server (tests/integration/conftest.py).
pytestmark = pytest.mark.own_prefect_server

HEARTBEAT = "prefect.flow-run.heartbeat"


def _heartbeats(run_id: str) -> list[str]:
    with get_client(sync_client=True) as client:
        answer = client.request("POST", "/events/filter", json={
            "filter": {"event": {"name": [HEARTBEAT]}, "any_resource": {"id": [f"prefect.flow-run.{run_id}"]}},
            "limit": 10})
        return [event["event"] for event in answer.json()["events"]]


def _heartbeats_within(run_id: str, seconds: float) -> list[str]:
    """The run's heartbeat events, waiting up to ``seconds`` for the server to store the first one."""
    deadline = time.monotonic() + seconds
    found = _heartbeats(run_id)
    while not found and time.monotonic() < deadline:
        time.sleep(0.25)
        found = _heartbeats(run_id)
    return found


@flow(name="heartbeat-control")
def _plain() -> str:
    return str(flow_run.id)


def _newest_preflight_run() -> str:
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["preflight"])),
                                     sort=FlowRunSort.START_TIME_DESC, limit=1)
    return str(runs[0].id)


def test_a_preflight_run_on_the_embedded_server_sends_no_heartbeat_and_the_control_does(tmp_path: Path) -> None:
    assert get_current_settings().api.url is None  # the test worker's embedded server
    (tmp_path / "suites").mkdir()
    settings = FlowSettings(home=tmp_path / "home", suites_dir=tmp_path / "suites", out_dir=tmp_path / "out",
                            concurrency=2, baseline=tmp_path / "no-baseline.json")
    run_preflight_flow(settings)
    ours = _newest_preflight_run()
    control = _plain()  # Prefect's defaults: a heartbeat as the run starts
    assert _heartbeats_within(control, 20) == [HEARTBEAT]
    assert _heartbeats(ours) == []  # stored by now if it had been sent: the control's came after it


def test_a_chosen_frequency_or_a_real_server_keeps_prefects_heartbeats(monkeypatch: pytest.MonkeyPatch) -> None:
    with flow_run_settings():
        assert get_current_settings().flows.heartbeat_frequency is None
    default = get_current_settings().flows.heartbeat_frequency
    assert default is not None
    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}), flow_run_settings():
        assert get_current_settings().flows.heartbeat_frequency == default
    monkeypatch.setenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "60")
    with flow_run_settings():
        assert get_current_settings().flows.heartbeat_frequency == default  # the variable is the user's choice
