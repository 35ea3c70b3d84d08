"""Reading and writing the per-suite ``contract-strength.json`` (its models: evalquality_core/artifacts/contract_strength.py).

Canonical JSON plus a newline, whole or not at all (``tasks/output.py``); a read validates the document
and a bad file raises ``RuntimeFault`` naming it.
"""

from __future__ import annotations

from pathlib import Path

from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.contract_strength import SuiteStrength
from evalquality_core.canonical import scan_json
from tasks.output import write_artifact


def read_suite_strength(path: Path) -> SuiteStrength:
    """Read and validate one ``contract-strength.json``; a bad file raises ``RuntimeFault`` naming it."""
    data = scan_json(path.read_bytes(), str(path))
    return read_artifact(SuiteStrength, data, str(path))


def write_suite_strength(document: SuiteStrength, path: Path) -> None:
    """Write the document as canonical JSON plus a newline (artifacts.md §1)."""
    wire = to_wire(document)
    if wire.get("generatedStrength") is None:
        wire.pop("generatedStrength", None)  # a suite that does not opt in keeps its document's bytes
    elif wire["generatedStrength"].get("evaluator") is None:
        wire["generatedStrength"].pop("evaluator", None)  # nor does one that samples no evaluator trials
    write_artifact(path, wire)


__all__ = ["read_suite_strength", "write_suite_strength"]
