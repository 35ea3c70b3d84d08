"""The AD-40 witness match (scoring.md §3.6), finding buckets (§3.7) and the AD-9 gate (§8), over the
worked example's probe and record with one field changed per case."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from evalquality_core.score.qualification import QUALIFICATION_FAILURES, admissible_routes, qualify_probe
from evalquality_core.score.witness import (
    erase_parameters,
    map_findings,
    match_witness,
    resolve_home_operation,
    signature_identity,
)
from tests.scoring_inputs import load


@pytest.fixture()
def example(conformance: Path) -> tuple[dict, dict, dict]:
    base = conformance / "worked-example"
    return load(base / "eval-contract.json"), load(base / "probe.json"), load(base / "sealed-run-record.json")


def test_signature_identity_erases_parameter_names() -> None:
    assert erase_parameters("/notes/{noteId}/tags/{t}") == "/notes/{}/tags/{}"
    assert signature_identity({"interfaceKind": "api", "method": "GET", "pathTemplate": "/notes/{x}"}) == "GET /notes/{}"
    cli = {"interfaceKind": "cli", "invocation": {"executable": "tool", "subcommandPath": ["a", "b"]}}
    assert signature_identity(cli) == "tool a b"


def test_matched_on_the_worked_example(example) -> None:
    contract, probe, record = example
    home = resolve_home_operation(contract, probe["defectSignature"])
    assert home is not None and home.operation_id == "get-note"
    w = match_witness(contract, probe, record["observations"], record["findings"], home)
    assert (w.result, w.observation_ids, w.witness_observation_ids) == ("matched", ("obs-004",), ("obs-004",))


def test_unresolved_home_operation_is_unexercised(example) -> None:
    contract, probe, record = example
    probe["defectSignature"]["pathTemplate"] = "/elsewhere/{id}"
    w = match_witness(contract, probe, record["observations"], record["findings"])
    assert (w.result, w.home_operation_resolved, w.exercised) == ("unexercised", False, False)


def test_baseline_observations_do_not_exercise(example) -> None:
    contract, probe, record = example
    for o in record["observations"]:
        o["provenance"] = "baseline"
    assert match_witness(contract, probe, record["observations"], record["findings"]).result == "unexercised"


def test_unclaimed_manifestation_is_missed_evidence(example) -> None:
    contract, probe, record = example
    findings = [f for f in record["findings"] if f["findingType"] != "defect"]
    assert match_witness(contract, probe, record["observations"], findings).result == "manifested-unclaimed"


def test_claim_citing_only_non_satisfying_home_observations_is_unwitnessed(example) -> None:
    contract, probe, record = example
    record["findings"][0]["observationIds"] = ["obs-001"]  # a get-note baseline, not a candidate
    w = match_witness(contract, probe, record["observations"], record["findings"])
    assert (w.result, w.unwitnessed_finding_ids) == ("unwitnessed-claim", ("F-001",))


def test_refuted_signature_is_not_triggered_and_an_unrelated_claim_is_skipped(example) -> None:
    contract, probe, record = example
    probe["defectSignature"]["condition"]["predicate"]["operands"][1]["literal"] = "Revised"
    record["findings"][0]["observationIds"] = ["obs-003"]  # patch-note only: not on the home operation
    assert match_witness(contract, probe, record["observations"], record["findings"]).result == "not-triggered"


def test_all_inconclusive_candidates_are_vacuous(example) -> None:
    contract, probe, record = example
    contract["permittedInterfaces"][0]["operations"][0]["responseDescriptor"]["collectionLocations"] = [
        {"pointer": "/missing", "referenceSet": None, "expectedCardinality": {"mode": "at-most", "max": 5}}
    ]
    probe["defectSignature"]["condition"]["predicate"] = {
        "op": "existence", "operands": [{"pointer": "/interactions/observed/response-body/missing"}]}
    assert match_witness(contract, probe, record["observations"], []).result == "vacuous"
    # a claim over inconclusive candidates cites no satisfying observation: unwitnessed, whatever else holds
    assert match_witness(contract, probe, record["observations"], record["findings"]).result == "unwitnessed-claim"


def test_finding_buckets(example) -> None:
    contract, probe, record = example
    home = resolve_home_operation(contract, probe["defectSignature"])
    f1 = record["findings"][0]
    findings = [
        f1,
        {**f1, "findingId": "F-010", "observationIds": ["obs-003"]},
        {**f1, "findingId": "F-011", "probeId": "P-999"},
    ]
    buckets = map_findings(findings, record["observations"], {"P-001": probe}, {"P-001": home})
    assert buckets == {"mapped": ("F-001",), "unmapped": ("F-010",), "signatureless": (), "dangling": ("F-011",)}
    canary = probe | {"probeClass": "canary", "defectSignature": None}
    assert map_findings([f1], record["observations"], {"P-001": canary}, {"P-001": None})["signatureless"] == ("F-001",)


def test_the_worked_example_probe_qualifies(example) -> None:
    contract, probe, _ = example
    q = qualify_probe(probe, resolve_home_operation(contract, probe["defectSignature"]))
    assert q.qualified and q.failures == () and q.declaration_checks_ran


def test_routes() -> None:
    assert admissible_routes({"probeClass": "zero-action", "expectedClean": True}) == ("clean-control",)
    assert admissible_routes({"probeClass": "defect", "expectedClean": True}) == ()
    assert admissible_routes({"probeClass": "gameability", "expectedClean": False}) == ("gameability",)
    natural = {"probeClass": "defect", "expectedClean": False, "defects": [{"source": "natural"}]}
    assert admissible_routes(natural) == ("historical",)
    assert admissible_routes({**natural, "defects": []}) == ()


def _codes(probe: dict, contract: dict | None = None, *, home: bool = True) -> list[str]:
    h = resolve_home_operation(contract, probe.get("defectSignature")) if (home and contract) else None
    return [f.code for f in qualify_probe(probe, h).failures]


def _pred(probe: dict) -> dict:
    return probe["defectSignature"]["condition"]["predicate"]


# one mutation per code, applied to the worked example's (qualified) probe
MUTATIONS = {
    "qualification-route-incompatible": lambda p: p["qualification"].update(route="historical"),
    "qualification-defect-sources-mixed": lambda p: p["defects"].append({**p["defects"][0], "source": "natural"}),
    "qualification-evidence-unverified": lambda p: p["qualification"].update(rollbackVerified=False),
    "signature-absent": lambda p: p.update(defectSignature=None),
    "signature-present-on-canary": lambda p: p.update(probeClass="canary"),
    "signature-interface-kind-unsupported": lambda p: p["defectSignature"].update(interfaceKind="web"),
    "signature-observable-channel-not-response-side": lambda p: p["defectSignature"].update(observableChannel="call-inputs"),
    "condition-channels-underspecified": lambda p: p["defectSignature"].update(observableChannel="response-status"),
    "condition-disjunct-without-response-channel": lambda p: p["defectSignature"]["condition"].update(predicate={
        "op": "any", "operands": [_pred(p), {"op": "existence", "operands": [
            {"pointer": "/interactions/observed/call-inputs/path/id"}]}]}),
    "condition-selector-key-undeclared": lambda p: p["defectSignature"]["condition"]["selector"]["inputBinding"].update(
        query={"page": {"literal": 1}}),
    "condition-pointer-not-observation-rooted": lambda p: _pred(p)["operands"][0].update(
        pointer="/interactions/read-back/response-body/note/title"),
    "condition-pointer-unwritable": lambda p: _pred(p)["operands"][0].update(
        pointer="/interactions/observed/response-body/nowhere"),
    "condition-artifact-channel-contract-local": lambda p: _pred(p)["operands"][1].update(
        {"pointer": "/interactions/observed/artifact/report"}) or _pred(p)["operands"][1].pop("literal"),
    "condition-text-channel-on-api": lambda p: _pred(p)["operands"][1].update(
        {"pointer": "/interactions/observed/stdout"}) or _pred(p)["operands"][1].pop("literal"),
    "condition-reference-set-operand": lambda p: _pred(p)["operands"][1].update(
        {"referenceSet": "titles"}) or _pred(p)["operands"][1].pop("literal"),
    "condition-operand-illegal": lambda p: p["defectSignature"]["condition"].update(predicate={
        "op": "all", "operands": [_pred(p), {"op": "existence", "operands": [{"literal": 1}]}]}),
    "condition-regex-illegal": lambda p: p["defectSignature"]["condition"].update(predicate={
        "op": "all", "operands": [_pred(p), {"op": "regex", "pattern": "^(a)\\1$", "operands": [
            {"pointer": "/interactions/observed/response-body/note/title"}]}]}),
    "condition-quantifier-nesting": lambda p: p["defectSignature"]["condition"].update(predicate={
        "op": "all", "operands": [_pred(p), {"op": "for-all", "collection": {"pointer": "/interactions/observed/response-body/note"},
            "predicate": {"op": "for-all", "collection": {"pointer": "@/tags"}, "predicate": {
                "op": "for-all", "collection": {"pointer": "@/x"}, "predicate": {"op": "existence", "operands": [{"pointer": "@/"}]}}}}]}),
    "condition-quantifier-over-non-collection": lambda p: p["defectSignature"]["condition"].update(predicate={
        "op": "all", "operands": [_pred(p), {"op": "for-all", "collection": {"pointer": "/interactions/observed/response-body/note"},
            "predicate": {"op": "existence", "operands": [{"pointer": "@/"}]}}]}),
    "condition-bound-element-outside-quantifier": lambda p: p["defectSignature"]["condition"].update(predicate={
        "op": "all", "operands": [_pred(p), {"op": "existence", "operands": [{"pointer": "@/title"}]}]}),
}


@pytest.mark.parametrize("code", QUALIFICATION_FAILURES)
def test_each_qualification_code(example, code: str) -> None:
    contract, probe, _ = example
    mutated = copy.deepcopy(probe)
    MUTATIONS[code](mutated)
    codes = _codes(mutated, contract)
    assert code in codes, codes


def test_the_twenty_codes_and_skipped_declaration_checks(example) -> None:
    contract, probe, _ = example
    assert len(QUALIFICATION_FAILURES) == 20 and set(MUTATIONS) == set(QUALIFICATION_FAILURES)
    mutated = copy.deepcopy(probe)
    MUTATIONS["condition-pointer-unwritable"](mutated)
    q = qualify_probe(mutated, None)  # no home operation: the † checks do not run
    assert q.qualified and not q.declaration_checks_ran
    failure = qualify_probe(mutated, resolve_home_operation(contract, mutated["defectSignature"])).failures[0]
    assert failure.artifact_path.startswith("Probe[probeId=P-001].defectSignature.condition.predicate")
