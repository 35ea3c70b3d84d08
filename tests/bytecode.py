"""Our packages compiled once per test session, before the workers and their child processes start.

The suite starts well over a thousand interpreters that import our code (``python -m evalquality_core``,
``python -m flows.…``, the corpus tools). An editable install is not compiled by pip, and where
``PYTHONDONTWRITEBYTECODE`` is set (it is on the CI machine) no interpreter writes the bytecode it
compiles, so every child compiled ``flows/`` and ``tasks/`` (and whatever of ``evalquality_core`` no
earlier child without the variable had cached) from source again: ~0.2 s of CPU per flow process.
Python reads bytecode that exists whatever the variable says, so one ``compileall`` here serves them all.

Only the importable packages are compiled: never ``corpus/suites`` or test fixtures, whose trees are
digested (a ``__pycache__`` there would change a suite's digest).
"""

from __future__ import annotations

import compileall
from pathlib import Path

import pytest

#: The packages children import, relative to the rootdir.
PACKAGES = ("evalquality_core", "flows", "tasks", "deployments", "corpus/tools", "docsgen", "benchmarks")


def pytest_sessionstart(session: pytest.Session) -> None:
    """In the controller (not an xdist worker): compile :data:`PACKAGES` where their bytecode is missing or stale."""
    if hasattr(session.config, "workerinput"):
        return
    root = Path(session.config.rootpath)
    for package in PACKAGES:
        if (root / package).is_dir():
            compileall.compile_dir(root / package, quiet=2, workers=1)
