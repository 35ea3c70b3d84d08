"""Shared model configuration, identifier and digest types, the lineage header, and the reader.

artifacts.md §2.0: every object is strict (unknown keys refused), every key required (optional is an
explicit ``null``), no defaults. Python attributes are snake_case; the wire names are the spec's
camelCase through aliases. ``read_artifact`` is the one entry point for untrusted documents: it
checks the ``schemaVersion`` stamp *before* the shape (``schema-version-mismatch``), then validates
(``schema-parse-failure`` naming the first offending path).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from evalquality_core.canonical.json import check_value_domain
from evalquality_core.faults import FAILURE_CODES, RuntimeFault, StructuralFailure
from evalquality_core.registries import DIGEST_PATTERN, SLUG_PATTERN

Slug = Annotated[str, Field(pattern=SLUG_PATTERN)]
Digest = Annotated[str, Field(pattern=DIGEST_PATTERN)]
BehaviorId = Annotated[str, Field(pattern=r"^B-[0-9]{3,}$")]
OracleId = Annotated[str, Field(pattern=r"^O-[0-9]{3,}$")]
WaiverId = Annotated[str, Field(pattern=r"^W-[0-9]{3,}$")]
RubricId = Annotated[str, Field(pattern=r"^R-[0-9]{3,}$")]
CriterionId = Annotated[str, Field(pattern=r"^RC-[0-9]{3,}$")]
ProbeId = Annotated[str, Field(pattern=r"^P-[0-9]{3,}$")]
DefectId = Annotated[str, Field(pattern=r"^D-[0-9]{3,}$")]
FindingId = Annotated[str, Field(pattern=r"^F-[0-9]{3,}$")]
NonNegativeInt = Annotated[int, Field(ge=0, le=2**53 - 1)]
SignedSafeInt = Annotated[int, Field(ge=-(2**53 - 1), le=2**53 - 1)]
SchemaVersionInt = Annotated[int, Field(ge=1, le=2**53 - 1)]
NonEmptyStr = Annotated[str, Field(min_length=1)]
#: JSON numbers kept as read: an integer stays ``int``, a fraction ``float`` (strict mode, no coercion).
NonNegativeNumber = Annotated[int, Field(ge=0, le=2**53 - 1)] | Annotated[float, Field(ge=0)]
PositiveNumber = Annotated[int, Field(gt=0, le=2**53 - 1)] | Annotated[float, Field(gt=0)]
UnitNumber = Annotated[int, Field(ge=0, le=1)] | Annotated[float, Field(ge=0, le=1)]
UnsignedDecimal = Annotated[str, Field(pattern=r"^(0|[1-9][0-9]*)(\.[0-9]+)?$")]
PositiveDecimal = Annotated[str, Field(pattern=r"^([1-9][0-9]*(\.[0-9]+)?|0\.[0-9]*[1-9][0-9]*)$")]
#: RFC 3339 UTC timestamp with ``Z`` only, optional seconds and fraction, calendar-validated (leap
#: years included) exactly as the reference schemas' regex does (artifacts.md §2.0), ASCII digits only.
Timestamp = Annotated[
    str,
    Field(
        pattern=(
            r"^(?:(?:[0-9]{2}[2468][048]|[0-9]{2}[13579][26]|[0-9]{2}0[48]|[02468][048]00|[13579][26]00)-02-29"
            r"|[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
            r"|(?:02)-(?:0[1-9]|1[0-9]|2[0-8])))"
            r"T(?:(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]+)?)?Z)$"
        )
    ),
]

__all__ = [
    "ArtifactModel",
    "BehaviorId",
    "CriterionId",
    "DefectId",
    "Digest",
    "FindingId",
    "JsonValue",
    "LineageArtifact",
    "NonEmptyStr",
    "NonNegativeInt",
    "NonNegativeNumber",
    "OracleId",
    "PositiveDecimal",
    "PositiveNumber",
    "ProbeId",
    "RubricId",
    "SchemaVersionInt",
    "SignedSafeInt",
    "StampedKeysModel",
    "Slug",
    "Timestamp",
    "UnitNumber",
    "UnsignedDecimal",
    "WaiverId",
    "check_stamp",
    "read_artifact",
    "to_wire",
]


class ArtifactModel(BaseModel):
    """Base of every artifact model and sub-object: frozen, strict keys, camelCase on the wire."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        strict=True,
    )


class StampedKeysModel(ArtifactModel):
    """A sub-object with keys only some stamps carry (``STAMPED_KEYS``, field names).

    Such a key is held as ``None`` when absent and left off the wire again when it was neither read
    nor set, so a document read at an older stamp goes back byte for byte (the artifact's own
    validator says at which stamps each key is required or refused).
    """

    STAMPED_KEYS: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _keep_the_key_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Leave each stamped key off when it was not read or set."""
        value = handler(self)
        if isinstance(value, dict):
            for field in self.STAMPED_KEYS:
                if field not in self.model_fields_set:
                    value.pop(to_camel(field), None)
                    value.pop(field, None)
        return value


class LineageArtifact(ArtifactModel):
    """The AD-11/AD-29 lineage header carried by every artifact except ArtifactReference.

    Subclasses set ``ACCEPTED_SCHEMA_VERSIONS`` (what we read) and ``WRITTEN_SCHEMA_VERSION`` (the
    newest of those, what we write) and ``ARTIFACT_NAME`` (used in fault paths and schema file names).
    """

    ARTIFACT_NAME: ClassVar[str] = "Artifact"
    ACCEPTED_SCHEMA_VERSIONS: ClassVar[tuple[int, ...]] = ()
    WRITTEN_SCHEMA_VERSION: ClassVar[int] = 0

    schema_version: SchemaVersionInt
    parent_digest: Digest | None
    revision_count: NonNegativeInt


M = TypeVar("M", bound=BaseModel)


def error_path(root: str, loc: tuple[int | str, ...], data: Any = None) -> str:
    """Render a pydantic error location as a document path, walking ``data`` alongside.

    Pydantic puts a union's tag into the location (``…permittedInterfaces[0].cli.operations``); a
    non-final segment that is not a key of the object being walked is such a tag and is dropped, so
    the path names only wire keys and indexes.
    """
    path = root
    node = data
    last = len(loc) - 1
    for position, part in enumerate(loc):
        if isinstance(part, int):
            path += f"[{part}]"
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            continue
        if not isinstance(node, dict) or (position < last and part not in node):
            continue  # a union member's tag (``int``, ``cli``, ``pointer-form``…), not a document key
        path += f".{part}"
        node = node.get(part) if isinstance(node, dict) else None
    return path


def check_stamp(model: type[LineageArtifact], data: Any, root: str) -> int:
    """Read the stamp before the shape (7.0.0: every input artifact's stamp is checked first).

    A document that is not an object, or whose ``schemaVersion`` is missing or not an integer, is
    ``schema-parse-failure`` at ``root`` (the reference's reading: the stamp is part of the shape);
    an integer stamp this build does not read is ``schema-version-mismatch`` at
    ``<root>.schemaVersion``. Returns the stamp.
    """
    if not isinstance(data, dict):
        raise RuntimeFault("schema-parse-failure", root, f"expected an object, got {type(data).__name__}")
    stamp = data.get("schemaVersion")
    if isinstance(stamp, bool) or not isinstance(stamp, int):
        what = "missing" if "schemaVersion" not in data else f"not an integer ({stamp!r})"
        raise RuntimeFault("schema-parse-failure", root, f"schemaVersion is {what}")
    if stamp not in model.ACCEPTED_SCHEMA_VERSIONS:
        accepted = ", ".join(str(v) for v in model.ACCEPTED_SCHEMA_VERSIONS)
        raise RuntimeFault(
            "schema-version-mismatch",
            f"{root}.schemaVersion",
            f"schemaVersion {stamp!r} is not one we read ({accepted})",
        )
    return stamp


def read_artifact(model: type[M], data: Any, artifact_path: str | None = None) -> M:
    """Validate an untrusted JSON value as ``model``.

    Raises ``schema-version-mismatch`` when the model is a lineage artifact and the stamp is not one
    it reads (checked before the shape), ``non-canonicalizable-value`` outside the AD-36 domain, and
    ``schema-parse-failure`` naming the first failing path otherwise. A model-raised error whose type
    is a compile failure code is raised as that ``StructuralFailure`` instead.
    """
    root = artifact_path or getattr(model, "ARTIFACT_NAME", model.__name__)
    if issubclass(model, LineageArtifact) and model.ACCEPTED_SCHEMA_VERSIONS:
        check_stamp(model, data, root)
    check_value_domain(data, root)
    try:
        return model.model_validate(data, by_alias=True, by_name=False)
    except ValidationError as exc:
        errors = exc.errors()
        # A model may recognise an out-of-scope form and name its compile failure code (e.g. the
        # MCP tool-call form → unsupported-interface-kind, contract.py); that outranks shape errors.
        for error in errors:
            if error["type"] in FAILURE_CODES:
                raise StructuralFailure(
                    error["type"], error_path(root, tuple(error["loc"]), data), error["msg"]
                ) from None
        first = errors[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise RuntimeFault(
            "schema-parse-failure",
            error_path(root, tuple(first["loc"]), data),
            f"{first['msg']}{more}",
        ) from None


def to_wire(model: BaseModel) -> Any:
    """The JSON value of a model as it goes on the wire (aliases, explicit nulls kept)."""
    return model.model_dump(mode="json", by_alias=True)
