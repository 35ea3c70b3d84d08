"""The leg cache's store port: what a backend gives ``LegCache``, the error a cache that cannot be used raises,
and the claim-holder liveness rule the stores and the workspaces share (tasks/leg_cache/__init__.py).

A backend holds verified text and never unpickles; ``sqlite.py`` and ``postgres.py`` implement it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from typing import Any, Protocol

#: Identifies this process in claim holders, so a recycled pid is never mistaken for a live holder.
_PROCESS_TOKEN = uuid.uuid4().hex

#: Where a leg's fault points when the leg cache failed under it, not the system under test (a mutants
#: run never takes such a fault for a finding about the mutant, flows/mutants.py).
LEG_CACHE_FAULT_PATH = "LegCache"
#: Exit code the flows use when the leg cache cannot be used at all (sysexits EX_IOERR).
EXIT_CACHE_UNUSABLE = 74


class LegCacheUnusable(Exception):
    """The cache directory cannot hold a working database (not even after moving a broken one aside).

    ``str()`` is one line naming the directory and the fix."""


class LegStore(Protocol):
    """What the leg cache needs from a backend. Values are verified text; a backend never unpickles."""

    def get(self, key: str) -> str | None:
        """The stored entry text of ``key``, or None."""
        ...

    def put(self, key: str, entry: str) -> None:
        """Store (or replace) the entry text of ``key`` in one transaction."""
        ...

    def delete(self, key: str, entry: str | None = None) -> None:
        """Remove ``key``'s entry (only if it still equals ``entry``, when given)."""
        ...

    def claim(self, key: str) -> contextlib.AbstractContextManager[None]:
        """Single flight on ``key`` across threads and processes; a dead holder is reclaimed."""
        ...

    def count(self) -> int:
        """How many entries are stored."""
        ...

    def close(self) -> None:
        """Release the backend."""
        ...


def _pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return True


def holder_is_stale(holder: Any) -> bool:
    """A claim or workspace owned by a process that no longer runs (or an earlier process with our pid)."""
    try:
        pid, token = int(holder[0]), str(holder[1])
    except (TypeError, ValueError, IndexError):
        return True
    if pid <= 0:
        return True
    if pid == os.getpid():
        return token != _PROCESS_TOKEN
    return not _pid_alive(pid)


def process_token() -> str:
    """This process's token (workspaces carry it beside the pid)."""
    return _PROCESS_TOKEN


def warn_line(line: str) -> None:
    """One warning line on stderr (newlines in quoted text are flattened, so it stays one line)."""
    sys.stderr.write("eval-quality: warning: " + " ".join(line.split()) + "\n")
    sys.stderr.flush()


