"""JSON Schemas generated from the artifact models (style.md §5: ``schemas/`` holds generated files only).

``generate_schemas()`` maps each published file name to
``Model.model_json_schema(by_alias=True, mode="validation")`` (plus ``$schema`` and ``$id``); the port
messages, being tagged unions, go through a ``TypeAdapter``. ``python -m
evalquality_core.artifacts.schemas`` rewrites ``evalquality_core/schemas/*.schema.json`` (indent 2 plus a
newline); a test regenerates them and compares. The schemas describe shapes only: the cross-field
rules the models enforce in validators (version- and mode-gated keys, clean-control probes,
ArtifactReference branches) are stated in each model's docstring, and partly as ``if``/``oneOf``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import BaseModel, TypeAdapter

from evalquality_core.artifacts.brief import SealedEvaluatorBrief
from evalquality_core.artifacts.contract import EvalContract, Rubric
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.artifacts.evidence import EvidenceArtifact
from evalquality_core.artifacts.isolation import IsolationManifest
from evalquality_core.artifacts.preflight_verdict import PreflightVerdict
from evalquality_core.artifacts.probe import Probe
from evalquality_core.artifacts.references import ArtifactReference, PrivateArtifactManifest
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.artifacts.scoring_policy import ScoringPolicy
from evalquality_core.artifacts.strength import StrengthAggregate

__all__ = ["SCHEMA_MODELS", "generate_schemas", "main", "write_schemas"]

#: Published file name → model, one per artifact kind (the reference's file names).
SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "artifact-reference.schema.json": ArtifactReference,
    "eval-contract.schema.json": EvalContract,
    "evaluator-configuration.schema.json": EvaluatorConfiguration,
    "evidence-artifact.schema.json": EvidenceArtifact,
    "isolation-manifest.schema.json": IsolationManifest,
    "preflight-verdict.schema.json": PreflightVerdict,
    "private-artifact-manifest.schema.json": PrivateArtifactManifest,
    "probe.schema.json": Probe,
    "rubric.schema.json": Rubric,
    "scoring-policy.schema.json": ScoringPolicy,
    "sealed-evaluator-brief.schema.json": SealedEvaluatorBrief,
    "sealed-run-record.schema.json": SealedRunRecord,
    "strength-aggregate.schema.json": StrengthAggregate,
}

_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _port_message_types() -> dict[str, Any]:
    """The adapter's port messages, if that module is present (it is owned by the adapter)."""
    try:
        from evalquality_core.artifacts import port_messages
    except ImportError:  # pragma: no cover - only while the adapter module does not exist
        return {}
    return {
        "probe-request.schema.json": port_messages.ProbeRequest,
        "probe-observation.schema.json": port_messages.ProbeObservation,
    }


def _stamped(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    stem = name.removesuffix(".schema.json")
    return {"$schema": _DIALECT, "$id": f"urn:eval-quality-py:schema:{stem}", **schema}


def generate_schemas() -> dict[str, dict[str, Any]]:
    """Every published schema, by file name, generated from the models now."""
    schemas = {
        name: _stamped(name, model.model_json_schema(by_alias=True, mode="validation"))
        for name, model in SCHEMA_MODELS.items()
    }
    for name, union in _port_message_types().items():
        schemas[name] = _stamped(name, TypeAdapter(union).json_schema(by_alias=True, mode="validation"))
    return dict(sorted(schemas.items()))


def render_schema(schema: dict[str, Any]) -> str:
    """The published text of one schema: ``json.dumps`` with indent 2 and a trailing newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write_schemas(directory: Any) -> list[str]:
    """Write every schema into ``directory`` (a ``pathlib.Path``); return the file names written.

    The caller hands in the directory: this module does no path handling of its own beyond joining
    a file name (core modules stay free of ``pathlib``/``os``; ``main`` is the entry point that binds
    the package's own folder).
    """
    written = []
    for name, schema in generate_schemas().items():
        (directory / name).write_text(render_schema(schema), encoding="utf-8")
        written.append(name)
    return written


def main() -> int:
    """``python -m evalquality_core.artifacts.schemas``: rewrite ``evalquality_core/schemas/``."""
    from importlib import resources

    target = resources.files("evalquality_core") / "schemas"
    for name in write_schemas(target):
        print(f"wrote schemas/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
