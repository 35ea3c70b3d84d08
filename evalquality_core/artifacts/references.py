"""ArtifactReference and PrivateArtifactManifest (artifacts.md §2.12).

An ArtifactReference names bytes by digest, either at a public path or through an opaque private
handle. It is one model (so ``read_artifact`` and ``isinstance`` work on it) whose ``storage`` tag
decides which of ``path`` and ``private_ref`` is set; the other must be an explicit ``null``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import ConfigDict, model_validator

from evalquality_core.artifacts.base import ArtifactModel, Digest, LineageArtifact, NonEmptyStr
from evalquality_core.registries import PrivateArtifactKind

__all__ = ["ArtifactReference", "PrivateArtifactEntry", "PrivateArtifactManifest"]

_STORAGE_BRANCHES = {
    "oneOf": [
        {
            "properties": {"storage": {"const": "public"}, "path": {"type": "string"}, "privateRef": {"type": "null"}},
        },
        {
            "properties": {"storage": {"const": "private"}, "path": {"type": "null"}, "privateRef": {"type": "string"}},
        },
    ]
}


class ArtifactReference(ArtifactModel):
    """Bytes named by digest: ``public`` at ``path`` (``privateRef`` null) or ``private`` by handle (``path`` null)."""

    model_config = ConfigDict(json_schema_extra=_STORAGE_BRANCHES)

    storage: Literal["public", "private"]
    path: NonEmptyStr | None
    private_ref: NonEmptyStr | None
    digest: Digest

    @model_validator(mode="after")
    def _one_location(self) -> ArtifactReference:
        """Exactly the location the storage tag names is set."""
        if self.storage == "public" and (self.path is None or self.private_ref is not None):
            raise ValueError("a public reference has a path and a null privateRef")
        if self.storage == "private" and (self.private_ref is None or self.path is not None):
            raise ValueError("a private reference has a privateRef and a null path")
        return self


class PrivateArtifactEntry(ArtifactModel):
    """One private artifact: its handle, digest, kind and sanitisation facts."""

    private_ref: NonEmptyStr
    digest: Digest
    artifact_kind: PrivateArtifactKind
    public_safe_run_id: str | None
    sanitization_policy: NonEmptyStr | None


class PrivateArtifactManifest(LineageArtifact):
    """The manifest of private artifacts a run refers to by handle."""

    ARTIFACT_NAME: ClassVar[str] = "PrivateArtifactManifest"
    ACCEPTED_SCHEMA_VERSIONS: ClassVar[tuple[int, ...]] = (1,)
    WRITTEN_SCHEMA_VERSION: ClassVar[int] = 1

    entries: list[PrivateArtifactEntry]
