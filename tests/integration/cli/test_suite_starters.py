"""``eval-quality suite init DIR --kind http|mcp``: a working starter per kind of system (an HTTP service,
a stdio tool server), held to what the cli starter is held to (tests/integration/cli/test_suite_commands.py) and
pre-flighted by the real flow; and ``{workspace}`` in a tool server's ``server_environment``. Real child
processes, in temporary folders outside the checkout, with their own EVALQUALITY_HOME and PREFECT_HOME."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.suite_cli import eq, one_line
from tests.prefect_db import seed_prefect_home, shared_server

PROJECT_ROOT = Path(__file__).resolve().parents[3]
# The module fixture (``suite init --kind mcp``, minutes on a loaded machine) serves the mcp tests: one
# worker builds it once (--dist loadgroup); without the group each worker they landed on built it.
pytestmark = pytest.mark.xdist_group("suite-starters")
STEPS = ("folder", "staging", "mutations", "contract", "registry", "evaluator", "probes", "generated", "trials")


def _init(where: Path, kind: str) -> Path:
    proc = eq("suite", "init", "mine", "--kind", kind, cwd=where, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "next: eval-quality suite check mine" in proc.stdout
    return where / "mine"


def _check_passes(suite: Path) -> None:
    proc = eq("suite", "check", str(suite), cwd=suite.parent)
    assert proc.returncode == 0, proc.stderr
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == [f"ok   {step}" for step in STEPS]


@pytest.fixture(scope="module")
def mcp_starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``suite init --kind mcp`` once; tests copy it before changing anything."""
    return _init(tmp_path_factory.mktemp("mcp"), "mcp")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["http", "mcp"])
def test_a_starter_of_each_kind_checks_qualifies_and_passes_the_preflight_flow(
    kind: str, tmp_path: Path, migrated_prefect_db: Path, mcp_starter: Path,
) -> None:
    suites = tmp_path / "suites"
    suites.mkdir()
    suite = _init(suites, kind) if kind == "http" else Path(shutil.copytree(mcp_starter, suites / "mine"))
    registry = (suite / "targets.toml").read_text()
    assert ('kind = "api"' in registry and "[service]" in registry) if kind == "http" else 'kind = "mcp"' in registry
    _check_passes(suite)
    probes = sorted(path.stem for path in (suite / "probes").glob("P-*.json"))
    for probe_id in probes:
        probe = json.loads((suite / "probes" / f"{probe_id}.json").read_text())
        assert probe["implementationDigest"] != "sha256:" + "0" * 64  # derived fields generated
        assert sorted(p.name for p in (suite / "trials" / probe_id).iterdir()) == [
            "preflight-verdict.json", "trial-1", "trial-2", "trial-3"]
    classes = {json.loads(p.read_text())["probeClass"] for p in (suite / "probes").glob("P-*.json")}
    assert {"defect", "zero-action"} <= classes
    # The pre-flight flow over the parent folder: every probe of the starter passes.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_"))}
    env.update({"EVALQUALITY_HOME": str(tmp_path / "home"), "PREFECT_HOME": str(seed_prefect_home(
        tmp_path / "prefect", migrated_prefect_db)), "PREFECT_LOGGING_LEVEL": "WARNING", "EVALQUALITY_CONCURRENCY": "2",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "EVALQUALITY_PROGRESS_SECONDS": "0", **shared_server()})
    baseline = tmp_path / "baseline.json"
    done = subprocess.run(
        [sys.executable, "-m", "flows.preflight", "--suites", str(suites), "--out", str(tmp_path / "out"),
         "--baseline", str(baseline), "--update-baseline"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and "Traceback" not in done.stderr, (done.stdout[-2000:], done.stderr[-2000:])
    recorded = json.loads(baseline.read_text())["probes"]
    assert {key: row["outcome"] for key, row in recorded.items()} == {f"mine/{p}": "passed" for p in probes}


def test_an_unknown_kind_is_a_usage_error(tmp_path: Path) -> None:
    proc = eq("suite", "init", "mine", "--kind", "grpc", cwd=tmp_path)
    one_line(proc, 64, "usage", "--kind", "grpc", "cli", "http", "mcp")
    assert not (tmp_path / "mine").exists()


@pytest.mark.slow
def test_server_environment_workspace_is_the_legs_workspace(mcp_starter: Path, tmp_path: Path) -> None:
    """A tool server that finds its store only through an environment variable naming a file in its
    workspace, started from a folder where the relative name would not find it: ``{workspace}`` is
    filled per leg, so generation, trials and check all hold."""
    suite = Path(shutil.copytree(mcp_starter, tmp_path / "mine", ignore=shutil.ignore_patterns("trials", "evidence")))
    server = suite / "system" / "notes_tool_server.py"
    text = server.read_text()
    assert text.count('STORE = "notes.json"\n') == 1
    assert "\nimport os\n" in text
    server.write_text(text.replace('STORE = "notes.json"\n', 'STORE = os.environ["NOTES_STORE"]\n'))
    for mutation in (suite / "mutations").glob("*.json"):  # their `find` text is unchanged by the edit above
        assert json.loads(mutation.read_text())["target"] == "system/notes_tool_server.py"
    registry = suite / "targets.toml"
    text = registry.read_text()
    assert text.count('cwd = "work"\n') == 1 and text.count("server_environment = {}\n") == 1
    registry.write_text(text.replace('cwd = "work"\n', 'cwd = "system"\n').replace(
        "server_environment = {}\n", 'server_environment = { NOTES_STORE = "{workspace}/work/notes.json" }\n'))
    for command in (("suite", "generate", str(suite)), ("suite", "trials", str(suite))):
        proc = eq(*command, cwd=tmp_path, timeout=600)
        assert proc.returncode == 0, (command, proc.stderr)
    _check_passes(suite)


def test_an_unknown_server_environment_placeholder_is_refused_at_load(mcp_starter: Path, tmp_path: Path) -> None:
    suite = Path(shutil.copytree(mcp_starter, tmp_path / "mine"))
    registry = suite / "targets.toml"
    registry.write_text(registry.read_text().replace(
        "server_environment = {}\n", 'server_environment = { NOTES_STORE = "{workdir}/notes.json" }\n'))
    proc = eq("suite", "check", str(suite), cwd=tmp_path)
    one_line(proc, 2, "suite check: registry:", "targets.toml", "NOTES_STORE", "{workdir}", "{workspace}")
