"""The night's budget on the strength flow's command line: flags, the ledger file, the exit.

Issue 34; the budget itself is ``tasks/night_budget.py``. ``--night-seconds S`` and ``--night-cost C``
(or ``EVALQUALITY_NIGHT_SECONDS`` / ``EVALQUALITY_NIGHT_COST``; a flag wins) bound one run of
``python -m flows.contract_strength``. When either is reached the run stops starting legs, finishes
the ones in flight (they are cached), writes its documents, then prints one line and exits
``EXIT_UNAVAILABLE`` (69): the night could not be measured whole, and rerunning resumes it. A stopped
night never rewrites a baseline, so ``--update-baseline`` with a budget is refused up front (64).
Every run writes the attempts it spawned to ``<out>/agent-night.json`` (when it spawned any agent leg).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from evalquality_core.printable import printable
from flows.lifecycle import EXIT_UNAVAILABLE
from tasks.night_budget import NightBudget, end_night, start_night
from tasks.output import write_atomically

__all__ = ["LEDGER_FILE", "add_night_flags", "finish_night", "start_night_from"]

#: The ledger of a run's agent attempts, in the run's output folder.
LEDGER_FILE = "agent-night.json"
_ENV = {"night_seconds": "EVALQUALITY_NIGHT_SECONDS", "night_cost": "EVALQUALITY_NIGHT_COST"}


def add_night_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--night-seconds`` and ``--night-cost`` to a flow's parser."""
    parser.add_argument("--night-seconds", metavar="S", help="stop starting legs after S seconds (exit 69; rerun resumes)")
    parser.add_argument("--night-cost", metavar="C", help="stop before the legs' declared cost_per_leg passes C (exit 69)")


def _number(parser: argparse.ArgumentParser, name: str, text: str | None) -> float | None:
    where = f"--{name.replace('_', '-')}"
    if text is None:
        text = os.environ.get(_ENV[name])
        where = _ENV[name]
        if text is None or text == "":
            return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        parser.error(f"{where} {text!r}: must be a number above 0")
    return value


def start_night_from(parser: argparse.ArgumentParser, args: argparse.Namespace) -> NightBudget:
    """Start the night this run's flags or environment declare (an unlimited one when neither does)."""
    seconds = _number(parser, "night_seconds", args.night_seconds)
    cost = _number(parser, "night_cost", args.night_cost)
    if (seconds is not None or cost is not None) and getattr(args, "update_baseline", False):
        parser.error("--update-baseline with a night budget: a night the budget stops must not become the baseline")
    return start_night(seconds, cost)


def finish_night(prog: str, out_dir: Path) -> int | None:
    """End the night: write its ledger (when it spawned agent attempts) and, when the budget stopped it,
    print one line to stderr and return the exit code (``None`` when it ran whole)."""
    night = end_night()
    if night is None:
        return None
    ledger = night.to_json()
    if ledger["attempts"] or night.stopped:
        # Plain JSON, not a canonical artifact: the wall-clock times are fractional seconds.
        write_atomically(out_dir / LEDGER_FILE, (json.dumps(ledger, indent=1, sort_keys=True) + "\n").encode())
    if night.stopped is None:
        return None
    print(
        printable(
            f"{prog}: stopped: {night.stopped}; {night.refused} leg(s) not started, the legs answered are cached "
            f"and the next run resumes from them (exit {EXIT_UNAVAILABLE})"
        ),
        file=sys.stderr,
    )
    return EXIT_UNAVAILABLE
