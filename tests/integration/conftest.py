"""Fixtures the integration tier shares: the real npm packages, installed once per test run.

Under pytest-xdist every worker's base temp folder sits in one folder of this run
(``.../pytest-N/popen-gwX``), so the install lands beside them under an exclusive ``flock``: the first
worker installs, the others wait and reuse it. A run without xdist installs into its own temp folder.
Nothing outlives the run's temp folders, so no later run trusts an earlier install."""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.npm_memory import NpmInstallFailed, install_json_server, install_memory_server


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
