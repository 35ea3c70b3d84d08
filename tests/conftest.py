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

from tests.bytecode import pytest_sessionstart  # noqa: F401 (compiles our packages once per session)
from tests.postgres_cluster import Cluster, throwaway_cluster
from tests.prefect_db import migrated_database
from tests.tiers import pytest_collection_modifyitems, pytest_configure  # noqa: F401 (the tiers' hooks)

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
