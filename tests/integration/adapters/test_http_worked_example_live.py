"""The worked example driven live (the reference's live-api-chain check): the five calls of
``worked-example/sealed-run-record.json`` replayed over real HTTP, through the HTTP adapter, against
the notes-api service started fresh per call from a staged workspace — clean and seeded with the
silent write — the live answers mapped into the record, then ingest → score → emit must give what
``expected.json`` lists. Every expected value is read from the conformance files.

The replay's state is the suite's ``worked-example`` fixture set: the two notes the record shows
(``n-1`` "Original", ``n-2`` "Second"), both left out of the collection view, because the record keeps
an empty ``list-notes`` answer on purpose (the chain's README: O-004's abstention needs it), and the
updatedAt clock at 10:04 so the two accepted PATCHes are stamped 10:05 and 10:06 as recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalquality_core.artifacts.base import to_wire
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.emit.emit import emit
from evalquality_core.ingest import ingest
from evalquality_core.score.score import score
from tests.adapters.http_notes import service_adapter, stage
from tests.scoring_inputs import load, worked_example


def _requests(contract: dict[str, Any], record: dict[str, Any]) -> list[dict[str, Any]]:
    operations = {
        operation["operationId"]: operation
        for interface in contract["permittedInterfaces"]
        if interface["kind"] == "api"
        for operation in interface["operations"]
    }
    requests = []
    for observation in sorted(record["observations"], key=lambda o: o["sequence"]):
        operation = operations[observation["operationId"]]
        inputs = observation["callInputs"]
        requests.append({
            "kind": "api",
            "probeId": observation["observationId"],
            "interfaceId": "notes-api",
            "operationId": observation["operationId"],
            "method": operation["method"],
            "pathTemplate": operation["pathTemplate"],
            "channels": {
                "path": inputs["path"] or {},
                "query": inputs["query"] or {},
                "header": inputs["header"] or {},
                "body": {"kind": "absent"} if inputs["body"] is None else {"kind": "json", "value": inputs["body"]},
            },
        })
    return requests


def _replay(tmp_path: Path, mutation: str | None, contract: dict[str, Any], record: dict[str, Any]) -> list[Any]:
    workspace = stage(tmp_path, fixture="worked-example", mutation=mutation)
    adapter = service_adapter()
    return [adapter.probe(request, workdir=workspace) for request in _requests(contract, record)]


def _live_record(record: dict[str, Any], answers: list[Any]) -> dict[str, Any]:
    """The record with each observation's response replaced by the live answer to its call."""
    live = dict(record)
    by_id = {answer.probe_id: answer for answer in answers}
    observations = []
    for observation in record["observations"]:
        answer = by_id[observation["observationId"]]
        assert answer.body.kind == "json", observation["observationId"]
        observations.append({
            **observation,
            "responseStatus": answer.status,
            "responseHeaders": {"content-type": answer.headers["content-type"]},
            "responseBody": answer.body.value,
        })
    live["observations"] = observations
    return live


def _score(chain: Any, record_wire: dict[str, Any]) -> dict[str, Any]:
    record = SealedRunRecord.model_validate(record_wire, by_alias=True, by_name=False)
    trial = ingest(record, chain.manifest, chain.configuration, chain.contract)
    result = score(chain.contract, chain.probe, [trial], chain.policy, chain.preflight)
    return to_wire(emit(
        result, chain.contract, chain.policy, corpus_digest=chain.corpus_digest,
        fixture_digest=chain.preflight.fixture_digest,
        evaluator_configuration_digest=record.evaluator_configuration_digest,
    ))


@pytest.fixture(scope="module")
def chain(conformance: Path) -> Any:
    return worked_example(conformance)


def test_the_seeded_service_answers_exactly_what_the_record_holds(tmp_path: Path, chain: Any) -> None:
    contract, record = to_wire(chain.contract), load(chain.paths["record"])
    answers = _replay(tmp_path, "store-write-deletion", contract, record)
    for observation, answer in zip(sorted(record["observations"], key=lambda o: o["sequence"]), answers, strict=True):
        assert (answer.status, answer.body.value) == (observation["responseStatus"], observation["responseBody"]), observation["observationId"]


def test_live_replay_scores_to_expected_json(tmp_path: Path, chain: Any, conformance: Path) -> None:
    contract, record = to_wire(chain.contract), load(chain.paths["record"])
    expected = load(conformance / "worked-example" / "expected.json")
    artifact = _score(chain, _live_record(record, _replay(tmp_path, "store-write-deletion", contract, record)))
    assert artifact["contractVerdict"] == expected["contractVerdict"] == "FAIL"
    assert artifact["exitCode"] == expected["exitCode"]
    assert artifact["verdictBasis"] == expected["verdictBasis"]
    rows = [
        {"oracleId": row["oracleId"], "state": row["state"], "disposition": row["disposition"],
         "corroboration": row["corroboration"], "selectedObservationIds": row["selectedObservationIds"],
         "checkResolution": row["checkResolution"]["resolution"],
         **({"introductionCondition": row["checkResolution"]["introductionCondition"]}
            if row["checkResolution"].get("introductionCondition") is not None else {})}
        for row in artifact["outcomes"]
    ]
    assert rows == expected["outcomes"]
    assert artifact["strength"] == {**artifact["strength"], **expected["strength"]}


def test_against_the_clean_service_the_read_back_oracle_holds(tmp_path: Path, chain: Any) -> None:
    # The differential that makes O-001 the catching oracle: the same calls against the clean system
    # read back "Revised", so its check resolves true instead of false.
    contract, record = to_wire(chain.contract), load(chain.paths["record"])
    answers = _replay(tmp_path, None, contract, record)
    read_back = next(a for a in answers if a.probe_id == "obs-004")
    assert read_back.body.value["note"]["title"] == "Revised"
    live = SealedRunRecord.model_validate(_live_record(record, answers), by_alias=True, by_name=False)
    result = score(chain.contract, chain.probe, [ingest(live, chain.manifest, chain.configuration, chain.contract)],
                   chain.policy, chain.preflight)
    o001 = next(row for row in result.outcomes if row.oracle_id == "O-001")
    assert o001.check_resolution == "true"
    assert o001.decision.state != "caught"  # the evaluator's "violated" no longer agrees with the check
