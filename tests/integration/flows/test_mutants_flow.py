"""``python -m flows.mutants`` end to end (issue 18, M2/M3): real child processes through the suite's
adapters, per-leg line coverage, each class of the decision table met by a mutant chosen for it, the
oracle kill verdict, the mutation-testing report, and a re-run that spawns nothing.

The mutants are chosen by what they do to the notes CLI (corpus/suites/notes/system/notes.py), so the
expected class follows from the code, not from a previous run:

* line 123 ``if __name__ == "__main__":`` → ``if False:``: the script does nothing on every leg
  (exit 0, no output). That is no start-up failure (issue 34): the malformed-write oracle wants exit 2
  — Observable, Killed; → ``if True:``: the same program — Unobservable;
* line 72 ``refuse("--id is required")`` (string mutated): no leg or plan step omits ``--id`` — NoCoverage;
* line 52 ``index += 2`` → ``pass``: every call with an option loops forever — Timeout (the copy's
  budget is lowered to 2 s so the test stays short);
* line 97 ``save(store)`` → ``pass``: the silent write of probe P-001 — Observable, Killed by O-001;
* line 25 ``handle.write("\\n")`` → ``pass``: the store file loses its last newline, but the artifact is
  observed as JSON, so nothing observable changes — Unobservable (equivalent for this contract), Survived.

The flow runs in-process (Prefect's embedded server is started once per test process); the CLI's own
argument handling is checked separately without a run.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.mutants.report import MutationTestReport
from evalquality_core.suite.mutants import generate_for_suite
from flows.mutants import suite_line

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow

WANTED = {
    ("condition", 123, "if False:"): ("Observable", "Killed"),
    ("condition", 123, "if True:"): ("Unobservable", "Survived"),
    ("string", 72, "\"XX--id is requiredXX\""): ("NoCoverage", "NoCoverage"),
    ("statement-deletion", 52, "pass"): ("Timeout", "Timeout"),
    ("statement-deletion", 97, "pass"): ("Observable", "Killed"),
    ("statement-deletion", 25, "pass"): ("Unobservable", "Survived"),
}


def _suite_copy(tmp_path: Path) -> Path:
    suites = tmp_path / "suites"
    shutil.copytree(ROOT / "corpus" / "suites" / "notes", suites / "notes")
    targets = suites / "notes" / "targets.toml"
    targets.write_text(targets.read_text().replace("max_elapsed_ms = 10000", "max_elapsed_ms = 2000"))
    return suites


def _run(suites: Path, out: Path, home: Path, ids: list[str]) -> Any:
    from prefect.task_runners import ThreadPoolTaskRunner

    from flows.mutants import mutants

    state = mutants.with_options(task_runner=ThreadPoolTaskRunner(max_workers=4))(
        suites_dir=str(suites), out_dir=str(out), cache_dir=str(home / "leg-cache"), store_dir=str(home / "leg-cache"),
        workspaces_dir=str(home / "workspaces"), mutant_ids=ids, return_state=True,
    )
    assert state.is_completed(), state.message
    _LAST_FLOW_RUN.append(state.state_details.flow_run_id)
    return state.result()


_LAST_FLOW_RUN: list[Any] = []


def _run_tags(flow_run_id: Any) -> tuple[set[str], dict[str, set[str]]]:
    """The tags of a finished mutants flow run and of each of its task runs, as the API reports them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(flow_run_id)
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])), limit=200)
    return set(flow_run.tags), {run.name: set(run.tags) for run in runs}


def test_every_class_met_scored_reported_and_a_rerun_spawns_nothing(tmp_path: Path) -> None:
    suites = _suite_copy(tmp_path)
    generation = generate_for_suite(suites / "notes")
    chosen, keys = {}, {}
    for mutant in generation.kept:
        key = (mutant.operator, mutant.start[0], mutant.replacement)
        if key in WANTED:
            chosen[mutant.mutant_id] = WANTED[key]
            keys[mutant.mutant_id] = key
    assert len(chosen) == len(WANTED)
    out, home = tmp_path / "out", tmp_path / "home"
    first = _run(suites, out, home, sorted(chosen))
    summary = json.loads((out / "notes" / "mutants-summary.json").read_text())
    got = {m["mutantId"]: (m["class"], m["status"]) for m in summary["mutants"]}
    assert got == chosen
    by_id = {m["mutantId"]: m for m in summary["mutants"]}
    id_of = {wanted_key: mutant_id for mutant_id, wanted_key in keys.items()}
    killed = by_id[id_of[("statement-deletion", 97, "pass")]]
    assert "O-001" in killed["killedBy"]  # the read-back oracle catches the silent write
    # Coverage selection: the NoCoverage mutant ran nothing; the do-nothing one (module level) every leg.
    no_coverage = next(m for m in summary["mutants"] if m["class"] == "NoCoverage")
    assert no_coverage["coveredBy"] == []
    idle = by_id[id_of[("condition", 123, "if False:")]]
    assert "plan" in idle["coveredBy"] and len(idle["coveredBy"]) > 5
    assert summary["costs"]["mutantLegsWithCoverage"] < summary["costs"]["mutantLegsWithoutCoverage"]
    # Score: Killed + Timeout detected, over every mutant (none is Stillborn here).
    score = summary["killScore"]
    assert (score["detected"], score["valid"]) == (3, 6)
    low, high = score["interval95"]
    assert low < 0.5 < high
    # The report validates, names oracles in killedBy and legs in coveredBy.
    report = json.loads((out / "notes" / "mutation-report.json").read_text())
    MutationTestReport.model_validate(report)
    entries = {m["id"]: m for m in report["files"]["system/notes.py"]["mutants"]}
    assert set(entries) == set(chosen)
    assert entries[killed["mutantId"]]["killedBy"] == killed["killedBy"]
    assert entries[idle["mutantId"]]["coveredBy"] == idle["coveredBy"]
    assert first.costs.legs_spawned > 0 and first.costs.plans_spawned > 0
    # The flow run carries the suite's tag; its task runs carry none (a tagged task run would lease tag
    # concurrency slots from the server, one round trip each) and are named after the suite instead.
    flow_tags, task_tags = _run_tags(_LAST_FLOW_RUN[-1])
    assert {"eval-quality", "mutants", "suite:notes"} <= flow_tags
    assert task_tags and all(not tags for tags in task_tags.values())
    assert any(name.startswith("notes/") for name in task_tags)
    assert re.search(r"kill score 3/6 = 0\.50", suite_line(first.suites[0]))
    # Every class the first run decided was freshly observed: nothing rests on a remembered fault.
    assert summary["rememberedFaults"] == 0 and {m["outcomes"] for m in summary["mutants"]} == {"run", "none"}
    # Again: the clean arm from the leg and plan caches, every covered mutant from the outcome store (no
    # task run for it), and the Timeout said to rest on a remembered fault.
    again = _run(suites, out, home, sorted(chosen))
    assert (again.costs.legs_spawned, again.costs.plans_spawned) == (0, 0), again.costs.line()
    assert again.costs.legs_cached > 0 and again.costs.plans_cached > 0
    assert (again.costs.mutants_from_store, again.costs.mutants_run) == (len(chosen) - 1, 0)
    assert again.costs.generation == {"notes": "cache"}
    summary_again = json.loads((out / "notes" / "mutants-summary.json").read_text())
    assert {m["mutantId"]: (m["class"], m["status"]) for m in summary_again["mutants"]} == chosen
    assert [m["class"] for m in summary_again["mutants"] if m["remembered"]] == ["Timeout"]
    assert summary_again["rememberedFaults"] == 1 and "1 remembered" in suite_line(again.suites[0])
    # A changed contract (an oracle's commentary) re-classifies from the caches: no leg or plan re-spawns.
    contract_path = suites / "notes" / "contract.json"
    contract = json.loads(contract_path.read_text())
    contract["oracles"][0]["commentary"] += " (revised)"
    contract_path.write_text(json.dumps(contract, indent=1))
    changed = _run(suites, out, home, sorted(chosen))
    assert (changed.costs.legs_spawned, changed.costs.plans_spawned) == (0, 0), changed.costs.line()
    assert {m["mutantId"]: m["class"] for m in changed.suites[0].summary["mutants"]} == {k: v[0] for k, v in chosen.items()}


def test_cli_refuses_bad_flags_in_one_line_before_any_run() -> None:
    cases = ((["--operators", "nope"], "unknown operator(s) nope"), (["--sample", "0"], "--sample must be at least 1"))
    # Both refusals at once: each process spends its seconds importing, so they wait side by side.
    runs = [(subprocess.Popen([sys.executable, "-m", "flows.mutants", *flags], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True), what) for flags, what in cases]
    for run, what in runs:
        _, stderr = run.communicate(timeout=120)
        assert run.returncode == 64 and what in stderr and stderr.count("\n") == 1, stderr


def test_an_observable_representative_yields_a_probe_the_generator_cycle_qualifies(tmp_path: Path) -> None:
    """trace.py line 63 ``covered = sum(...)`` -> ``covered = None``: the coverage sum fails, the gate run
    answers differently on its exit code; the derived probe must read as a Probe, carry an earned
    ``rollbackVerified``, plant exactly the generated edit, and pass the AD-9 gate."""
    from prefect.task_runners import ThreadPoolTaskRunner

    from evalquality_core.artifacts.base import read_artifact
    from evalquality_core.artifacts.probe import Probe
    from evalquality_core.score.qualification import qualify_probe
    from evalquality_core.score.witness import resolve_home_operation
    from flows.mutants import mutants

    suites = tmp_path / "suites"
    shutil.copytree(ROOT / "corpus" / "suites" / "trace", suites / "trace")
    generation = generate_for_suite(suites / "trace")
    chosen = [m for m in generation.kept if (m.operator, m.start[0]) == ("assignment", 63)]
    assert len(chosen) == 1
    home, out = tmp_path / "home", tmp_path / "out"
    state = mutants.with_options(task_runner=ThreadPoolTaskRunner(max_workers=4))(
        suites_dir=str(suites), out_dir=str(out), cache_dir=str(home / "leg-cache"), store_dir=str(home / "leg-cache"),
        workspaces_dir=str(home / "workspaces"), mutant_ids=[chosen[0].mutant_id], derive=True, return_state=True,
    )
    assert state.is_completed(), state.message
    summary = json.loads((out / "trace" / "mutants-summary.json").read_text())
    [row] = summary["derivedProbes"]
    assert row["qualified"] is True, row["reason"]
    probe = json.loads((out / "trace" / "derived" / "probes" / f"{row['probeId']}.json").read_text())
    read_artifact(Probe, probe, "Probe")
    assert probe["qualification"]["rollbackVerified"] is True
    mutation = json.loads((out / "trace" / "derived" / "mutations" / f"{chosen[0].mutant_id}.json").read_text())
    assert (mutation["find"], mutation["replace"], mutation["probeId"]) == (chosen[0].find, chosen[0].replace, row["probeId"])
    contract = json.loads((suites / "trace" / "contract.json").read_text())
    gate = qualify_probe(probe, resolve_home_operation(contract, probe["defectSignature"]))
    assert gate.qualified, [failure.code for failure in gate.failures]
