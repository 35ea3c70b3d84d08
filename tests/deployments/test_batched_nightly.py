"""The nightly fanned out over Prefect workers, for real: a Prefect server on PostgreSQL, a process work pool,
two workers, the shared leg cache on the same PostgreSQL cluster, and the corpus split into two batches.

Proves: the merged report equals the single-process one (every suite's ``contract-strength.json`` byte
for byte, and the gate's exit code and lines); no request is spawned twice across the batches; and a
batch whose flow-run process is SIGKILLed mid-batch (its worker reports the run Crashed) is retried by
Prefect as a new flow run that spawns only the legs the killed attempt had not answered. Every server,
worker and cluster it starts is stopped in teardown.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from deployments.batched_nightly import split_batches
from tests.postgres_cluster import Cluster, throwaway_cluster

PROJECT = Path(__file__).resolve().parents[2]
SUITES = PROJECT / "corpus" / "suites"

pytestmark = pytest.mark.slow


def test_suites_are_dealt_round_robin_into_non_empty_batches() -> None:
    assert split_batches(["c", "a", "b"], 2) == [["a", "c"], ["b"]]
    assert split_batches(["a"], 3) == [["a"]]
    assert split_batches([], 2) == []
    with pytest.raises(ValueError):
        split_batches(["a"], 0)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_healthy(url: str, process: subprocess.Popen[bytes], deadline_s: float = 240) -> None:
    started = time.monotonic()
    while time.monotonic() - started < deadline_s:
        if process.poll() is not None:
            raise AssertionError(f"the Prefect server exited {process.returncode} before it was ready")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        time.sleep(0.5)
    raise AssertionError(f"the Prefect server at {url} was not ready within {deadline_s} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, then SIGKILL it if it lingers (a worker may ignore the first TERM)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # whatever the group still holds (flow-run children)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=20)


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _flow_run_processes(workers: list[subprocess.Popen[bytes]]) -> list[int]:
    """Pids of the flow-run processes the workers started (``python -m prefect.engine``), with descendants
    searched one level down (the worker may start the engine through a helper)."""
    found = []
    for worker in workers:
        for child in _children(worker.pid):
            with contextlib.suppress(OSError):
                if b"prefect.engine" in Path(f"/proc/{child}/cmdline").read_bytes():
                    found.append(child)
    return found


def _count_entries(cluster: Cluster, database: str) -> int:
    import psycopg

    with psycopg.connect(cluster.url(database), autocommit=True) as connection:
        exists = connection.execute("SELECT to_regclass('evalquality_leg_cache') IS NOT NULL").fetchone()[0]
        if not exists:
            return 0
        return int(connection.execute("SELECT count(*) FROM evalquality_leg_cache").fetchone()[0])


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL cluster for the module: Prefect's database and the leg cache's."""
    with throwaway_cluster() as running:
        yield running


@pytest.fixture(scope="module")
def prefect_server(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A Prefect server backed by PostgreSQL; yields the environment its clients use. Stopped after."""
    home = tmp_path_factory.mktemp("prefect-server")
    port = _free_port()
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_"))},
        "PREFECT_HOME": str(home / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }
    cluster.create_database("prefect")
    # Prefect's server reads its database URL from this setting (asyncpg is one of Prefect's dependencies).
    server_env = {**environment, "PREFECT_API_DATABASE_CONNECTION_URL": cluster.url("prefect", "postgresql+asyncpg")}
    log = open(home / "server.log", "wb")  # noqa: SIM115 (closed in teardown)
    server = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=server_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=home,
    )
    try:
        api = f"http://127.0.0.1:{port}/api"
        _wait_healthy(api, server)
        yield {**environment, "PREFECT_API_URL": api}
    finally:
        _stop(server)
        log.close()


def _run(argv: list[str], environment: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=environment, cwd=PROJECT, capture_output=True, text=True, timeout=timeout,
                          check=False)


def test_two_batches_on_two_workers_equal_the_single_process_night_and_survive_a_killed_batch(
    cluster: Cluster, prefect_server: dict[str, str], tmp_path: Path
) -> None:
    legs_db = "legs"
    cluster.create_database(legs_db)
    shared = {
        **prefect_server,
        "EVALQUALITY_HOME": str(tmp_path / "home"),
        "EVALQUALITY_LEG_CACHE": cluster.url(legs_db),
    }
    # The single-process night, with its own (diskcache) leg cache: the reference.
    reference_env = {**prefect_server, "EVALQUALITY_HOME": str(tmp_path / "reference-home")}
    reference = _run([sys.executable, "-m", "flows.contract_strength", "--out", str(tmp_path / "reference")],
                     reference_env)
    assert reference.returncode in (0, 1, 2), reference.stderr[-2000:]
    reference_summary = json.loads((tmp_path / "reference" / "preflight-summary.json").read_text())
    distinct = reference_summary["legsSpawned"]
    assert distinct > 0

    pool = "eval-pool"
    created = _run(["prefect", "work-pool", "create", pool, "--type", "process"], shared, timeout=120)
    assert created.returncode == 0, created.stdout + created.stderr
    deployed = _run([sys.executable, "-m", "deployments.batched_nightly", "deploy", "--pool", pool], shared, 180)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    logs = [open(tmp_path / f"worker-{n}.log", "wb") for n in (1, 2)]  # noqa: SIM115
    workers = [
        subprocess.Popen(["prefect", "worker", "start", "--pool", pool, "--limit", "1"], env=shared, cwd=PROJECT,
                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        for log in logs
    ]
    night: subprocess.Popen[str] | None = None
    try:
        out = tmp_path / "night"
        night = subprocess.Popen(
            [sys.executable, "-m", "deployments.batched_nightly", "run", "--batches", "2", "--out", str(out)],
            env=shared, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )
        # Kill one batch's flow-run process once it has answered a few legs (and is still running).
        killed_at = None
        deadline = time.monotonic() + 400
        while killed_at is None and time.monotonic() < deadline and night.poll() is None:
            answered = _count_entries(cluster, legs_db)
            running = _flow_run_processes(workers)
            if answered >= 3 and running:
                os.kill(running[0], signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(running[0], 0)
                killed_at = _count_entries(cluster, legs_db)  # nothing more can come from the dead process
            time.sleep(0.05)
        assert killed_at is not None, "no batch was caught running with answered legs"
        stdout, stderr = night.communicate(timeout=600)
    finally:
        if night is not None and night.poll() is None:
            _stop(night)  # type: ignore[arg-type]
        for worker in workers:
            _stop(worker)
        for log in logs:
            log.close()

    assert night.returncode == reference.returncode, stdout + stderr[-3000:]
    # One report equal to the single-process one: every document byte for byte, the same gate lines.
    for suite in sorted(p.name for p in SUITES.iterdir() if (p / "contract.json").is_file()):
        merged = (out / suite / "contract-strength.json").read_bytes()
        assert merged == (tmp_path / "reference" / suite / "contract-strength.json").read_bytes(), suite
    reference_gate = [line for line in reference.stdout.splitlines() if line.startswith(("notes", "review", "trace"))]
    assert all(line in stdout for line in reference_gate)
    summary = json.loads((out / "nightly-batches.json").read_text())
    assert len(summary["batches"]) == 2
    # No request spawned twice: the finished batches spawned exactly the legs the killed attempt had not
    # answered, and the shared cache holds one entry per distinct request of the single-process night.
    spawned = sum(batch["legsSpawned"] for batch in summary["batches"])
    assert spawned == distinct - killed_at, (spawned, distinct, killed_at)
    assert _count_entries(cluster, legs_db) == distinct
