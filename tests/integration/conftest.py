"""Fixtures the integration tier shares: the real npm packages, installed once per test run.

Under pytest-xdist every worker's base temp folder sits in one folder of this run
(``.../pytest-N/popen-gwX``), so the install lands beside them under an exclusive ``flock``: the first
worker installs, the others wait and reuse it. A run without xdist installs into its own temp folder.
Nothing outlives the run's temp folders, so no later run trusts an earlier install."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.npm_memory import NpmInstallFailed, install_json_server, install_memory_server
from tests.prefect_db import seed_prefect_home

#: Set together, the flows take this URL for a server they started themselves (flows/settings.py).
SHARED_SERVER_VARIABLES = ("PREFECT_API_URL", "EVALQUALITY_EMBEDDED_API_URL")


def _installed_once(factory: pytest.TempPathFactory, worker_id: str, name: str,
                    install: Callable[[Path], Path]) -> Path:
    """``install`` into a folder every worker of this run shares; its ``node_modules``."""
    if worker_id == "master":
        root = factory.mktemp(f"npm-{name}")
    else:
        root = factory.getbasetemp().parent / f"npm-{name}"
    root.mkdir(exist_ok=True)
    with open(root.parent / f"npm-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = root / "installed"
        if marker.is_file():
            return Path(marker.read_text(encoding="utf-8"))
        try:
            modules = install(root)
        except NpmInstallFailed as failed:
            pytest.fail(f"could not install {name} from the npm registry for this test: {failed}", pytrace=False)
        marker.write_text(str(modules), encoding="utf-8")
        return modules


@pytest.fixture(scope="session")
def json_server_modules(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """json-server 0.17.4's installed ``node_modules`` (read-only: copy it, never change it)."""
    return _installed_once(tmp_path_factory, worker_id, "json-server", install_json_server)


@pytest.fixture(scope="session")
def memory_server_modules(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """``@modelcontextprotocol/server-memory``'s installed ``node_modules`` (read-only: copy it)."""
    return _installed_once(tmp_path_factory, worker_id, "server-memory", install_memory_server)


@pytest.fixture(scope="session")
def worker_prefect_server(tmp_path_factory: pytest.TempPathFactory, migrated_prefect_db: Path) -> Iterator[str]:
    """One embedded Prefect server for this worker's flow runs, started as a flow starts its own (same
    command line, ``flows/embedded_server.py``), on a home of its own seeded with the migrated database.
    A flow run otherwise starts and stops its own server: ~6 s of CPU each (issue 35). Stopped at the end."""
    from flows.embedded_server import EmbeddedServer

    home = seed_prefect_home(tmp_path_factory.mktemp("worker-prefect"), migrated_prefect_db)
    environment = {k: v for k, v in os.environ.items() if k not in SHARED_SERVER_VARIABLES}
    server = EmbeddedServer.start({**environment, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})
    try:
        server.wait_until_healthy(300)
        yield server.api_url
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def shared_prefect_server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the flow processes this test starts (they inherit ``os.environ``) at the worker's server, as
    embedded: no UI links, no heartbeats. A test about the server a flow starts, or about where Prefect's
    database lives, is marked ``own_prefect_server`` and gets none; so does a test whose flow
    environment drops every ``PREFECT_*`` variable."""
    if request.node.get_closest_marker("own_prefect_server"):
        return
    url = request.getfixturevalue("worker_prefect_server")
    for name in SHARED_SERVER_VARIABLES:
        monkeypatch.setenv(name, url)
