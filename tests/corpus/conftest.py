"""Shared helpers for the corpus tests: paths, the suites, and scoring one stored probe."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SUITES = PROJECT_ROOT / "corpus" / "suites"
POLICY = PROJECT_ROOT / "corpus" / "scoring-policy.json"
#: The suites of the corpus, read from the folder (never a hard-coded list): a suite added there is checked too.
SUITE_NAMES = sorted(p.name for p in SUITES.iterdir() if (p / "contract.json").is_file())


def read(path: Path) -> Any:
    """Parse one JSON file."""
    return json.loads(path.read_text(encoding="utf-8"))


def probe_ids(suite: str) -> list[str]:
    """The probe ids of a suite, sorted."""
    return sorted(p.stem for p in (SUITES / suite / "probes").glob("P-*.json"))


@pytest.fixture(scope="session")
def suites_root() -> Path:
    """``corpus/suites`` of this checkout."""
    return SUITES
