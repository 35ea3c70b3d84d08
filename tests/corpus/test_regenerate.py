"""``regenerate`` never loses stored trials: a failed run, or one killed part-way, leaves the last complete ones."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from corpus.tools.evaluator import EvaluatorError, regenerate
from corpus.tools.staging import tree_digest
from tests.corpus.conftest import SUITES


def _copy(tmp_path: Path) -> Path:
    suite = tmp_path / "notes"
    shutil.copytree(SUITES / "notes", suite, ignore=shutil.ignore_patterns("evidence"))
    return suite


def test_a_failed_regeneration_puts_the_stored_trials_back(tmp_path: Path) -> None:
    """A suite outside the project cannot be sealed (its references would not resolve): the run fails
    after writing new files, and the old trials are back byte for byte, with nothing set aside left over."""
    suite = _copy(tmp_path)
    before = tree_digest(suite / "trials")
    with pytest.raises(EvaluatorError, match="lies outside"):
        regenerate(str(suite), trials=1, probe_ids=["P-001"])
    assert tree_digest(suite / "trials") == before
    assert sorted(p.name for p in (suite / "trials").iterdir() if p.name.startswith(".")) == []


def test_trials_set_aside_by_a_killed_run_are_recovered(tmp_path: Path) -> None:
    """A run killed while writing leaves ``.P-001.previous`` (complete) and a partial ``P-001``; the next
    run starts from the complete one, so when it fails too the complete trials are what remain."""
    suite = _copy(tmp_path)
    trials = suite / "trials"
    before = tree_digest(trials)
    (trials / "P-001").rename(trials / ".P-001.previous")
    (trials / "P-001").mkdir()
    (trials / "P-001" / "preflight-verdict.json").write_text("{half", encoding="utf-8")
    with pytest.raises(EvaluatorError):
        regenerate(str(suite), trials=1, probe_ids=["P-001"])
    assert tree_digest(trials) == before
