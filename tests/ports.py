"""Loopback ports for the servers tests start, chosen below the kernel's ephemeral range.

A port found by binding port 0 and releasing it lies in the ephemeral range, where any other bind(0)
on the host (every HTTP service a flow under test starts, another xdist worker's server) may be handed
it again before our server binds it; a Prefect server takes seconds to start, which leaves a wide
window. The kernel never hands out a port below the range, so there only another test choosing at
random could collide, and a bind check on a random choice makes that negligible.
"""

from __future__ import annotations

import random
import socket

#: The lowest port chosen (above the well-known and most registered service ports in common use).
_FLOOR = 20000
_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"


def _ephemeral_low() -> int:
    try:
        with open(_RANGE_FILE, encoding="ascii") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def server_port() -> int:
    """A loopback port that is free now and that no bind(0) on this host will be handed meanwhile."""
    ceiling = _ephemeral_low()
    chooser = random.SystemRandom()
    for _ in range(200) if ceiling - _FLOOR > 1000 else ():
        port = chooser.randrange(_FLOOR, ceiling)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as probe:  # an unusual range setting: fall back to the kernel's choice
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
