"""Direct access to one of the mutants flow's SQLite stores (tasks/mutants.py ``STORE_NAMES``), as a tamperer
with our uid would have it: read every row, or write one behind the store's back."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def rows(cache: Path, store: str) -> dict[str, str]:
    """Every ``key → entry`` row of ``<cache>/<store>/legs.sqlite3``."""
    with sqlite3.connect(cache / store / "legs.sqlite3") as db:
        return dict(db.execute("SELECT key, entry FROM legs").fetchall())


def plant(cache: Path, store: str, key: str, text: str) -> None:
    """Insert or replace the row ``key`` with ``text`` (no verification: what a planted entry is)."""
    with sqlite3.connect(cache / store / "legs.sqlite3") as db:
        db.execute("INSERT OR REPLACE INTO legs (key, entry) VALUES (?, ?)", (key, text))
