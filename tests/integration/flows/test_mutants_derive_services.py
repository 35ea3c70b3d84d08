"""``python -m flows.mutants --derive`` on an HTTP suite and an MCP suite (issue 18): a probe derived
from an Observable mutant of each qualifies through the generator cycle (clean -> mutate -> mutated ->
restore -> clean, the service or tool server started as a real child process), and one that cannot
qualify says why.

The mutants are chosen by what they do to the systems, so the expectation follows from the code:

* notes-api (corpus/suites/notes-api/system/notes_api.py) line 113 ``save(store)`` -> ``pass``: the
  PATCH answers but never writes — the very defect of the hand-written probe P-001, so the derived
  probe must sit on P-001's behaviour (B-001) and read HTTP channels;
* notes-tools (corpus/suites/notes-tools/system/notes_tool_server.py) line 33
  ``os.replace(scratch, STORE)`` -> ``pass``: create_note never persists — the defect of the hand-written
  P-001 there (behaviour B-004);
* notes-tools line 62 ``"ok": True`` -> ``"XXokXX": True``: the search result loses its declared ``ok``
  key; the only mutated value is under a key the operation's descriptor does not declare, so the AD-9
  gate would refuse any signature on it (condition-pointer-unwritable) and the row says so.

One run of the real command line (its own Prefect home and caches under tmp) serves every test here;
``--no-coverage`` because recording coverage runs every leg once more, which for three mutants costs
more than it saves (derivation does not depend on it; tests/integration/flows/test_mutants_flow.py covers it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.artifacts.base import read_artifact
from evalquality_core.artifacts.probe import Probe
from evalquality_core.score.qualification import qualify_probe
from evalquality_core.score.witness import resolve_home_operation
from evalquality_core.suite.mutants import generate_for_suite
from tests.prefect_db import seed_prefect_home

ROOT = Path(__file__).resolve().parents[3]

# One module fixture runs the flow(s) every test here reads: one worker builds it once (--dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("derive-services")]

#: (suite, operator, line, replacement) -> what the row must say.
CHOSEN = {
    ("notes-api", "statement-deletion", 113, "pass"): "qualifies",
    ("notes-tools", "statement-deletion", 33, "pass"): "qualifies",
    ("notes-tools", "string", 62, '"XXokXX"'): "refused",
}


@pytest.fixture(scope="module")
def derived(tmp_path_factory: pytest.TempPathFactory, migrated_prefect_db: Path) -> dict[str, Any]:
    """One ``python -m flows.mutants --derive`` run over copies of both suites, restricted to the chosen mutants."""
    tmp = tmp_path_factory.mktemp("derive-services")
    suites = tmp / "suites"
    ids: dict[tuple[str, str, int, str], str] = {}
    for name in ("notes-api", "notes-tools"):
        shutil.copytree(ROOT / "corpus" / "suites" / name, suites / name, ignore=shutil.ignore_patterns("trials"))
        for mutant in generate_for_suite(suites / name).kept:
            key = (name, mutant.operator, mutant.start[0], mutant.replacement)
            if key in CHOSEN:
                ids[key] = mutant.mutant_id
    assert set(ids) == set(CHOSEN), sorted(set(CHOSEN) - set(ids))
    home, out = tmp / "home", tmp / "out"
    seed_prefect_home(home / "prefect", migrated_prefect_db)  # no migrations in the child (tests/prefect_db.py)
    env = {**os.environ, "EVALQUALITY_HOME": str(home), "PREFECT_HOME": str(home / "prefect")}
    flags = [f for i in ids.values() for f in ("--mutant", i)]
    done = subprocess.run(
        [sys.executable, "-m", "flows.mutants", "--suites", str(suites), "--suite", "notes-api", "--suite", "notes-tools",
         "--derive", "--no-coverage", "--out", str(out), *flags],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    rows = {}
    for name in ("notes-api", "notes-tools"):
        summary = json.loads((out / name / "mutants-summary.json").read_text())
        rows.update({row["mutantId"]: row for row in summary["derivedProbes"]})
    return {"ids": ids, "rows": rows, "out": out, "suites": suites, "stdout": done.stdout}


def _qualified(derived: dict[str, Any], suite: str, key: tuple[str, str, int, str]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The row, the derived probe and its mutation of one qualifying mutant, with the checks every one must pass."""
    mutant_id = derived["ids"][key]
    row = derived["rows"][mutant_id]
    assert row["qualified"] is True, row["reason"]
    folder = derived["out"] / suite / "derived"
    probe = json.loads((folder / "probes" / f"{row['probeId']}.json").read_text())
    read_artifact(Probe, probe, "Probe")
    # Earned by the cycle, not asserted: the generator filled the evidence references and the rollback.
    assert probe["qualification"]["rollbackVerified"] is True
    assert probe["qualification"]["mutatedFailEvidence"]["path"] == f"evidence/{row['probeId']}/mutant.json"
    mutation = json.loads((folder / "mutations" / f"{mutant_id}.json").read_text())
    assert mutation["probeId"] == row["probeId"] and mutation["replace"].strip() == "pass"
    contract = json.loads((derived["suites"] / suite / "contract.json").read_text())
    home = resolve_home_operation(contract, probe["defectSignature"])
    assert home is not None
    gate = qualify_probe(probe, home)
    assert gate.qualified, [failure.code for failure in gate.failures]
    # The behaviour is the hand-written probe's for the same planted defect, and its only oracle killed it.
    hand_written = json.loads((derived["suites"] / suite / "probes" / "P-001.json").read_text())
    assert probe["behaviorId"] == hand_written["behaviorId"]
    [oracle] = next(b["oracles"] for b in contract["behaviors"] if b["id"] == probe["behaviorId"])
    assert f"({oracle})" in row["reason"]
    return row, probe, mutation


def test_an_http_mutant_yields_a_probe_with_an_api_signature_that_qualifies(derived: dict[str, Any]) -> None:
    _row, probe, _mutation = _qualified(derived, "notes-api", ("notes-api", "statement-deletion", 113, "pass"))
    signature = probe["defectSignature"]
    contract = json.loads((derived["suites"] / "notes-api" / "contract.json").read_text())
    operations = {(op["method"], op["pathTemplate"]) for i in contract["permittedInterfaces"] for op in i["operations"]}
    assert signature["interfaceKind"] == "api" and (signature["method"], signature["pathTemplate"]) in operations
    assert signature["observableChannel"] in ("response-status", "response-headers", "response-body")
    [pointer, literal] = signature["condition"]["predicate"]["operands"]
    assert pointer["pointer"].startswith(f"/interactions/observed/{signature['observableChannel']}")
    witness = probe["defects"][0]["manifestationWitness"]
    assert witness["interfaceId"] == "notes-api" and set(witness["inputs"]) == {"path", "query", "header", "body"}
    assert witness["relation"]["operands"][0]["pointer"].startswith(f"/interactions/{witness['legId']}/response-")


def test_an_mcp_mutant_yields_a_probe_with_a_tool_signature_that_qualifies(derived: dict[str, Any]) -> None:
    _row, probe, _mutation = _qualified(derived, "notes-tools", ("notes-tools", "statement-deletion", 33, "pass"))
    signature = probe["defectSignature"]
    contract = json.loads((derived["suites"] / "notes-tools" / "contract.json").read_text())
    tools = {op["toolName"] for i in contract["permittedInterfaces"] for op in i["operations"]}
    assert signature["interfaceKind"] == "mcp" and signature["toolName"] in tools and "method" not in signature
    # A tool call is read on its result (response-body) or its isError flag (response-status 1/0).
    assert signature["observableChannel"] in ("response-status", "response-body")
    witness = probe["defects"][0]["manifestationWitness"]
    assert set(witness["inputs"]) == {"arguments"}
    assert witness["relation"]["operands"][0]["pointer"].startswith(f"/interactions/{witness['legId']}/response-")


def test_a_probe_that_cannot_qualify_says_why_and_is_not_written(derived: dict[str, Any]) -> None:
    mutant_id = derived["ids"][("notes-tools", "string", 62, '"XXokXX"')]
    row = derived["rows"][mutant_id]
    assert row["qualified"] is False and row["probeId"] is None
    assert "condition-pointer-unwritable" in row["reason"] and "XXokXX" in row["reason"], row["reason"]
    assert not (derived["out"] / "notes-tools" / "derived" / "mutations" / f"{mutant_id}.json").exists()
    assert "notes-api:" in derived["stdout"] and "notes-tools:" in derived["stdout"]
