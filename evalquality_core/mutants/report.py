"""The mutation-testing report, in the public ``mutation-testing-report-schema`` format (Stryker's
mutation-testing-elements, schema version 2), as a pydantic model of the shape we write.

The public schema file is not vendored (it belongs to that project); this model holds the fields the
schema declares for what we write — ``schemaVersion``, ``thresholds``, ``files`` → ``language``,
``source``, ``mutants`` (``id``, ``mutatorName``, ``location``, ``status`` from its closed list,
``statusReason``, ``replacement``, ``description``, ``killedBy``, ``coveredBy``, ``testsCompleted``),
``framework`` and ``config`` — with the same required keys, types and bounds, and refuses anything else.

How our classes map onto the schema's statuses (:data:`STATUS_OF`): Invalid → CompileError, Duplicate
→ Ignored, Stillborn → RuntimeError, NoCoverage and Timeout as they are, every class that ran
(Unobservable, ArtifactOnly, Observable) → Killed or Survived by the oracle kill verdict
(score.py). ``killedBy`` holds oracle ids, ``coveredBy`` the leg ids (and ``plan/<step>`` ids) that
reach the mutated lines; ``statusReason`` names our class and why.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: The schema version of the report format we write.
REPORT_SCHEMA_VERSION = "2"
#: Our class → the report's status (runs that ran are decided by the kill verdict instead).
STATUS_OF: dict[str, str] = {
    "Invalid": "CompileError",
    "Duplicate": "Ignored",
    "Stillborn": "RuntimeError",
    "NoCoverage": "NoCoverage",
    "Timeout": "Timeout",
}
MutantStatus = Literal["Killed", "Survived", "NoCoverage", "CompileError", "RuntimeError", "Timeout", "Ignored", "Pending"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class Position(_Model):
    """1-based line and column."""

    line: Annotated[int, Field(ge=1)]
    column: Annotated[int, Field(ge=1)]


class Location(_Model):
    """Start inclusive, end exclusive."""

    start: Position
    end: Position


class MutantResult(_Model):
    """One mutant of one file."""

    id: str
    mutatorName: str  # noqa: N815 — the public schema's key
    location: Location
    status: MutantStatus
    statusReason: str | None = None  # noqa: N815
    replacement: str | None = None
    description: str | None = None
    killedBy: list[str] | None = None  # noqa: N815
    coveredBy: list[str] | None = None  # noqa: N815
    testsCompleted: int | None = None  # noqa: N815


class FileResult(_Model):
    """A mutated file: its language, full original source and its mutants."""

    language: str
    source: str
    mutants: list[MutantResult]


class Thresholds(_Model):
    """The report's colour bands, in percent."""

    high: Annotated[int, Field(ge=0, le=100)]
    low: Annotated[int, Field(ge=0, le=100)]


class Framework(_Model):
    """Who wrote the report."""

    name: str
    version: str | None = None


class MutationTestReport(_Model):
    """The whole report."""

    schemaVersion: Annotated[str, Field(pattern=r"^([1-2]\d*|0)(\.(([1-9]\d*)|0)){0,2}$")]  # noqa: N815
    thresholds: Thresholds
    files: dict[str, FileResult]
    framework: Framework | None = None
    config: dict[str, Any] | None = None
    projectRoot: str | None = None  # noqa: N815


def report_status(classification: str, killed: bool | None) -> str:
    """The report status of a mutant: our class mapped, or the kill verdict for a mutant that ran."""
    if classification in STATUS_OF:
        return STATUS_OF[classification]
    return "Killed" if killed else "Survived"


def build_report(
    sources: dict[str, str],
    mutants: list[dict[str, Any]],
    *,
    version: str,
    config: dict[str, Any],
    thresholds: tuple[int, int] = (80, 60),
) -> dict[str, Any]:
    """The report document (validated by :class:`MutationTestReport`): ``mutants`` are
    :class:`MutantResult` fields plus ``file`` (the ``system/...`` path the mutant belongs to)."""
    files: dict[str, dict[str, Any]] = {path: {"language": "python", "source": text, "mutants": []} for path, text in sorted(sources.items())}
    for mutant in mutants:
        entry = {key: value for key, value in mutant.items() if key != "file" and value is not None}
        files[mutant["file"]]["mutants"].append(entry)
    document = {
        "schemaVersion": REPORT_SCHEMA_VERSION,
        "thresholds": {"high": thresholds[0], "low": thresholds[1]},
        "files": files,
        "framework": {"name": "eval-quality", "version": version},
        "config": config,
    }
    return MutationTestReport.model_validate(document).model_dump(mode="json", exclude_none=True)
