"""A service is a leg process: its whole tree dies when its leg ends, however it ends, and when the run
itself is SIGKILLed; the next run reclaims the dead run's workspace and succeeds. Each attack is a real
hostile service (``tests/fixtures/services/hostile_service.py``) that records the pid of every process it
starts, so the tests check those pids, not a guess (a ``setsid()`` daemon that left the workspace is
invisible to a look at working directories). A contract with a ``fixtureReset`` runs its control block
with a fresh server per leg too."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from evalquality_core.adapters.http_service import ServiceAdapter, ServiceDeclaration, running_service
from evalquality_core.adapters.process_group import live_process_groups
from evalquality_core.artifacts.base import to_wire
from evalquality_core.faults import RuntimeFault
from evalquality_core.pipeline import run_preflight
from evalquality_core.probe.targets import parse_targets
from tasks.suites import load_suite
from tasks.workspace import leg_workspace, reclaim_workspaces
from tests.adapters.http_notes import api_request, processes_working_in, service_adapter, stage
from tests.adapters.test_command_line import is_dead

PROJECT_ROOT = Path(__file__).resolve().parents[3]
HOSTILE = PROJECT_ROOT / "tests" / "fixtures" / "services" / "hostile_service.py"

_REGISTRY = """
[service]
command = ["{{python}}", {hostile}, "{mode}", "{{port}}", "pids"]
cwd = "work"
port_placeholder = "port"
ready_timeout_ms = {ready_ms}

[[target]]
kind = "api"
interface_id = "hostile"
scheme = "http"
host = "127.0.0.1"
port = "{{port}}"
addresses = ["127.0.0.1"]
methods = ["GET"]
safe_methods = ["GET"]
max_redirects = 0
max_elapsed_ms = {elapsed_ms}
max_request_bytes = 65536
max_response_bytes = 1048576
"""

GET = {
    "kind": "api", "probeId": "leg-1", "interfaceId": "hostile", "operationId": "get", "method": "GET",
    "pathTemplate": "/", "channels": {"path": {}, "query": {}, "header": {}, "body": {"kind": "absent"}},
}


def hostile_adapter(mode: str, ready_ms: int = 15000, elapsed_ms: int = 10000) -> ServiceAdapter:
    text = _REGISTRY.format(hostile=f'"{HOSTILE}"', mode=mode, ready_ms=ready_ms, elapsed_ms=elapsed_ms)
    return ServiceAdapter(parse_targets(text, "targets.toml"), {"python": sys.executable})


def workspace(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "work").mkdir(parents=True)
    return tmp_path / "ws"


def pids_of(pid_file: Path) -> set[int]:
    return {int(line) for line in pid_file.read_text().split()} if pid_file.exists() else set()


def assert_all_dead_within(pids: set[int], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    alive = {pid for pid in pids if not is_dead(pid)}
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = {pid for pid in alive if not is_dead(pid)}
    for pid in alive:  # never leave them running, whatever the assertion says
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"still running: {sorted(alive)}"


def wait_for_pids(pid_file: Path, count: int, seconds: float = 30.0) -> set[int]:
    deadline = time.monotonic() + seconds
    while len(pids_of(pid_file)) < count:
        assert time.monotonic() < deadline, f"only {pids_of(pid_file)} were started"
        time.sleep(0.02)
    return pids_of(pid_file)


def test_a_setsid_grandchild_of_a_service_dies_when_its_leg_answers(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    groups_before = live_process_groups()
    observation = hostile_adapter("setsid-child").probe(GET, workdir=ws)
    assert observation.status == 200 and observation.body.value["ok"] is True
    pids = pids_of(ws / "work" / "pids")
    assert len(pids) == 2, "the service and its setsid grandchild both ran"
    assert_all_dead_within(pids, 5)
    assert live_process_groups() == groups_before  # the leg is no longer counted live


def test_a_service_that_never_answers_is_killed_with_its_setsid_child_at_the_deadline(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    started = time.monotonic()
    with pytest.raises(RuntimeFault) as raised:
        hostile_adapter("hang", elapsed_ms=500).probe(GET, workdir=ws)
    assert raised.value.code == "budget-exhausted" and "maxElapsedMs (500ms)" in raised.value.detail
    assert time.monotonic() - started < 10
    pids = pids_of(ws / "work" / "pids")
    assert len(pids) == 2
    assert_all_dead_within(pids, 5)


def test_an_abort_while_the_service_works_kills_it_and_its_setsid_child(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    abort = threading.Event()
    adapter = hostile_adapter("hang")
    threading.Timer(0.1, lambda: wait_for_pids(ws / "work" / "pids", 2) and abort.set()).start()
    started = time.monotonic()
    with pytest.raises(RuntimeFault) as raised:
        adapter.probe(GET, workdir=ws, abort=abort)
    assert raised.value.code == "aborted" and time.monotonic() - started < 30
    assert_all_dead_within(pids_of(ws / "work" / "pids"), 5)


def test_a_service_that_daemonizes_is_a_leg_fault_and_its_daemon_dies(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    with pytest.raises(RuntimeFault) as raised:
        hostile_adapter("daemonize").probe(GET, workdir=ws)
    # The leader's exit ends the leg (a service stays in the foreground): the daemon it left is killed.
    assert raised.value.code == "port-failure" and "\n" not in str(raised.value)
    pids = pids_of(ws / "work" / "pids")
    assert len(pids) == 2, "the leader and its daemon both ran"
    assert_all_dead_within(pids, 5)


def test_a_service_that_never_gets_ready_is_a_one_line_leg_fault_with_nothing_left(tmp_path: Path) -> None:
    # On a loaded host the interpreter can take longer than a short deadline to start the service's
    # child at all; such a try proves nothing about the kill, so it is tried again with a longer one.
    for attempt, ready_ms in enumerate((800, 3000, 8000)):
        ws = workspace(tmp_path / f"try-{attempt}")
        started = time.monotonic()
        with pytest.raises(RuntimeFault) as raised:
            hostile_adapter("never-ready", ready_ms=ready_ms).probe(GET, workdir=ws)
        assert time.monotonic() - started < ready_ms / 1000 + 10
        fault = raised.value
        assert fault.code == "port-failure" and fault.artifact_path == "ProbeObservation"
        assert "did not accept connections" in fault.detail and f"within {ready_ms} ms" in fault.detail
        assert "\n" not in str(fault)
        pids = pids_of(ws / "work" / "pids")
        assert_all_dead_within(pids, 5)
        if len(pids) == 2:
            break
    assert len(pids) == 2, "the service and its child both ran"


def test_a_service_that_floods_its_pipes_still_answers(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    observation = hostile_adapter("flood").probe(GET, workdir=ws)
    assert observation.status == 200
    assert_all_dead_within(pids_of(ws / "work" / "pids"), 5)


def test_a_service_that_dies_at_start_names_the_tail_of_its_stderr_on_one_line(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    with pytest.raises(RuntimeFault) as raised:
        hostile_adapter("no-such-mode").probe(GET, workdir=ws)
    fault = raised.value
    assert fault.code == "port-failure" and "exited (1) before accepting connections" in fault.detail
    assert "unknown mode no-such-mode" in fault.detail and "\n" not in str(fault)


_HOST = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from evalquality_core.adapters.http_service import ServiceDeclaration, running_service
    from tasks.workspace import leg_workspace
    declaration = ServiceDeclaration(("{{python}}", {hostile!r}, "setsid-child", "{{port}}", "pids"), "work", "port", 15000)
    with leg_workspace(Path({root_dir!r})) as ws:
        (ws / "work").mkdir()
        with running_service(declaration, ws, {{"python": sys.executable}}) as port:
            print(port, ws, flush=True)
            time.sleep(600)
    """
)


def test_a_run_sigkilled_while_its_service_is_up_leaves_nothing_and_the_next_run_succeeds(tmp_path: Path) -> None:
    root = tmp_path / "workspaces"
    host = subprocess.Popen(
        [sys.executable, "-c", _HOST.format(root=str(PROJECT_ROOT), hostile=str(HOSTILE), root_dir=str(root))],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert host.stdout is not None
        port_text, ws_text = host.stdout.readline().split()  # the service accepts connections
        pids = wait_for_pids(Path(ws_text) / "work" / "pids", 2)
        assert all(not is_dead(pid) for pid in pids)
    finally:
        host.kill()  # SIGKILL: no finally, no atexit, nothing of the host runs
        host.wait()
    assert_all_dead_within(pids, 5)
    assert [entry.name for entry in root.iterdir()] == [Path(ws_text).name]  # stale: its owner died
    # The next run: reclaims the stale workspace, then a real notes-api leg in a fresh one succeeds.
    assert reclaim_workspaces(root) == [Path(ws_text)]
    with leg_workspace(root) as fresh:
        staged = stage(fresh)
        observation = service_adapter().probe(
            api_request("GET", "/notes/{id}", path={"id": "n-1"}, operation="get-note"), workdir=staged)
    assert observation.status == 200 and observation.body.value["note"]["id"] == "n-1"
    assert list(root.iterdir()) == []


def test_a_contract_with_a_fixture_reset_runs_its_control_block_each_leg_on_a_fresh_server(tmp_path: Path) -> None:
    """preflight-adapter.md §1.5: with a ``fixtureReset`` the control block is observe, mutate, reset,
    observe. Each of those legs, like every leg, gets its own staged workspace and its own server."""
    suite = load_suite(PROJECT_ROOT / "corpus" / "suites" / "notes-api")
    assert suite.targets is not None
    contract = copy.deepcopy(dict(suite.contract))
    contract["fixtureReset"] = {
        "legId": "reset-notes", "interfaceId": "notes-api", "operationId": "patch-note",
        "inputs": {"path": {"id": "n-1"}, "query": {}, "header": {}, "body": {"kind": "json", "value": {"title": "Groceries"}}},
    }
    control = next(probe for probe in suite.probes if probe["probeId"] == "P-005")
    served: list[tuple[str, Path, int]] = []

    class StagingPort:
        def probe(self, request: object) -> object:
            with leg_workspace(tmp_path / "workspaces") as ws:
                suite.stager(control, request.probe_id)(ws)  # type: ignore[attr-defined]
                observation = ServiceAdapter(suite.targets, {"python": sys.executable}).probe(request, workdir=ws)
                served.append((request.probe_id, ws, len(processes_working_in(ws))))  # type: ignore[attr-defined]
                return observation

    verdict = to_wire(run_preflight(contract, [control], "preflight-notes-api-reset", StagingPort()))
    legs = [leg for leg, _, _ in served]
    assert legs[-4:] == ["preflight-control-observe", "preflight-control-mutate", "reset-notes", "preflight-control-observe-2"]
    assert len({ws for _, ws, _ in served}) == len(served)  # one workspace, hence one server, per leg
    assert all(left == 0 for _, _, left in served)  # each server was gone when its call returned
    outcomes = {check["kind"]: check["outcome"] for check in verdict["checks"] if check.get("operationId") is None}
    assert outcomes == {"state-reset": "satisfied", "clean-control": "satisfied"} and verdict["passed"] is True
    assert list((tmp_path / "workspaces").iterdir()) == []



def test_a_service_command_that_cannot_start_is_a_one_line_port_failure(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    missing = ServiceDeclaration((str(tmp_path / "no-such-server"), "{port}"), "work", "port", 1000)
    with pytest.raises(RuntimeFault) as raised, running_service(missing, ws, {}):
        pass
    fault = raised.value
    assert fault.code == "port-failure" and "could not start service" in fault.detail and "no-such-server" in fault.detail
    assert "\n" not in str(fault)
