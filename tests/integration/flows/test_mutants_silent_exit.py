"""A mutant that makes the command exit 0 at once is not Stillborn when the oracles kill it (issue 34).

The notes system is copied with one inert line at the top of ``main`` — ``if False: sys.exit(0)`` (the
clean system behaves exactly as before) — so the generator's ``condition`` operator yields the mutant
``if True:``: main's body becomes an immediate ``sys.exit(0)``. Every leg then answers exit 0 with nothing
on stdout or stderr. The real classification path runs it (``python -m flows.mutants`` as a child process,
every leg and the plan spawned as real children) and the mutant must be classified by its differences:
the contract's malformed-write oracle requires exit code 2 where the mutant exits 0, so it is Observable
and Killed — never Stillborn (RuntimeError), which would leave it out of the score.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalquality_core.suite.mutants import generate_for_suite
from tests.prefect_db import seed_prefect_home

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow

MAIN = "def main(argv):\n"
INERT = "    if False:\n        sys.exit(0)\n"


def _oracles_requiring_exit_2(contract: dict) -> set[str]:
    """The oracles whose check holds ``<interaction>/exit-code`` equal to 2 (a refusal the mutant never gives)."""
    found = set()
    for oracle in contract["oracles"]:
        text = json.dumps(oracle["check"])
        if '/exit-code"}, {"literal": 2}' in text:
            found.add(oracle["id"])
    return found


def test_a_main_that_exits_0_at_once_is_observable_and_killed_not_stillborn(tmp_path: Path, migrated_prefect_db: Path) -> None:
    suites = tmp_path / "suites"
    suite = suites / "notes"
    shutil.copytree(ROOT / "corpus" / "suites" / "notes", suite, ignore=shutil.ignore_patterns("trials"))
    system = suite / "system" / "notes.py"
    text = system.read_text(encoding="utf-8")
    assert text.count(MAIN) == 1
    system.write_text(text.replace(MAIN, MAIN + INERT), encoding="utf-8")
    line = text[: text.index(MAIN)].count("\n") + 2  # the inserted `if False:` line
    [mutant] = [m for m in generate_for_suite(suite, operators=["condition"]).kept
                if m.start[0] == line and m.replacement == "if True:"]
    assert "sys.exit(0)" in mutant.mutated_text.split(MAIN, 1)[1].split("\n    if not argv")[0]

    home, out = tmp_path / "home", tmp_path / "out"
    seed_prefect_home(home / "prefect", migrated_prefect_db)
    env = {**os.environ, "EVALQUALITY_HOME": str(home), "PREFECT_HOME": str(home / "prefect")}
    done = subprocess.run(
        [sys.executable, "-m", "flows.mutants", "--suites", str(suites), "--suite", "notes", "--mutant", mutant.mutant_id,
         "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    summary = json.loads((out / "notes" / "mutants-summary.json").read_text())
    [row] = summary["mutants"]
    assert row["mutantId"] == mutant.mutant_id
    assert row["class"] != "Stillborn", row
    assert (row["class"], row["status"]) == ("Observable", "Killed"), row
    contract = json.loads((suite / "contract.json").read_text())
    assert _oracles_requiring_exit_2(contract) & set(row["killedBy"]), row["killedBy"]
    report = json.loads((out / "notes" / "mutation-report.json").read_text())
    entries = {m["id"]: m for m in report["files"]["system/notes.py"]["mutants"]}
    assert entries[mutant.mutant_id]["status"] == "Killed"
    # It counts in the score: one valid mutant, detected.
    assert (summary["killScore"]["detected"], summary["killScore"]["valid"]) == (1, 1)
