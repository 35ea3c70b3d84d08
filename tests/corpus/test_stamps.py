"""What we ship is what a current harness writes (issue 11): every artifact of ``corpus/suites`` and of the
``suite init`` starter is at the newest stamp its model writes (contract 7, probe 6, sealed run record 8,
pre-flight verdict 2, ...), reads through that model, and goes back to the wire unchanged.

The files are found by walking the folders, so a suite or a trial added later is held to the same rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from evalquality_core.artifacts.base import LineageArtifact, read_artifact, to_wire
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.artifacts.isolation import IsolationManifest
from evalquality_core.artifacts.preflight_verdict import PreflightVerdict
from evalquality_core.artifacts.probe import Probe
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.artifacts.scoring_policy import ScoringPolicy
from tests.corpus.conftest import PROJECT_ROOT, SUITES, read

STARTERS = PROJECT_ROOT / "evalquality_core" / "suite" / "starters"
STARTER = STARTERS / "cli"
CORPUS_POLICY = PROJECT_ROOT / "corpus" / "scoring-policy.json"


def model_of(path: Path) -> type[LineageArtifact] | None:
    """The artifact a suite file is, by its name and folder (None: not an artifact, e.g. an observation)."""
    if path.name == "contract.json":
        return EvalContract
    if path.parent.name == "probes" and path.name.startswith("P-"):
        return Probe
    return {
        "sealed-run-record.json": SealedRunRecord,
        "preflight-verdict.json": PreflightVerdict,
        "evaluator-configuration.json": EvaluatorConfiguration,
        "isolation-manifest.json": IsolationManifest,
        "scoring-policy.json": ScoringPolicy,
    }.get(path.name)


def artifacts_under(*roots: Path) -> list[Path]:
    """Every artifact file under ``roots``, sorted."""
    return sorted(path for root in roots for path in root.rglob("*.json") if model_of(path) is not None)


def _artifacts() -> list[Path]:
    # The starter's probes hold only the hand-written fields (``suite init`` generates the rest, and
    # tests/integration/cli/test_suite_commands.py holds what it writes to this same rule); its contract is whole.
    starters = [path for kind in sorted(STARTERS.iterdir()) for path in (kind / "contract.json", kind / "scoring-policy.json")]
    return [*artifacts_under(SUITES), *starters, CORPUS_POLICY]


def assert_newest_stamp(path: Path) -> None:
    """The file is at its model's newest stamp, reads, and goes back to the wire unchanged."""
    model = model_of(path)
    assert model is not None, path
    document = read(path)
    assert document["schemaVersion"] == model.WRITTEN_SCHEMA_VERSION, path
    parsed: BaseModel = read_artifact(model, document)
    assert to_wire(parsed) == document, path


def test_the_walk_finds_every_kind_we_ship() -> None:
    kinds = {model_of(path) for path in _artifacts()}
    assert kinds == {
        EvalContract, Probe, SealedRunRecord, PreflightVerdict, EvaluatorConfiguration, IsolationManifest, ScoringPolicy,
    }


@pytest.mark.parametrize("path", _artifacts(), ids=lambda p: p.relative_to(PROJECT_ROOT).as_posix())
def test_every_shipped_artifact_is_at_the_newest_stamp(path: Path) -> None:
    assert_newest_stamp(path)
