"""The leg cache's PostgreSQL backend against a real throwaway cluster (tests/postgres_cluster.py)."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from evalquality_core.faults import RuntimeFault
from tasks.leg_cache import LegCache, LegCacheUnusable, open_leg_cache
from tasks.leg_cache.postgres import TABLE, PostgresLegStore, check_url, lock_id, redacted
from tests.postgres_cluster import Cluster

PROJECT = Path(__file__).resolve().parents[3]
_names = itertools.count()


@pytest.fixture
def url(cluster: Cluster) -> str:
    """A fresh database per test."""
    return cluster.create_database(f"legs_{os.getpid()}_{next(_names)}")


def _request(leg: str = "leg-1", value: str = "a") -> dict:
    return {
        "kind": "cli", "probeId": leg, "interfaceId": "i", "operationId": "op", "executable": "x",
        "subcommandPath": [], "channels": {"argument": {}, "option": {"v": value}, "environment": {},
                                           "stdin": {"kind": "absent"}},
    }


def _observation(request: dict) -> dict:
    return {"kind": "cli", "probeId": request["probeId"], "interfaceId": "i", "operationId": "op", "exitCode": 0,
            "stdout": {"kind": "text", "value": request["channels"]["option"]["v"]},
            "stderr": {"kind": "text", "value": ""}, "artifacts": {}}


KEY = "ab" * 32


def PostgresLegCache(url: str, mode: str = "default") -> LegCache:  # noqa: N802 (reads as the backend it builds)
    """The leg cache on the PostgreSQL store, as ``open_leg_cache`` builds it for a postgresql:// location."""
    store = PostgresLegStore(url)
    return LegCache(store.location, mode, store=store, warn=lambda line: None)  # type: ignore[arg-type]


def test_identical_requests_on_many_threads_spawn_once(url: str) -> None:
    cache = PostgresLegCache(url)
    spawns: list[int] = []
    answers = []

    def spawn() -> dict:
        spawns.append(1)
        time.sleep(0.3)
        return _observation(_request())

    def leg(index: int) -> None:
        answers.append(cache.answer(KEY, _request(f"leg-{index}"), spawn))

    threads = [threading.Thread(target=leg, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cache.close()
    assert len(spawns) == 1
    assert sorted(a.source for a in answers) == ["cache"] * 7 + ["spawned"]
    assert sorted(a.observation["probeId"] for a in answers) == sorted(f"leg-{n}" for n in range(8))  # re-stamped


def test_a_fault_is_never_cached_and_a_later_leg_spawns_again(url: str) -> None:
    cache = PostgresLegCache(url)

    def failing() -> dict:
        raise RuntimeFault("budget-exhausted", "ProbeRequest", "exceeded maxElapsedMs")

    with pytest.raises(RuntimeFault):
        cache.answer(KEY, _request(), failing)
    assert cache.store.keys() == []
    cache.close()
    later = PostgresLegCache(url)  # the next run (invocation)
    assert later.answer(KEY, _request(), lambda: _observation(_request())).source == "spawned"
    assert later.store.keys() == [KEY]
    later.close()


def test_force_runs_each_distinct_request_once_per_invocation_and_from_cache_never_spawns(url: str) -> None:
    PostgresLegCache(url).answer(KEY, _request(), lambda: _observation(_request())).observation  # noqa: B018
    forced = PostgresLegCache(url, "force")
    spawned = []
    first = forced.answer(KEY, _request(), lambda: spawned.append(1) or _observation(_request(value="b")))
    second = forced.answer(KEY, _request("leg-2"), lambda: spawned.append(1) or _observation(_request()))
    assert (first.source, second.source, len(spawned)) == ("spawned", "cache", 1)
    assert second.observation["stdout"]["value"] == "b"  # later legs read what this invocation wrote
    offline = PostgresLegCache(url, "from-cache")
    assert offline.answer(KEY, _request(), lambda: pytest.fail("spawned")).source == "cache"
    with pytest.raises(RuntimeFault) as raised:
        offline.answer("cd" * 32, _request(), lambda: pytest.fail("spawned"))
    assert raised.value.code == "port-failure" and "without --from-cache" in raised.value.detail
    for cache in (forced, offline):
        cache.close()


@pytest.mark.parametrize(
    "tamper",
    [
        "UPDATE {table} SET entry = replace(entry, '\"value\":\"a\"', '\"value\":\"z\"')",  # observation edited
        "UPDATE {table} SET entry = '{{not json'",
        "UPDATE {table} SET key = '" + "ef" * 32 + "'",  # an entry moved under another key
    ],
)
def test_an_entry_that_does_not_verify_is_never_served(url: str, tamper: str) -> None:
    cache = PostgresLegCache(url)
    cache.answer(KEY, _request(), lambda: _observation(_request()))
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(tamper.format(table=TABLE))
        if "SET key" in tamper:  # the planted entry now sits under KEY's neighbour; put a copy back under KEY too
            connection.execute(f"INSERT INTO {TABLE} (key, entry) SELECT %s, entry FROM {TABLE}", (KEY,))
    fresh = PostgresLegCache(url)
    answer = fresh.answer(KEY if "SET key" not in tamper else "ef" * 32, _request(), lambda: _observation(_request()))
    assert answer.source == "spawned"
    assert answer.observation["stdout"]["value"] == "a"
    for handle in (cache, fresh):
        handle.close()


def test_the_lock_of_a_killed_holder_is_released(url: str) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys,time; from tasks.leg_cache.postgres import PostgresLegStore as S; s=S(sys.argv[1]);"
         "c=s.claim(sys.argv[2]); c.__enter__(); print('held', flush=True); time.sleep(600)", url, KEY],
        cwd=PROJECT, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        store = PostgresLegStore(url)
        with psycopg.connect(url, autocommit=True) as connection:
            taken = connection.execute("SELECT pg_try_advisory_lock(%s)", (lock_id(KEY),)).fetchone()[0]
            assert taken is False  # held by the other process
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        acquired = threading.Event()

        def take() -> None:
            with store.claim(KEY):
                acquired.set()

        waiter = threading.Thread(target=take, daemon=True)
        waiter.start()
        assert acquired.wait(timeout=30), "the dead holder's lock was never released"
        store.close()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_processes_sharing_the_database_spawn_each_request_once(url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "spawns"
    script = (
        "import sys,time; from tasks.leg_cache import open_leg_cache; c=open_leg_cache(sys.argv[1],'default','t');\n"
        "def spawn(k):\n"
        "    open(sys.argv[2],'a').write(k+'\\n'); time.sleep(0.05)\n"
        "    return {'kind':'cli','probeId':'x','interfaceId':'i','operationId':'op','exitCode':0,\n"
        "            'stdout':{'kind':'text','value':''},'stderr':{'kind':'text','value':''},'artifacts':{}}\n"
        "req={'kind':'cli','probeId':'leg','interfaceId':'i','operationId':'op'}\n"
        "for n in range(12):\n"
        "    k=('%02x' % n)*32; c.answer(k, req, lambda: spawn(k))\n"
        "c.close()\n"
    )
    runners = [
        subprocess.Popen([sys.executable, "-c", script, url, str(ledger)], cwd=PROJECT) for _ in range(3)
    ]
    assert [runner.wait(timeout=120) for runner in runners] == [0, 0, 0]
    spawned = ledger.read_text().split()
    assert sorted(spawned) == sorted(f"{n:02x}" * 32 for n in range(12))  # each once, none twice


def test_a_url_with_a_password_is_accepted_and_messages_never_show_a_credential() -> None:
    check_url("postgresql://me:secret@db.example:5432/legs")
    check_url("postgresql://me@db.example:5432/legs?password=secret&sslmode=require")
    assert redacted("postgresql://me:secret@db.example:5432/legs") == "postgresql://db.example:5432/legs"
    assert redacted("postgresql://me@db.example/legs?sslmode=require&%70assword=s&sslpassword=k") == (
        "postgresql://db.example/legs?sslmode=require"
    )
    # A password holding an unencoded @ or / still never reaches what is shown.
    assert redacted("postgresql://me:se@c/ret@db.example/legs") == "postgresql://db.example/legs"


def test_open_leg_cache_picks_the_backend_from_the_location(url: str, tmp_path: Path) -> None:
    assert isinstance(open_leg_cache(url, "default", "t-1").store, PostgresLegStore)
    assert not isinstance(open_leg_cache(tmp_path / "c", "default", "t-1").store, PostgresLegStore)


def test_an_unreachable_database_is_one_line_naming_it_without_user_info() -> None:
    with pytest.raises(LegCacheUnusable) as raised:
        PostgresLegStore("postgresql://someone@127.0.0.1:9/legs")
    message = str(raised.value)
    assert "postgresql://127.0.0.1:9/legs" in message and "someone" not in message and "\n" not in message
