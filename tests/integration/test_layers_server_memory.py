"""The real npm package ``@modelcontextprotocol/server-memory`` (installed by ``npm install`` into a temp
folder: ~29 MB of ``node_modules/`` in ~4,000 files, npm ``.bin`` links included) through the staging
paths of the mutant legs and ``eval-quality mutants generate`` (issue 34):

* its legs are staged with ``tasks.mutants.stage_mutant`` (what every mutant leg of ``flows.mutants``
  stages with) into the home's layer store: many legs, ONE stored copy; a hand-written mutant of its
  ``dist/index.js`` is a layer of its own, the clean one never written; each leg is a real ``node``
  server session answering over the real MCP stdio adapter, and the mutant's session shows the edit;
* ``mutants generate`` reads the system with its ``.bin`` links and never mutates a layer.

If the registry cannot be reached the tests FAIL saying so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.adapters.mcp_stdio import McpStdioAdapter
from evalquality_core.artifacts.port_messages import observation_to_wire
from evalquality_core.probe.targets import parse_targets
from evalquality_core.suite.load import Mutation
from evalquality_core.suite.staging import check_layers, staged_digests
from tasks.mutants import stage_mutant
from tests.npm_memory import ENTRY, memory_suite

pytestmark = pytest.mark.slow

ENTITY = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]}
#: A planted defect in the package's own code: create_entities stores the entity but answers none.
FIND = "        return newEntities;\n"


def js_mutant(suite: Path) -> Mutation:
    return Mutation(mutation_id="M-js-001", probe_id="P-001", operator="return-value", target=f"system/{ENTRY}",
                    description="create_entities answers no entity", find=FIND, replace="        return [];\n",
                    naive_check=None, source_path=suite / "mutations" / "M-js-001.json")


def leg(suite: Path, mutation: Mutation | None, workspace: Path) -> tuple[dict[str, Any], Any]:
    """One mutant-trials leg: staged as flows.mutants stages it, one real server session, its layers checked."""
    staged = stage_mutant(suite, mutation, workspace)
    registry = parse_targets((suite / "targets.toml").read_text(), "targets.toml")
    request = {"kind": "mcp", "probeId": "leg-create", "interfaceId": "memory", "operationId": "create-entities",
               "toolName": "create_entities", "channels": {"arguments": ENTITY}}
    answer = observation_to_wire(McpStdioAdapter(registry.to_mcp_policy({}), workdir=workspace).probe(request))
    assert check_layers(staged) == []
    return answer, staged


def names(answer: dict[str, Any]) -> list[str]:
    assert answer["isError"] is False, answer
    return [entity["name"] for entity in answer["result"]["value"]["entities"]]


def test_mutant_legs_of_the_real_server_share_one_stored_layer_and_a_js_mutant_gets_its_own(
    memory_server_modules: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert shutil.which("node"), "node is not installed"
    home = tmp_path / "home"
    monkeypatch.setenv("EVALQUALITY_HOME", str(home))
    suite = memory_suite(tmp_path / "suites", memory_server_modules, memory_file="../../../../../work/memory.jsonl")
    bins = [path for path in (suite / "system" / "node_modules" / ".bin").iterdir() if path.is_symlink()]
    assert bins, "the install has no npm .bin links"
    original = (suite / "system" / ENTRY).read_bytes()
    mutant = js_mutant(suite)
    clean_legs = [leg(suite, None, tmp_path / f"clean-{n}") for n in range(3)]
    mutant_legs = [leg(suite, mutant, tmp_path / f"mutant-{n}") for n in range(3)]
    # The real server answers from the layer: the clean package names the entity, the mutant none.
    assert all(names(answer) == ["Ada"] for answer, _ in clean_legs)
    assert all(names(answer) == [] for answer, _ in mutant_legs)
    # Staged once each: six legs, two digests (clean, mutant), one generation each, nothing copied per leg.
    folders = sorted((home / "layers").iterdir())
    assert len(folders) == 2 and all(len(list(folder.glob("gen-*"))) == 1 for folder in folders)
    assert len({staged.layers[0].folder for _, staged in clean_legs}) == 1
    assert len({staged.layers[0].folder for _, staged in mutant_legs}) == 1
    assert clean_legs[0][1].layers[0].digest != mutant_legs[0][1].layers[0].digest
    assert all((staged.system_dir / "node_modules").is_symlink() for _, staged in clean_legs + mutant_legs)
    # The .bin links are staged as links, still confined to the layer.
    layer = clean_legs[0][1].layers[0].folder
    assert all((layer / ".bin" / path.name).is_symlink() for path in bins)
    # The clean layer and the suite's own file are as installed; the digests are the content's.
    assert (layer.parent / "node_modules" / ENTRY.removeprefix("node_modules/")).read_bytes() == original
    assert (suite / "system" / ENTRY).read_bytes() == original
    planned = staged_digests(suite, [None, mutant])
    assert clean_legs[0][1].system_digest == planned[None][0]
    assert mutant_legs[0][1].system_digest == planned[mutant.mutation_id][0] != planned[None][0]


def test_mutants_generate_reads_the_real_package_with_its_bin_links_and_mutates_no_layer(
    memory_server_modules: Path, tmp_path: Path
) -> None:
    suite = memory_suite(tmp_path / "suites", memory_server_modules, memory_file=None)
    done = subprocess.run(["eval-quality", "mutants", "generate", str(suite)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "EVALQUALITY_HOME": str(tmp_path / "home")})
    # Its only code is the package, a layer: nothing to mutate, said on one line (not "a symlink").
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "no Python source to mutate" in done.stderr and "symlink" not in done.stderr
    (suite / "system" / "launch.py").write_text(
        "import os, sys\nDEBUG = False\nif DEBUG:\n    print('starting', file=sys.stderr)\n"
        "os.execvp('node', ['node', '--preserve-symlinks', '--preserve-symlinks-main', sys.argv[1]])\n")
    done = subprocess.run(["eval-quality", "mutants", "generate", str(suite)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "EVALQUALITY_HOME": str(tmp_path / "home")})
    assert done.returncode == 0, done.stderr
    targets = {json.loads(path.read_text())["target"] for path in (suite / "mutants").glob("*.json")
               if path.name != "generated.json"}
    assert targets == {"system/launch.py"}
