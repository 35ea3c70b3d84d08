"""Staged workspaces, one fresh directory per spawned leg (harness.md A.7).

Two legs sharing a directory "read each other's artifacts back", so every live leg gets its own copy of
the suite's staged tree, removed when the leg ends. A run killed with SIGKILL cannot clean up, so each
workspace's name carries its owner's pid and process token; the next run reclaims every workspace
whose owner is dead (the reference's owner markers). The evaluation folder (contract, probes) is never
staged, so a target cannot read which defect was planted.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from evalquality_core.canonical.digest import digest_bytes, digest_directory
from tasks.leg_cache import holder_is_stale, process_token

_PREFIX = "leg-"


def _owner_of(name: str) -> tuple[int, str] | None:
    """``leg-<pid>-<token>-<unique>`` → (pid, token)."""
    parts = name.split("-")
    if len(parts) != 4 or parts[0] + "-" != _PREFIX or not parts[1].isdigit():
        return None
    return int(parts[1]), parts[2]


def reclaim_workspaces(root: Path) -> list[Path]:
    """Remove every workspace under ``root`` whose owning process is dead; return what was removed."""
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for entry in root.iterdir():
        owner = _owner_of(entry.name)
        if owner is not None and holder_is_stale(owner):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def staged_digest(sources: Sequence[Path]) -> str:
    """A directory digest over every regular file of the staged sources (paths relative to each source's parent).

    Part of the leg cache key: an edit to the system or a fixture makes every leg run again.
    """
    members: dict[str, str] = {}
    for source in sources:
        base = source.parent
        files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
        for path in files:
            if "__pycache__" in path.parts:
                continue
            members[path.relative_to(base).as_posix()] = digest_bytes(path.read_bytes())
    if not members:
        return digest_bytes(b"")
    return digest_directory(members)


@contextlib.contextmanager
def staged_workspace(root: Path, sources: Sequence[Path], links: Mapping[str, Path] | None = None) -> Iterator[Path]:
    """A fresh directory holding a copy of each source (under its own name), removed afterwards.

    ``links`` names extra read-only paths to expose by symlink (e.g. a shared interpreter) — rarely needed.
    """
    root.mkdir(parents=True, exist_ok=True)
    workspace = root / f"{_PREFIX}{os.getpid()}-{process_token()}-{uuid.uuid4().hex[:12]}"
    workspace.mkdir()
    try:
        for source in sources:
            destination = workspace / source.name
            if source.is_dir():
                shutil.copytree(source, destination, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, destination)
        for name, target in (links or {}).items():
            (workspace / name).symlink_to(target)
        yield workspace
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
