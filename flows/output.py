"""Writing the flows' files: whole or not at all.

Every file a flow writes (verdicts, evidence, baselines, the report's history) goes through
``write_atomically``: the bytes land in a temp file named after this process beside the target, then
replace it in one rename, so a reader (or a run after a kill) never sees half a file, and two
processes writing the same file never share a temp name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from evalquality_core.canonical.json import serialize_artifact


def write_atomically(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a per-process temp file and one rename; return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    tmp.replace(path)
    return path


def write_artifact(path: Path, value: Any) -> Path:
    """Write a JSON value as an artifact: canonical JSON plus one newline (artifacts.md §1.5)."""
    return write_atomically(path, serialize_artifact(value))
