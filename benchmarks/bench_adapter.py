"""Benchmark: per-spawn overhead of the command-line adapter against a bare ``subprocess.run``.

Both sides run the same command (``/bin/true``, then ``python -c pass``) with captured output; the
adapter adds the policy decision, argv building, a new process group, capped incremental reads, the
leftover-group kill and the observation's schema check. Spawns alternate between the sides so drift
on the host affects all alike. Prints the median of each and the ratio (aim: ≤ 1.3).

A third column, ``subprocess.run(start_new_session=True)``, separates the cost of the new session
itself: on a kernel with ``sched_autogroup_enabled=1``, ``setsid()`` creates a scheduler autogroup,
which under heavy host load costs milliseconds per spawn whoever calls it.

Run: /work/venv/bin/python benchmarks/bench_adapter.py [spawns]   (default 60 per side and command)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time

from evalquality_core.adapters.command_line import CommandLineAdapter
from evalquality_core.probe.policy import parse_command_target_policy


def _policy(target: str, target_args: list[str], workdir: str) -> object:
    return parse_command_target_policy({"authorizations": [{
        "interfaceId": "bench", "executable": "bench", "target": target, "targetArgs": target_args,
        "permittedSubcommandPaths": [[]], "permittedEnvironmentKeys": [], "cwd": workdir, "artifacts": {},
        "maxElapsedMs": 60000, "maxOutputBytes": 8 << 20,
    }]})


REQUEST = {
    "kind": "cli", "probeId": "bench-leg", "interfaceId": "bench", "operationId": "run", "executable": "bench",
    "subcommandPath": [],
    "channels": {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}},
}


def compare(label: str, argv: list[str], spawns: int) -> float:
    """Median seconds per spawn for both sides; prints them and returns the ratio adapter / bare."""
    with tempfile.TemporaryDirectory() as workdir:
        adapter = CommandLineAdapter(_policy(argv[0], argv[1:], workdir))  # type: ignore[arg-type]
        bare: list[float] = []
        session: list[float] = []
        ours: list[float] = []
        for _ in range(3):  # warm every path (imports, page cache)
            subprocess.run(argv, capture_output=True, cwd=workdir, check=False)
            adapter.probe(REQUEST)
        for _ in range(spawns):
            start = time.perf_counter()
            subprocess.run(argv, capture_output=True, cwd=workdir, check=False)
            bare.append(time.perf_counter() - start)
            start = time.perf_counter()
            subprocess.run(argv, capture_output=True, cwd=workdir, check=False, start_new_session=True)
            session.append(time.perf_counter() - start)
            start = time.perf_counter()
            adapter.probe(REQUEST)
            ours.append(time.perf_counter() - start)
    bare_median, session_median, ours_median = (statistics.median(x) for x in (bare, session, ours))
    ratio = ours_median / bare_median
    print(
        f"{label}: subprocess.run median {bare_median * 1000:.2f} ms, "
        f"subprocess.run(start_new_session=True) {session_median * 1000:.2f} ms, "
        f"adapter {ours_median * 1000:.2f} ms over {spawns} spawns each: "
        f"ratio adapter/bare {ratio:.2f} (aim <= 1.3), adapter/new-session {ours_median / session_median:.2f}"
    )
    return ratio


def main() -> None:
    """Print the medians and ratios for both commands."""
    spawns = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    compare("/bin/true", ["/bin/true"], spawns)
    compare("python -c pass", [sys.executable, "-c", "pass"], spawns)


if __name__ == "__main__":
    main()
