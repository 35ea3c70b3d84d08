"""An abort signal a leg can wait on instead of polling (``AbortSignal``, probe/port.py).

A ``threading.Event`` can only be polled: every running leg woke every 20 ms to look at it, and with 32
legs in flight those wake-ups (each taking the GIL back from whatever thread held it) slowed the
orchestration threads around them (``benchmarks/bench_scale.py`` fan-out). ``AbortFlag`` behaves like an
event and also has a ``fileno()`` that turns readable once it is set, so a leg's selector sleeps until
something really happens: output, the exit, the deadline or the abort.
"""

from __future__ import annotations

import contextlib
import os
import threading


class AbortFlag:
    """``set()``/``is_set()``/``wait()`` as ``threading.Event``; ``fileno()`` is readable once set (and stays so)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._guard = threading.Lock()
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)

    def is_set(self) -> bool:
        """True once the caller has aborted."""
        return self._event.is_set()

    def set(self) -> None:
        """Abort: wake every selector waiting on ``fileno()``, now and later (the byte is never read)."""
        with self._guard:
            if self._event.is_set():
                return
            self._event.set()
            with contextlib.suppress(OSError):
                os.write(self._write, b"x")

    def wait(self, timeout: float | None = None) -> bool:
        """Block until set (or ``timeout`` seconds); whether it is set."""
        return self._event.wait(timeout)

    def fileno(self) -> int:
        """A descriptor that is readable once the flag is set: register it for reading in a selector."""
        return self._read

    def __del__(self) -> None:
        for fd in (getattr(self, "_read", None), getattr(self, "_write", None)):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
