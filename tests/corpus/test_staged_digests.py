"""Digests without staging (``staged_digests``) equal what a real staging records, and refuse what it refuses.

Planning keys every leg by these digests; computing them from the files in place instead of copying
the system once per probe is what keeps a cached pre-flight cheap, so a test holds them equal to a real
copy's for every corpus suite and mutation and for the edge cases a copy handles (newline translation,
overlapping fixture sets, a fixture placed at ``.``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalquality_core.suite.load import Mutation, load_mutations
from evalquality_core.suite.staging import StagingError, stage_workspace, staged_digests
from tests.corpus.conftest import SUITES


def _staged(suite: Path, mutation: Mutation | None, where: Path) -> tuple[str, str]:
    staged = stage_workspace(suite, where, mutation)
    return staged.system_digest, staged.work_digest


@pytest.mark.parametrize("name", sorted(p.name for p in SUITES.iterdir() if (p / "contract.json").is_file()))
def test_every_corpus_suite_and_mutation_digests_as_a_real_staging(tmp_path: Path, name: str) -> None:
    suite = SUITES / name
    mutations: list[Mutation | None] = [None, *{m.mutation_id: m for m in load_mutations(suite).values()}.values()]
    computed = staged_digests(suite, mutations)
    assert len(computed) == len(mutations) >= 2
    for index, mutation in enumerate(mutations):
        key = None if mutation is None else mutation.mutation_id
        assert computed[key] == _staged(suite, mutation, tmp_path / f"ws{index}")
    assert len({system for system, _ in computed.values()}) == len(mutations)  # each mutation changes the system


def _suite(tmp_path: Path, fixtures: str) -> Path:
    suite = tmp_path / "s"
    shutil.copytree(SUITES / "notes", suite)
    (suite / "suite.toml").write_text(f'system-id = "s"\n[fixtures]\n{fixtures}\n', encoding="utf-8")
    return suite


def test_crlf_sources_overlapping_fixture_sets_and_a_dot_place_digest_as_a_real_staging(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 'a = "."\nb = "."\nc = "deep/er"')
    for name, files in {"a": {"x.txt": "from a", "same.txt": "a"}, "b": {"same.txt": "b wins", "sub/y": "y"},
                        "c": {"z": "z"}}.items():
        for relative, text in files.items():
            (suite / "fixtures" / name / relative).parent.mkdir(parents=True, exist_ok=True)
            (suite / "fixtures" / name / relative).write_text(text, encoding="utf-8")
    source = suite / "system" / "notes.py"
    source.write_bytes(source.read_bytes().replace(b"\n", b"\r\n"))  # the copy writes it back with \n
    mutation = load_mutations(suite)["P-001"]
    computed = staged_digests(suite, [None, mutation])
    assert computed[None] == _staged(suite, None, tmp_path / "clean")
    assert computed[mutation.mutation_id] == _staged(suite, mutation, tmp_path / "mutated")


@pytest.mark.parametrize("breakage", ["symlink-in-system", "symlink-in-fixture", "find-absent", "target-missing", "no-fixture-dir"])
def test_what_staging_refuses_is_refused_without_staging(tmp_path: Path, breakage: str) -> None:
    suite = _suite(tmp_path, 'three-notes = "."')
    mutation = load_mutations(suite)["P-001"]
    if breakage == "symlink-in-system":
        (suite / "system" / "leak").symlink_to("/etc/hostname")
    elif breakage == "symlink-in-fixture":
        (suite / "fixtures" / "three-notes" / "leak").symlink_to("/etc/hostname")
    elif breakage == "find-absent":
        source = suite / "system" / "notes.py"
        source.write_text(source.read_text(encoding="utf-8").replace(mutation.find, "# gone\n"), encoding="utf-8")
    elif breakage == "target-missing":
        (suite / "system" / "notes.py").unlink()
    else:
        shutil.rmtree(suite / "fixtures" / "three-notes")
    with pytest.raises(StagingError) as staged:
        stage_workspace(suite, tmp_path / "ws", mutation)
    with pytest.raises(StagingError) as computed:
        staged_digests(suite, [None, mutation])
    assert type(computed.value) is type(staged.value)


def test_a_file_in_one_fixture_set_and_a_folder_in_another_is_refused(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 'a = "."\nb = "."')
    (suite / "fixtures" / "a").mkdir()
    (suite / "fixtures" / "a" / "x").write_text("file", encoding="utf-8")
    (suite / "fixtures" / "b" / "x").mkdir(parents=True)
    (suite / "fixtures" / "b" / "x" / "y").write_text("in a folder", encoding="utf-8")
    with pytest.raises((StagingError, OSError, shutil.Error)):
        stage_workspace(suite, tmp_path / "ws")
    with pytest.raises(StagingError, match="a file in one fixture set and a folder in another"):
        staged_digests(suite, [None])
