"""``eval-quality suite init DIR``: a working suite to start from, generated and trialled, ready to score.

The starters (``evalquality_core/suite/starters/<kind>/``, package data) are one per kind of system, all
data: ``cli`` (the default) a tiny notes command-line program, ``http`` a notes HTTP service (registry
``kind = "api"`` with a ``[service]`` table), ``mcp`` a notes tool server over stdio (``kind = "mcp"``), ``agent`` the notes CLI behind a scripted
stand-in agent (slow, seeded transient failures; the agent keys of ``probe/agent_targets.py``).
Each holds its system, fixture, registry, contract, evaluator choices, authored-only probes (a
controlled-mutation defect and a clean control at least), their mutations, a scoring policy and strength
floors. ``init_suite`` copies the chosen one, then runs the generator and the reference evaluator on the
copy, so ``suite check`` passes and every probe scores PASS out of the box.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from evalquality_core.suite.evaluator import regenerate
from evalquality_core.suite.generate import Output, generate_suite, write_files
from evalquality_core.suite.load import SuiteError

#: The starter suites shipped with the package, one folder per kind.
STARTERS_ROOT = Path(__file__).resolve().parent / "starters"
#: The kinds ``suite init --kind`` accepts, the default first.
KINDS: tuple[str, ...] = ("cli", "http", "mcp", "agent")
#: The default (command-line) starter.
STARTER = STARTERS_ROOT / KINDS[0]


def starter_of(kind: str) -> Path:
    """The starter folder for ``kind`` (one of ``KINDS``); any other kind is refused (SuiteError)."""
    if kind not in KINDS:
        raise SuiteError(f"--kind {kind!r}: not a starter kind; use one of {', '.join(KINDS)}")
    return STARTERS_ROOT / kind


#: Files a starter takes from another starter instead of shipping a copy: the agent stand-in answers as
#: the cli starter's notes system, so it reuses that file.
BORROWED: dict[str, tuple[tuple[str, str], ...]] = {"agent": (("cli", "system/notes.py"),)}


def copy_starter(kind: str, destination: Path) -> Path:
    """Copy the ``kind`` starter (with the files it borrows, ``BORROWED``) into ``destination``; return it."""
    shutil.copytree(starter_of(kind), destination, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    for lender, name in BORROWED.get(kind, ()):
        shutil.copyfile(starter_of(lender) / name, Path(destination) / name)
    return Path(destination)


def init_suite(destination: Path, *, kind: str = "cli", jobs: int = 4) -> list[Path]:
    """Write the ``kind`` starter suite into ``destination`` (new, or an empty folder), generate its
    evidence and derived probe fields, and store its trials. Returns the files and trial folders written."""
    starter_of(kind)  # an unknown kind is refused before anything is written
    destination = Path(destination)
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise SuiteError(f"{destination}: already exists and is not an empty folder; `suite init` never overwrites")
    copy_starter(kind, destination)
    out = Output()
    generate_suite(destination, out, jobs)
    written = write_files(out)
    written += regenerate(destination, jobs=jobs)
    return written
