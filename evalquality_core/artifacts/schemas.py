"""JSON Schemas generated from the artifact models (style.md §5: ``schemas/`` holds generated files only).

``generate_schemas()`` maps each published file name to
``Model.model_json_schema(by_alias=True, mode="validation")`` (plus ``$schema`` and ``$id``); the port
messages, being tagged unions, go through a ``TypeAdapter``. ``python -m
evalquality_core.artifacts.schemas`` rewrites ``evalquality_core/schemas/*.schema.json`` (indent 2 plus a
newline); a test regenerates them and compares.

One model reads every stamp of its artifact, so each stamp gets its own schema: ``<name>.schema.json``
is the newest stamp (what we write), ``<name>.v<N>.schema.json`` each older stamp we still read. A
stamped schema pins ``schemaVersion`` to its number and applies :data:`STAMP_RULES`: the keys a stamp
carries are required there and absent elsewhere, and the union branches (forms) a stamp does not admit
are removed. Cross-field rules the models enforce in validators (mode-gated keys, clean-control probes,
ArtifactReference branches) are stated in each model's docstring, and partly as ``if``/``oneOf``.
"""

from __future__ import annotations

import copy
import json
import sys
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter

from evalquality_core.artifacts.base import LineageArtifact
from evalquality_core.artifacts.brief import SealedEvaluatorBrief
from evalquality_core.artifacts.contract import EvalContract, Rubric
from evalquality_core.artifacts.contract_strength import SuiteStrength
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.artifacts.evidence import EvidenceArtifact
from evalquality_core.artifacts.isolation import IsolationManifest
from evalquality_core.artifacts.preflight_verdict import PreflightVerdict
from evalquality_core.artifacts.probe import Probe
from evalquality_core.artifacts.references import ArtifactReference, PrivateArtifactManifest
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.artifacts.scoring_policy import ScoringPolicy
from evalquality_core.artifacts.strength import StrengthAggregate

__all__ = ["SCHEMA_MODELS", "STAMP_RULES", "StampRule", "generate_schemas", "main", "schema_at_stamp", "write_schemas"]

#: Published file name → model, one per artifact kind (the reference's file names).
SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "artifact-reference.schema.json": ArtifactReference,
    # The contract_strength flow's per-suite document (not a spec interchange artifact; ours).
    "contract-strength.schema.json": SuiteStrength,
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


@dataclass(frozen=True)
class StampRule:
    """A key or a union branch that only some stamps carry (``first``/``last`` inclusive; ``None`` open).

    ``definition`` is the ``$defs`` name holding the property (``""`` for the root object); ``key`` is
    the wire key. With ``branch`` set, the rule is about one branch of that property's union: the
    ``$ref`` name, or ``"slug"`` for the bare-string branch; otherwise it is about the key itself. A
    key with ``required=False`` is optional where carried: its ``null`` branch and default are dropped
    (the model holds an absent key as ``None``; the wire never carries ``null`` for it).
    """

    definition: str
    key: str
    first: int | None
    last: int | None
    branch: str | None = None
    #: ``False`` for a key a stamp carries as optional (present or absent, never ``null``).
    required: bool = True

    def carried_at(self, stamp: int) -> bool:
        """Whether ``stamp`` carries the key (or the branch)."""
        return (self.first is None or stamp >= self.first) and (self.last is None or stamp <= self.last)


#: What differs between the stamps of one artifact (the model docstrings say why).
STAMP_RULES: dict[str, tuple[StampRule, ...]] = {
    "eval-contract": (
        StampRule("PlanStep", "interfaceId", 6, None),
        StampRule("SiblingGroups", "operations", 6, None, branch="OperationPair"),
        StampRule("SiblingGroups", "operations", None, 5, branch="slug"),
        StampRule("McpInterface", "operations", 6, None, branch="ToolCallOperation"),
        StampRule("McpInterface", "operations", None, 5, branch="ApiOperation"),
        StampRule("TransportWitnessInputs", "body", 7, None, branch="RawBody"),
        StampRule("ApiOperation", "stateResetPointers", 7, None, required=False),
        StampRule("CommandOperation", "stateResetPointers", 7, None, required=False),
        StampRule("ToolCallOperation", "stateResetPointers", 7, None, required=False),
        # Ours, issue 34 (contract.py): optional keys of contract 7.
        StampRule("ApiOperation", "volatileHeaders", 7, None, required=False),
        StampRule("ResponseDescriptor", "protocolSuccessIndicator", 7, None, required=False),
    ),
    "probe": (
        StampRule("", "defectSignature", 6, None, branch="McpDefectSignature"),
        StampRule("TransportWitnessInputs", "body", 6, None, branch="RawBody"),
    ),
    "sealed-run-record": (
        StampRule("", "invalidReason", None, 5),
        StampRule("CallInputs", "arguments", 5, None),
        StampRule("QuotedEvidence", "artifactId", 5, None),
        StampRule("Observation", "interfaceId", 7, None),
        StampRule("CallInputs", "bodyEncoding", 8, None),
    ),
    "preflight-verdict": (StampRule("PreflightCheck", "interfaceId", 2, None),),
    "evidence-artifact": (
        StampRule("", "scoredProbeId", 4, None),
        StampRule("", "reducedProbeOutcomes", 4, None),
        StampRule("Trials", "completedAttempts", 4, None),
        StampRule("Outcome", "trialIndex", 4, None),
    ),
}


def _drop_branch(node: Any, branch: str) -> None:
    """Remove one branch (a ``$ref`` name, or ``slug`` for the bare-string one) from every union under ``node``."""
    if isinstance(node, list):
        for item in node:
            _drop_branch(item, branch)
        return
    if not isinstance(node, dict):
        return
    for union in ("anyOf", "oneOf"):
        if union in node:
            node[union] = [
                alternative
                for alternative in node[union]
                if alternative.get("$ref") != f"#/$defs/{branch}"
                and not (branch == "slug" and alternative.get("type") == "string")
            ]
            mapping = (node.get("discriminator") or {}).get("mapping")
            if isinstance(mapping, dict):
                for tag in [t for t, ref in mapping.items() if ref == f"#/$defs/{branch}"]:
                    del mapping[tag]
    for value in node.values():
        _drop_branch(value, branch)


def _without_null(prop: dict[str, Any]) -> dict[str, Any]:
    """An optional key's property schema without its ``null`` branch and its ``null`` default."""
    prop = {key: value for key, value in prop.items() if key != "default"}
    branches = [branch for branch in prop.get("anyOf", []) if branch.get("type") != "null"]
    if "anyOf" in prop and len(branches) == 1:
        del prop["anyOf"]
        prop = {**branches[0], **prop}
    return prop


def _prune_unreferenced(schema: dict[str, Any]) -> None:
    """Drop ``$defs`` entries nothing refers to any more (a removed branch's models)."""
    while True:
        text = json.dumps({k: v for k, v in schema.items() if k != "$defs"}) + json.dumps(
            [d for d in schema.get("$defs", {}).values()]
        )
        unused = [name for name in schema.get("$defs", {}) if f'"#/$defs/{name}"' not in text]
        if not unused:
            return
        for name in unused:
            del schema["$defs"][name]


def schema_at_stamp(stem: str, schema: dict[str, Any], stamp: int) -> dict[str, Any]:
    """The model's schema narrowed to one stamp (:data:`STAMP_RULES`), ``schemaVersion`` pinned to it."""
    narrowed = copy.deepcopy(schema)
    narrowed["properties"]["schemaVersion"] = {**narrowed["properties"]["schemaVersion"], "const": stamp}
    for rule in STAMP_RULES.get(stem, ()):
        holder = narrowed if rule.definition == "" else narrowed["$defs"].get(rule.definition)
        if holder is None or rule.key not in holder.get("properties", {}):
            raise KeyError(f"{stem}: stamp rule names {rule.definition or '<root>'}.{rule.key}, which the model lacks")
        if rule.branch is not None:
            if not rule.carried_at(stamp):
                _drop_branch(holder["properties"][rule.key], rule.branch)
            continue
        required = holder.setdefault("required", [])
        if rule.carried_at(stamp) and not rule.required:
            holder["properties"][rule.key] = _without_null(holder["properties"][rule.key])
        elif rule.carried_at(stamp):
            holder["properties"][rule.key].pop("default", None)
            if rule.key not in required:
                required.append(rule.key)
        else:
            del holder["properties"][rule.key]
            holder["required"] = [key for key in required if key != rule.key]
    _prune_unreferenced(narrowed)
    return narrowed


def _stamped_schemas(name: str, model: type[BaseModel]) -> dict[str, dict[str, Any]]:
    """The newest stamp under ``name``, each older stamp a lineage artifact reads as ``<stem>.v<N>``."""
    schema = model.model_json_schema(by_alias=True, mode="validation")
    if not issubclass(model, LineageArtifact) or not model.ACCEPTED_SCHEMA_VERSIONS:
        return {name: _stamped(name, schema)}
    stem = name.removesuffix(".schema.json")
    newest = model.WRITTEN_SCHEMA_VERSION
    out = {name: _stamped(name, schema_at_stamp(stem, schema, newest))}
    for stamp in model.ACCEPTED_SCHEMA_VERSIONS:
        if stamp != newest:
            older = f"{stem}.v{stamp}.schema.json"
            out[older] = _stamped(older, schema_at_stamp(stem, schema, stamp))
    return out


def generate_schemas() -> dict[str, dict[str, Any]]:
    """Every published schema, by file name, generated from the models now (one per stamp read)."""
    schemas: dict[str, dict[str, Any]] = {}
    for name, model in SCHEMA_MODELS.items():
        schemas.update(_stamped_schemas(name, model))
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
    for stale in directory.glob("*.schema.json"):
        stale.unlink()  # a stamp we stopped reading leaves no file behind
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
