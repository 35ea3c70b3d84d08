"""A PostgreSQL leg cache URL's password never shows: not in an error line, the console, Prefect's flow
run parameters or logs, or anything else in the run's Prefect database.

Real ``python -m flows.preflight`` processes: against a throwaway cluster that demands a password
(scram-sha-256 on TCP, set up here) with the password in the URL's user info or in ``?password=``;
and with mistyped URLs (bad scheme, bad port, an unparsable password, an unreachable server, a wrong
password), each one line with its documented exit code and no password.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.skill_suite import build_skill_suite
from tests.postgres_cluster import SUPERUSER, Cluster, throwaway_cluster
from tests.prefect_db import seed_prefect_home

PROJECT = Path(__file__).resolve().parents[3]
PROG = "python -m flows.preflight"
PASSWORD = "Pw-9f2c7d1e"
DATABASE = "legs"

pytestmark = pytest.mark.xdist_group("leg-cache-secrets")


@pytest.fixture(scope="module")
def password_cluster() -> Iterator[Cluster]:
    """A throwaway cluster whose TCP connections need the password (its socket stays trusted, for setup)."""
    import psycopg

    with throwaway_cluster() as cluster:
        with psycopg.connect(cluster.url(), autocommit=True) as connection:
            connection.execute(f"ALTER ROLE {SUPERUSER} PASSWORD '{PASSWORD}'")
            connection.execute(f"CREATE DATABASE {DATABASE}")
        (cluster.root / "data" / "pg_hba.conf").write_text(
            "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
        )
        with psycopg.connect(host=str(cluster.root), port=cluster.port, user=SUPERUSER, dbname="postgres",
                             autocommit=True) as connection:
            connection.execute("SELECT pg_reload_conf()")
        with pytest.raises(psycopg.OperationalError, match="no password supplied"):
            psycopg.connect(cluster.url(DATABASE), connect_timeout=10).close()  # it does ask for the password now
        yield cluster


def _env(home: Path, url: str, migrated: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_", "PG"))}
    env.update({"EVALQUALITY_HOME": str(home), "PREFECT_HOME": str(home / "prefect"), "EVALQUALITY_LEG_CACHE": url,
                "PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120"})
    if migrated is not None:
        seed_prefect_home(home / "prefect", migrated)
    return env


def _preflight(tmp_path: Path, env: dict[str, str], suites: Path | None = None) -> subprocess.CompletedProcess[str]:
    suites = suites or tmp_path / "no-suites"
    suites.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "flows.preflight", "--suites", str(suites), "--out", str(tmp_path / "out"),
               "--baseline", str(tmp_path / "baseline.json"), "--update-baseline", "--concurrency", "2"]
    return subprocess.run(command, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=400)


def _flow_run_parameters(database: Path) -> dict[str, dict]:
    """Each flow run's recorded parameters, by flow run id."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        return {row[0]: json.loads(row[1]) for row in connection.execute("SELECT id, parameters FROM flow_run")}


def _every_stored_text(database: Path) -> list[str]:
    """Every value of every row of every table of a SQLite database, as text."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return [str(value) for table in tables for row in connection.execute(f'SELECT * FROM "{table}"') for value in row]


@pytest.mark.slow
@pytest.mark.parametrize("form", ["user-info", "query"])
def test_a_password_in_the_url_reaches_no_parameter_log_or_line(
    conformance, password_cluster: Cluster, migrated_prefect_db: Path, tmp_path: Path, form: str
) -> None:
    import psycopg

    port = password_cluster.port
    url = (f"postgresql://{SUPERUSER}:{PASSWORD}@127.0.0.1:{port}/{DATABASE}" if form == "user-info"
           else f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{DATABASE}?password={PASSWORD}&connect_timeout=10")
    shown = (f"postgresql://127.0.0.1:{port}/{DATABASE}" if form == "user-info"
             else f"postgresql://127.0.0.1:{port}/{DATABASE}?connect_timeout=10")
    home = tmp_path / "home"
    build_skill_suite(conformance, tmp_path / "suites", probes=1)

    env = _env(home, url, migrated_prefect_db)
    database = home / "prefect" / "prefect.db"
    seeded = set(_flow_run_parameters(database))  # the seeded database may hold earlier runs

    result = _preflight(tmp_path, env, tmp_path / "suites")

    assert result.returncode == 0, result.stderr[-3000:]
    assert PASSWORD not in result.stdout + result.stderr
    # The legs went through the password-protected cache: the real URL was used where the store opened.
    with psycopg.connect(url if form == "user-info" else url.replace("&connect_timeout=10", "")) as connection:
        assert connection.execute("SELECT count(*) FROM evalquality_leg_cache").fetchone()[0] > 0
    runs = {key: value for key, value in _flow_run_parameters(database).items() if key not in seeded}
    assert [p["cache_dir"] for p in runs.values()] == [shown]  # this run's flow run recorded the redacted form
    stored = _every_stored_text(database)
    assert stored and not [text for text in stored if PASSWORD in text]
    for path in home.joinpath("prefect").glob("prefect.db*"):  # deleted rows and the write-ahead log too
        assert PASSWORD.encode() not in path.read_bytes(), path
    assert PASSWORD not in "".join(p.read_text(errors="replace") for p in (tmp_path / "out").rglob("*") if p.is_file())


def _one_line(result: subprocess.CompletedProcess[str], code: int) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, result.stderr
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.mark.parametrize(("url", "code", "says"), [
    (f"postgress://{SUPERUSER}:{PASSWORD}@127.0.0.1:5432/legs", 64,
     "usage: EVALQUALITY_LEG_CACHE=postgress://127.0.0.1:5432/legs is not a postgresql:// URL"),
    (f"host=127.0.0.1 user={SUPERUSER} password={PASSWORD}", 64,
     "usage: EVALQUALITY_LEG_CACHE (its value is not shown) is not a postgresql:// URL"),
    (f"postgresql://{SUPERUSER}:{PASSWORD}@127.0.0.1:99999/legs", 64,
     "usage: EVALQUALITY_LEG_CACHE=postgresql://127.0.0.1:99999/legs: the port 99999 is not a number from 1 to 65535"),
    (f"postgresql://{SUPERUSER}@127.0.0.1:5432/legs?password={PASSWORD} x", 64,
     "usage: EVALQUALITY_LEG_CACHE=postgresql://127.0.0.1:5432/legs: not a usable PostgreSQL URL (percent-encode"),
    (f"postgresql://{SUPERUSER}:{PASSWORD}@127.0.0.1:9/legs", 74,
     "leg cache postgresql://127.0.0.1:9/legs: could not create the table: connection failed"),
])
def test_a_mistyped_url_is_one_line_without_its_password(tmp_path: Path, url: str, code: int, says: str) -> None:
    line = _one_line(_preflight(tmp_path, _env(tmp_path / "home", url)), code)
    assert line.startswith(f"{PROG}: {says}"), line
    assert PASSWORD not in line


def test_a_wrong_password_is_one_line_74_without_it(password_cluster: Cluster, tmp_path: Path) -> None:
    wrong = f"Wrong-{PASSWORD}"
    url = f"postgresql://{SUPERUSER}:{wrong}@127.0.0.1:{password_cluster.port}/{DATABASE}"
    line = _one_line(_preflight(tmp_path, _env(tmp_path / "home", url)), 74)
    assert line.startswith(f"{PROG}: leg cache postgresql://127.0.0.1:{password_cluster.port}/{DATABASE}: "), line
    assert "password authentication failed" in line
    assert wrong not in line and PASSWORD not in line
