"""flows/embedded_server.py: ``python -m flows.<flow>`` starts its embedded Prefect server itself.

Real flow processes on the skill suite (tests/fixtures/skill_suite.py), each with its own Prefect home
seeded with a migrated database. What must hold: the run is served by a server of its own home that the
flow process started without importing Prefect's server code; it leaves no server behind, whether it
ends, is killed with SIGKILL, or loses its server (one line, exit 69); a server that cannot start is one
line and exit 69; and a user's ``PREFECT_API_URL`` is left alone. (That a request sent while the
server boots waits instead of failing is the kernel's: the socket listens before the child starts.)
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from flows.embedded_server import EmbeddedServer, EmbeddedServerError, embedded_server
from flows.settings import EMBEDDED_API_URL_VARIABLE, is_embedded_api, user_api_url
from tests.adapters.test_command_line import is_dead
from tests.fixtures.skill_suite import build_skill_suite, marker_events
from tests.polling import wait_for
from tests.prefect_db import seed_prefect_home

PROJECT_ROOT = Path(__file__).resolve().parents[3]

# One worker runs the module: the flows here share its migrated Prefect database, copied once.
# The server a flow starts is the subject: no worker server (tests/integration/conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("embedded-server"), pytest.mark.own_prefect_server]

#: Runs ``flows.preflight``'s main and says afterwards whether Prefect's server module was ever imported.
MAIN = (
    "import sys; from flows.preflight import main; code = main(sys.argv[1:]); "
    "print('server module imported:', 'prefect.server.api.server' in sys.modules); sys.exit(code)"
)


def _env(tmp: Path, migrated: Path, **extra: str) -> dict[str, str]:
    prefect_home = seed_prefect_home(tmp / "prefect", migrated)
    env = {**os.environ, "EVALQUALITY_HOME": str(tmp / "home"), "PREFECT_HOME": str(prefect_home), **extra}
    env.pop("PREFECT_API_URL", None)
    return env


def _command(suites: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-c", MAIN, "--suites", str(suites), "--out", str(out), "--baseline", str(out.parent / "base.json"),
            *extra]


def _servers_of(prefect_home: str) -> list[int]:
    """Pids of live Prefect API servers (any parent) started for ``prefect_home``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"prefect.server.api.server:create_app" not in (entry / "cmdline").read_bytes():
                continue
            if f"PREFECT_HOME={prefect_home}".encode() not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
        except OSError:
            continue
        found.append(int(entry.name))
    return found


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _flow_runs(prefect_home: Path) -> int:
    with sqlite3.connect(prefect_home / "prefect.db") as db:
        return db.execute("select count(*) from flow_run").fetchone()[0]


def test_a_run_is_served_by_its_own_server_without_prefects_server_code_and_leaves_none(
    conformance, tmp_path, migrated_prefect_db
):
    suites = tmp_path / "suites"
    build_skill_suite(conformance, suites)
    env = _env(tmp_path, migrated_prefect_db)
    before = _flow_runs(Path(env["PREFECT_HOME"]))
    done = subprocess.run(_command(suites, tmp_path / "out", "--update-baseline"), cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "server module imported: False" in done.stdout  # Prefect would have imported it to start its own
    assert _flow_runs(Path(env["PREFECT_HOME"])) == before + 1  # recorded in this home's database
    assert "flow run: http" not in done.stdout + done.stderr  # still the embedded server: no UI link
    assert _servers_of(env["PREFECT_HOME"]) == []


def test_a_sigkilled_run_takes_its_server_along(conformance, tmp_path, migrated_prefect_db):
    suites = tmp_path / "suites"
    _, marker = build_skill_suite(conformance, suites, delay_s=60, max_elapsed_ms=600_000)
    env = _env(tmp_path, migrated_prefect_db)
    flow = subprocess.Popen(_command(suites, tmp_path / "out"), cwd=PROJECT_ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: marker_events(marker) or flow.poll() is not None, timeout_s=180) and flow.poll() is None
        [server] = [pid for pid in _children(flow.pid) if pid in _servers_of(env["PREFECT_HOME"])]
        os.kill(flow.pid, signal.SIGKILL)  # the flow alone: its server is in a process group of its own
        flow.wait()
        # No reaper runs here: the server ends because its parent died.
        assert wait_for(lambda: not _servers_of(env["PREFECT_HOME"]), timeout_s=30), f"server {server} outlived its run"
    finally:
        if flow.poll() is None:
            flow.kill()
            flow.wait()
        for pid in _servers_of(env["PREFECT_HOME"]):
            os.kill(pid, signal.SIGKILL)


def test_a_run_whose_server_dies_ends_in_one_line_with_exit_69_and_kills_its_legs(
    conformance, tmp_path, migrated_prefect_db
):
    suites = tmp_path / "suites"
    _, marker = build_skill_suite(conformance, suites, delay_s=60, max_elapsed_ms=600_000)
    env = _env(tmp_path, migrated_prefect_db)
    flow = subprocess.Popen(_command(suites, tmp_path / "out"), cwd=PROJECT_ROOT, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: marker_events(marker) or flow.poll() is not None, timeout_s=180) and flow.poll() is None
        legs = [event["pid"] for event in marker_events(marker)]
        [server] = _servers_of(env["PREFECT_HOME"])
        os.kill(server, signal.SIGKILL)
        stdout, stderr = flow.communicate(timeout=60)
    finally:
        if flow.poll() is None:
            os.killpg(flow.pid, signal.SIGKILL)
            flow.wait()
    assert flow.returncode == 69, stdout + stderr
    assert "the embedded Prefect server exited with code -9 during the run" in stderr
    assert "Traceback" not in stdout + stderr
    # The leg sleeps 60 s; only the flow's kill can have ended it by now.
    assert wait_for(lambda: all(is_dead(pid) for pid in legs), timeout_s=10)


def test_a_server_that_cannot_start_in_time_is_one_line_and_exit_69(conformance, tmp_path, migrated_prefect_db):
    suites = tmp_path / "suites"
    build_skill_suite(conformance, suites)
    env = _env(tmp_path, migrated_prefect_db, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="1")
    done = subprocess.run(_command(suites, tmp_path / "out"), cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 69, done.stdout + done.stderr
    [message] = done.stderr.strip().splitlines()
    assert message.startswith("python -m flows.preflight: the embedded Prefect server did not answer http://127.0.0.1:")
    assert message.endswith("/api/health within 1 s (PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS)")
    assert wait_for(lambda: not _servers_of(env["PREFECT_HOME"]), timeout_s=10)


def test_a_server_that_exits_while_starting_is_named_with_its_exit_code():
    # A real child that exits 3, as the server does when it cannot open its database.
    exiting = EmbeddedServer(subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"]), "http://127.0.0.1:9/api")
    with pytest.raises(EmbeddedServerError, match=r"^the embedded Prefect server exited with code 3 while starting$"):
        exiting.wait_until_healthy(60)


def test_a_users_server_is_left_alone(monkeypatch):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}), embedded_server("prog") as server:
        assert server is None  # Prefect's own setting (environment or profile) decides
    monkeypatch.setenv("PREFECT_API_URL", "http://prefect.example/api")
    assert user_api_url() == "http://prefect.example/api" and not is_embedded_api("http://prefect.example/api")
    monkeypatch.setenv(EMBEDDED_API_URL_VARIABLE, "http://prefect.example/api")  # the one a flow process started
    assert user_api_url() is None and is_embedded_api("http://prefect.example/api")
    monkeypatch.delenv("PREFECT_API_URL")
    assert user_api_url() is None and is_embedded_api(None)
