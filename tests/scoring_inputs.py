"""Loading the reference's scoring chains (worked example, chains/) as models, for the scoring tests.

Every file is read in place from the conformance folder through the real readers; nothing is copied.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalquality_core.artifacts.base import read_artifact
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.artifacts.isolation import IsolationManifest
from evalquality_core.artifacts.preflight_verdict import PreflightVerdict
from evalquality_core.artifacts.probe import Probe
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.artifacts.scoring_policy import ScoringPolicy


def load(path: Path) -> Any:
    """A JSON file's value."""
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Chain:
    """One scoreable chain, as models, plus where its files are."""

    contract: EvalContract
    probe: Probe
    record: SealedRunRecord
    manifest: IsolationManifest
    configuration: EvaluatorConfiguration
    policy: ScoringPolicy
    preflight: PreflightVerdict
    corpus_digest: str
    paths: dict[str, Path]


def _chain(paths: dict[str, Path], corpus_digest: str) -> Chain:
    return Chain(
        contract=read_artifact(EvalContract, load(paths["contract"])),
        probe=read_artifact(Probe, load(paths["probe"])),
        record=read_artifact(SealedRunRecord, load(paths["record"])),
        manifest=read_artifact(IsolationManifest, load(paths["manifest"])),
        configuration=read_artifact(EvaluatorConfiguration, load(paths["configuration"])),
        policy=read_artifact(ScoringPolicy, load(paths["policy"])),
        preflight=read_artifact(PreflightVerdict, load(paths["preflight"])),
        corpus_digest=corpus_digest,
        paths=paths,
    )


#: The caller-attested corpus digest of the worked example (scoring.md §10.1).
WORKED_EXAMPLE_CORPUS_DIGEST = "sha256:000000000000000000000000000000000000000000000000000000000000000e"


def worked_example(conformance: Path) -> Chain:
    """The notes-API worked example (newer chain) with its four reconstructed inputs."""
    base = conformance / "worked-example"
    inputs = base / "reconstructed-inputs"
    return _chain(
        {
            "contract": base / "eval-contract.json",
            "probe": base / "probe.json",
            "record": base / "sealed-run-record.json",
            "manifest": inputs / "isolation-manifest.json",
            "configuration": inputs / "evaluator-configuration.json",
            "policy": inputs / "scoring-policy.json",
            "preflight": inputs / "preflight-verdict.json",
        },
        WORKED_EXAMPLE_CORPUS_DIGEST,
    )


def reference_chain(conformance: Path, name: str) -> Chain:
    """``skill-defect`` or ``workflow-capture``, with the corpus digest the reference's artifact attests."""
    base = conformance / "chains" / name
    inputs = base / "reconstructed-inputs"
    emitted = load(base / "evidence-artifact.json")
    return _chain(
        {
            "contract": base / "eval-contract.json",
            "probe": base / "probe.json",
            "record": base / "sealed-run-record.json",
            "manifest": inputs / "isolation-manifest.json",
            "configuration": inputs / "evaluator-configuration.json",
            "policy": inputs / "scoring-policy.json",
            "preflight": base / "preflight-verdict.json",
            "evidence": base / "evidence-artifact.json",
        },
        emitted["scoringVersionInputs"]["corpusDigest"],
    )
