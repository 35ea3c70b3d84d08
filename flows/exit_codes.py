"""The flows' process exit codes (sysexits), in one module every flow module may import.

0 a gate held, 1 "a verdict moved", 2 "the environment moved" are the gate's (flows/baseline.py); the
codes below are the errors. They live apart from ``flows/lifecycle.py`` so that the embedded server,
which lifecycle reports on, can name its exit code without importing lifecycle (no import cycle).
"""

from __future__ import annotations

#: Exit code of a usage error, as the ``eval-quality`` CLI (2 means "the baseline moved" here).
EXIT_USAGE = 64
#: Exit code when the Prefect API named by ``PREFECT_API_URL`` cannot be reached (EX_UNAVAILABLE).
EXIT_UNAVAILABLE = 69
#: Exit code of a crash: an exception nothing expected (a bug), or a flow run Prefect ended Crashed or
#: Failed for a reason that is not the gate's (EX_SOFTWARE). Never 1 or 2, which CI reads as the gate.
EXIT_SOFTWARE = 70
#: Exit code when the eval-quality home cannot hold the run's state: the leg cache cannot be opened
#: even after moving a broken database aside, the disk is full, a file cannot be written (EX_IOERR).
EXIT_IO = 74

__all__ = ["EXIT_IO", "EXIT_SOFTWARE", "EXIT_UNAVAILABLE", "EXIT_USAGE"]
