"""flows/lifecycle.py ``freeze_startup_heap``: a flow's start collects, then freezes what is alive, so a full
collection during the run's fan-out walks only what the run made (benchmarks/SCALING.md, *Fan-out, seventh pass*)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from flows.lifecycle import freeze_startup_heap
from flows.preflight import run_preflight_flow
from flows.settings import FlowSettings


class _Node:
    """An object in a reference cycle with itself: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_a_flow_start_frees_dead_cycles_and_freezes_live_ones() -> None:
    threshold = gc.get_threshold()
    live = _Node()
    dead = _Node()
    dead_ref = weakref.ref(dead)
    del dead
    assert dead_ref() is not None  # a cycle: reference counting alone never frees it
    try:
        freeze_startup_heap()
        assert dead_ref() is None  # collected first, never frozen
        assert not any(found is live for found in gc.get_objects())  # no generation holds it: it is frozen
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] == 20_000
    finally:
        gc.unfreeze()  # leave the worker's collector as it found it for the tests after this one
        gc.set_threshold(*threshold)


def test_a_preflight_run_freezes_the_heap_it_starts_with(tmp_path: Path) -> None:
    gc.unfreeze()
    threshold = gc.get_threshold()
    gc.set_threshold(700, *threshold[1:])
    (tmp_path / "suites").mkdir()
    settings = FlowSettings(home=tmp_path / "home", suites_dir=tmp_path / "suites", out_dir=tmp_path / "out",
                            concurrency=2, baseline=tmp_path / "no-baseline.json")
    try:
        run_preflight_flow(settings)
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] == 20_000  # young collections less often while the flow runs
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
