"""Agents behind runner commands: a cli target's exit-code class table, retries, vendor and cost.

Issue 34. The reference's runners (harness.md A.2-A.3, ``runner-exit-codes.js``) exit ``3``
environment-configuration, ``4`` environment-transport, ``5`` environment-timeout, ``6``
environment-parser: the runner could not measure, so such an exit is not the system's answer. A
``[[target]]`` of kind cli may say so in ``targets.toml`` (all keys optional; a target without any of
them behaves exactly as before, every exit an observation)::

    vendor = "anthropic"          # legs of every target of this vendor share its limit ([vendors])
    cost_per_leg = 0.04           # what one attempt costs, charged to the night's cost budget
    [target.exit_classes]         # exit code(s) -> failure class; any other exit is an observation
    configuration = [3]
    transport = [4]
    timeout = [5]
    parser = [6]
    [target.retry]
    transient = ["transport", "timeout"]   # only these classes are retried
    attempts = 3                  # at most this many calls of one leg in all (1: never retry)
    backoff_ms = 500              # the wait before retry n is backoff_ms * 2**(n-1) ...
    max_backoff_ms = 30000        # ... capped here, times a jitter factor in [0.5, 1)

    [vendors]                     # top level: legs of one vendor in flight at once, at most
    anthropic = 2

The decision is a table (``decide``): an exit outside the class table is the answer (cached as any
observation); a transient class with attempts left is retried; any other class (a non-transient one,
or a transient one out of attempts) is a fault, never cached. Pure: nothing here touches a process,
a file or Prefect; ``tasks/agent_legs.py`` runs the loop.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from evalquality_core.faults import RuntimeFault

__all__ = [
    "AGENT_KEYS",
    "EXIT_CLASSES",
    "RUNNER_EXIT_CLASSES",
    "AgentProfile",
    "Decision",
    "RetryPolicy",
    "backoff_seconds",
    "decide",
    "parse_agent_keys",
    "parse_vendors",
]

ExitClass = Literal["configuration", "transport", "timeout", "parser"]
#: The failure classes an exit code may be declared as (the reference's environment-* classes).
EXIT_CLASSES: tuple[ExitClass, ...] = ("configuration", "transport", "timeout", "parser")
#: The reference runners' table (harness.md A.2), for documentation and starters.
RUNNER_EXIT_CLASSES: Mapping[int, ExitClass] = {3: "configuration", 4: "transport", 5: "timeout", 6: "parser"}
#: The keys of a cli ``[[target]]`` this module reads (``parse_targets`` sets them aside).
AGENT_KEYS: tuple[str, ...] = ("vendor", "cost_per_leg", "exit_classes", "retry")
RETRY_KEYS: tuple[str, ...] = ("transient", "attempts", "backoff_ms", "max_backoff_ms")
#: Bounds that keep a typo from meaning a night of retries: at most 10 calls of a leg, waits <= 10 min.
MAX_ATTEMPTS = 10
MAX_BACKOFF_MS = 600_000
#: A vendor name: what a Prefect global concurrency limit is named after.
_VENDOR_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")

Decision = Literal["answer", "retry", "fault"]


@dataclass(frozen=True)
class RetryPolicy:
    """Which classes are transient, how many calls a leg may take in all, and the backoff's base and cap."""

    transient: frozenset[str] = frozenset()
    attempts: int = 1
    backoff_ms: int = 0
    max_backoff_ms: int = 0


@dataclass(frozen=True)
class AgentProfile:
    """What the registry says about one agent target (module docstring); the default is a plain target."""

    vendor: str | None = None
    cost_per_leg: float = 0.0
    #: exit code -> failure class
    exit_classes: Mapping[int, str] = field(default_factory=dict)
    retry: RetryPolicy = RetryPolicy()
    #: Where it was declared (``targets.toml target[0]``), for the one-line faults.
    place: str = ""

    @property
    def plain(self) -> bool:
        """True when the profile changes nothing (no vendor, no cost, no class table)."""
        return self.vendor is None and not self.cost_per_leg and not self.exit_classes

    def failure_class(self, exit_code: int | None) -> str | None:
        """The declared class of ``exit_code``; ``None`` when it is an observation."""
        return None if exit_code is None else self.exit_classes.get(exit_code)


#: The decision table: (class declared?, transient?, attempts left?) -> decision. Rows are data; every
#: row is tested (tests/core/probe/test_agent_targets.py).
DECISIONS: Mapping[tuple[bool, bool, bool], Decision] = {
    (False, False, False): "answer",
    (False, False, True): "answer",
    (True, False, False): "fault",
    (True, False, True): "fault",  # a non-transient class is never retried
    (True, True, False): "fault",  # out of attempts: a fault, never cached
    (True, True, True): "retry",
}


def decide(profile: AgentProfile, exit_code: int | None, attempt: int) -> Decision:
    """What to do after call number ``attempt`` (1-based) of a leg ended with ``exit_code``."""
    failure = profile.failure_class(exit_code)
    declared = failure is not None
    transient = declared and failure in profile.retry.transient
    left = attempt < profile.retry.attempts
    return DECISIONS[(declared, transient, left)]


def backoff_seconds(retry: RetryPolicy, attempt: int, seed: str) -> float:
    """The wait before call ``attempt + 1``: ``backoff_ms * 2**(attempt-1)`` capped at ``max_backoff_ms``,
    times a jitter factor in [0.5, 1) drawn from ``seed`` (the leg key and attempt), so legs that failed
    together do not retry together, and a rerun waits the same."""
    base = min(retry.backoff_ms * 2 ** (attempt - 1), retry.max_backoff_ms) / 1000
    digest = hashlib.sha256(f"{seed}:{attempt}".encode()).digest()
    # The digest's first 8 bytes as a fraction in [0, 1): seeded, and the core reads no random source.
    return base * (0.5 + int.from_bytes(digest[:8], "big") / 2**64 / 2)


def _fault(source: str, detail: str) -> RuntimeFault:
    return RuntimeFault("schema-parse-failure", source, detail)


def _whole(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def parse_vendors(table: Any, source: str) -> dict[str, int]:
    """The top-level ``[vendors]`` table: vendor name -> legs in flight at once (1 to 1000)."""
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise _fault(source, "vendors must be a table ([vendors]) of name = legs at once")
    for name, limit in table.items():
        if not name or not set(name) <= _VENDOR_CHARS:
            raise _fault(source, f"[vendors] {name!r}: a vendor name is lower-case letters, digits and '-'")
        if not _whole(limit, 1, 1000):
            raise _fault(source, f"[vendors] {name} must be a whole number of legs at once from 1 to 1000")
    return dict(table)


def parse_agent_keys(table: Mapping[str, Any], where: str, source: str, vendors: Mapping[str, int]) -> AgentProfile:
    """The agent keys of one cli ``[[target]]`` table (``where`` is ``target[i]``); any problem is one
    ``schema-parse-failure`` naming the file, the table and the key."""
    vendor = table.get("vendor")
    if vendor is not None and vendor not in vendors:
        raise _fault(source, f"{where} vendor {vendor!r} has no limit in [vendors] (add {vendor} = <legs at once>)")
    cost = table.get("cost_per_leg", 0.0)
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not 0 <= cost < 1e9:
        raise _fault(source, f"{where} cost_per_leg must be a number from 0 (what one call costs)")
    classes: dict[int, str] = {}
    raw_classes = table.get("exit_classes", {})
    if not isinstance(raw_classes, dict):
        raise _fault(source, f"{where} exit_classes must be a table of class = [exit codes]")
    for name, codes in raw_classes.items():
        if name not in EXIT_CLASSES:
            raise _fault(source, f"{where} exit_classes.{name}: not a failure class; use {', '.join(EXIT_CLASSES)}")
        if not isinstance(codes, list) or not codes or not all(_whole(code, 1, 255) for code in codes):
            raise _fault(source, f"{where} exit_classes.{name} must be a non-empty array of exit codes from 1 to 255")
        for code in codes:
            if code in classes:
                raise _fault(source, f"{where} exit_classes: exit {code} is declared as {classes[code]} and {name}")
            classes[code] = name
    retry = _parse_retry(table.get("retry"), where, source, classes)
    return AgentProfile(vendor, float(cost), classes, retry, f"{source} {where}")


def _parse_retry(table: Any, where: str, source: str, classes: Mapping[int, str]) -> RetryPolicy:
    if table is None:
        return RetryPolicy()
    if not isinstance(table, dict):
        raise _fault(source, f"{where} retry must be a table ([target.retry])")
    extra = sorted(set(table) - set(RETRY_KEYS))
    if extra:
        raise _fault(source, f"{where} retry has unknown key(s) {', '.join(extra)}")
    absent = [key for key in RETRY_KEYS if key not in table]
    if absent:
        raise _fault(source, f"{where} retry lacks required key(s) {', '.join(absent)}")
    transient = table["transient"]
    if not isinstance(transient, list) or not all(isinstance(name, str) for name in transient):
        raise _fault(source, f"{where} retry.transient must be an array of failure classes")
    declared = set(classes.values())
    for name in transient:
        if name not in declared:
            raise _fault(source, f"{where} retry.transient names {name!r}, which exit_classes does not declare")
    if not _whole(table["attempts"], 1, MAX_ATTEMPTS):
        raise _fault(source, f"{where} retry.attempts must be a whole number from 1 to {MAX_ATTEMPTS} (calls in all)")
    for key in ("backoff_ms", "max_backoff_ms"):
        if not _whole(table[key], 0, MAX_BACKOFF_MS):
            raise _fault(source, f"{where} retry.{key} must be a whole number of milliseconds from 0 to {MAX_BACKOFF_MS}")
    if table["max_backoff_ms"] < table["backoff_ms"]:
        raise _fault(source, f"{where} retry.max_backoff_ms is below retry.backoff_ms")
    return RetryPolicy(frozenset(transient), table["attempts"], table["backoff_ms"], table["max_backoff_ms"])
