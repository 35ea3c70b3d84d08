"""``python -m flows.mutants --trials-sample N`` end to end (issue 18): live evaluator trials on a sampled
Killed and Survived mutant, their evidence, the vector in the summary, a fully cached re-run; and the
ArtifactOnly class met by a real run.

The suite is a copy of corpus/suites/notes whose ``save`` also stamps the store with ``store["savedBy"] =
"notes"`` (a key no answer prints). Three generated mutants are chosen by what they do to that code, so
each expected class follows from reading it:

* line 98 ``save(store)`` → ``pass``: the silent write of probe P-001 — Observable, Killed by the read-back
  oracle O-001;
* line 26 ``handle.write("\\n")`` → ``pass``: the store loses its last newline, but it is observed as JSON —
  Unobservable, Survived;
* line 23 ``"notes"`` → ``"XXnotesXX"``: the store written by every patch differs, and no exit code,
  stdout or stderr does — ArtifactOnly (qualification would refuse a signature on an artifact).

Both runs are real child processes (``python -m flows.mutants``) sharing one eval-quality home, so the
second must be answered by the leg, plan and trial caches. The trials use the reference evaluator (the
suite's default), which resolves the contract's own checks, so on these two mutants its verdict must
equal the oracles'.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.artifacts.base import read_artifact
from evalquality_core.artifacts.contract_strength import GeneratedStrength, generated_strength_of
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.canonical import scan_json
from evalquality_core.mutants.report import MutationTestReport
from evalquality_core.suite.mutants import generate_for_suite
from flows.strength_html import evaluator_trials_block
from tests.prefect_db import seed_prefect_home

ROOT = Path(__file__).resolve().parents[3]

# One module fixture runs the flow(s) every test here reads: one worker builds it once (--dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("mutant-trials")]

KILLED = ("statement-deletion", 98, "pass")
UNOBSERVABLE = ("statement-deletion", 26, "pass")
ARTIFACT_ONLY = ("string", 23, '"XXnotesXX"')


def _flow(suites: Path, out: Path, home: Path, ids: list[str], *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALQUALITY_HOME": str(home), "PREFECT_HOME": str(home / "prefect")}
    env.pop("EVALQUALITY_SUITES", None)
    flags = [flag for mutant_id in ids for flag in ("--mutant", mutant_id)]
    return subprocess.run(
        [sys.executable, "-m", "flows.mutants", "--suites", str(suites), "--suite", "notes", "--out", str(out),
         "--concurrency", "4", *flags, *extra],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, migrated_prefect_db: Path) -> dict[str, Any]:
    """One suite copy, the three mutants' ids, and the two child runs (each run's summary kept)."""
    root = tmp_path_factory.mktemp("mutant-trials")
    suites = root / "suites"
    shutil.copytree(ROOT / "corpus" / "suites" / "notes", suites / "notes")
    shutil.copy(ROOT / "corpus" / "scoring-policy.json", root / "scoring-policy.json")
    source = suites / "notes" / "system" / "notes.py"
    text = source.read_text()
    stamped = text.replace('def save(store):\n', 'def save(store):\n    store["savedBy"] = "notes"\n')
    assert stamped != text
    source.write_text(stamped)
    ids = {}
    for mutant in generate_for_suite(suites / "notes").kept:
        key = (mutant.operator, mutant.start[0], mutant.replacement)
        if key in (KILLED, UNOBSERVABLE, ARTIFACT_ONLY):
            ids[key] = mutant.mutant_id
    assert len(ids) == 3, ids
    out, home = root / "out", root / "home"
    seed_prefect_home(home / "prefect", migrated_prefect_db)  # no migrations in the child (tests/prefect_db.py)
    chosen = sorted(ids.values())
    first = _flow(suites, out, home, chosen, "--trials-sample", "2")
    assert first.returncode == 0, first.stderr[-3000:]
    summary = json.loads((out / "notes" / "mutants-summary.json").read_text())
    second = _flow(suites, out, home, chosen, "--trials-sample", "2")
    assert second.returncode == 0, second.stderr[-3000:]
    again = json.loads((out / "notes" / "mutants-summary.json").read_text())
    policy = json.loads((root / "scoring-policy.json").read_text())
    return {"ids": ids, "out": out, "first": first, "second": second, "summary": summary, "again": again,
            "policy": policy}


def test_a_mutant_that_changes_only_a_written_artifact_is_artifact_only(runs: dict[str, Any]) -> None:
    ids, summary = runs["ids"], runs["summary"]
    by_id = {m["mutantId"]: m for m in summary["mutants"]}
    assert {key: by_id[mutant_id]["class"] for key, mutant_id in ids.items()} == {
        KILLED: "Observable", UNOBSERVABLE: "Unobservable", ARTIFACT_ONLY: "ArtifactOnly"}
    artifact_only = by_id[ids[ARTIFACT_ONLY]]
    assert artifact_only["differences"] and {d[1] for d in artifact_only["differences"]} == {"artifacts"}
    assert summary["classes"]["ArtifactOnly"] == 1
    report = json.loads((runs["out"] / "notes" / "mutation-report.json").read_text())
    MutationTestReport.model_validate(report)
    entry = next(m for m in report["files"]["system/notes.py"]["mutants"] if m["id"] == ids[ARTIFACT_ONLY])
    assert entry["statusReason"].startswith("ArtifactOnly: ") and entry["status"] == artifact_only["status"]
    assert "ArtifactOnly" in runs["first"].stdout


def test_sampled_mutants_go_through_live_trials_beside_their_oracle_verdict(runs: dict[str, Any]) -> None:
    ids, summary, out = runs["ids"], runs["summary"], runs["out"]
    trials = summary["evaluatorTrials"]
    minimum = runs["policy"]["minimumTrialCount"]
    rows = {row["mutantId"]: row for row in trials["rows"]}
    # Two requested, one Killed mutant and two Survived: one from each stratum.
    assert sorted(row["oracleVerdict"] for row in rows.values()) == ["Killed", "Survived"]
    assert ids[KILLED] in rows
    survivor = next(row for row in rows.values() if row["oracleVerdict"] == "Survived")
    assert survivor["mutantId"] in (ids[UNOBSERVABLE], ids[ARTIFACT_ONLY])
    killed = rows[ids[KILLED]]
    assert killed["evaluatorVerdict"] == "Killed" and "O-001" in killed["evaluatorCites"] and killed["agrees"]
    assert survivor["evaluatorVerdict"] == "Survived" and survivor["caughtCount"] == 0 and survivor["agrees"]
    for row in rows.values():
        assert [t["trialIndex"] for t in row["trials"]] == list(range(1, minimum + 1))
        for index in range(1, minimum + 1):
            folder = out / "notes" / "trials" / row["mutantId"] / f"trial-{index}"
            record = read_artifact(SealedRunRecord, scan_json((folder / "sealed-run-record.json").read_bytes()), "record")
            wire = json.loads((folder / "sealed-run-record.json").read_text())
            assert record is not None and wire["trialIndex"] == index
            assert (folder / "isolation-manifest.json").is_file() and (folder / "evaluator-configuration.json").is_file()
    vector = trials["strength"]
    assert vector["detection"]["exercised"] == 2 and vector["detection"]["caught"] == 1
    assert vector["agreement"]["agree"] == 2 and vector["population"] == {"Killed": 1, "Survived": 2}
    assert vector["trialsPerMutant"] == minimum
    assert summary["costs"]["trialsRun"] == 2 * minimum and summary["costs"]["trialsFromCache"] == 0
    assert "evaluator trials on 2 sampled mutants (1 Killed, 1 Survived)" in runs["first"].stdout
    # The document's "generated strength" line carries the vector, and the report shows it.
    line = generated_strength_of(summary, 0)
    assert line.evaluator is not None and line.evaluator.detection.caught == 1
    assert GeneratedStrength.model_validate(json.loads(line.model_dump_json(by_alias=True)), by_alias=True) == line
    block = evaluator_trials_block(line.evaluator)
    assert "agreement with the oracles 2/2" in block and ids[KILLED] in block


def test_a_rerun_is_answered_by_the_caches_and_runs_no_trial(runs: dict[str, Any]) -> None:
    second, again, first = runs["second"], runs["again"], runs["summary"]
    minimum = runs["policy"]["minimumTrialCount"]
    assert "0 legs run" in second.stdout and "0 plans run" in second.stdout, second.stdout
    assert f"0 trials run and {2 * minimum} answered from cache, 0 trial faults" in second.stdout, second.stdout
    assert (again["costs"]["trialsRun"], again["costs"]["trialsFromCache"]) == (0, 2 * minimum)
    assert again["evaluatorTrials"] == first["evaluatorTrials"]


def test_the_trials_sample_flag_refuses_zero_in_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "flows.mutants", "--trials-sample", "0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 64 and "--trials-sample must be at least 1" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1


FAILING_EVALUATOR = """
import sys
with open({marker!r}, "a") as marker:
    marker.write("called\\n")
sys.stderr.write("this evaluator gives up\\n")
sys.exit(3)
"""


def test_a_failing_evaluator_invalidates_the_trials_and_nothing_is_cached(runs: dict[str, Any], tmp_path: Path) -> None:
    """An evaluator that exits non-zero: every trial of the sampled mutant is an invalidated attempt (no
    evaluator verdict, nothing exercised), the run still completes, and a re-run asks the evaluator again
    (a fault is never cached). The classification is answered by the fixture's leg and plan caches."""
    from prefect.task_runners import ThreadPoolTaskRunner

    from flows.mutants import mutants

    suites = tmp_path / "suites"
    shutil.copytree(runs["out"].parent / "suites" / "notes", suites / "notes", ignore=shutil.ignore_patterns("trials"))
    shutil.copy(runs["out"].parent / "scoring-policy.json", tmp_path / "scoring-policy.json")
    marker, script = tmp_path / "calls.txt", tmp_path / "give_up.py"
    script.write_text(FAILING_EVALUATOR.format(marker=str(marker)))
    settings = suites / "notes" / "suite.toml"
    settings.write_text(settings.read_text() + f'\n[evaluator]\nargv = ["{{python}}", "{script}"]\n')
    home = runs["out"].parent / "home"
    minimum = runs["policy"]["minimumTrialCount"]

    def run() -> Any:
        state = mutants.with_options(task_runner=ThreadPoolTaskRunner(max_workers=4))(
            suites_dir=str(suites), out_dir=str(tmp_path / "out"), cache_dir=str(home / "leg-cache"),
            store_dir=str(home / "leg-cache"), workspaces_dir=str(tmp_path / "workspaces"),
            mutant_ids=[runs["ids"][KILLED]], trials_sample=1, return_state=True)
        assert state.is_completed(), state.message
        return state.result()

    stale = tmp_path / "out" / "notes" / "trials"
    (stale / "m-000000000000" / "trial-1").mkdir(parents=True)  # an earlier run's mutant, no longer sampled
    (stale / "P-001").mkdir()  # not a generated mutant's folder: left alone
    first = run()
    row = first.suites[0].summary["evaluatorTrials"]["rows"][0]
    assert (row["mutantId"], row["exercised"], row["evaluatorVerdict"], row["agrees"]) == (runs["ids"][KILLED], False, None, None)
    assert [a["attempt"] for a in row["invalidatedAttempts"]] == list(range(1, minimum + 1))
    assert all(a["reason"].startswith("exit") for a in row["invalidatedAttempts"]), row["invalidatedAttempts"]
    assert (first.costs.trials.run, first.costs.trials.faulted) == (0, minimum)
    assert (first.costs.legs_spawned, first.costs.plans_spawned) == (0, 0), first.costs.line()
    # Nothing sealed for a trial that produced no judgement; the stale mutant folder is gone.
    assert sorted(p.name for p in stale.iterdir()) == ["P-001"]
    again = run()
    assert again.costs.trials.faulted == minimum and marker.read_text().count("called") == 2 * minimum
