"""The reference evaluator (``evalquality_core.suite.evaluator``) over an HTTP suite: the worked
example's contract and plan, sent as api requests through the service adapter to the notes-api
service (one fresh server per call, state in the staged workspace), judged, sealed, and the written
trial ingested and scored. The silent write is caught by the read-back oracle only; a weakened
contract without that oracle misses it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from evalquality_core.adapters.http_service import ServiceAdapter
from evalquality_core.artifacts.base import read_artifact
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.artifacts.isolation import IsolationManifest
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.ingest import ingest
from evalquality_core.suite.evaluator import judge, requests_for_plan, run_staged, write_trial
from evalquality_core.suite.load import adapter_for, load_mutations, load_suite
from tests.adapters.http_notes import SUITE


def _suite(conformance: Path, root: Path) -> Path:
    suite = root / "notes-api-worked"
    (suite / "probes").mkdir(parents=True)
    (suite / "mutations").mkdir()
    shutil.copy(conformance / "worked-example" / "eval-contract.json", suite / "contract.json")
    shutil.copy(conformance / "worked-example" / "probe.json", suite / "probes" / "P-001.json")
    shutil.copytree(SUITE / "system", suite / "system")
    shutil.copytree(SUITE / "fixtures" / "three-notes", suite / "fixtures" / "three-notes")
    shutil.copy(SUITE / "targets.toml", suite / "targets.toml")
    shutil.copy(SUITE / "mutations" / "store-write-deletion.json", suite / "mutations" / "store-write-deletion.json")
    (suite / "suite.toml").write_text('system-id = "spike-notes-api"\n[fixtures]\nthree-notes = "."\n')
    (suite / "evaluator.json").write_text(json.dumps({
        "baselineSteps": ["baseline-read"],
        "choices": {"write": {"body": {"title": "Revised"}}, "malformed-write": {"body": {"tags": "not-a-list"}}},
    }))
    return suite


def _dispositions(observations: list[dict[str, Any]], contract: dict[str, Any]) -> dict[str, str]:
    return {d["oracleId"]: d["disposition"] for d in judge(contract, observations, "P-001").dispositions}


def test_plan_steps_become_api_requests(conformance: Path, tmp_path: Path) -> None:
    suite = load_suite(_suite(conformance, tmp_path))
    requests = [request for _, request in requests_for_plan(suite)]
    assert [(r["method"], r["pathTemplate"], r["channels"]["path"]) for r in requests] == [
        ("GET", "/notes/{id}", {"id": "n-1"}), ("PATCH", "/notes/{id}", {"id": "n-1"}), ("GET", "/notes/{id}", {"id": "n-1"}),
        ("GET", "/notes", {}), ("PATCH", "/notes/{id}", {"id": "n-1"}),
    ]
    assert requests[1]["channels"]["body"] == {"kind": "json", "value": {"title": "Revised"}}
    assert isinstance(adapter_for(suite).adapters["api"], ServiceAdapter)  # routed by kind


def test_the_silent_write_is_caught_only_by_the_read_back_oracle(conformance: Path, tmp_path: Path) -> None:
    suite = load_suite(_suite(conformance, tmp_path))
    contract = dict(suite.contract)
    _, clean, _ = run_staged(suite, None)
    assert set(_dispositions(clean, contract).values()) == {"held"}
    mutation = load_mutations(suite.root)["P-001"]
    _, seeded, _ = run_staged(suite, mutation)
    seeded_dispositions = _dispositions(seeded, contract)
    assert seeded_dispositions == {"O-001": "violated", "O-002": "held", "O-003": "held", "O-004": "held", "O-005": "held"}
    # The write's own answer is indistinguishable from a correct one; only the read-back differs.
    assert seeded[1]["responseStatus"] == 200 and seeded[1]["responseBody"]["note"]["title"] == "Revised"
    assert seeded[2]["responseBody"]["note"]["title"] == "Groceries"
    weakened = {**contract, "oracles": [o for o in contract["oracles"] if o["id"] != "O-001"],
                "behaviors": [b for b in contract["behaviors"] if "O-001" not in b["oracles"]]}
    assert "violated" not in _dispositions(seeded, weakened).values()


def test_a_written_trial_ingests(conformance: Path, tmp_path: Path) -> None:
    suite = load_suite(_suite(conformance, tmp_path))
    trial_dir = suite.root / "trials" / "P-001" / "trial-1"
    record = write_trial(suite, "P-001", 1, trial_dir)
    assert [f["oracleId"] for f in record["findings"]] == ["O-001"]
    quotes = record["findings"][0]["quotedEvidence"]
    assert {q["channel"] for q in quotes} <= {"response-body", "call-inputs", "response-status"} and quotes
    trial = ingest(
        read_artifact(SealedRunRecord, json.loads((trial_dir / "sealed-run-record.json").read_text())),
        read_artifact(IsolationManifest, json.loads((trial_dir / "isolation-manifest.json").read_text())),
        read_artifact(EvaluatorConfiguration, json.loads((trial_dir / "evaluator-configuration.json").read_text())),
        read_artifact(EvalContract, json.loads((suite.root / "contract.json").read_text())),
    )
    assert trial.conditions == () and trial.contract_digest_matches is True
