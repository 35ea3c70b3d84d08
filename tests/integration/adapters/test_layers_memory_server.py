"""A real third-party system: the npm package ``@modelcontextprotocol/server-memory`` (29 MB of
``node_modules/`` in ~4,000 files, npm ``.bin`` links included) as a suite's system. The session
fixture installs it with the real ``npm install`` (cache in a temp folder); if the registry cannot be
reached the tests FAIL saying so. Each leg is staged with its ``node_modules/`` linked from the layer
store (staged once) and answered by the real MCP stdio adapter, a real ``node`` server session."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.adapters.mcp_stdio import McpStdioAdapter
from evalquality_core.artifacts.port_messages import observation_to_wire
from evalquality_core.probe.targets import parse_targets
from evalquality_core.suite.layers import LayerStore
from evalquality_core.suite.staging import check_layers, stage_workspace, staged_digests
from tests.npm_memory import memory_suite

# One real npm install per session fixture: both tests on one worker install it once (--dist loadgroup).
pytestmark = pytest.mark.slow

NODE = shutil.which("node")




def call(suite: Path, store: LayerStore, workspace: Path, tool: str, arguments: dict[str, Any]) -> tuple[Any, Any]:
    """One leg: stage with the layer linked, one real server session, the observation and the staging."""
    staged = stage_workspace(suite, workspace, layers=store)
    registry = parse_targets((suite / "targets.toml").read_text(), "targets.toml")
    adapter = McpStdioAdapter(registry.to_mcp_policy({}), workdir=workspace)
    request = {"kind": "mcp", "probeId": f"leg-{tool.replace('_', '-')}", "interfaceId": "memory",
               "operationId": tool.replace("_", "-"),
               "toolName": tool, "channels": {"arguments": arguments}}
    return observation_to_wire(adapter.probe(request)), staged


ENTITY = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]}


def test_the_real_memory_server_runs_from_its_layer_staged_once(memory_server_modules: Path, tmp_path: Path) -> None:
    assert NODE is not None, "node is not installed"
    modules = memory_server_modules
    assert (modules / ".bin").is_dir() and any(path.is_symlink() for path in (modules / ".bin").iterdir())
    suite = memory_suite(tmp_path / "suites", modules, memory_file="../../../../../work/memory.jsonl")
    store = LayerStore(tmp_path / "home" / "layers")
    created, first = call(suite, store, tmp_path / "leg-1", "create_entities", ENTITY)
    assert created["isError"] is False, created
    assert [entity["name"] for entity in created["result"]["value"]["entities"]] == ["Ada"], created
    assert (tmp_path / "leg-1" / "work" / "memory.jsonl").is_file()  # the graph went to the leg's work/
    read, second = call(suite, store, tmp_path / "leg-2", "read_graph", {})
    # A fresh workspace per leg: the second session never sees the first one's graph.
    assert read["isError"] is False and read["result"]["value"]["entities"] == [], read
    assert check_layers(first) == [] and check_layers(second) == []
    # Staged once: both legs linked the one stored generation; the key digest is the content's.
    assert first.layers[0].folder == second.layers[0].folder
    assert len(list((tmp_path / "home" / "layers").iterdir())) == 1
    assert first.system_digest == second.system_digest == staged_digests(suite, [None])[None][0]


def test_the_real_server_writing_beside_its_own_module_is_a_changed_layer(
    memory_server_modules: Path, tmp_path: Path
) -> None:
    """The package's default store is a file beside ``dist/index.js``: inside the shared layer, so the
    leg that wrote it is refused (a changed layer), and the next leg gets the layer as installed."""
    suite = memory_suite(tmp_path / "suites", memory_server_modules, memory_file=None)
    store = LayerStore(tmp_path / "home" / "layers")
    created, staged = call(suite, store, tmp_path / "leg-1", "create_entities", ENTITY)
    assert created["isError"] is False, created
    assert [problem.split(" (")[0] for problem in check_layers(staged)] == ["layer node_modules"]
    _, after = call(suite, store, tmp_path / "leg-2", "read_graph", {})
    assert after.layers[0].folder != staged.layers[0].folder
    assert not (after.layers[0].folder / "@modelcontextprotocol" / "server-memory" / "dist" / "memory.jsonl").exists()
