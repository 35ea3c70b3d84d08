"""``eval-quality probe`` runs an mcp request through the stdio adapter under a targets.toml."""

from __future__ import annotations

import json
from pathlib import Path

from evalquality_core.canonical.json import serialize_artifact
from tests.adapters.mcp_subject import SERVER, request
from tests.cli.test_probe import run_cli

TARGETS = f"""
[[target]]
kind = "mcp"
interface_id = "fixture-mcp"
target = "{{python}}"
target_args = ["{SERVER}"]
tools = ["echo"]
cwd = "."
server_environment = {{}}
max_elapsed_ms = 60000
max_output_bytes = 1048576
"""


def test_probe_prints_an_mcp_observation_and_refuses_an_unlisted_tool(tmp_path: Path) -> None:
    targets = tmp_path / "targets.toml"
    targets.write_text(TARGETS)
    good = tmp_path / "request.json"
    good.write_text(json.dumps(request("echo", {"value": "über\nnotes"})))
    done = run_cli("probe", "--request", str(good), "--targets", str(targets), "--workdir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == serialize_artifact(json.loads(done.stdout))
    assert json.loads(done.stdout) == {
        "kind": "mcp", "probeId": "leg-1", "interfaceId": "fixture-mcp", "operationId": "call", "isError": False,
        "result": {"kind": "json", "value": {"value": "über\nnotes", "length": 10}},
    }
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(request("delete_all")))
    done = run_cli("probe", "--request", str(bad), "--targets", str(targets))
    assert done.returncode == 5
    assert done.stdout == b""
    assert done.stderr.decode().strip() == (
        'eval-quality: forbidden-target: ProbeRequest: tool "delete_all" is not among the authorized tools for '
        'interface "fixture-mcp"'
    )
