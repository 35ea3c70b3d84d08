"""``eval-quality probe`` with an api request: a real CLI process, a real loopback server, the
registry's ``kind = "api"`` entry with its ``{port}`` placeholder filled by ``--set``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adapters.http_server import LoopbackServer
from tests.adapters.http_subject import request

TARGETS = """
[[target]]
kind = "api"
interface_id = "notes-svc"
scheme = "http"
host = "127.0.0.1"
port = "{port}"
addresses = ["127.0.0.1"]
methods = ["GET"]
safe_methods = ["GET"]
max_redirects = 1
max_elapsed_ms = 5000
max_request_bytes = 4096
max_response_bytes = 4096
"""


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


def run_probe(tmp_path: Path, req: dict[str, object], *extra: str) -> subprocess.CompletedProcess[bytes]:
    (tmp_path / "targets.toml").write_text(TARGETS)
    (tmp_path / "request.json").write_text(json.dumps(req))
    return subprocess.run(
        [sys.executable, "-m", "evalquality_core", "probe", "--request", str(tmp_path / "request.json"),
         "--targets", str(tmp_path / "targets.toml"), *extra],
        capture_output=True, timeout=60,
    )


def test_an_api_request_prints_its_observation_and_a_500_is_exit_0(server: LoopbackServer, tmp_path: Path) -> None:
    done = run_probe(tmp_path, request("/fault"), "--set", f"port={server.port}")
    assert done.returncode == 0, done.stderr
    observation = json.loads(done.stdout)
    assert observation["kind"] == "api" and observation["status"] == 500
    assert observation["body"] == {"kind": "json", "value": {"error": "boom", "ok": False}}


def test_a_denied_api_request_is_one_line_and_exit_5(server: LoopbackServer, tmp_path: Path) -> None:
    done = run_probe(tmp_path, request("/ok", method="DELETE"), "--set", f"port={server.port}")
    assert done.returncode == 5 and done.stdout == b""
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "forbidden-target" in lines[0] and 'method "DELETE"' in lines[0]


def test_an_unfilled_port_placeholder_is_refused(server: LoopbackServer, tmp_path: Path) -> None:
    done = run_probe(tmp_path, request("/ok"))
    assert done.returncode == 5 and b"{port}" in done.stderr and b"Traceback" not in done.stderr
