"""The eval-quality home: where the leg cache, stage results, workspaces and (by default) Prefect's own
state live. Prefect-free, so ``flows/settings.py`` can read it before anything imports Prefect.

``$EVALQUALITY_HOME`` when set; otherwise ``<project>/.evalquality`` (gitignored) when the package runs
from a source checkout (a writable folder holding ``pyproject.toml``), else ``~/.cache/eval-quality``.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The source checkout this package was loaded from (meaningful only for an editable install).
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def evalquality_home() -> Path:
    """The absolute eval-quality home (see the module docstring for the default)."""
    configured = os.environ.get("EVALQUALITY_HOME")
    if configured:
        return Path(configured).expanduser().resolve()
    if (PROJECT_ROOT / "pyproject.toml").is_file() and os.access(PROJECT_ROOT, os.W_OK):
        return PROJECT_ROOT / ".evalquality"
    return Path.home() / ".cache" / "eval-quality"
