"""The leg cache (harness.md A.6) with real child processes: one spawn per distinct request, faults never
cached, re-stamped hits, the three modes, and a lock holder that died never blocks the next run."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evalquality_core.faults import RuntimeFault
from tasks.leg_cache import LegCache, leg_cache_key

REQUEST = {
    "kind": "cli",
    "probeId": "leg-a",
    "interfaceId": "skill-runner",
    "operationId": "run-skill",
    "executable": "skill-runner",
    "subcommandPath": [],
    "channels": {"argument": {}, "option": {}, "environment": {"TOKEN": "s3cret"}, "stdin": {"kind": "absent"}},
}


def _spawn_counting(marker: Path, sleep_s: float = 0.3):
    """A spawn that starts a real process which appends one line to ``marker`` (a process start)."""

    def spawn() -> dict:
        code = f"import time; open({str(marker)!r}, 'a').write('start\\n'); time.sleep({sleep_s})"
        subprocess.run([sys.executable, "-c", code], check=True)
        return {
            "kind": "cli",
            "probeId": "whoever-ran-first",
            "interfaceId": "skill-runner",
            "operationId": "run-skill",
            "exitCode": 3,  # a non-zero exit is an observation, and is cached
            "stdout": {"kind": "text", "value": ""},
            "stderr": {"kind": "text", "value": ""},
            "artifacts": {},
        }

    return spawn


def _starts(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def test_key_blanks_the_leg_id_and_covers_target_and_system():
    key = leg_cache_key(REQUEST, {"target": "python"}, "sha256:aa", "v1")
    assert key == leg_cache_key({**REQUEST, "probeId": "leg-b"}, {"target": "python"}, "sha256:aa", "v1")
    assert key != leg_cache_key(REQUEST, {"target": "python3"}, "sha256:aa", "v1")
    assert key != leg_cache_key(REQUEST, {"target": "python"}, "sha256:bb", "v1")
    assert key != leg_cache_key(REQUEST, {"target": "python"}, "sha256:aa", "v2")
    other = {**REQUEST, "channels": {**REQUEST["channels"], "option": {"skill": "x"}}}
    assert key != leg_cache_key(other, {"target": "python"}, "sha256:aa", "v1")


def test_concurrent_identical_requests_spawn_once_and_hits_are_restamped(tmp_path):
    cache = LegCache(tmp_path / "cache")
    marker = tmp_path / "starts"
    answers = []
    requests = [{**REQUEST, "probeId": f"leg-{i}"} for i in range(6)]
    threads = [
        threading.Thread(target=lambda r=r: answers.append(cache.answer("k1", r, _spawn_counting(marker))))
        for r in requests
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert _starts(marker) == 1
    assert sorted(a.source for a in answers) == ["cache"] * 5 + ["spawned"]
    assert sorted(a.observation["probeId"] for a in answers) == [f"leg-{i}" for i in range(6)]
    assert all(a.observation["exitCode"] == 3 for a in answers)
    # Persisted record: environment key names only, never the value.
    record = cache.lookup("k1")
    assert record is not None and record["request"]["channels"]["environment"] == ["TOKEN"]
    assert "s3cret" not in repr(record)


def _process_worker(directory: str, marker: str, barrier) -> None:
    cache = LegCache(Path(directory))
    barrier.wait()
    threads = [
        threading.Thread(target=cache.answer, args=("k-proc", {**REQUEST, "probeId": f"p{i}"}, _spawn_counting(Path(marker))))
        for i in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_identical_requests_across_processes_spawn_once(tmp_path):
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    marker = tmp_path / "starts"
    workers = [
        context.Process(target=_process_worker, args=(str(tmp_path / "cache"), str(marker), barrier)) for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert _starts(marker) == 1


def test_a_fault_is_not_cached_and_the_next_run_spawns_again(tmp_path):
    marker = tmp_path / "starts"

    def timing_out() -> dict:
        _spawn_counting(marker, 0)()
        raise RuntimeFault("budget-exhausted", "CommandProbeRequest", "exceeded maxElapsedMs (1ms) and was killed")

    first = LegCache(tmp_path / "cache")
    with pytest.raises(RuntimeFault):
        first.answer("k2", REQUEST, timing_out)
    assert first.lookup("k2") is None
    second = LegCache(tmp_path / "cache")  # the next run
    assert second.answer("k2", REQUEST, _spawn_counting(marker, 0)).source == "spawned"
    assert _starts(marker) == 2
    assert LegCache(tmp_path / "cache").answer("k2", REQUEST, _spawn_counting(marker, 0)).source == "cache"
    assert _starts(marker) == 2


def test_force_runs_each_distinct_request_live_once_per_invocation(tmp_path):
    marker = tmp_path / "starts"
    LegCache(tmp_path / "cache").answer("k3", REQUEST, _spawn_counting(marker, 0))
    forced = LegCache(tmp_path / "cache", "force")
    assert forced.answer("k3", REQUEST, _spawn_counting(marker, 0)).source == "spawned"
    assert forced.answer("k3", {**REQUEST, "probeId": "again"}, _spawn_counting(marker, 0)).source == "cache"
    assert _starts(marker) == 2


def test_from_cache_miss_says_how_to_fill_the_cache(tmp_path):
    cache = LegCache(tmp_path / "cache", "from-cache")
    with pytest.raises(RuntimeFault) as caught:
        cache.answer("k4", REQUEST, _spawn_counting(tmp_path / "starts"))
    assert "without --from-cache" in caught.value.detail
    assert not (tmp_path / "starts").exists()


_HOLD = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from tasks.leg_cache import SqliteLegStore
store = SqliteLegStore(Path({directory!r}))
with store.claim("k5"):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_lock_held_by_a_killed_process_is_reclaimed(tmp_path):
    root = str(Path(__file__).resolve().parents[2])
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD.format(root=root, directory=str(tmp_path / "cache"))], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    cache = LegCache(tmp_path / "cache")
    started = time.monotonic()
    with cache.store.claim("k5"):
        pass
    assert time.monotonic() - started < 5
