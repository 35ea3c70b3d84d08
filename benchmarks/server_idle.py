"""Waiting for the embedded Prefect server to be idle before a timed flow (shared by the benchmarks).

After a flow of hundreds of task runs the embedded SQLite server keeps recording their events for a
while and answers 503 meanwhile (prefect.md §8); a flow timed then pays for the previous one, and its
figure mixes the two. The server is this process's child, so its CPU use is read from /proc.
"""

from __future__ import annotations

import os
import time


def children_cpu_s() -> float:
    """CPU seconds (user + system) used so far by this process's live child processes (the embedded
    Prefect server, which records every task run), from /proc."""
    me, total, tick = str(os.getpid()), 0.0, os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def settle(pause_s: float = 3.0, limit_s: float = 120.0) -> float:
    """Sleep ``pause_s``, then wait (at most ``limit_s``) until the children use under 2 % of a core over
    a second; returns the seconds waited in all."""
    started = time.monotonic()
    time.sleep(pause_s)
    last = children_cpu_s()
    while time.monotonic() - started < limit_s:
        time.sleep(1.0)
        now = children_cpu_s()
        if now - last < 0.02:
            break
        last = now
    return time.monotonic() - started
