"""The reference evaluator runs a tool-server plan: each step a tool call through the suite's router
(captured arguments resolved from earlier answers), each answer a sealed-run-record observation
(result → responseBody, isError → responseStatus 1/0), and judges the reference notes-tool-server
contract: clean holds every oracle, the silent write and the dropped error flag each break theirs."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalquality_core.suite.evaluator import judge, requests_for_plan, run_plan
from evalquality_core.suite.load import SuiteFiles
from tests.adapters.test_mcp_preflight import SUITE, mutation_for, reference_contract, stage


def suite() -> SuiteFiles:
    return SuiteFiles(
        name="notes-tools", root=SUITE, contract=reference_contract(), probes={},
        choices={"malformed-search": {"arguments": {"query": 7}}, "malformed-create": {"arguments": {"title": 42}}},
        baseline_steps=frozenset({"search"}), targets_text=(SUITE / "targets.toml").read_text(encoding="utf-8"),
    )


def test_the_plan_becomes_tool_calls() -> None:
    requests = [request for _step, request in requests_for_plan(suite())]
    assert [(r["kind"], r["toolName"]) for r in requests] == [
        ("mcp", "search_notes"), ("mcp", "create_note"), ("mcp", "search_notes"), ("mcp", "create_note"),
        ("mcp", "search_notes"),
    ]
    assert requests[2]["channels"] == {"arguments": {"query": 7}}
    assert requests[4]["channels"] == {"arguments": {"query": {"$captured": "/interactions/create/response-body/noteId"}}}


@pytest.mark.parametrize(
    ("probe_id", "violated"), [(None, []), ("P-001", ["O-004"]), ("P-002", ["O-007"])]
)
def test_clean_holds_and_each_mutation_breaks_its_oracle(probe_id: str | None, violated: list[str], tmp_path: Path) -> None:
    workspace = stage(tmp_path / "ws", None if probe_id is None else mutation_for(probe_id))
    _requests, observations = run_plan(suite(), workspace)
    read_back = observations[4]
    assert read_back["callInputs"]["arguments"] == {"query": "n-a-new-note"}  # captured from the create
    assert (read_back["responseStatus"], read_back["responseHeaders"], read_back["stdout"]) == (0, None, {"kind": "absent"})
    malformed_create = observations[3]
    assert malformed_create["responseStatus"] == (0 if probe_id == "P-002" else 1)
    judgement = judge(suite().contract, observations, probe_id or "P-003")
    assert [d["oracleId"] for d in judgement.dispositions if d["disposition"] == "violated"] == violated
    assert [finding["oracleId"] for finding in judgement.findings] == violated
    for finding in judgement.findings:
        assert finding["quotedEvidence"], finding
