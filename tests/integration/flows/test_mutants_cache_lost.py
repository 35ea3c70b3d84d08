"""The mutants flow when its shared leg cache is lost mid-run: the suite could not run, and nothing of
the mutant is taken for a finding (``run_suite`` catches ``LegCacheUnusable`` from ``_outcomes_of``).

The cache is the PostgreSQL backend on a throwaway cluster of this test's own (the session's shared one
must survive). What loses it is the system under test itself, as a hostile target would: the notes CLI is
given a guarded line that sends the cluster's server SIGQUIT (an immediate shutdown), and the mutant chosen
is the one that turns the guard's condition to ``if True:``. The clean system never takes the branch, so
the clean arm and the coverage run are answered and stored; the mutant's legs then fail under a
``port-failure`` at ``LegCache``. What must hold, end to end through real child processes:

* the flow ends Failed, saying the suite could not run because the leg cache failed under that mutant;
* no summary or report is written for the suite, no outcome is stored and no fault remembered: a second
  run, once the server is back (and the target no longer finds it to stop), answers the clean arm from the
  cache, runs the mutant's legs again (none is "remembered", none comes from the outcome store) and
  classifies it as what it now is, the clean program: Unobservable, Survived.

The unit-level twin (a lost cache against a timeout, on the same path) is
tests/mutants/test_cache_faults_not_findings.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.suite.mutants import generate_for_suite
from tests.postgres_cluster import Cluster, throwaway_cluster

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow

GUARD = "if os.getpid() < 0:  # never on the clean system"


def _hostile_notes(tmp_path: Path, victim: Path) -> Path:
    """A copy of the notes suite whose system, when the guard is mutated, stops the server whose process id
    the ``victim`` file holds (nothing when there is no such file)."""
    suites = tmp_path / "suites"
    shutil.copytree(ROOT / "corpus" / "suites" / "notes", suites / "notes")
    system = suites / "notes" / "system" / "notes.py"
    text = system.read_text()
    hostile = (
        "import os\nimport signal\n\n"
        f"{GUARD}\n"
        "    try:\n"
        f"        with open({str(victim)!r}, encoding='ascii') as handle:\n"
        "            os.kill(int(handle.read()), signal.SIGQUIT)\n"
        "    except OSError:\n"
        "        pass\n"
    )
    assert "import sys\n" in text
    system.write_text(text.replace("import sys\n", "import sys\n" + hostile, 1))
    return suites


def _run(suites: Path, out: Path, store: Path, workspaces: Path, url: str, ids: list[str]) -> tuple[Any, Any]:
    from prefect.task_runners import ThreadPoolTaskRunner

    from flows.mutants import mutants

    state = mutants.with_options(task_runner=ThreadPoolTaskRunner(max_workers=4))(
        suites_dir=str(suites), out_dir=str(out), cache_dir=url, store_dir=str(store), workspaces_dir=str(workspaces),
        mutant_ids=ids, return_state=True,
    )
    return state, state.result(raise_on_failure=False)


def _mutated_guard(suites: Path) -> str:
    generation = generate_for_suite(suites / "notes")
    line = next(number for number, text in enumerate((suites / "notes" / "system" / "notes.py").read_text().splitlines(), 1)
                if text == GUARD)
    chosen = [m.mutant_id for m in generation.kept
              if (m.operator, m.start[0], m.replacement) == ("condition", line, "if True:")]
    assert len(chosen) == 1, [(m.operator, m.start[0], m.replacement) for m in generation.kept if m.start[0] == line]
    return chosen[0]


def _server_alive(cluster: Cluster) -> bool:
    try:
        return b"postgres" in Path(f"/proc/{cluster.postmaster_pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return False


def test_a_leg_cache_lost_under_a_mutant_fails_the_suite_and_leaves_nothing_taken_for_a_finding(tmp_path: Path) -> None:
    with throwaway_cluster() as cluster:
        url = cluster.create_database("legs")
        victim = tmp_path / "victim.pid"
        victim.write_text(str(cluster.postmaster_pid))
        suites = _hostile_notes(tmp_path, victim)
        mutant = _mutated_guard(suites)
        out, store, workspaces = tmp_path / "out", tmp_path / "store", tmp_path / "workspaces"

        state, run = _run(suites, out, store, workspaces, url, [mutant])
        assert state.is_failed()
        assert state.message.startswith(f"suite notes could not run: the leg cache failed under mutant {mutant} leg ")
        assert "LegCache: leg cache postgresql://127.0.0.1:" in state.message
        assert not _server_alive(cluster)  # the target did stop it: the failure is the one staged
        first = run.costs
        assert first.legs_spawned > 0 and first.mutants_run == 1
        assert (first.legs_remembered, first.mutants_from_store) == (0, 0)
        assert run.suites[0].summary is None
        assert not (out / "notes" / "mutants-summary.json").exists()
        assert not (out / "notes" / "mutation-report.json").exists()

        victim.unlink()  # the mutant no longer finds a server to stop: it is the clean program again
        cluster.start()  # the server back (it recovers what was committed before the kill)
        state, run = _run(suites, out, store, workspaces, url, [mutant])
        assert state.is_completed(), state.message
        again = run.costs
        # The clean arm was stored before the loss; the mutant's legs were neither remembered as faults
        # nor stored as outcomes, so they run again and decide it.
        assert again.legs_cached > 0 and again.legs_spawned > 0
        assert (again.legs_remembered, again.mutants_from_store, again.mutants_run) == (0, 0, 1)
        summary = run.suites[0].summary
        assert [(m["mutantId"], m["class"], m["status"], m["outcomes"], m["remembered"]) for m in summary["mutants"]] == [
            (mutant, "Unobservable", "Survived", "run", False)]
        assert (out / "notes" / "mutants-summary.json").exists()
