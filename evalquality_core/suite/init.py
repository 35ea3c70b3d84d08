"""``eval-quality suite init DIR``: a working suite to start from, generated and trialled, ready to score.

The starter (``evalquality_core/suite/starter/``, package data) is a tiny notes CLI with its fixture,
registry, contract (which leaves no AD-20 coverage gap), evaluator choices, one probe of each class (a
controlled-mutation defect, a gameability probe, a clean control), their mutations, a scoring policy and
strength floors. ``init_suite`` copies it, then runs the generator and the reference evaluator on the
copy, so ``suite check`` passes and every probe scores PASS out of the box.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from evalquality_core.suite.evaluator import regenerate
from evalquality_core.suite.generate import Output, generate_suite, write_files
from evalquality_core.suite.load import SuiteError

#: The starter suite shipped with the package.
STARTER = Path(__file__).resolve().parent / "starter"


def init_suite(destination: Path, *, jobs: int = 4) -> list[Path]:
    """Write the starter suite into ``destination`` (new, or an empty folder), generate its evidence and
    derived probe fields, and store its trials. Returns the files and trial folders written."""
    destination = Path(destination)
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise SuiteError(f"{destination}: already exists and is not an empty folder; `suite init` never overwrites")
    shutil.copytree(STARTER, destination, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    out = Output()
    generate_suite(destination, out, jobs)
    written = write_files(out)
    written += regenerate(destination, jobs=jobs)
    return written
