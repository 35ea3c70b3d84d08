"""A mutant leg whose leg cache failed under it (a PostgreSQL server lost mid-run) ends in a
``port-failure`` at ``LegCache``: a fault of ours, not of the mutant. The mutants flow must not take it
for a finding: it neither remembers it as the leg's fault nor stores the mutant's outcomes, and the
mutant gets no verdict (``_outcomes_of`` raises ``LegCacheUnusable``, which ``run_suite`` reports as the
suite that could not run, as it does a clean leg's fault). A fault the system caused (a timeout) is
remembered and stored as before: the same path, so the check below can fail."""

from __future__ import annotations

import dataclasses
from concurrent.futures import Future
from pathlib import Path

import pytest

from evalquality_core.mutants.generate import GeneratedMutant
from flows.mutants import Costs, _MutantRuns, _outcomes_of
from tasks.leg_cache import LegCacheUnusable
from tasks.mutants import close_plan_store, remembered_fault, stored_outcomes
from tasks.preflight import spawn_leg
from tests.fixtures.skill_suite import build_skill_suite, marker_events
from tests.tasks.test_spawn_leg import _jobs


def _mutant() -> GeneratedMutant:
    return GeneratedMutant("M-1", "P-001", "comparison", "s.py", "<", "<=", (1, 1), (1, 2), "<", "<=", "sha256:0", "")


def _finished(state) -> Future:  # noqa: ANN001 (a Prefect state)
    """The future the flow would hold: it resolves to what ``result()`` of the leg's state returns."""
    future: Future = Future()
    future.set_result(state.result())
    return future


@pytest.mark.parametrize("cause", ["lost-cache", "timeout"])
def test_a_leg_cache_fault_is_neither_remembered_nor_stored_nor_given_a_verdict(conformance, tmp_path: Path, cause: str) -> None:
    suite_dir, marker = build_skill_suite(conformance, tmp_path / "suites", delay_s=5, max_elapsed_ms=700)
    job = _jobs(suite_dir, tmp_path, f"inv-{cause}")["witness-backend"]
    if cause == "lost-cache":
        job = dataclasses.replace(job, cache_dir="postgresql://nobody@127.0.0.1:9/legs")  # nothing listens on 9
    state = spawn_leg.fn("skill", "P-001", "witness-backend", job, expected_faults=True)
    assert state.is_completed() and state.name == "Faulted"  # a mutant's fault comes back as a value
    store = tmp_path / "store"
    runs = _MutantRuns(_mutant(), ["witness-backend"], "ef" * 32, futures={"witness-backend": (_finished(state), job)})
    if cause == "lost-cache":
        with pytest.raises(LegCacheUnusable) as lost:
            _outcomes_of(runs, {"store_dir": str(store)}, Costs())
        assert str(lost.value).startswith("mutant M-1 leg witness-backend: LegCache: leg cache postgresql://127.0.0.1:9/legs")
        assert "nobody@" not in str(lost.value)
    else:
        outcomes, _plan, _how = _outcomes_of(runs, {"store_dir": str(store)}, Costs())
        assert outcomes["witness-backend"].fault_code == "budget-exhausted"
    remembered = remembered_fault(str(store), job.key)
    stored, _broken = stored_outcomes(str(store), "ef" * 32)
    if cause == "lost-cache":
        assert remembered is None and stored is None
        assert marker_events(marker) == []  # the system never ran
    else:
        assert remembered is not None and remembered["code"] == "budget-exhausted"
        assert stored is not None and stored.runs["witness-backend"].fault_code == "budget-exhausted"
    close_plan_store(str(store))
