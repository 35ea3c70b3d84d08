"""PreflightVerdict (artifacts.md §2.10), read at ``schemaVersion`` 1 and 2, written at 2.

Version 2 adds ``interfaceId`` on every check (``null`` together with ``operationId``). One model reads
both: a v1 check has no ``interfaceId`` key (held as ``None`` and left off again on the way out), a v2
check must carry it. The published schema is the v2 form.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import SerializerFunctionWrapHandler, model_serializer, model_validator

from evalquality_core.artifacts.base import ArtifactModel, Digest, LineageArtifact, NonEmptyStr, Slug
from evalquality_core.registries import PreflightCheckKind, PreflightCheckOutcome

__all__ = ["PREFLIGHT_VERDICT_SCHEMA_VERSIONS", "PreflightCheck", "PreflightVerdict"]

PREFLIGHT_VERDICT_SCHEMA_VERSIONS: tuple[int, ...] = (1, 2)
_FIRST_WITH_INTERFACE_ID = 2


class PreflightCheck(ArtifactModel):
    """One pre-flight check row: kind, the operation it concerns (if any), outcome and note."""

    kind: PreflightCheckKind
    # Key present from verdict 2 only; the verdict validator enforces presence by stamp.
    interface_id: Slug | None = None
    operation_id: Slug | None
    outcome: PreflightCheckOutcome
    note: str | None


class PreflightVerdict(LineageArtifact):
    """The pre-flight verdict over a fixture: passed, and every check."""

    ARTIFACT_NAME: ClassVar[str] = "PreflightVerdict"
    ACCEPTED_SCHEMA_VERSIONS: ClassVar[tuple[int, ...]] = PREFLIGHT_VERDICT_SCHEMA_VERSIONS
    WRITTEN_SCHEMA_VERSION: ClassVar[int] = max(PREFLIGHT_VERDICT_SCHEMA_VERSIONS)

    run_id: NonEmptyStr
    fixture_digest: Digest
    passed: bool
    checks: list[PreflightCheck]

    @model_validator(mode="before")
    @classmethod
    def _interface_id_by_stamp(cls, data: Any) -> Any:
        """``interfaceId`` is on every check at 2 and on none at 1."""
        if not isinstance(data, dict):
            return data
        version = data.get("schemaVersion", data.get("schema_version"))
        checks = data.get("checks")
        if version not in PREFLIGHT_VERDICT_SCHEMA_VERSIONS or not isinstance(checks, list):
            return data
        wanted = version >= _FIRST_WITH_INTERFACE_ID
        for index, check in enumerate(checks):
            if isinstance(check, dict) and (("interfaceId" in check or "interface_id" in check) != wanted):
                state = "required" if wanted else "not a key"
                raise ValueError(f"checks[{index}].interfaceId is {state} at schemaVersion {version}")
        return data

    @model_serializer(mode="wrap")
    def _drop_interface_id_at_v1(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A v1 verdict goes back to the wire without ``interfaceId``."""
        value = handler(self)
        if isinstance(value, dict) and self.schema_version < _FIRST_WITH_INTERFACE_ID:
            for check in value.get("checks", ()):
                check.pop("interfaceId", None)
                check.pop("interface_id", None)
        return value
