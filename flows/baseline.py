"""The pre-flight baseline (harness.md A.5): ``corpus/expected-preflight.json`` and its exit rule.

Per probe the file records the pre-flight outcome (``passed`` or ``failed: <sorted check kinds>``) and
the planned leg count. A run exits 0 when every probe matches, and 2 when any probe moved in *either*
direction (a probe that starts passing is a finding too: "a baseline nobody has to update is a baseline
nobody reads"), when a probe or suite is missing on either side, when a suite could not run, or when the
baseline file is missing or cannot be used (not readable, not JSON, no ``probes`` table: the line says
which). ``--update-baseline`` rewrites the file from the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flows.report import PreflightRun
from tasks.output import write_atomically

EXIT_MATCHED = 0
EXIT_MOVED = 2

_ABOUT = (
    "Pre-flight baseline: per suite/probe the outcome ('passed' or 'failed: <sorted failed check kinds>') "
    "and the planned leg count. Rewrite with `python -m flows.preflight --update-baseline`."
)


def baseline_document(run: PreflightRun) -> dict[str, Any]:
    """The baseline a run would write."""
    return {
        "about": _ABOUT,
        "probes": {
            f"{row.suite}/{row.probe_id}": {"outcome": row.outcome, "legs": row.legs_planned}
            for row in sorted(run.probes, key=lambda r: (r.suite, r.probe_id))
        },
    }


class BaselineUnreadable(Exception):
    """The baseline file exists but cannot be used; ``str()`` says why, in one line."""


def read_preflight_baseline(path: Path) -> dict[str, Any] | None:
    """The recorded baseline's probe table; None when there is no file; ``BaselineUnreadable`` when the
    file is there but cannot be read, is not JSON, or has no ``probes`` table."""
    from evalquality_core.suite.load import StagingError, read_suite_bytes

    if not path.exists() and not path.is_symlink():
        return None
    try:
        # As every suite file: under the input size cap, and a FIFO is refused instead of blocking the gate.
        text = read_suite_bytes(path).decode("utf-8")
    except StagingError as problem:
        raise BaselineUnreadable(f"baseline {problem}") from None
    except UnicodeDecodeError:
        raise BaselineUnreadable(f"baseline {path} is not UTF-8 text") from None
    try:
        document = json.loads(text)
    except ValueError as problem:
        raise BaselineUnreadable(f"baseline {path} is not valid JSON: {problem}") from None
    probes = document.get("probes") if isinstance(document, dict) else None
    if not isinstance(probes, dict):
        raise BaselineUnreadable(f"baseline {path} has no 'probes' table")
    return probes


def differences(run: PreflightRun, recorded: dict[str, Any]) -> list[str]:
    """Every way the run differs from the recorded baseline, one line each (empty when all match)."""
    lines: list[str] = []
    current = baseline_document(run)["probes"]
    for name, now in current.items():
        before = recorded.get(name)
        if before is None:
            lines.append(f"{name}: not in the baseline (now {now['outcome']}, {now['legs']} legs)")
            continue
        if before.get("outcome") != now["outcome"]:
            lines.append(f"{name}: outcome moved from {before.get('outcome')!r} to {now['outcome']!r}")
        if before.get("legs") != now["legs"]:
            lines.append(f"{name}: planned legs moved from {before.get('legs')} to {now['legs']}")
    for name in recorded:
        if name not in current:
            lines.append(f"{name}: in the baseline but not run")
    return lines


@dataclass(frozen=True)
class PreflightGate:
    """The exit code of the baseline gate and the lines explaining it."""

    exit_code: int
    lines: tuple[str, ...]


def gate(run: PreflightRun, path: Path, *, update: bool = False) -> PreflightGate:
    """Compare the run with the baseline at ``path`` (or rewrite it when ``update``) → exit 0 or 2."""
    lines = [f"suite {failure.suite} could not run: {failure.message}" for failure in run.failures]
    if update:
        text = json.dumps(baseline_document(run), indent=1, sort_keys=True) + "\n"
        write_atomically(path, text.encode("utf-8"))
        lines.append(f"baseline rewritten: {path}")
        return PreflightGate(EXIT_MOVED if run.failures else EXIT_MATCHED, tuple(lines))
    try:
        recorded = read_preflight_baseline(path)
    except BaselineUnreadable as problem:
        lines.append(f"{problem}; fix it, or run with --update-baseline to record a new one")
        return PreflightGate(EXIT_MOVED, tuple(lines))
    if recorded is None:
        lines.append(f"no baseline at {path}; run with --update-baseline to record one")
        return PreflightGate(EXIT_MOVED, tuple(lines))
    lines.extend(differences(run, recorded))
    if lines:
        return PreflightGate(EXIT_MOVED, tuple(lines))
    return PreflightGate(EXIT_MATCHED, ("every probe matched the outcome the baseline records",))
