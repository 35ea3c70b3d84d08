"""Dependency layers through the real pre-flight (``python -m flows.preflight`` as a child process, a
temp EVALQUALITY_HOME): a suite whose system carries ``node_modules/`` runs with that folder linked
from the layer store, and a hostile system whose target appends to a file of its layer on every run
makes each such leg a ``digest-mismatch`` fault, while the layer the next leg sees is rebuilt intact."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.integration.flows.test_hostile_suite_flows import PROJECT, _flow

pytestmark = pytest.mark.slow

ORIGINAL = "module.exports = 'original';\n"
#: Prepended to notes.py after ``import sys``: the target appends to a file of its dependency layer.
TAMPER = (
    "import os\n"
    "with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'node_modules', 'dep', 'index.js'), 'a') as f:\n"
    "    f.write('tampered\\n')\n"
)


def _layered(root: Path, name: str, *, hostile: bool) -> Path:
    suite = root / name
    shutil.copytree(PROJECT / "corpus" / "suites" / "notes", suite, ignore=shutil.ignore_patterns("trials"))
    package = suite / "system" / "node_modules" / "dep"
    package.mkdir(parents=True)
    (package / "index.js").write_text(ORIGINAL)
    # Its own layer: two suites whose layers are byte-equal share one stored generation, so a hostile
    # neighbour's write would (rightly) fault the twin's concurrent legs too.
    (package / "package.json").write_text(json.dumps({"name": name}))
    (suite / "system" / "node_modules" / ".bin").mkdir()
    (suite / "system" / "node_modules" / ".bin" / "dep").symlink_to("../dep/index.js")
    if hostile:
        source = suite / "system" / "notes.py"
        source.write_text(source.read_text().replace("import sys\n", "import sys\n" + TAMPER, 1))
    return suite


def test_a_target_appending_to_its_dependency_layer_faults_its_legs_and_the_layer_is_rebuilt(tmp_path: Path) -> None:
    root = tmp_path / "corpus" / "suites"
    root.mkdir(parents=True)
    shutil.copy(PROJECT / "corpus" / "scoring-policy.json", root.parent / "scoring-policy.json")
    _layered(root, "layered", hostile=False)
    _layered(root, "hostile", hostile=True)
    baseline = tmp_path / "expected-preflight.json"
    baseline.write_text(json.dumps({"probes": {}}))
    home = tmp_path / "home"
    result = _flow("flows.preflight", ["--suites", str(root), "--out", str(tmp_path / "out"), "--baseline",
                                       str(baseline), "--concurrency", "2"], home)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output[-5000:]
    probes = sorted(path.stem for path in (root / "hostile" / "probes").glob("*.json"))
    for probe in probes:
        faults = [line for line in output.splitlines() if line.startswith(f"hostile/{probe}: fault: ")]
        assert faults and faults[0].startswith(f"hostile/{probe}: fault: digest-mismatch: layer node_modules (sha256:"), (
            probe, output[-5000:])
        # The well-behaved twin (its own layer) is not touched by its neighbour's writes.
        assert not [line for line in output.splitlines() if line.startswith(f"layered/{probe}: fault")], output[-5000:]
    summary = json.loads((tmp_path / "out" / "preflight-summary.json").read_text())
    outcomes = {(row["suite"], row["probe_id"]): row["outcome"] for row in summary["probes"]}
    assert {probe: outcomes[("layered", probe)] for probe in probes} == dict.fromkeys(probes, "passed"), outcomes
    assert all(outcomes[("hostile", probe)].startswith("fault: digest-mismatch") for probe in probes), outcomes
    # Every generation still stored holds the layer as the suite does; the suite's own copy was never written.
    stored = list((home / "layers").rglob("index.js"))
    assert stored and all(path.read_text() == ORIGINAL for path in stored)
    assert (root / "hostile" / "system" / "node_modules" / "dep" / "index.js").read_text() == ORIGINAL
    assert not list((home / "workspaces").iterdir())
