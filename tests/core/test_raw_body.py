"""A raw request body (6.0.0: contract 7, probe 6, record 8) through compile, seal, pre-flight request building,
the pre-flight evidence of a leg, and scoring. No stored raw-body artifact exists (latest/README.md): each is
built here from the reference's v7 data by the rule, ``{kind: "raw", base64, contentType}``."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.artifacts.isolation import IsolationManifest
from evalquality_core.artifacts.port_messages import read_probe_request
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.compile.pipeline import compile_contract
from evalquality_core.ingest import ingest
from evalquality_core.migrate import migrate_document
from evalquality_core.preflight.plan import plan_preflight
from evalquality_core.preflight.reduce import call_inputs_of
from evalquality_core.score.score import score
from evalquality_core.seal.seal import seal_contract
from tests.conftest import CONFORMANCE
from tests.scoring_inputs import worked_example

BYTES = b'{"name": "raw \xe2\x9c\x93"}'
RAW = {"kind": "raw", "base64": base64.b64encode(BYTES).decode("ascii"), "contentType": "application/json; charset=utf-8"}


def _raw_contract() -> dict[str, Any]:
    path = CONFORMANCE / "latest/corpus-dev/contracts/satisfied-declarations.json"
    if not path.is_file():
        pytest.skip(f"conformance data absent: {path}")
    contract = json.loads(path.read_text(encoding="utf-8"))
    legs = contract["permittedInterfaces"][0]["operations"][0]["sensitivityWitness"]["legs"]
    legs[0]["inputs"]["body"] = RAW
    return contract


def test_a_raw_witness_body_compiles_and_seals_unchanged() -> None:
    contract = _raw_contract()
    compiled = compile_contract(contract)  # strict: a raw body skips the key check (§3.1 #15)
    assert to_wire(compiled) == contract
    assert seal_contract(contract).contract_digest  # sealable; the brief never shows witness inputs


def test_preflight_sends_the_raw_body_as_given_and_records_it_as_record_8_does() -> None:
    plan = plan_preflight(_raw_contract(), [], "raw-run")
    raw_legs = [leg for leg in plan.legs if leg.request["channels"].get("body") == RAW]
    assert len(raw_legs) == 1
    request = read_probe_request(raw_legs[0].request)
    assert request.channels.body.content_type == RAW["contentType"]
    assert base64.b64decode(request.channels.body.base64) == BYTES
    recorded = call_inputs_of(raw_legs[0].inputs)
    assert recorded["bodyEncoding"] == "raw"
    assert recorded["body"] == {"base64": RAW["base64"]}
    assert recorded["header"]["Content-Type"] == RAW["contentType"]
    plain = [leg for leg in plan.legs if leg.request["kind"] == "api" and leg.request["channels"]["body"] != RAW]
    assert plain and all(call_inputs_of(leg.inputs)["bodyEncoding"] is None for leg in plain)


def test_a_record_8_with_a_raw_call_is_scored(conformance) -> None:
    """The worked example's record 4, migrated to 8, scores as it did; with one call made raw it still scores,
    and an oracle reading that call's JSON body field no longer finds it there (the body is bytes)."""
    chain = worked_example(conformance)
    wire = to_wire(chain.record)
    migrated = migrate_document(wire, contract=to_wire(chain.contract))
    assert migrated["schemaVersion"] == 8

    def outcomes(record_wire: dict[str, Any]) -> list[tuple[str, str]]:
        record = read_artifact(SealedRunRecord, record_wire)
        manifest = read_artifact(IsolationManifest, to_wire(chain.manifest))
        configuration = read_artifact(EvaluatorConfiguration, to_wire(chain.configuration))
        trial = ingest(record, manifest, configuration, chain.contract)
        result = score(chain.contract, chain.probe, [trial], chain.policy, chain.preflight)
        return [(o.oracle_id, o.state) for o in result.outcomes]

    baseline = outcomes(wire)
    assert outcomes(migrated) == baseline
    raw = json.loads(json.dumps(migrated))
    patch = next(o for o in raw["observations"] if o["callInputs"]["body"] == {"title": "Revised"})
    patch["callInputs"].update(bodyEncoding="raw", body={"base64": base64.b64encode(b'{"title":"Revised"}').decode()},
                               header={"Content-Type": "application/json"})
    changed = outcomes(raw)
    assert len(changed) == len(baseline)
    assert changed != baseline  # the title the write sent is now inside bytes, not a JSON field
