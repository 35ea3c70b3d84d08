"""HTTP services as systems under test: the notes-api service started fresh per call from a staged
workspace, its three seeded defects seen on their own channels, and no server outliving its call
(answer, fault, abort, a service that never gets ready, one that forks)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from evalquality_core.adapters.command_line import live_process_groups
from evalquality_core.adapters.http_service import ServiceAdapter, ServiceDeclaration, running_service
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.targets import parse_targets
from tests.adapters.http_notes import SUITE, api_request, processes_working_in, service_adapter, stage


def get(note: str, probe_id: str = "leg-1") -> dict[str, object]:
    return api_request("GET", "/notes/{id}", path={"id": note}, probe_id=probe_id, operation="get-note")


def patch(note: str, body: object) -> dict[str, object]:
    return api_request("PATCH", "/notes/{id}", path={"id": note}, body=body, operation="patch-note")


def test_state_lives_in_the_workspace_across_fresh_servers(tmp_path: Path) -> None:
    workspace = stage(tmp_path)
    adapter = service_adapter()
    written = adapter.probe(patch("n-1", {"title": "Revised"}), workdir=workspace)
    assert written.status == 200 and written.body.value["note"]["updatedAt"] == "2026-07-29T10:05:00Z"
    read_back = adapter.probe(get("n-1"), workdir=workspace)
    assert read_back.body.value["note"]["title"] == "Revised"
    assert processes_working_in(workspace.resolve()) == []


def test_the_silent_write_is_seen_only_by_a_read_back(tmp_path: Path) -> None:
    workspace = stage(tmp_path, mutation="store-write-deletion")
    adapter = service_adapter()
    written = adapter.probe(patch("n-1", {"title": "Revised"}), workdir=workspace)
    assert written.status == 200 and written.body.value == {
        "ok": True, "note": {**written.body.value["note"], "title": "Revised"}}
    assert adapter.probe(get("n-1"), workdir=workspace).body.value["note"]["title"] == "Groceries"


def test_the_other_two_defects_show_on_other_channels(tmp_path: Path) -> None:
    adapter = service_adapter()
    clean = stage(tmp_path)
    malformed = patch("n-1", {"tags": "not-a-list"})
    assert adapter.probe(malformed, workdir=clean).status == 400
    status_defect = adapter.probe(malformed, workdir=stage(tmp_path, mutation="status-ok-mismatch"))
    assert status_defect.status == 200 and status_defect.body.value["ok"] is False  # status channel
    assert adapter.probe(get("n-2"), workdir=clean).body.kind == "json"
    header_defect = adapter.probe(get("n-2"), workdir=stage(tmp_path, mutation="content-type-text"))
    assert header_defect.headers["content-type"] == "text/plain" and header_defect.body.kind == "text"  # header channel


def test_only_the_registered_interface_and_methods_reach_a_server(tmp_path: Path) -> None:
    workspace = stage(tmp_path)
    adapter = service_adapter()
    with pytest.raises(RuntimeFault) as denied:
        adapter.probe(api_request("DELETE", "/notes/{id}", path={"id": "n-1"}), workdir=workspace)
    assert denied.value.code == "forbidden-target" and denied.value.reason == "method-not-authorized"
    other = {**get("n-1"), "interfaceId": "admin-api"}
    with pytest.raises(RuntimeFault) as unmapped:
        adapter.probe(other, workdir=workspace)
    assert unmapped.value.reason == "interface-not-authorized"
    assert processes_working_in(workspace.resolve()) == []


def _declaration(*command: str, timeout_ms: int = 1500) -> ServiceDeclaration:
    return ServiceDeclaration(tuple(command), "work", "port", timeout_ms)


def test_a_service_that_never_gets_ready_is_port_failure_and_killed(tmp_path: Path) -> None:
    workspace = stage(tmp_path)
    sleeper = _declaration("{python}", "-c", "import sys, time; time.sleep(60)", "{port}")
    started = time.monotonic()
    with pytest.raises(RuntimeFault) as raised, running_service(sleeper, workspace, {"python": sys.executable}):
        pass
    assert raised.value.code == "port-failure" and "within 1500 ms" in raised.value.detail
    assert time.monotonic() - started < 5 and processes_working_in(workspace.resolve()) == []


def test_a_service_that_dies_at_start_says_why(tmp_path: Path) -> None:
    workspace = stage(tmp_path)
    crasher = _declaration("{python}", "-c", "import sys; sys.exit('cannot bind {port}: taken')")
    with pytest.raises(RuntimeFault) as raised, running_service(crasher, workspace, {"python": sys.executable}):
        pass
    assert raised.value.code == "port-failure" and "cannot bind" in raised.value.detail


def test_a_forking_service_is_killed_with_its_group(tmp_path: Path) -> None:
    workspace = stage(tmp_path)
    forker = _declaration(
        "{python}", "-c",
        "import subprocess, sys, socket, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
        " s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); time.sleep(60)",
        "{port}",
    )
    with running_service(forker, workspace, {"python": sys.executable}) as port:
        assert port > 0
        time.sleep(0.2)
        assert len(processes_working_in(workspace.resolve())) >= 2
        assert live_process_groups()  # tracked, so a flow's interrupt handler would kill it too
    assert processes_working_in(workspace.resolve()) == []


def test_abort_while_starting_kills_the_service(tmp_path: Path) -> None:
    workspace = stage(tmp_path)
    sleeper = _declaration("{python}", "-c", "import time; time.sleep(60)", "{port}", timeout_ms=20000)
    abort = threading.Event()
    threading.Timer(0.3, abort.set).start()
    started = time.monotonic()
    with pytest.raises(RuntimeFault) as raised, running_service(sleeper, workspace, {"python": sys.executable}, abort):
        pass
    assert raised.value.code == "aborted" and time.monotonic() - started < 3
    assert processes_working_in(workspace.resolve()) == []


def test_service_declaration_refusals() -> None:
    base = (SUITE / "targets.toml").read_text(encoding="utf-8")
    for edit, message in (
        (lambda t: t.replace('cwd = "work"', 'cwd = "../.."'), "inside the staged workspace"),
        (lambda t: t.replace('"--port", "{port}"', '"--port", "8080"'), "never uses {port}"),
        (lambda t: t.replace("ready_timeout_ms = 15000\n", ""), "lacks required key(s) ready_timeout_ms"),
        (lambda t: t.replace("\n[service]\n", "\n[service]\nrestart = true\n"), "unknown key(s) restart"),
    ):
        with pytest.raises(RuntimeFault) as raised:
            parse_targets(edit(base), "targets.toml")
        assert message in raised.value.detail
    registry = parse_targets(base, "targets.toml")
    assert "port" not in registry.placeholders and registry.service is not None
    assert ServiceAdapter(registry, {"python": sys.executable}).declaration == ServiceDeclaration(
        ("{python}", "../system/notes_api.py", "--port", "{port}"), "work", "port", 15000)
