"""The eval-quality home: where the leg cache, stage results, workspaces, the dependency layer store and
(by default) Prefect's own state live. Pure path logic (no Prefect), shared by the CLI and the flows.

``$EVALQUALITY_HOME`` when set; otherwise ``<project>/.evalquality`` (gitignored) when the package runs
from a source checkout (a writable folder holding ``pyproject.toml``), else ``~/.cache/eval-quality``.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The source checkout this package was loaded from (meaningful only for an editable install).
PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent


def evalquality_home() -> Path:
    """The absolute eval-quality home (see the module docstring for the default)."""
    configured = os.environ.get("EVALQUALITY_HOME")
    if configured:
        return Path(configured).expanduser().resolve()
    if (PROJECT_ROOT / "pyproject.toml").is_file() and os.access(PROJECT_ROOT, os.W_OK):
        return PROJECT_ROOT / ".evalquality"
    return Path.home() / ".cache" / "eval-quality"


def layers_dir() -> Path:
    """The dependency layer store (evalquality_core/suite/layers.py) of the home."""
    return evalquality_home() / "layers"
