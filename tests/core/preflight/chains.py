"""Loading the reference chains (read in place) and deriving small variants of them for one rule at a time."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any


def load(conformance: Path, relative: str) -> Any:
    """One JSON file of ``conformance/chains``."""
    return json.loads((conformance / "chains" / relative).read_text(encoding="utf-8"))


def skill_defect(conformance: Path) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """The skill-defect chain: contract, probe, and its five pre-flight observations (fresh copies)."""
    return (
        load(conformance, "skill-defect/eval-contract.json"),
        load(conformance, "skill-defect/probe.json"),
        load(conformance, "skill-defect/reconstructed-inputs/preflight-observations.json"),
    )


def operation(contract: dict[str, Any]) -> dict[str, Any]:
    """The only operation of the skill-defect contract."""
    return contract["permittedInterfaces"][0]["operations"][0]


def by_leg(observations: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Observations indexed by leg id (mutating one mutates the list)."""
    return {observation["probeId"]: observation for observation in observations}


def keyless_operation(template: dict[str, Any], operation_id: str, *, mutating: bool) -> dict[str, Any]:
    """A copy of a cli operation that declares no request key and has no sensitivity witness."""
    op = copy.deepcopy(template)
    op["operationId"] = operation_id
    op["stateChangeMarker"] = mutating
    op["sensitivityWitness"] = None
    for channel in op["requestShape"].values():
        channel["permittedKeys"], channel["requiredKeys"], channel["types"] = [], [], {}
    return op


EMPTY_CLI_INPUTS: dict[str, Any] = {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}}


def cli_observation(leg_id: str, operation_id: str, selected: list[str], exit_code: int = 0) -> dict[str, Any]:
    """A cli observation answering ``{"selected": [...]}`` on stdout."""
    return {
        "kind": "cli",
        "probeId": leg_id,
        "interfaceId": "skill-runner",
        "operationId": operation_id,
        "exitCode": exit_code,
        "stdout": {"kind": "json", "value": {"selected": selected}},
        "stderr": {"kind": "text", "value": ""},
        "artifacts": {},
    }
