"""Shared test fixtures: where the conformance data lives, and temp homes that keep tests off $HOME."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
#: Real artifacts from the reference, read in place (never copied into the project).
CONFORMANCE = PROJECT_ROOT.parent / "shared" / "conformance"


@pytest.fixture(scope="session")
def conformance() -> Path:
    """The conformance folder; tests that need it skip, saying why, only where it is absent."""
    if not CONFORMANCE.is_dir():
        pytest.skip(f"conformance data not found at {CONFORMANCE} (../shared/conformance is absent)")
    return CONFORMANCE


@pytest.fixture(autouse=True, scope="session")
def _isolated_homes(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Point every cache and state directory at a per-session temp folder, never the user's home."""
    base = tmp_path_factory.mktemp("homes")
    os.environ.setdefault("EVALQUALITY_HOME", str(base / "evalquality"))
    os.environ["PREFECT_HOME"] = str(base / "prefect")
