"""Sample ``contract-strength.json`` documents for the report and gate tests.

Built from the reference's own baseline (conformance ``tea/test/probes/expected-strength.json``), so
the documents carry real probe classes, pre-flight outcomes, leg counts, verdicts and vectors rather
than values our code produced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalquality_core.artifacts.base import read_artifact
from evalquality_core.artifacts.contract_strength import DOCUMENT_KIND, DOCUMENT_VERSION, SuiteStrength

_ZERO = "sha256:" + "0" * 64


def tea_baseline(conformance: Path) -> dict[str, Any]:
    """The reference's baseline with ``comparableResult`` dropped (our baseline keeps it in evidence files)."""
    data = json.loads((conformance / "tea" / "test" / "probes" / "expected-strength.json").read_text())
    for entry in data.values():
        for probe in entry["probes"].values():
            probe.pop("comparableResult")
    return data


def document_from_baseline_entry(suite: str, entry: dict[str, Any]) -> SuiteStrength:
    """A contract-strength document whose baseline projection is exactly ``entry``."""
    probes = {
        probe_id: {**probe, "trials": 1, "evidenceDigest": None if probe["verdict"] is None else _ZERO}
        for probe_id, probe in entry["probes"].items()
    }
    value = {
        "document": DOCUMENT_KIND,
        "documentVersion": DOCUMENT_VERSION,
        "suite": suite,
        "contractId": entry["contractId"],
        "contractDigest": _ZERO,
        "corpusDigest": entry["corpusDigest"],
        "briefDigest": None,
        # The reference's baseline records no suite-wide pre-flight, floors or aggregate (A.11).
        "preflight": "passed",
        "preflightLegs": None,
        "fixtureDigest": None,
        "aggregateDigest": None,
        "aggregateRefusal": None,
        "floors": {},
        "aggregate": None,
        "floorDecisions": None,
        "probeCount": entry["probeCount"],
        "strength": entry["strength"],
        "unsatisfiedCoverageRules": entry["unsatisfiedCoverageRules"],
        "probes": probes,
    }
    return read_artifact(SuiteStrength, value, suite)


def tea_documents(conformance: Path) -> dict[str, SuiteStrength]:
    """Every suite of the reference's baseline as a document."""
    return {suite: document_from_baseline_entry(suite, entry) for suite, entry in tea_baseline(conformance).items()}
