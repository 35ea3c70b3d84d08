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
from tests.prefect_db import SHARED_SERVER_VARIABLES


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


@pytest.fixture(scope="session", autouse=True)
def worker_prefect_server() -> Iterator[str]:
    """One embedded Prefect server for this worker's flow runs, started as a flow starts its own
    (``flows/embedded_server.py``) on the worker's temp ``PREFECT_HOME``; stopped at the session's end.

    A flow process otherwise starts and stops a server of its own: ~6 s of CPU each, and the integration
    tier runs about a hundred (issue 35). ``PREFECT_API_URL`` and ``EVALQUALITY_EMBEDDED_API_URL`` both
    name it, so a flow process (they inherit ``os.environ``) runs on it *as embedded*: no UI links, no
    heartbeats, no advice about a user's server (flows/settings.py). This process's own Prefect client
    and its in-process flows use it too. Autouse and session-wide, so that module fixtures running flows
    see it; a test about the server a flow starts opts out with ``own_prefect_server``."""
    from flows.embedded_server import EmbeddedServer

    server = EmbeddedServer.start()
    try:
        server.wait_until_healthy(300)
        _point_prefect_at(server.api_url)
        yield server.api_url
    finally:
        _point_prefect_at(None)
        server.stop()


@pytest.fixture(scope="session")
def migrated_prefect_db(worker_prefect_server: str, migrated_prefect_db: Path) -> Path:
    """tests/conftest.py's, copied after the worker's server has migrated the database it copies."""
    return migrated_prefect_db


def _point_prefect_at(url: str | None) -> None:
    """Set (or, None, remove) both variables, and have this process's Prefect settings follow them."""
    import prefect.context

    for name in SHARED_SERVER_VARIABLES:
        if url is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = url
    prefect.context.refresh_global_settings_context()


def _without_the_worker_server(request: pytest.FixtureRequest) -> Iterator[None]:
    """For a module or test marked ``own_prefect_server``: no worker server while it runs; restored after."""
    if not request.node.get_closest_marker("own_prefect_server") or "PREFECT_API_URL" not in os.environ:
        yield
        return
    url = request.getfixturevalue("worker_prefect_server")
    _point_prefect_at(None)
    try:
        yield
    finally:
        _point_prefect_at(url)


@pytest.fixture(scope="module", autouse=True)
def own_prefect_server_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module marked ``own_prefect_server`` (``pytestmark``) runs without the worker's server, its module
    fixtures too: its flow processes start their own, as a user's would (the embedded server's life,
    Prefect's home, a server's global concurrency limits)."""
    yield from _without_the_worker_server(request)


@pytest.fixture(autouse=True)
def own_prefect_server(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``own_prefect_server`` runs without the worker's server (as a marked module does)."""
    yield from _without_the_worker_server(request)
