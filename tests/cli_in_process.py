"""``eval-quality <args>`` run in the test process, for tests about what a command decides (its bytes,
its exit code), not about the process boundary.

A child ``python -m evalquality_core`` costs ~0.8 s of CPU before the command runs (imports and model
building), seconds of wall time on a loaded 2-core machine. ``evalquality_core.cli.main.main(argv)``
returns the exit code instead of exiting, so the same entry point runs here with the standard streams
swapped for byte buffers. Tests that are ABOUT the process (console entry, tracebacks, signals, stdin
closed early, environment) keep running the real child process.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def streams(stdin: bytes = b"") -> Iterator[tuple[io.BytesIO, io.BytesIO]]:
    """The standard streams swapped for byte buffers (stdin holds ``stdin``); yields (stdout, stderr)."""
    out, err = io.BytesIO(), io.BytesIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    swapped = sys.stdin, sys.stdout, sys.stderr
    try:
        yield out, err
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        for stream in swapped:  # detached, so that collecting a wrapper never closes the buffer read after
            stream.flush()
            stream.detach()


def run_in_process(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """The CLI's exit code, stdout and stderr bytes for ``args``, as ``subprocess.run`` would give them."""
    from evalquality_core.cli.main import main

    with streams(stdin) as (out, err):
        code = main(list(args))
    return subprocess.CompletedProcess(["eval-quality", *args], code, out.getvalue(), err.getvalue())
