"""tests/ports.py: the servers tests start get ports no bind(0) on the host can be handed meanwhile."""

from __future__ import annotations

import socket

from tests.ports import _ephemeral_low, server_port


def test_a_server_port_is_free_and_below_the_ephemeral_range() -> None:
    low = _ephemeral_low()
    ports = {server_port() for _ in range(20)}
    assert all(port < low for port in ports) and len(ports) > 1
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_control_the_kernels_own_choice_lies_in_the_ephemeral_range() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        assert sock.getsockname()[1] >= _ephemeral_low()
