"""Incremental mutant runs (issue 18): the outcome store answers a mutant whose mutated file, edit, covering
runs' requests and clean observations are unchanged, so a changed system re-runs only the mutants it
touches, a changed oracle re-classifies without a spawn, and a changed probe request spawns only the
legs it changed. Stored and remembered outcomes are verified and shown; an expected mutant-leg fault
(a Timeout) prints no traceback.

One real run per module, as a child process (``python -m flows.mutants``, a fresh home, a Prefect server
of its own) over a copy of the ``notes`` suite whose patch validation is split into a second file
``system/patchcheck.py``, with three mutants:

* X, ``notes.py`` ``save(store)`` -> ``pass``: the silent write, Observable and Killed by O-001;
* Y, ``patchcheck.py`` ``key not in PATCHABLE`` -> ``key in PATCHABLE``: in the file the first test changes;
* T, ``notes.py`` ``index += 2`` -> ``pass``: every call with an option loops until its (lowered, 2 s)
  budget: Timeout.

Every test then copies that run's suites, cache and reports and changes one thing.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.suite.mutants import generate_for_suite
from flows.mutants import suite_line
from tests.prefect_db import seed_prefect_home

ROOT = Path(__file__).resolve().parents[3]

# One module fixture runs the flow(s) every test here reads: one worker builds it once (--dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("mutants-incremental")]

PATCHCHECK = '''"""Patch validation of the notes CLI (split out of notes.py by tests/flows/test_mutants_incremental.py)."""

PATCHABLE = {"title": str, "body": str, "tags": list}


'''


def _split_system(notes: Path) -> None:
    """Move ``validate_patch`` (and ``PATCHABLE``) of notes.py into ``system/patchcheck.py``."""
    text = (notes / "system" / "notes.py").read_text()
    start, end = text.index("def validate_patch(changes):"), text.index("def command_get(argv):")
    (notes / "system" / "patchcheck.py").write_text(PATCHCHECK + text[start:end].rstrip() + "\n")
    text = text[:start] + text[end:]
    text = text.replace('PATCHABLE = {"title": str, "body": str, "tags": list}\n', "from patchcheck import validate_patch\n")
    (notes / "system" / "notes.py").write_text(text)
    for path in sorted((notes / "mutations").glob("*.json")):  # a declared defect in the moved code moves with it
        mutation = json.loads(path.read_text())
        if mutation["find"] not in text:
            path.write_text(json.dumps({**mutation, "target": "system/patchcheck.py"}, indent=1))


def _pick(notes: Path) -> dict[str, str]:
    kept = generate_for_suite(notes).kept

    def one(target: str, operator: str, original: str) -> str:
        [mutant] = [m for m in kept if (m.target, m.operator, m.original) == (f"system/{target}", operator, original)]
        return mutant.mutant_id

    return {"X": one("notes.py", "statement-deletion", "save(store)"),
            "Y": one("patchcheck.py", "comparison", "key not in PATCHABLE"),
            "T": one("notes.py", "statement-deletion", "index += 2")}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, migrated_prefect_db: Path) -> dict[str, Any]:
    """The first run, as a child process: everything spawned and stored."""
    root = tmp_path_factory.mktemp("incremental")
    notes = root / "suites" / "notes"
    shutil.copytree(ROOT / "corpus" / "suites" / "notes", notes, ignore=shutil.ignore_patterns("mutants"))
    targets = notes / "targets.toml"
    targets.write_text(targets.read_text().replace("max_elapsed_ms = 10000", "max_elapsed_ms = 2000"))
    _split_system(notes)
    ids = _pick(notes)
    seed_prefect_home(root / "home" / "prefect", migrated_prefect_db)  # no migrations in the child (tests/prefect_db.py)
    env = {**os.environ, "EVALQUALITY_HOME": str(root / "home"), "PREFECT_HOME": str(root / "home" / "prefect")}
    argv = [sys.executable, "-m", "flows.mutants", "--suites", str(root / "suites"), "--suite", "notes",
            "--out", str(root / "out"), "--concurrency", "4"]
    for mutant_id in ids.values():
        argv += ["--mutant", mutant_id]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return {"root": root, "ids": ids, "done": done}


def _copy(base: dict[str, Any], tmp_path: Path) -> Path:
    shutil.copytree(base["root"], tmp_path / "run", ignore=shutil.ignore_patterns("prefect"))
    return tmp_path / "run"


def _rerun(root: Path, ids: dict[str, str]) -> tuple[Any, dict[str, dict[str, Any]], dict[str, Any]]:
    from prefect.task_runners import ThreadPoolTaskRunner

    from flows.mutants import mutants

    home = root / "home"
    state = mutants.with_options(task_runner=ThreadPoolTaskRunner(max_workers=4))(
        suites_dir=str(root / "suites"), out_dir=str(root / "out"), cache_dir=str(home / "leg-cache"),
        store_dir=str(home / "leg-cache"), workspaces_dir=str(home / "workspaces"), mutant_ids=sorted(ids.values()),
        return_state=True,
    )
    assert state.is_completed(), state.message
    summary = json.loads((root / "out" / "notes" / "mutants-summary.json").read_text())
    by_name = {name: next(m for m in summary["mutants"] if m["mutantId"] == mutant_id) for name, mutant_id in ids.items()}
    return state.result(), by_name, summary


def _summary(root: Path, ids: dict[str, str]) -> dict[str, dict[str, Any]]:
    summary = json.loads((root / "out" / "notes" / "mutants-summary.json").read_text())
    return {name: next(m for m in summary["mutants"] if m["mutantId"] == mutant_id) for name, mutant_id in ids.items()}


def test_the_first_run_classifies_every_mutant_live_and_an_expected_timeout_prints_no_traceback(base: dict[str, Any]) -> None:
    done = base["done"]
    assert done.returncode == 0, done.stderr[-3000:]
    # A mutant that hangs is a finding, not an error: no traceback, no ERROR line from its faulted legs.
    assert "Traceback" not in done.stderr and "ERROR" not in done.stderr, done.stderr[-3000:]
    first = _summary(base["root"], base["ids"])
    assert {name: m["class"] for name, m in first.items()} == {"X": "Observable", "Y": first["Y"]["class"], "T": "Timeout"}
    assert first["Y"]["class"] in ("Observable", "Unobservable") and first["Y"]["coveredBy"]
    assert "O-001" in first["X"]["killedBy"]
    assert all(m["outcomes"] == "run" and not m["remembered"] and m["runsSpawned"] > 0 for m in first.values())
    assert "1 remembered" not in done.stdout and "0 mutants answered from the outcome store" in done.stdout


def test_a_changed_file_reruns_only_the_mutants_in_it(base: dict[str, Any], tmp_path: Path) -> None:
    root = _copy(base, tmp_path)
    patchcheck = root / "suites" / "notes" / "system" / "patchcheck.py"
    patchcheck.write_text(patchcheck.read_text() + "# revised: the same behaviour\n")
    run, now, _ = _rerun(root, base["ids"])
    before = _summary(base["root"], base["ids"])
    assert run.costs.coverage == {"notes": "recorded"}  # the clean system changed: coverage once more
    for name in ("X", "T"):  # notes.py untouched, its covering legs answer as before: nothing spawns
        assert (now[name]["outcomes"], now[name]["runsSpawned"]) == ("store", 0), now[name]
    assert now["Y"]["outcomes"] == "run" and now["Y"]["runsSpawned"] == len(now["Y"]["coveredBy"]) > 0
    assert {n: (m["class"], m["status"]) for n, m in now.items()} == {n: (m["class"], m["status"]) for n, m in before.items()}
    assert run.costs.mutants_from_store == 2 and run.costs.generation == {"notes": "generated"}


def test_a_changed_oracle_reclassifies_without_spawning(base: dict[str, Any], tmp_path: Path) -> None:
    root = _copy(base, tmp_path)
    path = root / "suites" / "notes" / "contract.json"
    contract = json.loads(path.read_text())
    oracle = contract["oracles"][0]
    assert oracle["id"] == "O-001"
    # Weakened: both answers report ok; what the read-back returns is no longer compared with what was written.
    oracle["check"]["operands"] = [oracle["check"]["operands"][0], {
        "op": "equality", "operands": [{"pointer": "/interactions/write/stdout/ok"}, {"literal": True}]}]
    oracle["direction"]["evidenceTargets"] = ["/interactions/read-back/stdout/ok", "/interactions/write/stdout/ok"]
    path.write_text(json.dumps(contract, indent=1))
    run, now, _ = _rerun(root, base["ids"])
    assert (run.costs.legs_spawned, run.costs.plans_spawned) == (0, 0), run.costs.line()
    assert run.costs.mutants_from_store == 3 and run.costs.generation == {"notes": "cache"}
    assert "O-001" not in now["X"]["killedBy"]  # the silent write is no longer caught by O-001


def test_a_changed_probe_request_spawns_only_the_legs_it_changed(base: dict[str, Any], tmp_path: Path) -> None:
    from evalquality_core.compile.pipeline import compile_contract
    from flows.mutants import _distinct_legs
    from tasks.preflight import plan_preflight
    from tasks.suites import load_suite

    root = _copy(base, tmp_path)
    notes = root / "suites" / "notes"

    def requests() -> dict[str, bytes]:
        suite = load_suite(notes)
        plan = plan_preflight(compile_contract(dict(suite.contract)), [dict(p) for p in suite.probes], "x")
        return {leg_id: json.dumps({**request, "probeId": ""}, sort_keys=True).encode() for leg_id, request in _distinct_legs(plan)}

    old = requests()
    probe = notes / "probes" / "P-004.json"
    probe.write_text(probe.read_text().replace('"not-a-list"', '"still-not-a-list"'))
    new = requests()
    changed = {leg_id for leg_id in new if old.get(leg_id) != new[leg_id]}
    assert changed and len(changed) < len(new)
    run, now, _ = _rerun(root, base["ids"])
    assert run.costs.plans_spawned == 0  # the interaction plan's requests did not change
    assert run.costs.legs_spawned == len(changed) + sum(len(changed & set(m["coveredBy"])) for m in now.values())
    for name, mutant in now.items():
        touched = changed & set(mutant["coveredBy"])
        assert mutant["outcomes"] == ("run" if touched else "store"), (name, touched)
        assert mutant["runsSpawned"] == len(touched), (name, mutant)
    assert now["T"]["class"] == "Timeout"


def _outcome_rows(root: Path) -> dict[str, str]:
    with sqlite3.connect(root / "home" / "leg-cache" / "mutant-outcomes" / "legs.sqlite3") as db:
        return dict(db.execute("SELECT key, entry FROM legs WHERE key LIKE 'mutant/%'").fetchall())


def test_an_altered_outcome_entry_is_discarded_and_a_consistent_forgery_is_shown_as_remembered(
    base: dict[str, Any], tmp_path: Path
) -> None:
    from tasks.mutants import OUTCOME_ENTRY_FORMAT, _encode

    root = _copy(base, tmp_path)
    x = base["ids"]["X"]
    [(key, entry)] = [(k, e) for k, e in _outcome_rows(root).items() if json.loads(e)["record"]["mutantId"] == x]
    record = json.loads(entry)["record"]
    # Altered after it was written (a leg now "timed out"), its digest left as it was: discarded, run again.
    leg = sorted(record["runs"])[0]
    altered = json.loads(entry)
    altered["record"]["runs"][leg] = {"fault": {"code": "budget-exhausted", "detail": "ProbeRequest: maxElapsedMs 1"}}
    with sqlite3.connect(root / "home" / "leg-cache" / "mutant-outcomes" / "legs.sqlite3") as db:
        db.execute("UPDATE legs SET entry = ? WHERE key = ?", (json.dumps(altered), key))
    run, now, summary = _rerun(root, base["ids"])
    assert run.costs.outcomes_discarded == 1 and now["X"]["outcomes"] == "run"
    assert now["X"]["class"] == "Observable" and not now["X"]["remembered"]
    assert now["X"]["runsSpawned"] == 0  # its legs and plan still answer from the leg and plan caches
    # A consistent forgery (what a writer with the user's own rights could make) changes the class, but
    # not unseen: the mutant says its class rests on a remembered fault, and so does the suite's line.
    forged = {**record, "runs": {**record["runs"], leg: {"fault": {"code": "budget-exhausted",
                                                                   "detail": "ProbeRequest: maxElapsedMs 2000"}}}}
    with sqlite3.connect(root / "home" / "leg-cache" / "mutant-outcomes" / "legs.sqlite3") as db:
        db.execute("UPDATE legs SET entry = ? WHERE key = ?", (_encode(key, forged, OUTCOME_ENTRY_FORMAT), key))
    run, now, summary = _rerun(root, base["ids"])
    assert now["X"]["class"] == "Timeout" and now["X"]["remembered"] is True and now["X"]["outcomes"] == "store"
    assert summary["rememberedFaults"] == 2  # X and the real Timeout T, both from the store
    assert "2 remembered fault(s) decide a class" in suite_line(run.suites[0])
