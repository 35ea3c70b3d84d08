"""The nightly fanned out over Prefect workers, for real: a Prefect server on PostgreSQL, a process work pool,
two workers, the shared leg cache on the same PostgreSQL cluster, and the corpus split into two batches.

Proves: the merged report equals the single-process one (every suite's ``contract-strength.json`` byte
for byte, the same exit code and the same gate lines, against a baseline with two planted moves so the
lines are never both empty); no request is spawned twice across the batches; a batch whose flow-run
process is SIGKILLed mid-batch (its worker reports the run Crashed) and a batch whose whole machine is
lost (its worker and flow-run process SIGKILLed together: the deployment's heartbeat automation marks
the run Crashed) are both retried by Prefect as new flow runs that spawn only the legs the killed
attempts had not answered. Every server, worker and cluster it starts is stopped in teardown.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from deployments.batched_nightly import split_batches
from tests.ports import server_port
from tests.postgres_cluster import Cluster

PROJECT = Path(__file__).resolve().parents[3]
SUITES = PROJECT / "corpus" / "suites"

# One module fixture runs the flow(s) every test here reads: one worker builds it once (--dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("batched-nightly")]


def test_suites_are_dealt_round_robin_into_non_empty_batches() -> None:
    assert split_batches(["c", "a", "b"], 2) == [["a", "c"], ["b"]]
    assert split_batches(["a"], 3) == [["a"]]
    assert split_batches([], 2) == []
    with pytest.raises(ValueError):
        split_batches(["a"], 0)


def _free_port() -> int:
    return server_port()  # below the ephemeral range: no service a test starts can be handed it meanwhile


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


def _environment(pid: int) -> dict[bytes, bytes]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)


def _flow_run_processes(marker: str) -> list[int]:
    """Pids of the flow-run processes (``python -m prefect.engine``) the workers started for this test:
    their environment carries this test's leg cache URL (other sessions on the machine run engines too)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if b"prefect.engine" in (entry / "cmdline").read_bytes():
                if _environment(int(entry.name)).get(b"EVALQUALITY_LEG_CACHE") == marker.encode():
                    found.append(int(entry.name))
    return found


def _stored_keys(cluster: Cluster, database: str) -> set[str]:
    import psycopg

    with psycopg.connect(cluster.url(database), autocommit=True) as connection:
        exists = connection.execute("SELECT to_regclass('evalquality_leg_cache') IS NOT NULL").fetchone()[0]
        if not exists:
            return set()
        return {str(row[0]) for row in connection.execute("SELECT key FROM evalquality_leg_cache")}


def leg_keys(names: list[str]) -> set[str]:
    """The distinct leg cache keys of the named corpus suites, planned here without Prefect or a cache."""
    from evalquality_core.compile.pipeline import compile_contract
    from evalquality_core.preflight.plan import plan_preflight
    from flows.preflight import run_id_of
    from tasks.suites import load_suites

    suites, problems = load_suites(SUITES, names)
    assert not problems
    keys = set()
    for suite in suites:
        contract = compile_contract(suite.contract)
        for probe in suite.probes:
            plan = plan_preflight(contract, [probe], run_id_of(suite.name, probe["probeId"]), clean_witness_legs=True)
            keys.update(suite.leg_key_of(probe, leg) for leg in plan.legs)  # cli, mcp and api legs alike
    return keys


def _worker_of(pid: int, workers: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """The worker that started a flow-run process (its ancestor among ``workers``)."""
    by_pid = {worker.pid: worker for worker in workers}
    current = pid
    while current > 1:
        if current in by_pid:
            return by_pid[current]
        current = int(Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()[1])
    raise AssertionError(f"flow-run process {pid} was started by none of the workers")


def _batch_of(pid: int, api: str) -> list[str]:
    """The suites of the batch a flow-run process runs (its flow run id is in its environment)."""
    import httpx

    run_id = _environment(pid)[b"PREFECT__FLOW_RUN_ID"].decode()
    return list(httpx.get(f"{api}/flow_runs/{run_id}", timeout=30).json()["parameters"]["suites"])


def _moved_baseline(tmp_path: Path) -> tuple[Path, list[str]]:
    """The corpus baseline with one verdict and one floor decision recorded otherwise than the corpus
    scores them: the moves both nights must name, written by hand from what was planted here."""
    recorded = json.loads((PROJECT / "corpus" / "expected-strength.json").read_text(encoding="utf-8"))
    verdict = recorded["notes"]["probes"]["P-001"]["verdict"]
    recorded["notes"]["probes"]["P-001"]["verdict"] = "FAIL"
    decision = recorded["notes-weak"]["floorDecisions"]["defect"]
    recorded["notes-weak"]["floorDecisions"]["defect"] = "meets (rate-meets-floor)"
    assert verdict != "FAIL" and decision != "meets (rate-meets-floor)"  # the corpus as committed
    path = tmp_path / "moved-baseline.json"
    path.write_text(json.dumps(recorded, indent=2), encoding="utf-8")
    return path, [  # the gate names moves by suite, then probe
        f"notes P-001: verdict moved FAIL -> {verdict}",
        f"notes-weak: defect floor decision moved meets (rate-meets-floor) -> {decision}",
    ]


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
    baseline, planted_moves = _moved_baseline(tmp_path)
    # The single-process night, with its own (diskcache) leg cache: the reference. Wide columns, so no
    # line of its console report is wrapped (the night prints plain lines). It runs while the pool is set
    # up and the batched night runs (it shares neither their leg cache nor their flow's name), and is
    # read at the end: the two nights waiting on their processes side by side, not one after the other.
    reference_env = {**prefect_server, "EVALQUALITY_HOME": str(tmp_path / "reference-home"), "COLUMNS": "1000"}
    reference_log = {name: open(tmp_path / f"reference.{name}", "w+", encoding="utf-8")  # noqa: SIM115
                     for name in ("stdout", "stderr")}  # files, not pipes: nobody reads them while it runs
    reference_run = subprocess.Popen(
        [sys.executable, "-m", "flows.contract_strength", "--out", str(tmp_path / "reference"),
         "--baseline", str(baseline)],
        env=reference_env, cwd=PROJECT, stdout=reference_log["stdout"], stderr=reference_log["stderr"],
        start_new_session=True,
    )
    names = sorted(p.name for p in SUITES.iterdir() if (p / "contract.json").is_file())
    distinct = len(leg_keys(names))

    pool = "eval-pool"
    workers: list[subprocess.Popen[bytes]] = []
    logs = []
    night: subprocess.Popen[str] | None = None
    try:
        created = _run(["prefect", "work-pool", "create", pool, "--type", "process"], shared, timeout=120)
        assert created.returncode == 0, created.stdout + created.stderr
        # A batch run silent for 45 s (a heartbeat is due every 30 s, Prefect's shortest period) lost its
        # machine: the shortest window that still leaves a late heartbeat 15 s, so the wait after the
        # machine is lost stays short (15-45 s) while a live but loaded batch is never taken for lost.
        deployed = _run([sys.executable, "-m", "deployments.batched_nightly", "deploy", "--pool", pool,
                         "--silent-after", "45"], shared, 180)
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        logs = [open(tmp_path / f"worker-{n}.log", "wb") for n in (1, 2)]  # noqa: SIM115
        # One leg at a time in each batch, so a batch is caught with some (not all) of its legs answered.
        # Workers ask for new runs every second (Prefect's default is 10 s): a batch, and each retry of
        # one, starts at once instead of up to 10 s later.
        worker_env = {**shared, "EVALQUALITY_CONCURRENCY": "1", "PREFECT_WORKER_QUERY_SECONDS": "1"}
        workers = [
            subprocess.Popen([sys.executable, "-m", "prefect", "worker", "start", "--pool", pool, "--limit", "1"],
                             env=worker_env, cwd=PROJECT,
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            for log in logs
        ]
        out = tmp_path / "night"
        night = subprocess.Popen(
            [sys.executable, "-m", "deployments.batched_nightly", "run", "--batches", "2", "--out", str(out),
             "--baseline", str(baseline)],
            env=shared, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )
        # Two losses, each of a batch run caught with some (not all) of its legs answered: first a batch's
        # flow-run process alone is SIGKILLed (its worker lives on and reports the run Crashed); then, while
        # another worker is still up, a running batch's whole machine goes: its worker and its flow-run
        # process together, so nobody is left to report that run's end, and the heartbeat automation the
        # deployment installed marks it Crashed. Prefect retries each on a worker that is left.
        killed: dict[tuple[str, ...], set[str]] = {}  # batch -> keys answered when its latest attempt died
        lost_run: str | None = None
        deadline = time.monotonic() + 500
        batch_keys = {tuple(batch): leg_keys(batch) for batch in split_batches(names, 2)}
        # Progress is judged on a batch's own legs (notes-weak sends notes' requests: those are shared).
        exclusive = {
            batch: keys - set().union(*(other for name, other in batch_keys.items() if name != batch))
            for batch, keys in batch_keys.items()
        }
        batch_of_pid: dict[int, tuple[str, ...]] = {}
        done_with: set[int] = set()
        seen: list[str] = []
        while lost_run is None and time.monotonic() < deadline and night.poll() is None:
            stored = _stored_keys(cluster, legs_db)
            for pid in _flow_run_processes(shared["EVALQUALITY_LEG_CACHE"]):
                try:
                    if pid not in batch_of_pid:
                        batch_of_pid[pid] = tuple(_batch_of(pid, prefect_server["PREFECT_API_URL"]))
                    run_id = _environment(pid)[b"PREFECT__FLOW_RUN_ID"].decode()
                except (OSError, KeyError) as problem:  # gone meanwhile, or not a flow-run process yet
                    seen.append(repr(problem))
                    continue
                batch = batch_of_pid[pid]
                # New answers of this attempt (beyond what an earlier, killed attempt left), not yet all.
                fresh = (stored - killed.get(batch, set())) & exclusive[batch]
                seen.append(f"{len(stored)}:{batch[0]}:{len(fresh)}")
                if pid in done_with or len(fresh) < 2 or len(stored & batch_keys[batch]) >= len(batch_keys[batch]):
                    continue
                if not killed:
                    os.kill(pid, signal.SIGKILL)  # the flow-run process alone
                else:
                    worker = _worker_of(pid, workers)
                    if sum(other.poll() is None for other in workers if other is not worker) < 1:
                        continue  # no worker would be left to retry it
                    os.killpg(worker.pid, signal.SIGKILL)  # the machine: its worker...
                    os.killpg(pid, signal.SIGKILL)  # ...and the flow run it started (its own session)
                    lost_run = run_id
                done_with.add(pid)
                time.sleep(0.5)  # the processes are gone: nothing more can come from them
                killed[batch] = _stored_keys(cluster, legs_db) & batch_keys[batch]
                break
            time.sleep(0.05)
        assert lost_run is not None, f"no two batch runs were caught with some, not all, legs answered {seen[-60:]}"
        stdout, stderr = night.communicate(timeout=900)
        reference_run.wait(timeout=900)
    finally:
        if night is not None and night.poll() is None:
            _stop(night)  # type: ignore[arg-type]
        for worker in workers:
            _stop(worker)
        for log in logs:
            log.close()
        if reference_run.poll() is None:
            _stop(reference_run)  # type: ignore[arg-type]
        for file in reference_log.values():
            file.close()
    reference_out, reference_err = ((tmp_path / f"reference.{name}").read_text() for name in ("stdout", "stderr"))

    assert reference_run.returncode == 1, reference_out[-3000:] + reference_err[-2000:]
    reference_summary = json.loads((tmp_path / "reference" / "preflight-summary.json").read_text())
    assert reference_summary["legsSpawned"] == distinct > 0  # the independent plan agrees with the flow
    assert night.returncode == reference_run.returncode, stdout + stderr[-3000:]
    # One report equal to the single-process one: every document byte for byte, the same gate lines.
    for suite in sorted(p.name for p in SUITES.iterdir() if (p / "contract.json").is_file()):
        merged = (out / suite / "contract-strength.json").read_bytes()
        assert merged == (tmp_path / "reference" / suite / "contract-strength.json").read_bytes(), suite
    # The gate's lines ("<suite> …: … moved A -> B"): the night's verdict, whatever tables each run printed.
    # Both runs gate on a baseline with two planted moves, so the comparison is never between two empty lists.
    reference_gate = [line for line in reference_out.splitlines() if " moved " in line]
    night_gate = [line for line in stdout.splitlines() if " moved " in line]
    assert reference_gate == night_gate == planted_moves, (reference_gate, night_gate)
    summary = json.loads((out / "nightly-batches.json").read_text())
    assert len(summary["batches"]) == 2
    # No request spawned twice: each retried batch spawned none of the legs its killed attempt had
    # answered, and the shared cache holds one entry per distinct request of the single-process night.
    owns = {tuple(batch["suites"]): leg_keys(batch["suites"]) for batch in summary["batches"]}
    for batch in summary["batches"]:
        suites = tuple(batch["suites"])
        own = owns[suites]
        if suites in killed:
            # The retry spawned none of the legs its killed attempt(s) had answered: at most the rest.
            assert batch["legsSpawned"] <= len(own - killed[suites]), (batch, len(own), len(killed[suites]))
        else:
            shared_keys = own & set().union(*(keys for name, keys in owns.items() if name != suites))
            assert len(own) - len(shared_keys) <= batch["legsSpawned"] <= len(own), (batch, len(own))
    # Every distinct request answered once, and spawned once: the spawns of the finished batch runs plus
    # those the killed attempts stored (of their own legs) never exceed the distinct requests.
    assert _stored_keys(cluster, legs_db) == leg_keys(names)
    spawned = sum(batch["legsSpawned"] for batch in summary["batches"])
    answered_alone = set().union(*(keys & exclusive[batch] for batch, keys in killed.items()))
    assert spawned + len(answered_alone) <= distinct, (spawned, len(answered_alone), distinct)
    # Prefect retried both killed runs as new flow runs: four batch runs, two of them Crashed; the one whose
    # machine was lost was marked so by the heartbeat automation (its worker was gone).
    import httpx

    runs = httpx.post(f"{prefect_server['PREFECT_API_URL']}/flow_runs/filter",
                      json={"flows": {"name": {"any_": ["contract-strength-batch"]}}}, timeout=30).json()
    assert sorted(run["state_type"] for run in runs) == ["COMPLETED", "COMPLETED", "CRASHED", "CRASHED"], runs
    [lost] = [run for run in runs if run["id"] == lost_run]
    assert lost["state_type"] == "CRASHED" and "no heartbeat" in (lost["state"]["message"] or ""), lost
