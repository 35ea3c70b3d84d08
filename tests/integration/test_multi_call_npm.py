"""Multi-call legs on real third-party systems installed from the npm registry (issue 34): json-server
0.17.4 over HTTP and ``@modelcontextprotocol/server-memory`` over MCP stdio, each a suite built as a user
builds one (tests/integration/suites/), with planted defects as mutations of the packages' own JS.

* Adapter level: one leg's calls are answered by ONE server (HTTP) or ONE session (MCP), in order, so
  a later call sees what an earlier one stored.
* Flow level: ``python -m flows.preflight`` as a child process. A silent PATCH and a no-op DELETE on
  json-server, and a silent ``create_entities`` on server-memory, are each caught by a read-back in the
  same leg (``seeded-fault-fired``) and scoped (``seeded-faults-scoped``: the witness's clean twin, the
  same calls on the clean package, does not fire), and the clean package passes every other check.

The packages are installed once per session; if the registry cannot be reached the tests FAIL saying so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalquality_core.adapters import http_service
from evalquality_core.adapters.http_service import ServiceAdapter
from evalquality_core.adapters.leg_calls import probe_leg
from evalquality_core.adapters.mcp_stdio import McpStdioAdapter, run_mcp_session
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.targets import parse_targets
from evalquality_core.suite.staging import stage_workspace
from tests.integration.npm_suites import json_server_suite, memory_server_suite

pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parents[2]






def _api(probe_id: str, operation: str, method: str, path_template: str, post_id: str | None, body: object = None) -> dict:
    return {"kind": "api", "probeId": probe_id, "interfaceId": "posts", "operationId": operation, "method": method,
            "pathTemplate": path_template,
            "channels": {"path": {} if post_id is None else {"id": post_id}, "query": {}, "header": {},
                         "body": {"kind": "absent"} if body is None else {"kind": "json", "value": body}}}


def test_one_http_leg_is_one_server_answering_its_calls_in_order(
    json_server_modules: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # json-server writes its db.json back, so a state seen across calls alone would not prove one server:
    # count the real service starts too (a spy: the real start runs).
    starts: list[str] = []
    real_start = http_service.running_service

    def counted(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        starts.append("start")
        return real_start(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(http_service, "running_service", counted)
    suite = json_server_suite(tmp_path / "suites", json_server_modules)
    workspace = tmp_path / "leg"
    stage_workspace(suite, workspace)
    registry = parse_targets((suite / "targets.toml").read_text(), "targets.toml")
    adapter = ServiceAdapter(registry, {}, workdir=workspace)
    leg = {**_api("delete-then-read", "delete-post", "DELETE", "/posts/{id}", "1"),
           "calls": [_api("read-back", "get-post", "GET", "/posts/{id}", "1"), _api("read-other", "get-post", "GET", "/posts/{id}", "2")]}
    observed = probe_leg(adapter, leg)
    assert observed["status"] == 200 and observed["probeId"] == "delete-then-read"
    # The same server answered the read: the post the DELETE removed is gone, the other one is not.
    assert [(call["probeId"], call["status"]) for call in observed["calls"]] == [("read-back", 404), ("read-other", 200)]
    assert observed["calls"][1]["body"]["value"] == {"id": 2, "title": "world"}
    assert starts == ["start"]


def test_one_mcp_leg_is_one_session_answering_its_calls_in_order(memory_server_modules: Path, tmp_path: Path) -> None:
    suite = memory_server_suite(tmp_path / "suites", memory_server_modules)
    workspace = tmp_path / "leg"
    stage_workspace(suite, workspace)
    registry = parse_targets((suite / "targets.toml").read_text(), "targets.toml")
    # server-memory reloads its file on every call, so count the real sessions too (a spy around the real one).
    sessions: list[str] = []

    def counted(spec, abort):  # type: ignore[no-untyped-def]
        sessions.append(spec.tool_name)
        return run_mcp_session(spec, abort)

    adapter = McpStdioAdapter(registry.to_mcp_policy({}), workdir=workspace, mechanism=counted)

    def tool(probe_id: str, name: str, arguments: dict) -> dict:
        return {"kind": "mcp", "probeId": probe_id, "interfaceId": "memory", "operationId": name.replace("_", "-"),
                "toolName": name, "channels": {"arguments": arguments}}

    entity = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["a pioneer"]}]}
    observed = probe_leg(adapter, {**tool("create", "create_entities", entity), "calls": [tool("read-back", "read_graph", {})]})
    assert observed["isError"] is False
    [read] = observed["calls"]
    assert read["probeId"] == "read-back" and read["isError"] is False
    assert [e["name"] for e in read["result"]["value"]["entities"]] == ["Ada"]
    assert sessions == ["create_entities"]  # one session (one initialize) made both calls
    # Every call is admitted before the session starts: a tool the registry does not list faults the leg
    # and no server is started for it.
    with pytest.raises(RuntimeFault) as refused:
        probe_leg(adapter, {**tool("create-2", "create_entities", entity), "calls": [tool("wipe", "delete_entities", {"entityNames": ["Ada"]})]})
    assert refused.value.code == "forbidden-target"
    assert sessions == ["create_entities"]


def _preflight(suites: Path, tmp_path: Path, expected: dict[str, dict]) -> tuple[subprocess.CompletedProcess[str], Path]:
    baseline = tmp_path / "expected-preflight.json"
    baseline.write_text(json.dumps({"probes": expected}))
    out = tmp_path / "out"
    environment = {**os.environ, "EVALQUALITY_HOME": str(tmp_path / "home")}
    for name in ("EVALQUALITY_SUITES", "EVALQUALITY_OUT"):
        environment.pop(name, None)
    result = subprocess.run(
        [sys.executable, "-m", "flows.preflight", "--suites", str(suites), "--out", str(out), "--baseline", str(baseline),
         "--concurrency", "2"],
        cwd=PROJECT, env=environment, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
    )
    return result, out


def _checks(verdict_file: Path) -> dict[tuple[str, str | None], tuple[str, str | None]]:
    verdict = json.loads(verdict_file.read_text())
    return {(check["kind"], check["operationId"]): (check["outcome"], check["note"]) for check in verdict["checks"]}


def test_json_server_silent_patch_and_no_op_delete_are_caught_by_a_read_back_in_the_same_leg(
    json_server_modules: Path, tmp_path: Path
) -> None:
    suites = tmp_path / "suites"
    json_server_suite(suites, json_server_modules)
    # Legs per probe: 2 sensitivity legs for each of get-post, patch-post and delete-post, 2 control
    # observe legs (no fixture reset), the witness's clean twin and its fault leg = 10.
    expected = {"json-server/P-001": {"legs": 10, "outcome": "passed"}, "json-server/P-002": {"legs": 10, "outcome": "passed"}}
    result, out = _preflight(suites, tmp_path, expected)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    for probe, defect, operation in (("P-001", "D-001", "patch-post"), ("P-002", "D-002", "delete-post")):
        checks = _checks(out / "json-server" / f"preflight-{probe}.json")
        assert checks[("seeded-fault-fired", operation)] == ("satisfied", defect), probe
        assert checks[("seeded-faults-scoped", operation)] == ("satisfied", defect), probe
        # The DELETE-by-path witness reads the collection after each delete, in the same leg.
        assert checks[("input-sensitivity", "delete-post")] == ("satisfied", None)
        assert checks[("state-reset", None)][0] == checks[("clean-control", None)][0] == "satisfied"


def test_server_memory_silent_create_is_caught_by_read_graph_in_the_same_session(memory_server_modules: Path, tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    memory_server_suite(suites, memory_server_modules)
    # 2 sensitivity legs (create-entities), 2 control observe legs (read-graph), the clean twin, the fault leg.
    result, out = _preflight(suites, tmp_path, {"server-memory/P-001": {"legs": 6, "outcome": "passed"}})
    assert result.returncode == 0, result.stdout + result.stderr
    checks = _checks(out / "server-memory" / "preflight-P-001.json")
    assert checks[("seeded-fault-fired", "create-entities")] == ("satisfied", "D-001")
    assert checks[("seeded-faults-scoped", "create-entities")] == ("satisfied", "D-001")
    assert checks[("input-sensitivity", "create-entities")] == ("satisfied", None)
    assert checks[("input-sensitivity", "read-graph")][0] == "exempt"


def test_the_suite_cli_stores_a_passing_preflight_for_the_no_op_delete(json_server_modules: Path, tmp_path: Path) -> None:
    """``eval-quality suite trials`` (the real CLI, a child process) runs the same multi-call pre-flight:
    its stored verdict for the no-op DELETE passes with the fault fired and scoped."""
    suite = json_server_suite(tmp_path / "suites", json_server_modules)
    result = subprocess.run(
        [sys.executable, "-m", "evalquality_core", "suite", "trials", str(suite), "--trials", "1", "--probe", "P-002", "--jobs", "1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    checks = _checks(suite / "trials" / "P-002" / "preflight-verdict.json")
    assert checks[("seeded-fault-fired", "delete-post")] == ("satisfied", "D-002")
    assert checks[("seeded-faults-scoped", "delete-post")] == ("satisfied", "D-002")
