"""8.0.0 (issue 11): a ``*`` segment in an operation's ``volatilePointers`` and ``stateResetPointers``.

Which stamp carries what (README versions table): ``stateResetPointers`` is an optional key of contract 7
(8.0.0 came with no new stamp; the reference's stored contract-7 files lack it) and is refused at 4 to 6;
``*`` matches any one key or index at its depth at every stamp. No stored contract declares either
(latest/README.md), so the documents here are the reference's stored ones with the field added; the
compile cases mirror the reference's own test of the rule (which entries it refuses, code, path, wording).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.artifacts.schemas import generate_schemas
from evalquality_core.canonical import serialize_artifact
from evalquality_core.compile.pipeline import compile_contract
from evalquality_core.faults import RuntimeFault, StructuralFailure
from evalquality_core.preflight.plan import plan_preflight
from evalquality_core.preflight.projection import (
    covering_pointer,
    prune_body,
    select_values,
    state_reset_projection,
)
from evalquality_core.preflight.reduce import reduce_preflight_wire
from evalquality_core.seal.seal import seal_contract
from tests.conftest import CONFORMANCE

SATISFIED_7 = "latest/corpus-dev/contracts/satisfied-declarations.json"
TOOL_SERVER_7 = "latest/corpus-dev/contracts/notes-tool-server.json"
CHAIN_7 = "latest/chains/skill-defect"
CHAIN_5 = "chains/skill-defect"


def _load(relative: str) -> Any:
    path = CONFORMANCE / relative
    if not path.is_file():
        pytest.skip(f"conformance data absent: {path}")
    return json.loads(path.read_text(encoding="utf-8"))


def _operation(contract: dict[str, Any], operation_id: str) -> dict[str, Any]:
    return next(op for i in contract["permittedInterfaces"] for op in i["operations"] if op["operationId"] == operation_id)


def _json(value: Any) -> dict[str, Any]:
    return {"kind": "json", "value": value}


# ---- the pointer rule: `*` at a key depth, an index depth, nested, no match ------------------------

BODY = {
    "items": [{"id": 1, "at": "x", "tags": {"a": 1, "b": 2}}, {"id": 2, "at": "y", "tags": {}}],
    "meta": {"first": {"n": 1, "t": "p"}, "second": {"n": 2, "t": "q"}, "*": {"n": 3}},
    "at": "z",
}


def test_a_wildcard_at_an_index_depth_prunes_every_element() -> None:
    assert prune_body(_json(BODY), ["/items/*/at"])["value"]["items"] == [
        {"id": 1, "tags": {"a": 1, "b": 2}},
        {"id": 2, "tags": {}},
    ]
    assert prune_body(_json(BODY), ["/items/*"])["value"]["items"] == []
    assert prune_body(_json(BODY), ["/items/1"])["value"]["items"] == [BODY["items"][0]]  # a literal index: one


def test_a_wildcard_at_a_key_depth_prunes_every_key_the_literal_star_included() -> None:
    assert prune_body(_json(BODY), ["/meta/*/t"])["value"]["meta"] == {"first": {"n": 1}, "second": {"n": 2}, "*": {"n": 3}}
    assert prune_body(_json(BODY), ["/meta/*"])["value"]["meta"] == {}
    assert BODY["meta"]["first"] == {"n": 1, "t": "p"}  # worked on a clone


def test_nested_wildcards_and_no_match() -> None:
    assert [v["items"][0]["tags"] for v in [prune_body(_json(BODY), ["/items/*/tags/*"])["value"]]] == [{}]
    assert prune_body(_json(BODY), ["/nothing/*/x", "/at/*", "/items/9/*"]) == _json(BODY)  # resolves to nothing
    assert prune_body({"kind": "text", "value": "t"}, ["/*"]) == {"kind": "text", "value": "t"}
    assert dict(select_values(BODY, ("items", "*", "tags", "*"))) == {"/items/0/tags/a": 1, "/items/0/tags/b": 2}
    assert dict(select_values(BODY, ("meta", "*", "n"))) == {"/meta/first/n": 1, "/meta/second/n": 2, "/meta/*/n": 3}
    assert dict(select_values(BODY, ("items", "*", "missing"))) == {}
    assert dict(select_values(BODY, ("at", "*"))) == {}  # a scalar has no children


def test_covering_is_one_rule_for_compile_and_preflight() -> None:
    assert covering_pointer("/items/0/at", ["/items/*/at"]) == "/items/*/at"
    assert covering_pointer("/items/*/at/zone", ["/x", "/items/*/at"]) == "/items/*/at"
    assert covering_pointer("/items/*", ["/items/0"]) is None  # every element is not covered by one
    assert covering_pointer("/items", ["/items/*"]) is None  # above the volatile pointer: the rest compares
    assert covering_pointer("/anything", [""]) == ""


# ---- the stamp that carries stateResetPointers -----------------------------------------------------


def _with_reset_pointers(document: dict[str, Any]) -> dict[str, Any]:
    """Every operation of the document lists a state-reset pointer to a required response key it does not prune."""
    document = copy.deepcopy(document)
    for interface in document["permittedInterfaces"]:
        for op in interface["operations"]:
            keys = [f"/{key}" for key in op["responseDescriptor"]["requiredKeys"]]
            op["stateResetPointers"] = [next(k for k in keys if covering_pointer(k, op["volatilePointers"]) is None)]
    return document


@pytest.mark.parametrize(
    "relative", [SATISFIED_7, TOOL_SERVER_7, f"{CHAIN_7}/eval-contract.json"], ids=["api", "mcp", "cli"]
)
def test_contract_7_reads_and_writes_state_reset_pointers_byte_for_byte(relative: str) -> None:
    """Every operation form (api, cli, mcp tool call) carries the key at 7; compile gives the bytes back."""
    document = _with_reset_pointers(_load(relative))
    raw = serialize_artifact(document)
    compiled = compile_contract(raw)
    assert serialize_artifact(to_wire(compiled)) == raw
    operations = [op for interface in compiled.permitted_interfaces for op in interface.operations]
    assert all(op.state_reset_pointers for op in operations)


@pytest.mark.parametrize("pointers", [[], [""], ["/*"], ["/items/*/id"]], ids=["empty", "whole", "star", "nested"])
def test_contract_7_accepts_the_empty_list_the_whole_body_and_wildcards(pointers: list[str]) -> None:
    document = _load(SATISFIED_7)
    _operation(document, "list-things")["stateResetPointers"] = pointers
    assert to_wire(compile_contract(document)) == document


@pytest.mark.parametrize("stamp", [4, 5, 6, 7])
def test_a_contract_without_the_key_round_trips_without_it_at_every_stamp(stamp: int) -> None:
    """Byte-equal at every stamp: the absent key is not written back as null."""
    relative = {4: "corpus-dev/contracts/satisfied-declarations.json", 5: f"{CHAIN_5}/eval-contract.json"}
    document = _load(relative.get(stamp, f"{CHAIN_7}/eval-contract.json"))
    document["schemaVersion"] = stamp
    raw = serialize_artifact(document)
    wire = to_wire(read_artifact(EvalContract, document))
    assert serialize_artifact(wire) == raw
    assert "stateResetPointers" not in json.dumps(wire)


@pytest.mark.parametrize("stamp", [4, 5, 6])
def test_older_stamps_refuse_state_reset_pointers(stamp: int) -> None:
    relative = {4: "corpus-dev/contracts/satisfied-declarations.json", 5: f"{CHAIN_5}/eval-contract.json"}
    document = _load(relative.get(stamp, f"{CHAIN_7}/eval-contract.json"))
    document["schemaVersion"] = stamp
    document["permittedInterfaces"][0]["operations"][0]["stateResetPointers"] = []
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(EvalContract, document)
    assert caught.value.code == "schema-parse-failure"
    assert (
        f"permittedInterfaces[0].operations[0].stateResetPointers is not a key at schemaVersion {stamp}"
        in caught.value.detail
    )


def test_a_null_state_reset_pointers_is_refused() -> None:
    document = _load(SATISFIED_7)
    _operation(document, "list-things")["stateResetPointers"] = None
    with pytest.raises(RuntimeFault) as caught:
        read_artifact(EvalContract, document)
    assert "leave the key off instead of null" in caught.value.detail


def test_the_published_schemas_follow_the_stamp() -> None:
    """The newest schema admits the key (optional, a list); the v6 schema refuses it."""
    schemas = generate_schemas()
    newest, v6 = schemas["eval-contract.schema.json"], schemas["eval-contract.v6.schema.json"]
    document = _load(SATISFIED_7)
    jsonschema.validate(document, newest)  # absent is fine
    _operation(document, "list-things")["stateResetPointers"] = ["/items/*/id"]
    jsonschema.validate(document, newest)
    _operation(document, "list-things")["stateResetPointers"] = None
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, newest)
    older = _load(SATISFIED_7)
    older["schemaVersion"] = 6
    jsonschema.validate(older, v6)
    _operation(older, "list-things")["stateResetPointers"] = []
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(older, v6)


def test_the_brief_does_not_carry_state_reset_pointers() -> None:
    """Operation inventories are excluded from the brief (artifacts.md §4): only the contract digest moves."""
    plain = to_wire(seal_contract(_load(SATISFIED_7)))
    declared = to_wire(seal_contract(_with_reset_pointers(_load(SATISFIED_7))))
    assert {k: v for k, v in declared.items() if k != "contractDigest"} == {
        k: v for k, v in plain.items() if k != "contractDigest"
    }


# ---- compile (#34): an entry that would compare nothing --------------------------------------------


def _compile_fault(mutate: Any) -> StructuralFailure:
    document = _load(SATISFIED_7)
    mutate(document)
    with pytest.raises(StructuralFailure) as caught:
        compile_contract(document)
    return caught.value


def test_compile_refuses_a_pointer_a_volatile_pointer_covers_and_names_it() -> None:
    fault = _compile_fault(lambda c: _operation(c, "create-thing").update(stateResetPointers=["/id"]))
    assert (fault.code, fault.artifact_path) == (
        "unreachable-check-evidence",
        "EvalContract.permittedInterfaces[0].operations[0].stateResetPointers[0]",
    )
    assert '"/id", which the operation declares volatile' in fault.detail


def test_compile_reads_a_wildcard_volatile_pointer_as_covering_what_lies_under_it() -> None:
    fault = _compile_fault(lambda c: _operation(c, "create-thing").update(volatilePointers=["/*"], stateResetPointers=["/ok"]))
    assert fault.code == "unreachable-check-evidence"
    assert '"/*", which the operation declares volatile' in fault.detail


def test_compile_leaves_a_pointer_above_a_volatile_one_alone() -> None:
    document = _load(SATISFIED_7)
    _operation(document, "list-things").update(volatilePointers=["/items/*"], stateResetPointers=["/items"])
    compile_contract(document)


def test_compile_refuses_a_pointer_the_descriptor_cannot_reach() -> None:
    fault = _compile_fault(lambda c: _operation(c, "list-things").update(stateResetPointers=["/no-such-key/deep"]))
    assert fault.artifact_path == "EvalContract.permittedInterfaces[0].operations[1].stateResetPointers[0]"
    assert "compares nothing" in fault.detail
    fault = _compile_fault(lambda c: _operation(c, "create-thing").update(volatilePointers=[], stateResetPointers=["/ok/x"]))
    assert 'descends into response key "ok"' in fault.detail  # declared boolean: nothing below it


def test_compile_refuses_a_wildcard_with_nothing_to_descend_through() -> None:
    """``/*/x`` on an operation whose declared keys are all scalars reaches nothing."""
    fault = _compile_fault(lambda c: _operation(c, "create-thing").update(volatilePointers=[], stateResetPointers=["/*/x"]))
    assert "compares nothing" in fault.detail
    document = _load(SATISFIED_7)
    _operation(document, "create-thing").update(volatilePointers=[], stateResetPointers=["/*"])
    compile_contract(document)  # one level: every declared key


# ---- pre-flight: what the state-reset check compares -----------------------------------------------


def _chain(relative: str) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    contract = _load(f"{relative}/eval-contract.json")
    descriptor = contract["permittedInterfaces"][0]["operations"][0]["responseDescriptor"]
    descriptor["permittedKeys"] = [*descriptor["permittedKeys"], "meta"]  # a second, nested key to compare
    return (
        contract,
        _load(f"{relative}/probe.json"),
        _load(f"{relative}/reconstructed-inputs/preflight-observations.json"),
    )


def _state_reset(contract: dict[str, Any], probe: dict[str, Any], observations: list[dict[str, Any]]) -> dict[str, Any]:
    verdict = reduce_preflight_wire(plan_preflight(contract, [probe], "r"), observations)
    return next(check for check in verdict["checks"] if check["kind"] == "state-reset")


def _observe(observations: list[dict[str, Any]], first: dict[str, Any], last: dict[str, Any]) -> None:
    """Set the stdout of the first and the last control-observe leg."""
    by_leg = {o["probeId"]: o for o in observations}
    by_leg["preflight-control-observe"]["stdout"] = _json(first)
    by_leg["preflight-control-observe-2"]["stdout"] = _json(last)


SELECTED = ["api-rules", "timing-rules"]


@pytest.mark.parametrize(
    ("pointers", "last", "outcome"),
    [
        # no pointers: the whole projection, so a field outside anything listed still fails
        (None, {"selected": SELECTED, "meta": {"a": {"n": 1, "t": "later"}}}, "failed"),
        ([], {"selected": SELECTED, "meta": {"a": {"n": 1, "t": "later"}}}, "failed"),
        # key depth: `/meta/*/n` compares every key's n and nothing else
        (["/selected", "/meta/*/n"], {"selected": SELECTED, "meta": {"a": {"n": 1, "t": "later"}}}, "satisfied"),
        (["/selected", "/meta/*/n"], {"selected": SELECTED, "meta": {"a": {"n": 2, "t": "now"}}}, "failed"),
        (["/meta/*/n"], {"selected": SELECTED, "meta": {"a": {"n": 1}, "b": {"n": 5}}}, "failed"),  # a new key
        # index depth: `/selected/*` is every element, `/selected/0` only the first
        (["/selected/0"], {"selected": ["api-rules", "other"], "meta": {"a": {"n": 1, "t": "now"}}}, "satisfied"),
        (["/selected/*"], {"selected": ["api-rules", "other"], "meta": {"a": {"n": 1, "t": "now"}}}, "failed"),
        # no match on either side compares equal; a field gone on one side, or null for a value, does not
        (["/meta/*/missing"], {"selected": [], "meta": {"a": {"n": 9}}}, "satisfied"),
        (["/meta/a/t"], {"selected": SELECTED, "meta": {"a": {"n": 1}}}, "failed"),
        (["/meta/a/t"], {"selected": SELECTED, "meta": {"a": {"n": 1, "t": None}}}, "failed"),
    ],
    ids=[
        "absent-whole", "empty-whole", "key-depth-other-field", "key-depth-differs", "key-depth-new-key",
        "index-literal", "index-star", "no-match", "gone", "null",
    ],
)
def test_the_state_reset_check_compares_only_the_listed_values(
    pointers: list[str] | None, last: dict[str, Any], outcome: str
) -> None:
    contract, probe, observations = _chain(CHAIN_7)
    if pointers is not None:
        contract["permittedInterfaces"][0]["operations"][0]["stateResetPointers"] = pointers
    compile_contract(contract)  # the variant is a valid contract 7
    _observe(observations, {"selected": SELECTED, "meta": {"a": {"n": 1, "t": "now"}}}, last)
    assert _state_reset(contract, probe, observations)["outcome"] == outcome


def test_the_exit_code_is_compared_even_when_every_listed_value_agrees() -> None:
    contract, probe, observations = _chain(CHAIN_7)
    contract["permittedInterfaces"][0]["operations"][0]["stateResetPointers"] = ["/selected"]
    _observe(observations, {"selected": SELECTED}, {"selected": SELECTED})
    next(o for o in observations if o["probeId"] == "preflight-control-observe-2")["exitCode"] = 1
    assert _state_reset(contract, probe, observations)["note"] == (
        'the projections of "preflight-control-observe" and "preflight-control-observe-2" differ'
    )


def test_state_reset_pointers_read_the_pruned_body_and_only_the_state_reset_check_reads_them() -> None:
    contract, probe, observations = _chain(CHAIN_7)
    operation = contract["permittedInterfaces"][0]["operations"][0]
    operation.update(volatilePointers=["/meta/*/t"], stateResetPointers=["/meta"])
    compile_contract(contract)
    projection = {"legId": "x", "status": None, "body": prune_body(_json({"meta": {"a": {"n": 1, "t": "now"}}}), ["/meta/*/t"])}
    assert state_reset_projection(projection, operation)["body"] == {"/meta": {"/meta": {"a": {"n": 1}}}}
    _observe(observations, {"selected": SELECTED, "meta": {"a": {"n": 1, "t": "now"}}}, {"selected": [], "meta": {"a": {"n": 1, "t": "later"}}})
    assert _state_reset(contract, probe, observations)["outcome"] == "satisfied"  # /selected is not listed


def test_a_wildcard_volatile_pointer_is_read_at_an_older_stamp_too() -> None:
    """Contract 5 (no stateResetPointers): a ``*`` in volatilePointers still fans out, so the reset holds."""
    contract, probe, observations = _chain(CHAIN_5)
    assert contract["schemaVersion"] == 5
    contract["permittedInterfaces"][0]["operations"][0]["volatilePointers"] = ["/meta/*/t"]
    compile_contract(contract)
    _observe(observations, {"selected": SELECTED, "meta": {"a": {"n": 1, "t": "now"}}}, {"selected": SELECTED, "meta": {"a": {"n": 1, "t": "later"}}})
    assert _state_reset(contract, probe, observations)["outcome"] == "satisfied"
    contract["permittedInterfaces"][0]["operations"][0]["volatilePointers"] = ["/meta/a/n"]
    assert _state_reset(contract, probe, observations)["outcome"] == "failed"  # t still differs


def test_the_state_reset_check_through_the_cli(tmp_path: Path) -> None:
    """``eval-quality preflight`` over stored observations: the listed pointers decide the verdict."""
    import subprocess
    import sys

    contract, probe, observations = _chain(CHAIN_7)
    contract["permittedInterfaces"][0]["operations"][0]["stateResetPointers"] = ["/selected/*"]
    _observe(observations, {"selected": SELECTED, "meta": {"t": 1}}, {"selected": SELECTED, "meta": {"t": 2}})
    files = {"contract.json": contract, "probe.json": probe, "observations.json": observations}
    for name, value in files.items():
        (tmp_path / name).write_text(json.dumps(value), encoding="utf-8")
    argv = [sys.executable, "-m", "evalquality_core", "preflight", "--contract", "contract.json", "--probes", "probe.json",
            "--observations", "observations.json", "--run-id", "r", "--out", "verdict.json"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    verdict = json.loads((tmp_path / "verdict.json").read_text(encoding="utf-8"))
    assert next(c for c in verdict["checks"] if c["kind"] == "state-reset")["outcome"] == "satisfied"
