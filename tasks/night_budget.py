"""The night's budget: a wall clock and a cost that stop a strength run cleanly, and its leg ledger.

Issue 34. ``python -m flows.contract_strength --night-seconds S --night-cost C`` (or
``EVALQUALITY_NIGHT_SECONDS`` / ``EVALQUALITY_NIGHT_COST``) starts a night in this process. Before a leg
is spawned (every attempt: a retry costs as much as a first call), ``charge`` checks the budget:

* the wall clock: ``S`` seconds since the night started have passed;
* the cost: what was charged plus this attempt's ``cost_per_leg`` (targets.toml) would pass ``C``.

Either way the leg is not started: it faults ``aborted`` (never cached, and it says nothing about its
twins), the night is marked stopped and every later leg is refused the same way. Legs already running
finish and are cached, so nothing is half-written, and the next run answers them from the cache and pays
only for the rest. A leg answered from the cache is never charged (``charge`` sits inside the leg
cache's spawn). Legs in flight when the clock passes ``S`` still finish: the night can overrun by at
most one leg's ``max_elapsed_ms``.

The ledger records every spawned attempt (leg, key, vendor, attempt, exit, class, decision, and on
the wall clock: ``queued`` for the vendor slot, ``started`` and ``ended`` the call, ``released`` the slot):
it is how a run shows the attempts a retried leg took and how many legs of one vendor overlapped.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from evalquality_core.faults import RuntimeFault

__all__ = ["NightBudget", "current_night", "end_night", "start_night"]


@dataclass
class NightBudget:
    """One night's limits, what was spent, and the ledger of attempts (module docstring)."""

    seconds: float | None = None
    cost: float | None = None
    started: float = field(default_factory=time.monotonic)
    spent: float = 0.0
    #: Why the night stopped (one line), ``None`` while it runs.
    stopped: str | None = None
    refused: int = 0
    attempts: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def charge(self, cost: float, leg: str) -> None:
        """Charge one attempt of ``leg`` costing ``cost``, or refuse it (fault ``aborted``) when the
        wall clock or the cost budget is spent; once refused, every later attempt is refused too."""
        with self._lock:
            if self.stopped is None:
                elapsed = time.monotonic() - self.started
                if self.seconds is not None and elapsed >= self.seconds:
                    self.stopped = f"the night's wall clock of {self.seconds:g} s is spent"
                elif self.cost is not None and self.spent + cost > self.cost + 1e-9:
                    self.stopped = f"the night's cost budget of {self.cost:g} is spent ({self.spent:g} charged)"
            if self.stopped is not None:
                self.refused += 1
                raise RuntimeFault(
                    "aborted", "NightBudget", f"{self.stopped}: leg {leg} was not started; the next run answers it"
                )
            self.spent += cost

    def record(self, attempt: dict[str, Any]) -> None:
        """Add one spawned attempt to the ledger."""
        with self._lock:
            self.attempts.append(attempt)

    def to_json(self) -> dict[str, Any]:
        """The ledger as written to ``<out>/agent-night.json``."""
        with self._lock:
            return {
                "budget": {"seconds": self.seconds, "cost": self.cost},
                "spent": round(self.spent, 6),
                "stopped": self.stopped,
                "legsRefused": self.refused,
                "attempts": list(self.attempts),
            }


_NIGHT: NightBudget | None = None
_GUARD = threading.Lock()


def start_night(seconds: float | None = None, cost: float | None = None) -> NightBudget:
    """Start a night in this process (the clock starts now); returns it."""
    global _NIGHT
    with _GUARD:
        _NIGHT = NightBudget(seconds, cost)
        return _NIGHT


def current_night() -> NightBudget:
    """The night under way, or an unlimited one started now (a ledger with no limits)."""
    global _NIGHT
    with _GUARD:
        if _NIGHT is None:
            _NIGHT = NightBudget()
        return _NIGHT


def end_night() -> NightBudget | None:
    """Forget the night under way; returns it."""
    global _NIGHT
    with _GUARD:
        night, _NIGHT = _NIGHT, None
        return night
