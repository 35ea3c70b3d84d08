"""``flows.mutants`` (generation, line coverage, mutant legs and plan runs) on a system that carries a
real npm dependency tree: the notes CLI with the installed ``@modelcontextprotocol/server-memory``
``node_modules/`` (~29 MB, ~4,000 files, npm ``.bin`` links) beside it. Every leg and plan run of the
flow is staged with that folder linked from the home's layer store: the tree is stored ONCE however many
legs ran, its links kept, and the mutants are classed as on the bare notes system (tests/flows/
test_mutants_flow.py). If the registry cannot be reached the test FAILS saying so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalquality_core.suite.mutants import generate_for_suite

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

#: Mutants of notes.py whose class follows from the code (tests/flows/test_mutants_flow.py says why).
WANTED = {
    ("statement-deletion", 97, "pass"): ("Observable", "Killed"),
    ("condition", 123, "if True:"): ("Unobservable", "Survived"),
}


def test_the_mutants_flow_stages_a_real_npm_tree_once_for_every_leg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     memory_server_modules: Path) -> None:
    from prefect.task_runners import ThreadPoolTaskRunner

    from flows.mutants import mutants

    modules = memory_server_modules
    suites = tmp_path / "suites"
    shutil.copytree(ROOT / "corpus" / "suites" / "notes", suites / "notes", ignore=shutil.ignore_patterns("trials"))
    shutil.copytree(modules, suites / "notes" / "system" / "node_modules", symlinks=True)
    assert any(path.is_symlink() for path in (suites / "notes" / "system" / "node_modules" / ".bin").iterdir())
    home = tmp_path / "home"
    monkeypatch.setenv("EVALQUALITY_HOME", str(home))
    chosen = {}
    for mutant in generate_for_suite(suites / "notes").kept:
        assert not mutant.target.startswith("system/node_modules/"), mutant.target  # a layer is never mutated
        key = (mutant.operator, mutant.start[0], mutant.replacement)
        if key in WANTED:
            chosen[mutant.mutant_id] = WANTED[key]
    assert len(chosen) == len(WANTED)
    out = tmp_path / "out"
    state = mutants.with_options(task_runner=ThreadPoolTaskRunner(max_workers=4))(
        suites_dir=str(suites), out_dir=str(out), cache_dir=str(home / "leg-cache"), store_dir=str(home / "leg-cache"),
        workspaces_dir=str(home / "workspaces"), mutant_ids=sorted(chosen), return_state=True,
    )
    assert state.is_completed(), state.message
    result = state.result()
    summary = json.loads((out / "notes" / "mutants-summary.json").read_text())
    assert {m["mutantId"]: (m["class"], m["status"]) for m in summary["mutants"]} == chosen
    # Many legs and plan runs, one stored copy of the npm tree (one digest, one generation).
    assert result.costs.legs_spawned >= 5 and result.costs.plans_spawned >= 1, result.costs.line()
    [layer] = list((home / "layers").iterdir())
    [generation] = list(layer.glob("gen-*"))
    assert (generation / "node_modules" / ".bin").is_dir()
    assert all(path.is_symlink() for path in (generation / "node_modules" / ".bin").iterdir())
