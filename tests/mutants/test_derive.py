"""Deriving a probe for an api or mcp operation (issue 18), from real plan observations.

The plan observations are the corpus's own qualification evidence (``evidence/<probe>/{baseline,
mutant}.json``: the interaction plan run against the clean system and against a hand-planted mutation,
read in place), so the differences are ones a real service and a real tool server produced. A derived
signature is then checked with the *generator's* matcher (evalquality_core/suite/generate.py
``signature_matches``) and the AD-9 gate, not with the code that derived it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalquality_core.mutants.classify import RunOutcome, classify
from evalquality_core.mutants.derive import derive_probe, evidence_differences, evidence_view
from evalquality_core.mutants.generate import generate
from evalquality_core.score.qualification import qualify_probe
from evalquality_core.score.witness import resolve_home_operation
from evalquality_core.suite.generate import signature_matches
from evalquality_core.suite.load import load_suite

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "corpus" / "suites"
#: Any generated mutant: derive_probe reads only its id, description and edit.
MUTANT = generate({"system/x.py": "x = 1\n"}).kept[0]


def _arms(suite: str, probe: str) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    evidence = SUITES / suite / "evidence" / probe
    baseline = json.loads((evidence / "baseline.json").read_text())
    mutated = json.loads((evidence / "mutant.json").read_text())
    killed = sorted(k for k, v in mutated["oracleResolutions"].items() if v == "false" and baseline["oracleResolutions"][k] == "true")
    return {"killed": killed}, baseline["observations"], mutated["observations"]


def _derive(suite: str, probe: str, legs: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]],
            edit: Any = None, killed: list[str] | None = None) -> tuple[Any, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Derive from the evidence's two plan runs plus ``legs`` (id -> request, clean, mutated observation);
    ``edit`` makes the mutated run from a copy of the clean one instead (then ``killed`` names the killers)."""
    core = load_suite(SUITES / suite)
    contract = core.contract
    meta, clean_obs, mutated_obs = _arms(suite, probe)
    if edit is not None:
        mutated_obs = edit(json.loads(json.dumps(clean_obs)))
    steps = {step["stepId"]: step for step in contract["interactionPlan"]}
    clean = {f"plan/{s}": o for s, o in zip(steps, clean_obs, strict=True)}
    mutated = {f"plan/{s}": o for s, o in zip(steps, mutated_obs, strict=True)}
    for leg_id, (_request, clean_leg, mutated_leg) in legs.items():
        clean[leg_id], mutated[leg_id] = clean_leg, mutated_leg
    classification = classify({k: RunOutcome(k, v) for k, v in clean.items()},
                              {k: RunOutcome(k, v) for k, v in mutated.items()}, coverage_known=True)
    assert classification.status == "Observable", classification
    derived = derive_probe(contract, MUTANT, classification, killed or meta["killed"], mutated,
                           {leg_id: request for leg_id, (request, _c, _m) in legs.items()}, steps, core.baseline_steps, clean)
    return derived, contract, clean_obs, mutated_obs


def _signature_checks(contract: dict[str, Any], probe: dict[str, Any], clean_obs: list, mutated_obs: list) -> None:
    signature = probe["defectSignature"]
    assert signature_matches(contract, signature, mutated_obs), signature
    assert signature_matches(contract, signature, clean_obs) == []
    gate = qualify_probe(probe, resolve_home_operation(contract, signature))
    assert not [f.code for f in gate.failures if f.code.startswith(("signature-", "condition-"))]


def _api_leg(revision: str) -> dict[str, Any]:
    return {"kind": "api", "probeId": "leg-a", "interfaceId": "notes-api", "operationId": "patch-note", "status": 200,
            "headers": {"content-type": "application/json", "x-store-revision": revision},
            "body": {"kind": "json", "value": {"ok": True, "note": {"id": "n-1", "title": "Revised"}}}}


def test_the_silent_http_write_gets_an_api_signature_and_a_header_witness() -> None:
    request = {"kind": "api", "interfaceId": "notes-api", "operationId": "patch-note",
               "channels": {"path": {"id": "n-1"}, "query": {}, "header": {}, "body": {"kind": "json", "value": {"title": "Revised"}}}}
    derived, contract, clean_obs, mutated_obs = _derive("notes-api", "P-001", {"leg-a": (request, _api_leg("1"), _api_leg("0"))})
    assert derived.probe is not None, derived.reason
    probe = derived.probe
    signature = probe["defectSignature"]
    # The hand-written P-001 plants the same defect on B-001, whose only oracle is O-001.
    assert probe["behaviorId"] == "B-001"
    assert (signature["interfaceKind"], signature["method"], signature["pathTemplate"]) == ("api", "PATCH", "/notes/{id}")
    # Headers come before the body; the x-store-revision header is the smallest difference of a write.
    assert signature["observableChannel"] == "response-headers"
    assert signature["condition"]["predicate"]["operands"] == [
        {"pointer": "/interactions/observed/response-headers/x-store-revision"}, {"literal": "0"}]
    _signature_checks(contract, probe, clean_obs, mutated_obs)
    witness = probe["defects"][0]["manifestationWitness"]
    assert witness["inputs"] == request["channels"]
    assert witness["relation"]["operands"] == [
        {"pointer": f"/interactions/{MUTANT.mutant_id}-witness/response-headers/x-store-revision"}, {"literal": "0"}]


def test_a_dropped_tool_error_flag_is_read_as_response_status() -> None:
    """notes-tools P-002's mutation drops ``isError`` on a malformed create: the record's
    ``responseStatus`` goes 1 -> 0 (preflight-adapter.md §2.2), the smallest difference."""
    def tool_leg(is_error: bool) -> dict[str, Any]:
        return {"kind": "mcp", "probeId": "leg-t", "interfaceId": "notes-tool-server", "operationId": "create-note",
                "isError": is_error, "result": {"kind": "json", "value": {"ok": not is_error}}}

    request = {"kind": "mcp", "interfaceId": "notes-tool-server", "operationId": "create-note", "channels": {"arguments": {"title": 42}}}
    derived, contract, clean_obs, mutated_obs = _derive("notes-tools", "P-002", {"leg-t": (request, tool_leg(True), tool_leg(False))})
    assert derived.probe is not None, derived.reason
    signature = derived.probe["defectSignature"]
    assert (signature["interfaceKind"], signature["toolName"]) == ("mcp", "create_note") and "method" not in signature
    assert signature["condition"]["predicate"]["operands"] == [{"pointer": "/interactions/observed/response-status"}, {"literal": 0}]
    # The selector is the malformed step's own binding, so the clean well-formed create (status 0 too) is not matched.
    assert signature["condition"]["selector"]["inputBinding"]["arguments"] == {"title": {"matcher": "type-violating"}}
    _signature_checks(contract, derived.probe, clean_obs, mutated_obs)
    relation = derived.probe["defects"][0]["manifestationWitness"]["relation"]
    assert relation["operands"][1] == {"literal": 0} and relation["operands"][0]["pointer"].endswith("/response-status")


def test_evidence_view_reads_a_leg_as_its_witness_evidence() -> None:
    mcp = {"kind": "mcp", "isError": True, "result": {"kind": "json", "value": {"ok": False, "at": "t1"}}}
    assert evidence_view(mcp, ["/at"]) == {"responseStatus": 1, "exitCode": None, "responseBody": {"ok": False}}
    api = {"kind": "api", "status": 404, "headers": {"x": "1"}, "body": {"kind": "text", "value": "gone"}}
    assert evidence_view(api) == {"responseStatus": 404, "responseHeaders": {"x": "1"}, "responseBody": "gone"}
    # A removed member has no mutated value; a volatile one is not evidence at all.
    before = evidence_view({**mcp, "result": {"kind": "json", "value": {"ok": False, "gone": 1, "at": "t1"}}}, ["/at"])
    after = evidence_view({**mcp, "result": {"kind": "json", "value": {"ok": True, "at": "t2"}}}, ["/at"])
    assert [(d.channel, d.pointer, d.value) for d in evidence_differences("leg", before, after)] == [("response-body", "/ok", True)]


def test_an_undeclared_key_or_an_empty_collection_is_refused_with_its_reason() -> None:
    """The read-back search (notes-tools) answers under ``XXokXX`` instead of the declared ``ok``, or with
    an empty ``matches``: neither gives a signature that could qualify, and the reason names why."""
    def renamed(observations: list[dict[str, Any]]) -> list[dict[str, Any]]:
        body = observations[4]["responseBody"]
        body["XXokXX"] = body.pop("ok")
        return observations

    def emptied(observations: list[dict[str, Any]]) -> list[dict[str, Any]]:
        observations[4]["responseBody"]["matches"] = []
        return observations

    def tool_leg(ok_key: str) -> dict[str, Any]:
        return {"kind": "mcp", "probeId": "leg-s", "interfaceId": "notes-tool-server", "operationId": "search-notes",
                "isError": False, "result": {"kind": "json", "value": {ok_key: True, "matches": [], "totalCount": 0}}}

    request = {"kind": "mcp", "interfaceId": "notes-tool-server", "operationId": "search-notes", "channels": {"arguments": {"query": "zzz"}}}
    legs = {"leg-s": (request, tool_leg("ok"), tool_leg("XXokXX"))}
    unwritable = _derive("notes-tools", "P-001", legs, renamed, ["O-004"])[0]
    assert unwritable.probe is None
    assert "condition-pointer-unwritable" in unwritable.reason and "XXokXX" in unwritable.reason, unwritable.reason
    # An empty collection resolves insufficient-evidence, never true: no equality on it can match.
    empty = _derive("notes-tools", "P-001", legs, emptied, ["O-004"])[0]
    assert empty.probe is None
    assert "/matches: its predicate does not resolve true on the mutated step" in empty.reason, empty.reason
