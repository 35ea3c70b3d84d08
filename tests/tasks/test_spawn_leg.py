"""``spawn-leg`` (its body, ``spawn_leg.fn``) with the real command-line adapter over a staged suite:
identical concurrent legs start one process, a timed-out leg is not cached and runs again next time,
and every workspace is gone afterwards."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest

from evalquality_core.faults import RuntimeFault
from evalquality_core.preflight.plan import plan_preflight
from tasks.preflight import LegJob, leg_key, spawn_leg
from tasks.suites import load_suite
from tests.fixtures.skill_suite import build_skill_suite, marker_events, set_delay


def _jobs(suite_dir: Path, home: Path, invocation: str, mode: str = "default"):
    suite = load_suite(suite_dir)
    probe = suite.probes[0]
    plan = plan_preflight(suite.contract, [probe], "r")
    jobs = {}
    for leg in plan.legs:
        key = leg_key(leg.request, suite.policy, suite.staged_digest_of_leg(probe, leg.leg_id))
        jobs[leg.leg_id] = LegJob(
            request=leg.request,
            key=key,
            policy=suite.policy,
            stage=suite.stager(probe, leg.leg_id),
            cache_dir=str(home / "cache"),
            cache_mode=mode,
            invocation=invocation,
            workspaces_dir=str(home / "workspaces"),
        )
    return jobs


def test_concurrent_legs_with_one_request_start_one_process(conformance, tmp_path):
    suite_dir, marker = build_skill_suite(conformance, tmp_path / "suites", delay_s=0.5)
    jobs = _jobs(suite_dir, tmp_path, "inv-1")
    # witness-frontend and both control-observe legs send the same request (§1.5: control inputs are
    # the first witness leg's), so they share one key.
    same = ["witness-frontend", "preflight-control-observe", "preflight-control-observe-2"]
    assert len({jobs[leg].key for leg in same}) == 1
    states = {}
    threads = [
        threading.Thread(target=lambda leg=leg: states.__setitem__(leg, spawn_leg.fn("skill", "P-001", leg, jobs[leg])))
        for leg in same
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(marker_events(marker)) == 1
    answers = {leg: state.result() for leg, state in states.items()}
    assert sorted(answer.source for answer in answers.values()) == ["collapsed", "collapsed", "spawned"]
    # Each leg's task-run state says how it was answered (a Completed-type state named Cached for a repeat).
    [spawner] = [leg for leg in same if answers[leg].source == "spawned"]
    assert states[spawner].name == "Completed" and states[spawner].message.startswith("exit 0 in ")
    for leg in same:
        if leg != spawner:
            assert states[leg].is_completed() and states[leg].name == "Cached"
            assert states[leg].message == f"collapsed onto skill/P-001/{spawner}"
    assert {leg: answers[leg].observation["probeId"] for leg in same} == {leg: leg for leg in same}
    assert answers["witness-frontend"].observation["stdout"]["value"]["selected"][0] == "interaction-rules"
    assert list((tmp_path / "workspaces").iterdir()) == []  # the leg's workspace is gone


def test_seeded_fault_leg_runs_against_the_mutation(conformance, tmp_path):
    suite_dir, marker = build_skill_suite(conformance, tmp_path / "suites")
    jobs = _jobs(suite_dir, tmp_path, "inv-2")
    fault = spawn_leg.fn("skill", "P-001", "skill-defect-leg-1", jobs["skill-defect-leg-1"]).result()
    clean = spawn_leg.fn("skill", "P-001", "witness-frontend", jobs["witness-frontend"]).result()
    assert "mobile-rules" in fault.observation["stdout"]["value"]["selected"]
    assert "mobile-rules" not in clean.observation["stdout"]["value"]["selected"]
    assert [event["mutation"] for event in marker_events(marker)] == ["m1", ""]


def test_a_timed_out_leg_is_not_cached_and_runs_again(conformance, tmp_path):
    suite_dir, marker = build_skill_suite(conformance, tmp_path / "suites", delay_s=5, max_elapsed_ms=700)
    job = _jobs(suite_dir, tmp_path, "inv-3")["witness-backend"]
    failed = spawn_leg.fn("skill", "P-001", "witness-backend", job)  # a fault ends the task run Failed
    assert failed.is_failed() and isinstance(failed.data, RuntimeFault)
    assert failed.data.code == "budget-exhausted"
    with pytest.raises(RuntimeFault):
        failed.result()
    set_delay(marker, 0)
    retry = _jobs(suite_dir, tmp_path, "inv-4")["witness-backend"]  # the next run
    assert retry.key == job.key
    assert spawn_leg.fn("skill", "P-001", "witness-backend", retry).result().source == "spawned"
    assert len(marker_events(marker)) == 2
    later = _jobs(suite_dir, tmp_path, "inv-5")["witness-backend"]  # and the run after that
    state = spawn_leg.fn("skill", "P-001", "witness-backend", later)
    assert state.result().source == "cache" and state.name == "Cached"
    assert state.message.startswith("from cache: answered by ") and " as skill/P-001/witness-backend at " in state.message
    assert len(marker_events(marker)) == 2


@pytest.mark.parametrize("where", ["postgresql", "diskcache"])
def test_a_leg_cache_lost_after_the_pre_run_check_fails_the_leg_on_one_line(conformance, tmp_path, where):
    """The flow opens the leg cache once before any leg (flows/lifecycle.check_leg_cache); a cache lost
    after that check (the PostgreSQL server stopped, the cache directory made unusable) must fail each
    leg with the fault's one line, as a database error during a read does, never with a traceback, and
    the system under test never runs."""
    suite_dir, marker = build_skill_suite(conformance, tmp_path / "suites")
    job = _jobs(suite_dir, tmp_path, f"inv-lost-{where}")["witness-frontend"]
    if where == "postgresql":
        lost = "postgresql://nobody@127.0.0.1:9/legs"  # nothing listens on port 9 (discard)
        named = "leg cache postgresql://127.0.0.1:9/legs: could not create the table"
    else:
        lost = str(tmp_path / "not-a-directory")
        Path(lost).write_text("a file where the cache directory should be\n")
        named = f"leg cache {lost}"
    job = dataclasses.replace(job, cache_dir=lost)
    state = spawn_leg.fn("skill", "P-001", "witness-frontend", job)
    assert state.is_failed() and isinstance(state.data, RuntimeFault)
    assert state.data.code == "port-failure" and state.data.artifact_path == "LegCache"
    assert state.message.startswith(f"port-failure: LegCache: {named}") and "\n" not in state.message
    assert "nobody@" not in state.message  # the user info of the URL is never shown
    assert marker_events(marker) == []
    assert list((tmp_path / "workspaces").iterdir() if (tmp_path / "workspaces").exists() else []) == []
