"""A Prefect database migrated once, copied into the fresh ``PREFECT_HOME`` of a second "machine".

A test that gives a child process a fresh ``PREFECT_HOME`` (another machine: its own embedded Prefect
server) seeds it with a copy of a database already migrated to this Prefect's schema: that server then
starts on an up-to-date database instead of running every migration first (seconds of CPU each time,
a minute on a loaded machine), as on a machine that has run Prefect before. The server still checks
the schema version when it starts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

DATABASE = "prefect.db"
#: Set together to one URL, a flow process runs on that server as on one it started itself
#: (flows/settings.py); tests/integration/conftest.py sets them to the worker's server.
SHARED_SERVER_VARIABLES = ("PREFECT_API_URL", "EVALQUALITY_EMBEDDED_API_URL")


def shared_server(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The worker's server variables, when set: what a test adds to a flow environment it builds without
    this process's ``PREFECT_*`` variables, so that its flow runs on the worker's server too."""
    return {name: environ[name] for name in SHARED_SERVER_VARIABLES if name in environ}


def migrated_database(home: Path, template: Path) -> Path:
    """A quiescent copy (``template``) of ``home/prefect.db``, the test process's own Prefect database.

    That database is migrated by the first embedded server the process starts; when no server has
    started yet it is migrated here (``prefect server database upgrade``), work the process's own
    server then skips. The copy is taken with SQLite's backup API: consistent even while that server
    writes to it. Its runs are the test process's history; nothing of a run's cache lives in it.
    """
    database = home / DATABASE
    if not database.is_file():
        environment = {**os.environ, "PREFECT_HOME": str(home)}
        environment.pop("PREFECT_API_DATABASE_CONNECTION_URL", None)
        environment.pop("PREFECT_API_URL", None)
        subprocess.run([sys.executable, "-m", "prefect", "server", "database", "upgrade", "--yes"],
                       env=environment, check=True, capture_output=True, timeout=300)
    template.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as source, \
            contextlib.closing(sqlite3.connect(template)) as copy:
        source.backup(copy)
    return template


def seed_prefect_home(prefect_home: Path, migrated: Path) -> Path:
    """Put a copy of the migrated database into a fresh ``PREFECT_HOME``; return that home."""
    prefect_home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(migrated, prefect_home / DATABASE)
    return prefect_home
