"""The published schemas in evalquality_core/schemas/ are exactly what the models generate now."""

from __future__ import annotations

from pathlib import Path

from jsonschema import Draft202012Validator

import evalquality_core
from evalquality_core.artifacts.base import LineageArtifact
from evalquality_core.artifacts.schemas import SCHEMA_MODELS, generate_schemas, render_schema, write_schemas

PUBLISHED = Path(evalquality_core.__file__).parent / "schemas"


def test_published_schemas_equal_the_generated_ones() -> None:
    """Regenerate and compare text: a model change without `python -m …schemas` fails here."""
    generated = generate_schemas()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in PUBLISHED.glob("*.schema.json")}
    assert sorted(on_disk) == sorted(generated)
    for name, schema in generated.items():
        assert on_disk[name] == render_schema(schema), f"{name} is stale; run python -m evalquality_core.artifacts.schemas"


def test_every_schema_is_a_valid_draft_2020_12_schema() -> None:
    """Each generated schema is itself well formed."""
    for schema in generate_schemas().values():
        Draft202012Validator.check_schema(schema)


def test_write_schemas_writes_every_file(tmp_path: Path) -> None:
    """write_schemas writes one file per schema, in the published rendering."""
    written = write_schemas(tmp_path)
    assert sorted(written) == sorted(generate_schemas())
    for name in written:
        assert (tmp_path / name).read_text(encoding="utf-8") == (PUBLISHED / name).read_text(encoding="utf-8")


def test_schema_file_per_artifact_and_lineage_header() -> None:
    """Every lineage artifact's schema requires the lineage header and closes its object."""
    generated = generate_schemas()
    for name, model in SCHEMA_MODELS.items():
        schema = generated[name]
        assert schema["additionalProperties"] is False
        if issubclass(model, LineageArtifact):
            assert {"schemaVersion", "parentDigest", "revisionCount"} <= set(schema["required"])


# ---- one schema per stamp (issue 11) -----------------------------------------------------------

import json  # noqa: E402

import pytest  # noqa: E402

from tests.conftest import CONFORMANCE  # noqa: E402

#: (schema file, conformance documents at exactly that stamp, read in place)
STAMPED_DOCUMENTS: list[tuple[str, str]] = [
    ("eval-contract.schema.json", "latest/corpus-dev/contracts/*.json"),
    ("eval-contract.schema.json", "latest/chains/skill-defect/eval-contract.json"),
    ("eval-contract.v4.schema.json", "corpus-dev/contracts/satisfied-declarations.json"),
    ("eval-contract.v5.schema.json", "chains/skill-defect/eval-contract.json"),
    ("probe.schema.json", "latest/chains/skill-defect/probe.json"),
    ("probe.v5.schema.json", "chains/skill-defect/probe.json"),
    ("sealed-run-record.v7.schema.json", "latest/chains/skill-defect/sealed-run-record.json"),
    ("sealed-run-record.v5.schema.json", "chains/skill-defect/sealed-run-record.json"),
    ("sealed-run-record.v4.schema.json", "worked-example/sealed-run-record.json"),
    ("preflight-verdict.schema.json", "latest/chains/skill-defect/preflight-verdict.json"),
    ("preflight-verdict.v1.schema.json", "chains/skill-defect/preflight-verdict.json"),
    ("evidence-artifact.schema.json", "latest/chains/skill-defect/evidence-artifact.json"),
]


def _documents(pattern: str) -> list[object]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(CONFORMANCE.glob(pattern))]


def test_one_schema_per_stamp_read_newest_unsuffixed() -> None:
    """The unsuffixed file is the stamp we write; each older stamp we read has its own file."""
    generated = generate_schemas()
    for name, model in SCHEMA_MODELS.items():
        if issubclass(model, LineageArtifact):
            stem = name.removesuffix(".schema.json")
            assert generated[name]["properties"]["schemaVersion"]["const"] == model.WRITTEN_SCHEMA_VERSION
            older = {f"{stem}.v{v}.schema.json" for v in model.ACCEPTED_SCHEMA_VERSIONS if v != model.WRITTEN_SCHEMA_VERSION}
            assert older <= set(generated), name


@pytest.mark.parametrize(("schema_name", "pattern"), STAMPED_DOCUMENTS)
def test_each_stamped_schema_accepts_its_stamp_and_refuses_the_others(schema_name: str, pattern: str) -> None:
    """A document validates against its own stamp's schema, and against no other stamp's."""
    documents = _documents(pattern)
    if not documents:
        pytest.skip(f"conformance data absent: {CONFORMANCE / pattern}")
    generated = generate_schemas()
    stem = schema_name.split(".")[0]
    siblings = [n for n in generated if n.split(".")[0] == stem and n != schema_name]
    for document in documents:
        assert Draft202012Validator(generated[schema_name]).is_valid(document), (schema_name, pattern)
        for other in siblings:
            assert not Draft202012Validator(generated[other]).is_valid(document), (other, pattern)


def test_a_record_8_validates_only_against_the_newest_schema() -> None:
    """No stored record 8 exists: one built from the record-7 chain by the 6.0.0 rule (bodyEncoding)."""
    path = CONFORMANCE / "latest/chains/skill-defect/sealed-run-record.json"
    if not path.is_file():
        pytest.skip(f"conformance data absent: {path}")
    record = json.loads(path.read_text(encoding="utf-8"))
    record["schemaVersion"] = 8
    for observation in record["observations"]:
        observation["callInputs"]["bodyEncoding"] = None
    generated = generate_schemas()
    assert Draft202012Validator(generated["sealed-run-record.schema.json"]).is_valid(record)
    assert not Draft202012Validator(generated["sealed-run-record.v7.schema.json"]).is_valid(record)
