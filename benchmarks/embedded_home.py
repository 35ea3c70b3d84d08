"""A throwaway eval-quality home with an embedded Prefect server, for a benchmark run in this process.

``with embedded_home("name") as home:`` makes a temp home, points ``EVALQUALITY_HOME`` and
``PREFECT_HOME`` into it, drops ``PREFECT_API_URL`` (so the run is on the embedded server, as users'
default is), puts the project on ``sys.path`` and imports ``flows`` (its settings must precede
Prefect's import); the home is removed afterwards.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


@contextmanager
def embedded_home(name: str) -> Iterator[Path]:
    """The temp home of one benchmark run (module docstring)."""
    home = Path(tempfile.mkdtemp(prefix=f"eval-quality-bench-{name}-"))
    os.environ["EVALQUALITY_HOME"] = str(home)
    os.environ["PREFECT_HOME"] = str(home / "prefect")
    os.environ.pop("PREFECT_API_URL", None)
    sys.path.insert(0, str(PROJECT))
    try:
        importlib.import_module("flows")  # the embedded-mode settings, before Prefect is imported
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)
