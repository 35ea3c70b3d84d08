"""The nightly deployment object: built with no server and no network; its cron, time zone and entry point."""

from __future__ import annotations

import importlib

import pytest
from prefect.client.schemas.schedules import CronSchedule

from deployments import nightly


def test_deployment_schedules_the_flow_nightly_at_two_with_an_explicit_timezone(monkeypatch):
    monkeypatch.delenv(nightly.TIMEZONE_VARIABLE, raising=False)
    deployment = nightly.build_deployment()
    assert deployment.name == "nightly"
    assert deployment.flow_name == "contract-strength"
    [schedule] = deployment.schedules
    assert isinstance(schedule.schedule, CronSchedule)
    assert schedule.schedule.cron == "0 2 * * *"
    assert schedule.schedule.timezone == "UTC"
    assert schedule.active is True
    # A moved night ends Failed in the UI rather than silently Completed.
    assert deployment.parameters == {"fail_on_movement": True, "trials": "live"}


def test_entry_point_resolves_to_the_contract_strength_flow():
    deployment = nightly.build_deployment()
    assert deployment.entrypoint == "flows.contract_strength.contract_strength"
    module_name, _, attribute = deployment.entrypoint.rpartition(".")
    loaded = getattr(importlib.import_module(module_name), attribute)
    assert loaded.name == "contract-strength"
    # The work-pool route loads the same flow by file path from the project directory.
    path, _, name = nightly.FILE_ENTRYPOINT.partition(":")
    assert (nightly.PROJECT_DIR / path).is_file() and name == attribute


def test_timezone_comes_from_the_environment_or_the_argument(monkeypatch):
    monkeypatch.setenv(nightly.TIMEZONE_VARIABLE, "Europe/Berlin")
    assert nightly.build_deployment().schedules[0].schedule.timezone == "Europe/Berlin"
    deployment = nightly.build_deployment(cron="30 3 * * 1-5", timezone="America/New_York")
    assert deployment.schedules[0].schedule.cron == "30 3 * * 1-5"
    assert deployment.schedules[0].schedule.timezone == "America/New_York"


def test_a_malformed_cron_is_refused_before_any_server_is_involved():
    with pytest.raises(ValueError):
        nightly.build_deployment(cron="every night at two")
