"""The quotation audit (scoring.md §7.3): verbatim substrings of each cited observation's channel projection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.ingest import audit_quotations, project_channel
from tests.core.evaluate.factories import observation

API = observation(
    "obs-1",
    1,
    "patch-note",
    body={"ok": True, "note": {"title": "Revised"}},
    headers={"etag": "W/1"},
    status=200,
    call_inputs={"path": {"id": "n-1"}, "body": {"title": "Revised"}},
)
CLI = observation(
    "obs-2",
    2,
    "run-skill",
    stdout={"kind": "json", "value": {"selected": ["a"]}},
    stderr={"kind": "text", "value": 'warning:  "spaced"\n'},
    exit_code=-2,
    artifacts={"report": {"kind": "text", "value": "line one\nline two"}},
)
NULL_BODY = observation("obs-3", 3, "op", body=None)


@pytest.mark.parametrize(
    ("obs", "channel", "expected"),
    [
        (API, "response-body", '{"note":{"title":"Revised"},"ok":true}'),  # canonical: sorted, no spaces
        (API, "response-headers", '{"etag":"W/1"}'),
        (API, "response-status", "200"),
        (CLI, "exit-code", "-2"),
        (CLI, "stdout", '{"selected":["a"]}'),
        (CLI, "stderr", 'warning:  "spaced"\n'),
        (NULL_BODY, "response-body", None),  # a null channel projects to nothing
        (NULL_BODY, "stdout", None),  # {kind: absent}
        (API, "exit-code", None),
        (CLI, "artifact", None),  # no artifact named
    ],
)
def test_channel_projection(obs: dict[str, Any], channel: str, expected: str | None) -> None:
    assert project_channel(obs, channel) == expected


def test_call_inputs_project_the_whole_object_every_transport() -> None:
    projected = project_channel(API, "call-inputs")
    assert projected is not None
    assert projected.startswith('{"argument":null,"body":{"title":"Revised"},"environment":null')
    assert '"path":{"id":"n-1"}' in projected


def test_artifact_projection_names_one_artifact() -> None:
    assert project_channel(CLI, "artifact", "report") == "line one\nline two"
    assert project_channel(CLI, "artifact", "other") is None


def finding(
    finding_id: str, cited: list[str], *quotes: tuple[str, str], finding_type: str = "defect"
) -> dict[str, Any]:
    entry: dict[str, Any] = {"findingId": finding_id, "findingType": finding_type, "observationIds": cited}
    if finding_type == "defect":
        entry["quotedEvidence"] = [{"channel": channel, "quote": quote} for channel, quote in quotes]
    return entry


def test_witnessed_and_unwitnessed_quotes() -> None:
    findings = [
        finding(
            "F-002",
            ["obs-2", "obs-1", "obs-1", "obs-404"],
            ("response-body", '"title":"Revised"'),  # witnessed by obs-1
            ("response-body", '"title": "Revised"'),  # whitespace is not normalized
            ("stderr", '"SPACED"'),  # nor case
            ("response-status", "20"),  # substring of "200"
            ("call-inputs", '"id":"n-1"'),
        ),
        finding("F-001", ["obs-3"], ("response-body", "null")),  # a JSON null body witnesses nothing
        finding("F-003", ["obs-1"], finding_type="confirmation"),
    ]
    audit = [u.to_wire() for u in audit_quotations([API, CLI, NULL_BODY], findings)]
    assert audit == [
        {
            "findingId": "F-001",
            "quoteIndex": 0,
            "channel": "response-body",
            "quote": "null",
            "citedObservationIds": ["obs-3"],
        },
        {
            "findingId": "F-002",
            "quoteIndex": 1,
            "channel": "response-body",
            "quote": '"title": "Revised"',
            "citedObservationIds": ["obs-1", "obs-2"],  # resolved ids only, de-duplicated and sorted
        },
        {
            "findingId": "F-002",
            "quoteIndex": 2,
            "channel": "stderr",
            "quote": '"SPACED"',
            "citedObservationIds": ["obs-1", "obs-2"],
        },
    ]


def test_observations_sharing_an_id_are_all_read() -> None:
    twin = {**CLI, "observationId": "obs-1"}
    findings = [finding("F-001", ["obs-1"], ("stdout", '"selected"'))]
    assert audit_quotations([API, twin], findings) == ()
    assert len(audit_quotations([API], findings)) == 1


def test_worked_example_quotes_are_witnessed(conformance: Path) -> None:
    record = json.loads(
        (conformance / "worked-example" / "sealed-run-record.json").read_text(encoding="utf-8")
    )
    assert audit_quotations(record["observations"], record["findings"]) == ()
    # F-001 quotes '"title":"Revised"' and '"title":"Original"': each only in one of the two cited bodies
    by_id = {o["observationId"]: o for o in record["observations"]}
    assert '"title":"Revised"' in (project_channel(by_id["obs-003"], "response-body") or "")
    assert '"title":"Original"' in (project_channel(by_id["obs-004"], "response-body") or "")
