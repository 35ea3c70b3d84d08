"""Staging: a fresh workspace per run, the system beside the working directory, at most one mutation,
and nothing of the evaluation folder inside."""

from __future__ import annotations

import json
import re
import shutil
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


def _suite_copy(tmp_path: Path) -> Path:
    import shutil

    suite = tmp_path / "notes"
    shutil.copytree(SUITES / "notes", suite, ignore=shutil.ignore_patterns("trials", "evidence"))
    return suite


@pytest.mark.parametrize("place", ["../escaped", "/tmp/escaped", "a/../../escaped"])
def test_a_fixture_placed_outside_work_is_refused(tmp_path: Path, place: str) -> None:
    suite = _suite_copy(tmp_path)
    settings = suite / "suite.toml"
    settings.write_text(settings.read_text().replace('three-notes = "."', f'three-notes = "{place}"'))
    with pytest.raises(StagingError, match="leaves work/"):
        stage_workspace(suite, tmp_path / "ws")
    assert not (tmp_path / "escaped").exists()


def test_a_mutation_target_outside_the_system_is_refused(tmp_path: Path) -> None:
    suite = _suite_copy(tmp_path)
    path = suite / "mutations" / "store-write-deletion.json"
    path.write_text(path.read_text().replace('"system/notes.py"', '"system/../suite.toml"'))
    with pytest.raises(StagingError, match="under system/"):
        load_mutations(suite)


def test_a_symlink_in_a_fixture_is_refused_not_followed(tmp_path: Path) -> None:
    suite = _suite_copy(tmp_path)
    secret = tmp_path / "host-secret.txt"
    secret.write_text("not for the workspace")
    (suite / "fixtures" / "three-notes" / "peek.txt").symlink_to(secret)
    with pytest.raises(StagingError, match="symlink"):
        stage_workspace(suite, tmp_path / "ws")
    assert not any(p.name == "peek.txt" for p in (tmp_path / "ws").rglob("*")) if (tmp_path / "ws").exists() else True


def test_notes_weak_stages_the_notes_system_it_borrows_with_system_from(tmp_path: Path) -> None:
    """``system-from = "notes"``: notes-weak holds no copy of the system; its workspaces, clean and mutated,
    stage notes' system/ byte for byte (so its legs and trials key and behave exactly as with a copy)."""
    assert not (SUITES / "notes-weak" / "system").exists()
    clean = stage_workspace(SUITES / "notes-weak", tmp_path / "clean")
    assert clean.system_digest == tree_digest(SUITES / "notes" / "system")
    mutation = load_mutations(SUITES / "notes-weak")["P-001"]
    mutated = stage_workspace(SUITES / "notes-weak", tmp_path / "mutated", mutation)
    twin = stage_workspace(SUITES / "notes", tmp_path / "twin", load_mutations(SUITES / "notes")["P-001"])
    assert mutated.system_digest == twin.system_digest != clean.system_digest


def _borrower(tmp_path: Path, origin: str, *, own_system: bool = False) -> Path:
    """A copy of notes-weak beside a copy of notes, borrowing ``origin``'s system."""
    for name in ("notes", "notes-weak"):
        shutil.copytree(SUITES / name, tmp_path / name, ignore=shutil.ignore_patterns("trials", "evidence"))
    settings = tmp_path / "notes-weak" / "suite.toml"
    settings.write_text(settings.read_text().replace('system-from = "notes"', f"system-from = {json.dumps(origin)}"))
    if own_system:
        shutil.copytree(SUITES / "notes" / "system", tmp_path / "notes-weak" / "system")
    return tmp_path / "notes-weak"


@pytest.mark.parametrize(
    ("origin", "own_system", "says"),
    [
        ("../notes", False, "system-from must be the name of a sibling suite folder"),
        ("nowhere", False, "is not a suite"),
        ("notes", True, "holds a system/ of its own; keep one"),
    ],
)
def test_a_bad_system_from_is_refused_naming_suite_toml(tmp_path: Path, origin: str, own_system: bool, says: str) -> None:
    suite = _borrower(tmp_path, origin, own_system=own_system)
    with pytest.raises(StagingError, match=re.escape(says)) as refused:
        stage_workspace(suite, tmp_path / "ws")
    assert str(suite / "suite.toml") in str(refused.value)


def test_system_from_is_one_level_only(tmp_path: Path) -> None:
    """A suite that borrows from a borrower is refused: name the suite that holds the system."""
    suite = _borrower(tmp_path, "notes")
    shutil.copytree(suite, tmp_path / "notes-weaker", ignore=shutil.ignore_patterns("system"))
    settings = tmp_path / "notes-weaker" / "suite.toml"
    settings.write_text(settings.read_text().replace('system-from = "notes"', 'system-from = "notes-weak"'))
    with pytest.raises(StagingError, match="borrows its system too"):
        stage_workspace(tmp_path / "notes-weaker", tmp_path / "ws")
