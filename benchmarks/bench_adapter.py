"""Benchmark: per-spawn overhead of the command-line adapter against a bare ``subprocess.run``.

Both sides run the same command (``/bin/true``, then ``python -c pass``) with captured output; the
adapter adds the policy decision, argv building, a new process group under a leg watchdog (forked by
the process's shared watchdog), capped incremental reads, the leftover-tree kill and the
observation's schema check. Spawns alternate between the sides so drift on the host affects all
alike. Prints, per side, the median and the minimum wall time and the CPU time per spawn (this
process, its reaped children, and the shared watchdog with all it reaped: leg watchdogs and
targets), and the ratios of each (aim: median ≤ 1.3 for ``python -c pass``). Under load from other
work the minimum and the CPU ratio are the steadier figures. Last, the one-off cost of a process's
first leg, which starts the shared watchdog.

A third column, ``subprocess.run(start_new_session=True)``, separates the cost of the new session
itself: on a kernel with ``sched_autogroup_enabled=1``, ``setsid()`` creates a scheduler autogroup,
which under heavy host load costs milliseconds per spawn whoever calls it.

Run: /work/venv/bin/python benchmarks/bench_adapter.py [spawns]   (default 60 per side and command)
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import record

from evalquality_core.adapters.command_line import CommandLineAdapter
from evalquality_core.adapters.process_group import watchdog_pid
from evalquality_core.probe.policy import parse_command_target_policy

#: What this run measured, for ``record`` (benchmarks/results/bench_adapter.json).
RATIOS: dict[str, float] = {}
FIGURES: dict[str, float | int | str] = {}


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


def _ticks(pid: int | str) -> tuple[str, float]:
    """A process's state letter and CPU seconds: its own and its reaped children's (utime stime cutime cstime)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[0], sum(int(tick) for tick in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _cpu_seconds() -> float:
    """CPU seconds (user + system) spent so far by this process, its reaped children, and the shared
    watchdog with its leg watchdogs: those it reaped, and those still waiting for another leg (each
    with the targets it reaped). Unlike wall time this barely moves when other work competes for the
    cores."""
    own = os.times()
    total = own.user + own.system + own.children_user + own.children_system
    watchdog = watchdog_pid()
    if watchdog is not None:
        try:
            total += _ticks(watchdog)[1]
            for child in Path(f"/proc/{watchdog}/task/{watchdog}/children").read_text().split():
                with contextlib.suppress(OSError):
                    total += _ticks(child)[1]
        except OSError:
            return total
    return total


def _settle() -> None:
    """Wait (at most 5 s) until the shared watchdog has reaped every leg watchdog that exited (a killed
    leg's), so their CPU time (and their targets') is in its counters, counted once."""
    watchdog = watchdog_pid()
    deadline = time.monotonic() + 5
    while watchdog is not None and time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{watchdog}/task/{watchdog}/children").read_text().split()
            if all(_ticks(child)[0] not in ("Z", "X") for child in children):
                return
        except OSError:
            pass
        time.sleep(0.001)


def _timed(call, wall: list[float]) -> None:
    start = time.perf_counter()
    call()
    wall.append(time.perf_counter() - start)


def compare(label: str, argv: list[str], spawns: int) -> float:
    """Median and minimum seconds per spawn and CPU seconds per spawn for both sides; prints them and
    returns the ratio of the medians, adapter / bare."""
    with tempfile.TemporaryDirectory() as workdir:
        adapter = CommandLineAdapter(_policy(argv[0], argv[1:], workdir))  # type: ignore[arg-type]

        def bare_run() -> None:
            subprocess.run(argv, capture_output=True, cwd=workdir, check=False)

        def session_run() -> None:
            subprocess.run(argv, capture_output=True, cwd=workdir, check=False, start_new_session=True)

        def adapter_run() -> None:
            adapter.probe(REQUEST)

        sides = {"bare": bare_run, "session": session_run, "adapter": adapter_run}
        wall: dict[str, list[float]] = {name: [] for name in sides}
        cpu: dict[str, float] = {}
        for _ in range(3):  # warm every path (imports, page cache, the shared watchdog)
            for call in sides.values():
                call()
        for _ in range(spawns):
            for name, call in sides.items():  # alternating, so drift on the host affects all alike
                _timed(call, wall[name])
        for name, call in sides.items():  # CPU in blocks: the watchdog reaps a leg just after it returned
            _settle()
            before = _cpu_seconds()
            for _ in range(spawns):
                call()
            _settle()
            cpu[name] = _cpu_seconds() - before
    median = {name: statistics.median(times) for name, times in wall.items()}
    least = {name: min(times) for name, times in wall.items()}
    per_spawn_cpu = {name: total / spawns for name, total in cpu.items()}
    ratio = median["adapter"] / median["bare"]
    RATIOS[f"{label}: adapter / bare median"] = ratio
    RATIOS[f"{label}: adapter / bare CPU"] = per_spawn_cpu["adapter"] / max(per_spawn_cpu["bare"], 1e-9)
    FIGURES[f"{label}: bare median ms"] = median["bare"] * 1000
    FIGURES[f"{label}: adapter median ms"] = median["adapter"] * 1000
    FIGURES["spawns"] = spawns
    print(
        f"{label}: over {spawns} spawns each, median / min wall ms / CPU ms per spawn: "
        f"subprocess.run {median['bare'] * 1000:.2f} / {least['bare'] * 1000:.2f} / {per_spawn_cpu['bare'] * 1000:.2f}, "
        f"subprocess.run(start_new_session=True) {median['session'] * 1000:.2f} / {least['session'] * 1000:.2f} / "
        f"{per_spawn_cpu['session'] * 1000:.2f}, "
        f"adapter {median['adapter'] * 1000:.2f} / {least['adapter'] * 1000:.2f} / {per_spawn_cpu['adapter'] * 1000:.2f}\n"
        f"  ratio adapter/bare: median {ratio:.2f} (aim <= 1.3), min {least['adapter'] / least['bare']:.2f}, "
        f"CPU {per_spawn_cpu['adapter'] / max(per_spawn_cpu['bare'], 1e-9):.2f}; "
        f"adapter/new-session median {median['adapter'] / median['session']:.2f}"
    )
    return ratio


def first_leg() -> None:
    """The one-off cost a process pays for its first leg: starting the shared watchdog."""
    code = (
        "import time, tempfile, sys\n"
        "sys.path[:0] = [sys.argv[1], sys.argv[1] + '/benchmarks']  # the project, and results.py beside us\n"
        "from benchmarks.bench_adapter import CommandLineAdapter, REQUEST, _policy\n"
        "with tempfile.TemporaryDirectory() as w:\n"
        "    adapter = CommandLineAdapter(_policy('/bin/true', [], w))\n"
        "    times = []\n"
        "    for _ in range(2):\n"
        "        start = time.perf_counter(); adapter.probe(REQUEST); times.append(time.perf_counter() - start)\n"
        "print(times[0] * 1000, times[1] * 1000)\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    first, second = (float(x) for x in subprocess.run([sys.executable, "-c", code, root], capture_output=True,
                                                       text=True, check=True).stdout.split())
    print(f"first leg of a process (starts the shared watchdog): {first:.2f} ms; its second leg {second:.2f} ms")
    FIGURES["first leg of a process ms"] = first
    FIGURES["its second leg ms"] = second


def main() -> None:
    """Print the medians, minima, CPU times and ratios for both commands, then the first-leg cost."""
    spawns = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    compare("/bin/true", ["/bin/true"], spawns)
    compare("python -c pass", [sys.executable, "-c", "pass"], spawns)
    first_leg()
    record(__file__, baseline="a bare subprocess.run of the same command (median per spawn, alternating)",
           ratios=RATIOS, figures=FIGURES)


if __name__ == "__main__":
    main()
