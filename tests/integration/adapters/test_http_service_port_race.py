"""The port race: the service's port is chosen by binding port 0 and releasing it, so another process
can take it before the service binds it (on a busy CI host, another worker's service did: a trial's
GET reached that other server as it was killed, and read "connection reset by peer").

Readiness therefore asks the kernel who listens on the port (``/proc/net/tcp``) and accepts only a
listener held by the leg's own process tree; a foreign one means the port was taken, and the service
is started again on a fresh port. The race is made certain here by handing the service a port a real
foreign server already listens on; the foreign server records every byte it is sent and answers with
a forged note."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalquality_core.adapters import http_service
from evalquality_core.faults import RuntimeFault
from tests.adapters.http_notes import api_request, processes_working_in, service_adapter, stage

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="the listener check reads /proc/net/tcp (Linux)")

_FOREIGN = r"""
import json, socket, sys
log = open(sys.argv[1], "ab", buffering=0)
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(16)
print(server.getsockname()[1], flush=True)
forged = json.dumps({"ok": True, "note": {"id": "n-1", "title": "forged"}}).encode()
while True:
    conn, _ = server.accept()
    conn.settimeout(2)
    try:
        data = conn.recv(65536)
    except OSError:
        data = b""
    log.write(data)
    if data:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(forged) + forged)
    conn.close()
"""


@pytest.fixture
def foreign(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A real server of another process on a loopback port: (its port, the file of what it was sent)."""
    log = tmp_path / "foreign.log"
    log.write_bytes(b"")
    process = subprocess.Popen([sys.executable, "-c", _FOREIGN, str(log)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield int(process.stdout.readline()), log
    finally:
        process.kill()
        process.wait()


def _choose(monkeypatch: pytest.MonkeyPatch, taken: int, times: int) -> list[int]:
    """The port chooser hands out ``taken`` the first ``times`` calls (the race won by the other
    process), then real free ports; returns the list of ports it handed out."""
    handed: list[int] = []
    real = http_service.free_loopback_port

    def choose() -> int:
        port = taken if len(handed) < times else real()
        handed.append(port)
        return port

    monkeypatch.setattr(http_service, "free_loopback_port", choose)
    return handed


def _get_note() -> dict[str, object]:
    return api_request("GET", "/notes/{id}", path={"id": "n-1"}, operation="get-note")


def test_a_port_taken_by_another_server_is_never_asked_and_the_service_starts_on_a_fresh_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, foreign: tuple[int, Path]) -> None:
    port, log = foreign
    handed = _choose(monkeypatch, port, times=1)
    workspace = stage(tmp_path)
    observation = service_adapter().probe(_get_note(), workdir=workspace)
    assert observation.status == 200 and observation.body.value["note"]["title"] == "Groceries"
    assert handed[0] == port and len(handed) == 2 and handed[1] != port
    assert log.read_bytes() == b""  # a TCP connect at most: no request ever reached the other server
    assert processes_working_in(workspace.resolve()) == []


def test_control_without_the_listener_check_the_request_reaches_the_other_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, foreign: tuple[int, Path]) -> None:
    """The attack is real: without the check, the answer (a forged note) comes from the other server,
    or the call fails on it. Either way the other server was sent the request."""
    port, log = foreign
    _choose(monkeypatch, port, times=1)
    monkeypatch.setattr(http_service, "VERIFY_LISTENER", False)
    workspace = stage(tmp_path)
    try:
        observation = service_adapter().probe(_get_note(), workdir=workspace)
    except RuntimeFault as fault:
        assert fault.code == "port-failure"
    else:
        assert observation.body.value["note"]["title"] == "forged"
    deadline = time.monotonic() + 5
    while b"GET /notes/n-1" not in log.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert b"GET /notes/n-1" in log.read_bytes()
    assert processes_working_in(workspace.resolve()) == []


def test_a_port_taken_on_every_attempt_is_port_failure_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, foreign: tuple[int, Path]) -> None:
    port, log = foreign
    handed = _choose(monkeypatch, port, times=100)
    workspace = stage(tmp_path)
    with pytest.raises(RuntimeFault) as raised:
        service_adapter().probe(_get_note(), workdir=workspace)
    assert raised.value.code == "port-failure"
    assert f"port {port}" in raised.value.detail and "not the service's own" in raised.value.detail
    assert "\n" not in raised.value.detail
    assert len(handed) == http_service.START_ATTEMPTS
    assert log.read_bytes() == b""
    assert processes_working_in(workspace.resolve()) == []


def test_both_ways_of_asking_the_kernel_find_exactly_the_listeners_a_loopback_connection_can_reach() -> None:
    """sock_diag and ``/proc/net/tcp`` agree, on real sockets: a listener on 127.0.0.1, on 0.0.0.0, on
    ``::`` and on ``::ffff:127.0.0.1`` is found by its inode; a socket bound but not listening, a
    listener on ``::1`` (unreachable from 127.0.0.1) and a listener on another port are not."""

    def listener(family: int, address: str, port: int = 0, listen: bool = True) -> socket.socket:
        sock = socket.socket(family)
        if family == socket.AF_INET6 and address != "::1":
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((address, port))
        if listen:
            sock.listen()
        return sock

    cases = []
    for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET, "0.0.0.0"),
                            (socket.AF_INET6, "::"), (socket.AF_INET6, "::ffff:127.0.0.1")):
        sock = listener(family, address)
        cases.append((sock, sock.getsockname()[1], frozenset({os.fstat(sock.fileno()).st_ino})))
    idle = listener(socket.AF_INET, "127.0.0.1", listen=False)
    cases.append((idle, idle.getsockname()[1], frozenset()))
    try:
        loopback6 = listener(socket.AF_INET6, "::1")
    except OSError:  # no IPv6 loopback on this host: that case says nothing here
        pass
    else:
        cases.append((loopback6, loopback6.getsockname()[1], frozenset()))
    try:
        for _sock, port, expected in cases:
            assert http_service._listening_inodes_diag(port) == expected, port
            assert http_service._listening_inodes_proc(port) == expected, port
        first, other = cases[0], cases[1]
        assert not http_service._listening_inodes_diag(first[1]) & other[2]
    finally:
        for sock, _port, _expected in cases:
            sock.close()


def test_a_listener_held_by_a_grandchild_of_the_service_is_its_own(tmp_path: Path) -> None:
    """A service whose launcher forks the real server (the listener is not in the leader's descriptors)
    is still ready: the listener is below the leg watchdog. Its answer is the workspace's."""
    workspace = stage(tmp_path)
    launcher = ("import subprocess, sys; subprocess.run([sys.executable, '../system/notes_api.py', '--port', sys.argv[1]])")
    declaration = http_service.ServiceDeclaration(("{python}", "-c", launcher, "{port}"), "work", "port", 15000)
    with http_service.running_service(declaration, workspace, {"python": sys.executable}) as port:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/notes/n-1", timeout=5) as answer:
            assert b"Groceries" in answer.read()
    assert processes_working_in(workspace.resolve()) == []
