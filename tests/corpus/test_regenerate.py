"""``regenerate`` never loses stored trials: a failed run, or one killed part-way, leaves the last complete ones."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.suite import evaluator
from evalquality_core.suite.evaluator import EvaluatorError, regenerate
from evalquality_core.suite.load import tree_digest
from tests.corpus.conftest import SUITES


def _copy(tmp_path: Path) -> Path:
    suite = tmp_path / "notes"
    shutil.copytree(SUITES / "notes", suite, ignore=shutil.ignore_patterns("evidence"))
    return suite


def _fails_after_writing(real: Callable[..., Any]) -> Callable[..., Any]:
    """``write_trial`` that writes its trial for real, then fails (a refusal part-way through a run)."""

    def fails(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        raise EvaluatorError("refused after writing a trial")

    return fails


def test_a_failed_regeneration_puts_the_stored_trials_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that fails after writing new files (here: the trial after the first one is refused) leaves
    the old trials back byte for byte, with nothing set aside left over."""
    suite = _copy(tmp_path)
    before = tree_digest(suite / "trials")
    monkeypatch.setattr(evaluator, "write_trial", _fails_after_writing(evaluator.write_trial))
    with pytest.raises(EvaluatorError, match="refused after writing"):
        regenerate(suite, trials=1, probe_ids=["P-001"])
    assert tree_digest(suite / "trials") == before
    assert sorted(p.name for p in (suite / "trials").iterdir() if p.name.startswith(".")) == []


def test_a_suite_copied_anywhere_regenerates_the_same_trials(tmp_path: Path) -> None:
    """References are relative to the suite folder, so a copy outside the checkout regenerates
    byte-identical trials (nothing in them names where the suite lives)."""
    suite = _copy(tmp_path)
    before = tree_digest(suite / "trials" / "P-001")
    regenerate(suite, trials=3, probe_ids=["P-001"])
    assert tree_digest(suite / "trials" / "P-001") == before


def test_trials_set_aside_by_a_killed_run_are_recovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run killed while writing leaves ``.P-001.previous`` (complete) and a partial ``P-001``; the next
    run starts from the complete one, so when it fails too the complete trials are what remain."""
    suite = _copy(tmp_path)
    trials = suite / "trials"
    before = tree_digest(trials)
    (trials / "P-001").rename(trials / ".P-001.previous")
    (trials / "P-001").mkdir()
    (trials / "P-001" / "preflight-verdict.json").write_text("{half", encoding="utf-8")
    monkeypatch.setattr(evaluator, "write_trial", _fails_after_writing(evaluator.write_trial))
    with pytest.raises(EvaluatorError):
        regenerate(suite, trials=1, probe_ids=["P-001"])
    assert tree_digest(trials) == before
