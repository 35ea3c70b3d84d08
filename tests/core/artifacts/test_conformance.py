"""Every conformance document against our models and the reference's published schemas.

For each artifact kind the test walks the conformance folder. Whether the reference's published
schema accepts a document is *computed* (``jsonschema``); every document it accepts, our model must
accept. A document it rejects must be one the conformance README or the spec says wins over the
schema (listed in ``DOCUMENT_WINS`` with the reason), and our model must accept it too. Every
accepted document round-trips exactly, and our own generated schema accepts it as well.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from evalquality_core.artifacts import (
    EvalContract,
    EvaluatorConfiguration,
    EvidenceArtifact,
    IsolationManifest,
    PreflightVerdict,
    Probe,
    ScoringPolicy,
    SealedEvaluatorBrief,
    SealedRunRecord,
    read_artifact,
    to_wire,
)
from evalquality_core.artifacts.schemas import generate_schemas
from evalquality_core.faults import RuntimeFault
from tests.conftest import CONFORMANCE

#: kind → (model, published schema file, globs of documents of that kind; list files hold many).
KINDS: dict[str, tuple[type, str, tuple[str, ...]]] = {
    "contract": (
        EvalContract,
        "eval-contract.schema.json",
        (
            "corpus-dev/contracts/*.json",
            "corpus-dev/compile-seal-example/contract.json",
            "worked-example/eval-contract.json",
            "chains/*/eval-contract.json",
            "chains/tutorial-workflow/broken-*.json",
            "chains/tutorial-workflow/captured-read-back.json",
            "chains/tutorial-skill/checklist-selection.json",
        ),
    ),
    "brief": (
        SealedEvaluatorBrief,
        "sealed-evaluator-brief.schema.json",
        ("corpus-dev/compile-seal-example/brief.json", "chains/*/brief.json", "worked-example/older-chain/brief.v2.json"),
    ),
    "probe": (
        Probe,
        "probe.schema.json",
        ("worked-example/probe.json", "chains/*/probe.json", "chains/*/*-probe.json", "chains/*/probes.json"),
    ),
    "record": (
        SealedRunRecord,
        "sealed-run-record.schema.json",
        ("worked-example/sealed-run-record.json", "chains/*/sealed-run-record.json", "chains/*/*-run-record.json"),
    ),
    "isolation": (
        IsolationManifest,
        "isolation-manifest.schema.json",
        ("**/isolation-manifest.json", "**/*-isolation-manifest.json"),
    ),
    "configuration": (EvaluatorConfiguration, "evaluator-configuration.schema.json", ("**/evaluator-configuration.json",)),
    "policy": (ScoringPolicy, "scoring-policy.schema.json", ("**/scoring-policy.json",)),
    "preflight": (PreflightVerdict, "preflight-verdict.schema.json", ("**/preflight-verdict.json",)),
    "evidence": (
        EvidenceArtifact,
        "evidence-artifact.schema.json",
        ("chains/*/evidence-artifact.json", "worked-example/older-chain/evidence-artifact.v3.json"),
    ),
}

#: Documents the published schema rejects and the README/spec says we read anyway.
DOCUMENT_WINS: dict[str, str] = {
    "policy": "published schema lacks catchThreshold (README 'Known mismatches'; scoring.md §9.1)",
    "probe": "published schema's selector lacks the v5 'arguments' channel (README; scoring.md §9.1)",
    "record": "v5/v6 records add callInputs.arguments and quotedEvidence.artifactId; v6 drops invalidReason",
    "preflight": "published schema is verdict v2; the chains' verdicts are v1 (chains/README: read 1-2)",
    "evidence": "published schema predates mode as a scoring-version input (README; scoring.md §9.1)",
}


def _documents() -> list[tuple[str, str, int]]:
    """(kind, relative path, index within a list file or -1) for every conformance document."""
    found: list[tuple[str, str, int]] = []
    if not CONFORMANCE.is_dir():
        return found
    for kind, (_model, _schema, patterns) in KINDS.items():
        paths = sorted({p for pattern in patterns for p in CONFORMANCE.glob(pattern)})
        for path in paths:
            relative = str(path.relative_to(CONFORMANCE))
            value = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(value, list):
                found.extend((kind, relative, index) for index in range(len(value)))
            else:
                found.append((kind, relative, -1))
    return found


DOCUMENTS = _documents()


def _load(conformance: Path, relative: str, index: int) -> object:
    value = json.loads((conformance / relative).read_text(encoding="utf-8"))
    return value[index] if index >= 0 else value


def _published(conformance: Path, schema_file: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((conformance / "schemas" / schema_file).read_text(encoding="utf-8")))


def test_walk_found_every_kind() -> None:
    """The walk finds documents of every kind (a moved folder must not silently empty the test)."""
    if not CONFORMANCE.is_dir():
        pytest.skip("conformance data absent")
    kinds = {kind for kind, _relative, _index in DOCUMENTS}
    assert kinds == set(KINDS)
    assert len(DOCUMENTS) >= 60


@pytest.mark.parametrize(("kind", "relative", "index"), DOCUMENTS)
def test_their_schema_accepts_implies_we_accept(conformance: Path, kind: str, relative: str, index: int) -> None:
    """Their schema accepts ⇒ we accept; their schema rejects ⇒ a listed document-wins case we accept."""
    model, schema_file, _patterns = KINDS[kind]
    document = _load(conformance, relative, index)
    theirs_accept = _published(conformance, schema_file).is_valid(document)
    if not theirs_accept:
        assert kind in DOCUMENT_WINS, f"{relative}: the published schema rejects it and no reason is listed"
    parsed = read_artifact(model, document)
    assert to_wire(parsed) == document
    assert parsed.schema_version == document["schemaVersion"]


@pytest.mark.parametrize(("kind", "relative", "index"), DOCUMENTS)
def test_our_generated_schema_accepts_what_we_read(conformance: Path, kind: str, relative: str, index: int) -> None:
    """The schema we publish for a document's stamp accepts every document our model reads (one schema per
    stamp: ``<name>.schema.json`` is the newest, ``<name>.v<N>.schema.json`` an older one)."""
    model, _schema_file, _patterns = KINDS[kind]
    document = _load(conformance, relative, index)
    schema_name = next(name for name, m in _our_models().items() if m is model)
    stamp = document.get("schemaVersion")
    if getattr(model, "WRITTEN_SCHEMA_VERSION", stamp) != stamp:
        schema_name = schema_name.replace(".schema.json", f".v{stamp}.schema.json")
    validator = _our_validator(schema_name)
    errors = [e.message for e in validator.iter_errors(document)]
    assert errors == []


@cache
def _our_validator(schema_name: str) -> Draft202012Validator:
    return Draft202012Validator(generate_schemas()[schema_name])


def _our_models() -> dict[str, type]:
    from evalquality_core.artifacts.schemas import SCHEMA_MODELS

    return SCHEMA_MODELS


@pytest.mark.parametrize(
    ("model", "relative", "stamp"),
    [
        (EvalContract, "worked-example/older-chain/eval-contract.v3.json", 3),
        (SealedRunRecord, "worked-example/older-chain/sealed-run-record.v3.json", 3),
    ],
)
def test_older_chain_versions_are_refused_whole(conformance: Path, model: type, relative: str, stamp: int) -> None:
    """The older chain's contract 3 and record 3 are not versions we read: refused by stamp, never half-read."""
    document = _load(conformance, relative, -1)
    assert isinstance(document, dict) and document["schemaVersion"] == stamp
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(model, document)
    assert caught.value.code == "schema-version-mismatch"
    assert caught.value.artifact_path == f"{model.ARTIFACT_NAME}.schemaVersion"
