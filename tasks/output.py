"""Writing the flows' files: whole or not at all.

Every file a flow writes (verdicts, evidence, baselines, the report's history) goes through
``write_atomically``: the bytes land in a temp file named after this process beside the target, then
replace it in one rename, so a reader (or a run after a kill) never sees half a file, and two
processes writing the same file never share a temp name.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from evalquality_core.canonical.json import serialize_artifact


def write_atomically(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a per-process temp file and one rename; return ``path``.

    On any failure (a full disk: ENOSPC while writing or flushing) the temp file is removed before
    the ``OSError`` goes on, so nothing half-written is left behind; the flows' mains report it as
    one line and exit 74 (``flows/lifecycle.py``).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_artifact(path: Path, value: Any) -> Path:
    """Write a JSON value as an artifact: canonical JSON plus one newline (artifacts.md §1.5)."""
    return write_atomically(path, serialize_artifact(value))
