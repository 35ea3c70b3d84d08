"""Staged workspaces, one fresh directory per spawned leg (harness.md A.7).

Two legs sharing a directory "read each other's artifacts back", so every live leg gets its own copy of
the suite's staged tree, removed when the leg ends. A run killed with SIGKILL cannot clean up, so each
workspace's name carries its owner's pid and process token; the next run reclaims every workspace
whose owner is dead (the reference's owner markers). A leg the dead run left running has no watchdog
any more (the adapter's deadline lived in the killed process), so reclaiming first kills the process
group of every process still working inside that workspace, grandchildren included. The evaluation folder (contract, probes) is never
staged, so a target cannot read which defect was planted.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

from tasks.leg_cache import holder_is_stale, process_token

_PREFIX = "leg-"


def _owner_of(name: str) -> tuple[int, str] | None:
    """``leg-<pid>-<token>-<unique>`` → (pid, token)."""
    parts = name.split("-")
    if len(parts) != 4 or parts[0] + "-" != _PREFIX or not parts[1].isdigit():
        return None
    return int(parts[1]), parts[2]


def _working_inside(workspace: Path, proc: Path = Path("/proc")) -> list[int]:
    """Pids of processes whose working directory lies inside ``workspace`` (Linux ``/proc``; else none)."""
    inside: list[int] = []
    if not proc.is_dir():
        return inside
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:  # gone, or not ours to read
            continue
        if cwd == workspace or workspace in cwd.parents:
            inside.append(int(entry.name))
    return inside


def kill_leftover_legs(workspace: Path) -> list[int]:
    """SIGKILL the process group of every process still working inside ``workspace``; return the groups."""
    own = os.getpgid(0)
    groups: set[int] = set()
    for pid in _working_inside(workspace.resolve()):
        try:
            groups.add(os.getpgid(pid))
        except OSError:
            continue
    groups.discard(own)  # never this run's own group
    for group in sorted(groups):
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    return sorted(groups)


def reclaim_workspaces(root: Path) -> list[Path]:
    """Remove every workspace under ``root`` whose owning process is dead, after killing any leg the dead
    run left working in it; return what was removed."""
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for entry in root.iterdir():
        owner = _owner_of(entry.name)
        if owner is not None and holder_is_stale(owner):
            kill_leftover_legs(entry)
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


@contextlib.contextmanager
def leg_workspace(root: Path) -> Iterator[Path]:
    """A fresh, empty directory owned by this process for one leg, removed afterwards (even on a fault).

    The caller stages the suite's system and fixtures into it (the suite's staging mechanism decides
    what goes in, and leaves the evaluation folder out).
    """
    root.mkdir(parents=True, exist_ok=True)
    workspace = root / f"{_PREFIX}{os.getpid()}-{process_token()}-{uuid.uuid4().hex[:12]}"
    workspace.mkdir()
    try:
        yield workspace
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
