"""Staging: a fresh workspace per run, the system beside the working directory, at most one mutation,
and nothing of the evaluation folder inside."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalquality_core.suite.load import load_mutations
from evalquality_core.suite.staging import (
    Mutation,
    StagingError,
    mutation_for_leg,
    stage_for_leg,
    stage_workspace,
    tree_digest,
)
from tests.corpus.conftest import SUITES, read


def test_a_clean_workspace_holds_the_system_and_the_fixture_and_nothing_else(tmp_path: Path) -> None:
    staged = stage_workspace(SUITES / "notes", tmp_path / "ws")
    assert sorted(p.name for p in staged.root.iterdir()) == ["system", "work"]
    assert sorted(p.name for p in staged.work_dir.iterdir()) == ["notes.json"]
    assert read(staged.work_dir / "notes.json") == read(SUITES / "notes" / "fixtures" / "three-notes" / "notes.json")
    assert staged.system_digest == tree_digest(SUITES / "notes" / "system")
    everything = {p.name for p in staged.root.rglob("*")}
    assert not everything & {"contract.json", "probes", "mutations", "evidence", "trials", "targets.toml"}


def test_each_fixture_set_keeps_its_own_project_root(tmp_path: Path) -> None:
    staged = stage_workspace(SUITES / "trace", tmp_path / "ws")
    assert sorted(p.name for p in staged.work_dir.iterdir()) == ["invoice-archive", "tenant-export"]


def test_a_mutation_changes_only_its_target_file(tmp_path: Path) -> None:
    mutation = load_mutations(SUITES / "notes")["P-001"]
    clean = stage_workspace(SUITES / "notes", tmp_path / "clean")
    mutated = stage_workspace(SUITES / "notes", tmp_path / "mutated", mutation)
    assert mutated.mutation_id == "store-write-deletion"
    assert mutated.system_digest != clean.system_digest
    assert mutated.work_digest == clean.work_digest
    original = (clean.system_dir / "notes.py").read_text()
    assert (mutated.system_dir / "notes.py").read_text() == original.replace(mutation.find, mutation.replace)
    assert mutation.find in original and mutation.find not in (mutated.system_dir / "notes.py").read_text()


def test_a_workspace_is_never_reused(tmp_path: Path) -> None:
    stage_workspace(SUITES / "notes", tmp_path / "ws")
    with pytest.raises(StagingError, match="new, empty directory"):
        stage_workspace(SUITES / "notes", tmp_path / "ws")


def test_a_mutation_whose_text_is_absent_or_repeated_is_refused(tmp_path: Path) -> None:
    base = load_mutations(SUITES / "notes")["P-001"]
    absent = Mutation(**{**base.__dict__, "find": "no such text\n"})
    with pytest.raises(StagingError, match="occurs 0 times"):
        stage_workspace(SUITES / "notes", tmp_path / "a", absent)
    repeated = Mutation(**{**base.__dict__, "find": "return answer("})
    with pytest.raises(StagingError, match="not exactly once"):
        stage_workspace(SUITES / "notes", tmp_path / "b", repeated)


def test_only_a_probes_fault_leg_runs_against_its_mutation(tmp_path: Path) -> None:
    probe = json.loads((SUITES / "notes" / "probes" / "P-001.json").read_text())
    assert mutation_for_leg(SUITES / "notes", probe, "silent-write-leg").mutation_id == "store-write-deletion"
    assert mutation_for_leg(SUITES / "notes", probe, "patch-note-witness-a") is None
    assert mutation_for_leg(SUITES / "notes", probe, "preflight-control-observe") is None
    leg = stage_for_leg(SUITES / "notes", probe, "silent-write-leg", tmp_path / "leg")
    assert leg.mutation_id == "store-write-deletion"
