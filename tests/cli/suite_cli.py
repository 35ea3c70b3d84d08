"""``eval-quality <args>`` as a user runs it: a child process in a folder, and the one-line error check.
Shared by the CLI tests of both tiers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EQ = [sys.executable, "-m", "evalquality_core"]


def eq(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``eval-quality <args>`` as a child process in ``cwd``."""
    return subprocess.run([*EQ, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def one_line(proc: subprocess.CompletedProcess[str], code: int, *names: str) -> str:
    """Exactly one stderr line, the exit code, no traceback, and every name in the line."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]
