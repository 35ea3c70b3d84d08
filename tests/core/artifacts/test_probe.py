"""Probe v5 against every conformance probe: read, exact round trip, branch rules, refusals."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.probe import CommandDefectSignature, HttpDefectSignature, Probe
from evalquality_core.artifacts.references import ArtifactReference
from evalquality_core.faults import RuntimeFault, StructuralFailure
from tests.conftest import CONFORMANCE

PROBES = sorted(
    str(p.relative_to(CONFORMANCE))
    for pattern in ("worked-example/probe.json", "chains/*/probe.json", "chains/*/*-probe.json")
    for p in CONFORMANCE.glob(pattern)
)


def _load(conformance: Path, relative: str) -> dict:
    value = json.loads((conformance / relative).read_text(encoding="utf-8"))
    return copy.deepcopy(value)


@pytest.mark.parametrize("relative", PROBES)
def test_probe_reads_and_round_trips_exactly(conformance: Path, relative: str) -> None:
    """Every stored probe reads and goes back to the wire unchanged (clean controls keep no signature key)."""
    document = _load(conformance, relative)
    probe = read_artifact(Probe, document)
    assert to_wire(probe) == document


def test_probe_list_file(conformance: Path) -> None:
    """probes.json is a list of probes."""
    documents = json.loads((conformance / "chains/tutorial-workflow/probes.json").read_text(encoding="utf-8"))
    assert [to_wire(read_artifact(Probe, d)) for d in documents] == documents


def test_signature_kinds(conformance: Path) -> None:
    """An api probe carries an HTTP signature, a cli probe a command signature, a clean control none."""
    api = read_artifact(Probe, _load(conformance, "worked-example/probe.json"))
    cli = read_artifact(Probe, _load(conformance, "chains/skill-defect/probe.json"))
    clean = read_artifact(Probe, _load(conformance, "chains/tutorial-skill/honest-probe.json"))
    assert isinstance(api.defect_signature, HttpDefectSignature)
    assert api.defect_signature.path_template == "/notes/{id}"
    assert isinstance(cli.defect_signature, CommandDefectSignature)
    assert cli.defect_signature.invocation.executable == "skill-runner"
    assert clean.expected_clean and clean.defect_signature is None
    assert "defectSignature" not in to_wire(clean)


def test_clean_control_with_signature_key_is_refused(conformance: Path) -> None:
    """A clean control carrying defectSignature (even null) is the wrong branch."""
    document = _load(conformance, "chains/tutorial-skill/honest-probe.json")
    document["defectSignature"] = None
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(Probe, document)
    assert caught.value.code == "schema-parse-failure"
    assert "defectSignature" in str(caught.value)


def test_clean_control_with_defects_is_refused(conformance: Path) -> None:
    """A clean control declares no defects."""
    document = _load(conformance, "chains/tutorial-skill/honest-probe.json")
    document["defects"] = _load(conformance, "worked-example/probe.json")["defects"]
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(Probe, document)
    assert caught.value.code == "schema-parse-failure"


def test_missing_signature_is_refused(conformance: Path) -> None:
    """expectedClean false requires the defectSignature key."""
    document = _load(conformance, "worked-example/probe.json")
    del document["defectSignature"]
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(Probe, document)
    assert caught.value.code == "schema-parse-failure"


def test_canary_null_signature_is_read(conformance: Path) -> None:
    """defectSignature null is legal (canaries)."""
    document = _load(conformance, "worked-example/probe.json")
    document["defectSignature"] = None
    assert to_wire(read_artifact(Probe, document)) == document


def test_tool_call_signature_is_unsupported(conformance: Path) -> None:
    """An mcp tool-call signature is out of scope: unsupported-interface-kind."""
    document = _load(conformance, "worked-example/probe.json")
    signature = document["defectSignature"]
    signature["interfaceKind"] = "mcp"
    signature["toolName"] = "search_notes"
    del signature["method"], signature["pathTemplate"]
    with pytest.raises(StructuralFailure) as caught:
        read_artifact(Probe, document)
    assert caught.value.code == "unsupported-interface-kind"


@pytest.mark.parametrize("stamp", [3, 4, 7])
def test_other_stamps_refused(conformance: Path, stamp: int) -> None:
    """Probes are read at 5 and 6; any other number is refused, never half-read."""
    document = _load(conformance, "worked-example/probe.json")
    document["schemaVersion"] = stamp
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(Probe, document)
    assert caught.value.code == "schema-version-mismatch"


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda d: d.__setitem__("probeClass", "mutant"), "Probe.probeClass"),
        (lambda d: d["qualification"].__setitem__("route", "hearsay"), "Probe.qualification"),
        (lambda d: d["qualification"].__setitem__("rollbackVerified", "yes"), "Probe.qualification.rollbackVerified"),
        (
            lambda d: d["defectSignature"]["condition"]["selector"]["inputBinding"].__setitem__(
                "path", {"id": {"captured": "/interactions/a/response-body"}}
            ),
            "Probe.defectSignature.condition.selector.inputBinding.path.id",
        ),
        (lambda d: d["defects"][0].__setitem__("extra", 1), "Probe.defects[0].extra"),
    ],
)
def test_refusals_name_the_path(conformance: Path, mutate, path: str) -> None:
    """Wrong enums, wrong types, unknown keys, a captured binding in a signature: refused at the path."""
    document = _load(conformance, "worked-example/probe.json")
    mutate(document)
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(Probe, document)
    assert caught.value.code == "schema-parse-failure"
    assert caught.value.artifact_path == path


@pytest.mark.parametrize(
    "reference",
    [
        {"storage": "public", "path": None, "privateRef": None, "digest": "sha256:" + "0" * 64},
        {"storage": "private", "path": "a", "privateRef": "x", "digest": "sha256:" + "0" * 64},
        {"storage": "public", "path": "a", "privateRef": "x", "digest": "sha256:" + "0" * 64},
        {"storage": "public", "path": "", "privateRef": None, "digest": "sha256:" + "0" * 64},
    ],
)
def test_artifact_reference_branches(reference: dict) -> None:
    """A reference sets exactly the location its storage tag names."""
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(ArtifactReference, reference)
    assert caught.value.code == "schema-parse-failure"
