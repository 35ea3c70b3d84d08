"""``python -m flows.preflight`` over an HTTP suite, live: the worked example's contract and probe
with the notes-api service as its system. Every api leg starts a fresh server from its staged
workspace and stops it; the verdict equals a plain pre-flight over the same service adapter; a
second run answers every leg from the cache (0 spawned); no server is left running. A run SIGKILLed while
a service is up takes the service along within seconds (its watchdog's lifeline closes), and the next run
reclaims the dead run's workspace and gives the same verdict."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from evalquality_core.adapters.http_service import ServiceAdapter
from evalquality_core.artifacts.base import to_wire
from evalquality_core.canonical.json import serialize_artifact
from evalquality_core.pipeline import run_preflight
from flows.lifecycle import reap_orphaned_servers
from tasks.suites import load_suite
from tasks.workspace import leg_workspace
from tests.adapters.http_notes import SUITE

PROJECT_ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def _build(conformance: Path, suites: Path) -> Path:
    """A suite folder: the worked example's contract and probe, the notes-api system and registry."""
    suite = suites / "notes-api-worked"
    (suite / "probes").mkdir(parents=True)
    (suite / "mutations").mkdir()
    shutil.copy(conformance / "worked-example" / "eval-contract.json", suite / "contract.json")
    shutil.copy(conformance / "worked-example" / "probe.json", suite / "probes" / "P-001.json")
    shutil.copytree(SUITE / "system", suite / "system")
    shutil.copytree(SUITE / "fixtures" / "worked-example", suite / "fixtures" / "worked-example")
    shutil.copy(SUITE / "targets.toml", suite / "targets.toml")
    shutil.copy(SUITE / "mutations" / "store-write-deletion.json", suite / "mutations" / "store-write-deletion.json")
    (suite / "suite.toml").write_text('system-id = "spike-notes-api"\n[fixtures]\nworked-example = "."\n')
    return suite


def _reference_verdict(suite_dir: Path, scratch: Path) -> bytes:
    suite = load_suite(suite_dir)
    assert suite.targets is not None
    probe = suite.probes[0]

    class StagingPort:
        def probe(self, request):
            with leg_workspace(scratch) as workspace:
                suite.stager(probe, request.probe_id)(workspace)
                return ServiceAdapter(suite.targets, {"python": sys.executable}).probe(request, workdir=workspace)

    verdict = run_preflight(
        suite.contract, [probe], f"preflight-{suite.name}-{probe['probeId']}".lower(), StagingPort(), clean_witness_legs=True
    )
    return serialize_artifact(to_wire(verdict))


def _notes_servers() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"notes_api.py" in cmdline:
                found.append(int(entry.name))
    return found


def test_preflight_flow_runs_an_http_suite_live(conformance: Path, tmp_path: Path) -> None:
    suites, home, out, baseline = tmp_path / "suites", tmp_path / "home", tmp_path / "out", tmp_path / "base.json"
    suite_dir = _build(conformance, suites)
    env = {**os.environ, "EVALQUALITY_HOME": str(home)}
    command = [sys.executable, "-m", "flows.preflight", "--suites", str(suites), "--out", str(out),
               "--baseline", str(baseline), "--concurrency", "2"]
    # The plain pre-flight (in this process, its own scratch workspaces) runs while the flow's process
    # starts and runs: both wait on their services, side by side.
    with ThreadPoolExecutor(1) as plain:
        planned = plain.submit(_reference_verdict, suite_dir, tmp_path / "scratch")
        first = subprocess.run([*command, "--update-baseline"], cwd=PROJECT_ROOT, env=env, capture_output=True,
                               text=True, timeout=300)
        reference = planned.result()
    # Live answers satisfy every check the service can (the witness legs reach two different notes,
    # the control runs clean); the worked example's defect declares no manifestation witness, so
    # seeded-fault-fired fails with the reducer's own reason, exactly as it would for the reference.
    outcomes = {(c["kind"], c["operationId"]): c["outcome"] for c in json.loads(reference)["checks"]}
    assert outcomes[("input-sensitivity", "get-note")] == outcomes[("input-sensitivity", "patch-note")] == "satisfied"
    assert outcomes[("clean-control", None)] == outcomes[("state-reset", None)] == "satisfied"
    assert outcomes[("seeded-fault-fired", None)] == "failed"
    assert first.returncode == 0, first.stdout + first.stderr
    assert (out / "notes-api-worked" / "preflight-P-001.json").read_bytes() == reference
    summary = json.loads((out / "preflight-summary.json").read_text())
    assert summary["legsSpawned"] > 0
    again = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads((out / "preflight-summary.json").read_text())["legsSpawned"] == 0
    assert (out / "notes-api-worked" / "preflight-P-001.json").read_bytes() == reference
    # Only this run's servers (working under its home): another xdist worker's live servers do not count.
    assert _servers_under(home.resolve()) == {}  # no server outlived its leg


def _servers_under(root: Path) -> dict[int, Path]:
    """notes_api.py processes working inside ``root`` (a flow's workspaces), with their working directories."""
    found = {}
    for pid in _notes_servers():
        try:
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            continue
        if root in cwd.parents:
            found[pid] = cwd
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def test_a_preflight_run_sigkilled_while_a_service_is_up_takes_it_along_and_the_next_run_succeeds(
    conformance: Path, tmp_path: Path
) -> None:
    suites, home, out, baseline = tmp_path / "suites", tmp_path / "home", tmp_path / "out", tmp_path / "base.json"
    suite_dir = _build(conformance, suites)
    # Every answer takes a second, so a server is surely up when the run is killed.
    service = suite_dir / "system" / "notes_api.py"
    text = service.read_text(encoding="utf-8")
    text = text.replace("import datetime\n", "import datetime\nimport time\n", 1).replace(
        '    def answer(self, status, payload, content_type="application/json"):\n',
        '    def answer(self, status, payload, content_type="application/json"):\n        time.sleep(1.0)\n', 1)
    service.write_text(text, encoding="utf-8")
    # The plain pre-flight of the same (slowed) service runs in this process, beside the run to be killed.
    plain = ThreadPoolExecutor(1)
    planned = plain.submit(_reference_verdict, suite_dir, tmp_path / "scratch")
    workspaces = (home / "workspaces").resolve()
    env = {**os.environ, "EVALQUALITY_HOME": str(home)}
    command = [sys.executable, "-m", "flows.preflight", "--suites", str(suites), "--out", str(out),
               "--baseline", str(baseline), "--concurrency", "2"]
    killed = subprocess.Popen([*command, "--update-baseline"], cwd=PROJECT_ROOT, env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not (up := _servers_under(workspaces)):
            assert killed.poll() is None, "the run ended before a service was up"
            assert time.monotonic() < deadline, "no service ever came up"
            time.sleep(0.01)
    finally:
        os.kill(killed.pid, signal.SIGKILL)  # the run alone: its watchdogs see the lifeline close
        killed.wait()
    deadline = time.monotonic() + 5
    while not all(_gone(pid) for pid in up) and time.monotonic() < deadline:
        time.sleep(0.02)
    survivors = [pid for pid in up if not _gone(pid)]
    for pid in survivors:  # never leave them running, whatever the assertion says
        os.kill(pid, signal.SIGKILL)
    assert survivors == [], "a service outlived the SIGKILLed run"
    assert list(workspaces.iterdir()), "the killed run left its workspace behind, for the next run to reclaim"

    try:
        again = subprocess.run([*command, "--update-baseline"], cwd=PROJECT_ROOT, env=env, capture_output=True,
                               text=True, timeout=300)
        reference = planned.result()
    finally:
        plain.shutdown()
        reap_orphaned_servers(os.environ["PREFECT_HOME"])  # the killed run's embedded Prefect server
    assert again.returncode == 0, again.stdout + again.stderr
    assert (out / "notes-api-worked" / "preflight-P-001.json").read_bytes() == reference
    assert list(workspaces.iterdir()) == []  # the killed run's workspace was reclaimed
    assert _servers_under(workspaces) == {}
