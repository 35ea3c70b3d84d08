"""Thin aliases for our own corpus: ``python -m corpus.tools.generate`` and ``python -m corpus.tools.evaluator``.

The code that loads, stages, generates and evaluates a suite is product code in
:mod:`evalquality_core.suite`, and ``eval-quality suite generate|trials DIR`` runs it on any suite folder.
These aliases keep the old entry points for this checkout's ``corpus/suites/``: ``--suite`` takes a suite
name under it, or a path to any suite folder. They run from any working directory (the suites folder is
found from this file, not from the working directory).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NoReturn

#: This checkout's suites folder.
SUITES_ROOT = Path(__file__).resolve().parent.parent / "suites"


class ToolArgumentParser(argparse.ArgumentParser):
    """The corpus tools' argument parser: a usage error is one line, ``<tool>: usage: <message>``, exit 2.
    A flag is never abbreviated (``--suite`` is not ``--suites``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Report ``message`` as one line (argparse prints the whole usage block first) and exit 2."""
        tool = self.prog.rsplit(".", 1)[-1]
        self.exit(2, f"{tool}: usage: {message} (see --help)\n")


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (``--trials 0`` would store no trial at all)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is less than 1")
    return value


def suite_folders(names: list[str] | None) -> list[Path]:
    """The folders ``--suite`` names: a path to a suite as given, a bare name under :data:`SUITES_ROOT`;
    every suite of the corpus when none is given."""
    from evalquality_core.suite.load import find_suites

    if not names:
        return find_suites(SUITES_ROOT)
    folders = []
    for name in names:
        path = Path(name)
        folders.append(path if path.exists() or path.is_absolute() or len(path.parts) > 1 else SUITES_ROOT / name)
    return folders
