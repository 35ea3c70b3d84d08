"""Waiting on real processes in tests: poll a condition until it holds or time runs out."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T], *, timeout_s: float, interval_s: float = 0.05) -> T:
    """Poll ``condition`` until it is truthy or ``timeout_s`` passes; return its last value."""
    deadline = time.monotonic() + timeout_s
    value = condition()
    while not value and time.monotonic() < deadline:
        time.sleep(interval_s)
        value = condition()
    return value
