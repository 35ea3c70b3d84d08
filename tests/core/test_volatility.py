"""Issue 34: volatile parts of an answer (``preflight/volatility.py``): what the determinism check
compares, and how it names the step and the field that differed."""

from __future__ import annotations

from typing import Any

from evalquality_core.preflight.volatility import (
    first_difference,
    stable_observation,
    without_volatile_headers,
)

OPERATION = {"operationId": "create-post", "volatilePointers": ["/id", "/items/*/stamp"],
             "volatileHeaders": ["Date", "ETag"]}
OPERATIONS = {"create-post": OPERATION}


def answer(*, date: str = "Thu, 03 Dec 2026 15:00:00 GMT", etag: str = 'W/"1"', post_id: str = "aaaaaaa",
           stamp: str = "s1", title: str = "Groceries", request_id: str = "r-1") -> dict[str, Any]:
    return {"observationId": "obs-001", "operationId": "create-post", "responseStatus": 201,
            "responseHeaders": {"date": date, "ETAG": etag, "x-request-id": request_id},
            "responseBody": {"id": post_id, "title": title, "items": [{"stamp": stamp, "n": 1}]}}


def test_differences_only_in_declared_volatile_parts_are_no_difference() -> None:
    first = [answer()]
    second = [answer(date="Thu, 03 Dec 2026 15:00:07 GMT", etag='W/"2"', post_id="bbbbbbb", stamp="s2")]
    assert first_difference(first, second, OPERATIONS, ["create"]) is None


def test_an_undeclared_header_is_named_by_step_and_header() -> None:
    difference = first_difference([answer()], [answer(request_id="r-2")], OPERATIONS, ["create"])
    assert difference is not None
    assert difference.sentence() == 'step "create" answered differently at response header "x-request-id"'


def test_an_undeclared_body_field_is_named_by_its_json_pointer() -> None:
    difference = first_difference([answer()], [answer(title="Other")], OPERATIONS, ["create"])
    assert difference is not None and (difference.step, difference.field) == ("create", "response-body /title")
    # Without the declaration the generated id is the first difference (keys compared in order).
    bare = {"create-post": {"operationId": "create-post", "volatilePointers": []}}
    difference = first_difference([answer()], [answer(post_id="bbbbbbb")], bare, ["create"])
    assert difference is not None and difference.field == "response-body /id"


def test_a_missing_observation_names_its_step_and_the_observation_id_stands_in_for_a_missing_step() -> None:
    difference = first_difference([answer(), answer()], [answer()], OPERATIONS, ["create"])
    assert difference is not None and difference.step == "obs-001" and "presence" in difference.field


def test_stable_observation_removes_headers_case_insensitively_and_prunes_wildcards_on_a_copy() -> None:
    raw = answer()
    stable = stable_observation(raw, OPERATION)
    assert stable["responseHeaders"] == {"x-request-id": "r-1"}
    assert stable["responseBody"] == {"title": "Groceries", "items": [{"n": 1}]}
    assert raw["responseBody"]["id"] == "aaaaaaa" and "date" in raw["responseHeaders"]  # untouched
    assert without_volatile_headers(None, OPERATION) is None
    whole = stable_observation(raw, {"operationId": "create-post", "volatilePointers": [""]})
    assert whole["responseBody"] is None


def test_a_command_prunes_its_described_stream() -> None:
    command = {"operationId": "get", "volatilePointers": ["/at"], "descriptorChannel": {"kind": "stream", "channel": "stdout"}}
    observation = {"observationId": "obs-001", "operationId": "get", "responseHeaders": None, "responseBody": None,
                   "stdout": {"kind": "json", "value": {"at": "12:00", "ok": True}}}
    assert stable_observation(observation, command)["stdout"] == {"kind": "json", "value": {"ok": True}}


def test_generate_keeps_stored_evidence_that_differs_only_in_volatile_parts(tmp_path) -> None:
    """``suite generate`` writes the stored evidence bytes back when the new run differs only where
    declared volatile, and the new bytes when anything else (an answer, a resolution) moved."""
    from evalquality_core.suite.generate import pretty, settled_evidence

    contract = {"permittedInterfaces": [{"operations": [OPERATION]}]}
    stored = {"designatedResolution": "true", "observations": [answer()]}
    path = tmp_path / "baseline.json"
    path.write_bytes(pretty(stored))
    volatile_only = {"designatedResolution": "true", "observations": [answer(date="later", etag='W/"9"', post_id="zzzzzzz")]}
    assert settled_evidence(path, volatile_only, contract) == path.read_bytes()
    moved = {"designatedResolution": "true", "observations": [answer(title="Other")]}
    assert settled_evidence(path, moved, contract) == pretty(moved)
    verdict_moved = {"designatedResolution": "false", "observations": [answer(date="later")]}
    assert settled_evidence(path, verdict_moved, contract) == pretty(verdict_moved)
    assert settled_evidence(tmp_path / "absent.json", moved, contract) == pretty(moved)
    path.write_text("not json")
    assert settled_evidence(path, moved, contract) == pretty(moved)


def test_pre_flight_evidence_leaves_out_volatile_headers_only() -> None:
    """The evidence a witness is resolved over and the clean-leg drop digests (preflight-adapter.md
    §2.2/§2.4) carries the raw headers minus the declared volatile ones (names matched in any case)."""
    from evalquality_core.preflight.plan import PlannedLeg
    from evalquality_core.preflight.projection import project
    from evalquality_core.preflight.reduce import evidence_of

    operation = {"operationId": "create-post", "volatilePointers": ["/id"], "volatileHeaders": ["date", "ETag"]}
    leg = PlannedLeg("leg-a", "control", "posts", "create-post", "api", {}, operation, {"body": None}, "here")
    observation = {"kind": "api", "probeId": "leg-a", "interfaceId": "posts", "operationId": "create-post", "status": 201,
                   "headers": {"Date": "now", "etag": 'W/"1"', "Content-Type": "application/json"},
                   "body": {"kind": "json", "value": {"id": "x1", "title": "t"}}}
    evidence = evidence_of(leg, observation, project(observation, operation))
    assert evidence["responseHeaders"] == {"Content-Type": "application/json"}
    assert evidence["responseBody"] == {"title": "t"} and evidence["responseStatus"] == 201
