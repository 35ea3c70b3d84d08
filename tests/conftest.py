"""Shared test setup: where the conformance data lives, and temp homes that keep tests off $HOME.

The environment is set at import time, before anything imports Prefect (prefect.md §8): each test
process (and each xdist worker) gets its own fresh Prefect home, eval-quality home and cache.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.postgres_cluster import Cluster, throwaway_cluster
from tests.prefect_db import migrated_database

_HOME = Path(tempfile.mkdtemp(prefix="evalquality-test-"))
os.environ["PREFECT_HOME"] = str(_HOME / "prefect")
os.environ["EVALQUALITY_HOME"] = str(_HOME / "evalquality")
os.environ.pop("PREFECT_API_URL", None)
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")

PROJECT_ROOT = Path(__file__).resolve().parent.parent
#: Real artifacts from the reference, read in place (never copied into the project).
CONFORMANCE = PROJECT_ROOT.parent / "shared" / "conformance"


@pytest.fixture(scope="session")
def conformance() -> Path:
    """The conformance folder; tests that need it skip, saying why, only where it is absent."""
    if not CONFORMANCE.is_dir():
        pytest.skip(f"conformance data not found at {CONFORMANCE} (../shared/conformance is absent)")
    return CONFORMANCE


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL cluster per test process (xdist worker), shared by every module that needs
    one (each test makes its own database in it): a cluster start is initdb plus a server start."""
    with throwaway_cluster() as running:
        yield running


@pytest.fixture(scope="session")
def migrated_prefect_db() -> Path:
    """A Prefect database already migrated to this Prefect's schema, copied once per test process from its
    own (tests/prefect_db.py); tests seed a fresh ``PREFECT_HOME`` with it through ``seed_prefect_home``."""
    return migrated_database(Path(os.environ["PREFECT_HOME"]), _HOME / "prefect-template" / "prefect.db")



def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Spread the modules that hold a ``slow`` test over the first half of the run, each module kept whole.

    In collection order most slow modules (``tests/flows``) came last, and the fresh-clone suite spent its
    last four minutes on them with the quick tests long done. All of them first was worse: four flows at
    once, each with its own Prefect server and legs, oversubscribed two cores (load 13) and the suite
    slowed. Interleaved, a slow module is followed by a run of quick ones. Deterministic, as xdist needs
    every worker to collect the same order."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    slow = [name for name, members in modules.items() if any(m.get_closest_marker("slow") for m in members)]
    quick = [name for name in modules if name not in slow]
    if not slow:
        return
    between = max(1, len(quick) // (2 * len(slow)))  # quick modules after each slow one: slow ones end mid-run
    order: list[str] = []
    for index, name in enumerate(slow):
        order.append(name)
        order.extend(quick[index * between : (index + 1) * between])
    order.extend(quick[len(slow) * between :])
    items[:] = [item for name in order for item in modules[name]]
