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
