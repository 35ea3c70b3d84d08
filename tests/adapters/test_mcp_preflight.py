"""Pre-flight of a tool-server contract end to end: plan mcp legs (preflight-adapter.md §1.6), answer
each through the stdio adapter against the notes-tools suite's real server in a fresh staged
workspace, reduce (§2: the ``toolError`` projection, ``responseStatus`` 1/0, isError as a control
anomaly). The contract is the reference's ``notes-tool-server``."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.adapters.mcp_stdio import McpStdioAdapter
from evalquality_core.faults import StructuralFailure
from evalquality_core.preflight.plan import CONTRACT_SCHEMA_VERSIONS, plan_preflight
from evalquality_core.preflight.projection import project
from evalquality_core.preflight.reduce import evidence_of, reduce_preflight_wire
from evalquality_core.probe.targets import parse_targets

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "corpus" / "suites" / "notes-tools"
REFERENCE = ROOT.parent / "shared" / "conformance" / "latest" / "corpus-dev" / "contracts" / "notes-tool-server.json"


def reference_contract() -> dict[str, Any]:
    if not REFERENCE.exists():
        pytest.skip(f"the reference conformance data is absent ({REFERENCE})")
    contract = json.loads(REFERENCE.read_text(encoding="utf-8"))
    # Planning reads the wire shape; the stamp is set to the newest one the planner reads, so this
    # test does not depend on which contract stamps are read (a separate concern).
    return {**contract, "schemaVersion": max(CONTRACT_SCHEMA_VERSIONS)}


def mutation_for(probe_id: str) -> dict[str, Any]:
    """The suite's declared mutation for a probe (``mutations/*.json``)."""
    for path in sorted((SUITE / "mutations").glob("*.json")):
        declared = json.loads(path.read_text(encoding="utf-8"))
        if declared["probeId"] == probe_id:
            return declared
    raise AssertionError(f"no mutation for {probe_id}")


def stage(destination: Path, mutation: dict[str, Any] | None = None) -> Path:
    """A workspace as the suite's staging lays it out (system/ beside work/, the fixture in work/),
    staged by hand so these tests check the server and the adapter, not the staging code."""
    shutil.copytree(SUITE / "system", destination / "system")
    shutil.copytree(SUITE / "fixtures" / "alpha-beta-notes", destination / "work")
    if mutation is not None:
        target = destination / mutation["target"]
        text = target.read_text(encoding="utf-8")
        assert text.count(mutation["find"]) == 1
        target.write_text(text.replace(mutation["find"], mutation["replace"]), encoding="utf-8")
    return destination


def adapter() -> McpStdioAdapter:
    registry = parse_targets((SUITE / "targets.toml").read_text(encoding="utf-8"), "targets.toml")
    return McpStdioAdapter(registry.to_mcp_policy({"python": sys.executable}))


def test_mcp_legs_carry_the_tool_name_and_the_arguments_channel() -> None:
    plan = plan_preflight(reference_contract(), [], "run-1")
    assert [(leg.leg_id, leg.purpose) for leg in plan.legs] == [
        ("leg-first-query", "sensitivity"),
        ("leg-second-query", "sensitivity"),
        ("leg-first-title", "sensitivity"),
        ("leg-second-title", "sensitivity"),
        ("preflight-control-observe", "control-observe"),
        ("preflight-control-mutate", "control-mutate"),
        ("reset-notes", "control-reset"),
        ("preflight-control-observe-2", "control-observe"),
    ]
    assert plan.legs[0].request == {
        "kind": "mcp", "probeId": "leg-first-query", "interfaceId": "notes-tool-server",
        "operationId": "search-notes", "toolName": "search_notes", "channels": {"arguments": {"query": "alpha"}},
    }
    assert plan.legs[6].request["toolName"] == "create_note"
    assert plan.legs[6].request["channels"] == {"arguments": {"title": "the clean fixture"}}


def test_command_channels_on_a_tool_call_are_refused() -> None:
    contract = reference_contract()
    operation = contract["permittedInterfaces"][0]["operations"][0]
    operation["sensitivityWitness"]["legs"][0]["inputs"] = {"argument": {"query": "alpha"}}
    with pytest.raises(StructuralFailure) as caught:
        plan_preflight(contract, [], "run-1")
    assert caught.value.code == "undeclared-mandatory-input"
    assert caught.value.detail == "supplies command or transport channels to an operation that calls a tool"


def answer_every_leg(plan: Any, tmp_path: Path, mutation: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    observations = []
    port = adapter()
    for index, leg in enumerate(plan.legs):
        workspace = stage(tmp_path / f"leg-{index}", mutation)
        observation = port.probe(dict(leg.request), workdir=workspace)
        observations.append(observation.model_dump(mode="json", by_alias=True))
    return observations


def test_the_reference_contract_preflights_clean_against_the_live_tool_server(tmp_path: Path) -> None:
    plan = plan_preflight(reference_contract(), [], "run-1")
    observations = answer_every_leg(plan, tmp_path)
    verdict = reduce_preflight_wire(plan, observations)
    assert verdict["passed"], verdict["checks"]
    assert [(c["kind"], c["operationId"], c["outcome"]) for c in verdict["checks"]] == [
        ("interface-present", "search-notes", "satisfied"),
        ("interface-present", "create-note", "satisfied"),
        ("input-sensitivity", "search-notes", "satisfied"),
        ("input-sensitivity", "create-note", "satisfied"),
        ("state-reset", None, "satisfied"),
        ("clean-control", None, "satisfied"),
    ]
    # The mcp projection and evidence: toolError from isError, responseStatus 1/0, no headers.
    first = plan.legs[0]
    projection = project(observations[0], first.operation)
    assert (projection["toolError"], projection["status"], projection["exitCode"]) == (False, None, None)
    evidence = evidence_of(first, observations[0], projection)
    assert (evidence["responseStatus"], evidence["responseHeaders"]) == (0, None)
    assert evidence["callInputs"]["arguments"] == {"query": "alpha"}
    assert evidence["responseBody"]["matches"] == [{"noteId": "n-1", "title": "Alpha launch"}]


def test_a_tool_error_on_a_control_leg_is_an_anomaly(tmp_path: Path) -> None:
    contract = reference_contract()
    contract["fixtureReset"]["inputs"] = {"arguments": {"title": 42}}  # refused: isError true
    plan = plan_preflight(contract, [], "run-1")
    reset_index = [leg.purpose for leg in plan.legs].index("control-reset")
    observation = adapter().probe(dict(plan.legs[reset_index].request), workdir=stage(tmp_path / "reset"))
    assert observation.is_error is True
    assert project(observation.model_dump(mode="json", by_alias=True), plan.legs[reset_index].operation)["toolError"] is True


def test_the_silent_write_answers_success_and_files_nothing(tmp_path: Path) -> None:
    """The seeded mutation keeps its promise: create_note says ok, a read-back finds nothing."""
    mutation = mutation_for("P-001")
    assert mutation["operator"] == "store-write-deletion"
    workspace = stage(tmp_path / "ws", mutation)
    port = adapter()

    def call(tool: str, arguments: dict[str, Any]) -> Any:
        request = {"kind": "mcp", "probeId": "leg", "interfaceId": "notes-tool-server", "operationId": "op",
                   "toolName": tool, "channels": {"arguments": arguments}}
        return port.probe(request, workdir=workspace).model_dump(mode="json", by_alias=True)

    created = call("create_note", {"title": "a new note"})
    assert created["isError"] is False and created["result"]["value"]["ok"] is True
    found = call("search_notes", {"query": created["result"]["value"]["noteId"]})
    assert found["result"]["value"]["totalCount"] == 0


def test_the_dropped_error_flag_reports_success_on_a_refusal(tmp_path: Path) -> None:
    """The second seeded mutation: a malformed title is answered ok with isError unset."""
    port = adapter()
    request = {"kind": "mcp", "probeId": "leg", "interfaceId": "notes-tool-server", "operationId": "op",
               "toolName": "create_note", "channels": {"arguments": {"title": 42}}}
    clean = port.probe(request, workdir=stage(tmp_path / "clean")).model_dump(mode="json", by_alias=True)
    assert (clean["isError"], clean["result"]["value"]) == (True, {"ok": False})
    mutation = mutation_for("P-002")
    mutated = port.probe(request, workdir=stage(tmp_path / "mutated", mutation)).model_dump(mode="json", by_alias=True)
    assert (mutated["isError"], mutated["result"]["value"]) == (False, {"ok": True, "noteId": ""})
