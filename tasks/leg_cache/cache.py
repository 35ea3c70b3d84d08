"""``LegCache``: answers a leg from a store or by spawning it once, in one mode, for one invocation.

``open_leg_cache`` picks the store from the location: a directory is the SQLite store, a
``postgresql://`` URL the PostgreSQL store (tasks/leg_cache/__init__.py has the rules).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from evalquality_core.faults import EvalQualityFault, RuntimeFault
from tasks.leg_cache.entry import EntryRejected, decode_entry, encode_entry, persisted_request
from tasks.leg_cache.sqlite import SqliteLegStore
from tasks.leg_cache.store import LegStore, warn_line

LegCacheMode = Literal["default", "force", "from-cache"]
LEG_CACHE_MODES: tuple[LegCacheMode, ...] = ("default", "force", "from-cache")


@dataclass(frozen=True)
class LegAnswer:
    """What answered one leg: the (re-stamped) observation, how, and its cost.

    ``source`` is ``spawned`` (a live child process), ``collapsed`` (an identical request of this same
    invocation answered it: it was in flight or already done) or ``cache`` (an earlier run answered it).
    ``answered_by`` names what answered a hit: the stored entry's ``leg``, ``run`` and ``at``.
    """

    observation: Mapping[str, Any]
    source: Literal["spawned", "cache", "collapsed"]
    elapsed_s: float
    key: str
    answered_by: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class LegFaultCost:
    """Attached to a fault a leg raised (``fault.leg_cost``): whether this leg spawned a process for
    it and how long that ran, so the closing cost line counts timed-out legs and their seconds."""

    spawned: bool
    elapsed_s: float
    key: str


class LegCache:
    """The leg cache over one store, in one mode, for one invocation (a flow run).

    ``LegCache(directory, mode)`` opens the default SQLite store there; ``store=`` plugs in another.
    """

    def __init__(
        self,
        directory: Path,
        mode: LegCacheMode = "default",
        *,
        store: LegStore | None = None,
        warn: Callable[[str], None] = warn_line,
    ) -> None:
        if mode not in LEG_CACHE_MODES:
            raise ValueError(f"leg cache mode {mode!r} is not one of {', '.join(LEG_CACHE_MODES)}")
        self.directory = directory
        self.mode = mode
        self._warn = warn
        self.store: LegStore = store if store is not None else SqliteLegStore(directory, warn=warn)
        self._refreshed: set[str] = set()  # force mode: keys run live in this invocation
        #: The invocation (flow run) this handle serves; entries it writes carry it (open_leg_cache sets it).
        self.invocation = ""
        self._faulted: dict[str, EvalQualityFault] = {}  # keys whose one spawn faulted in this invocation
        self._guard = threading.Lock()

    def close(self) -> None:
        """Close the underlying store."""
        self.store.close()

    def entry_count(self) -> int:
        """How many entries the store holds (verified or not)."""
        return self.store.count()

    def lookup(self, key: str) -> Mapping[str, Any] | None:
        """The verified record of a key, or None. An entry failing verification is deleted, reported
        as one warning line, and reads as a miss (the leg runs again)."""
        text = self.store.get(key)
        if text is None:
            return None
        try:
            return decode_entry(key, text)
        except EntryRejected as why:
            self.store.delete(key, text)
            self._warn(f"leg cache {self.directory}: discarded the entry for key {key[:16]}: {why}; the leg runs again")
            return None

    def _servable(self, key: str) -> Mapping[str, Any] | None:
        if self.mode == "force":
            with self._guard:
                if key not in self._refreshed:
                    return None
        return self.lookup(key)

    def _faulted_before(self, key: str) -> EvalQualityFault | None:
        with self._guard:
            return self._faulted.get(key)

    def answer(
        self,
        key: str,
        request: Mapping[str, Any],
        spawn: Callable[[], Mapping[str, Any]],
        *,
        leg: str = "",
        run: str = "",
    ) -> LegAnswer:
        """Answer a leg: from the cache if its request was answered, else by ``spawn()`` exactly once.

        ``spawn`` returns the wire observation or raises (a fault); nothing is stored on a raise, and
        the fault answers every identical leg of this invocation (each gets ``fault.leg_cost``).
        ``leg`` and ``run`` (the leg's and the flow run's names) are stored with a spawned entry.
        """
        record = self._servable(key)
        if record is not None:
            return self._hit(record, request, key)
        if self.mode == "from-cache":
            raise RuntimeFault(
                "port-failure",
                "ProbeRequest",
                f'leg "{request["probeId"]}" has no cached observation in {self.directory} (key {key[:16]}); '
                "run the pre-flight once without --from-cache to fill the cache",
            )
        earlier = self._faulted_before(key)
        if earlier is not None:
            raise _twin_fault(earlier, key)
        with self.store.claim(key):
            record = self._servable(key)  # another thread or process may have answered meanwhile
            if record is not None:
                return self._hit(record, request, key)
            earlier = self._faulted_before(key)
            if earlier is not None:
                raise _twin_fault(earlier, key)
            started = time.perf_counter()
            try:
                observation = dict(spawn())
            except EvalQualityFault as fault:
                fault.leg_cost = LegFaultCost(True, time.perf_counter() - started, key)  # type: ignore[attr-defined]
                if fault.code != "aborted":  # an interrupted leg says nothing about its twins
                    with self._guard:
                        self._faulted[key] = fault
                raise
            elapsed = time.perf_counter() - started
            record_value = {
                "key": key,
                "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "elapsedMs": round(elapsed * 1000),
                "request": persisted_request(request),
                "observation": observation,
                "leg": leg,
                "run": run,
                "invocation": self.invocation,
            }
            self.store.put(key, encode_entry(key, record_value))
            with self._guard:
                self._refreshed.add(key)
        return LegAnswer(restamp(observation, request), "spawned", elapsed, key)

    def _hit(self, record: Mapping[str, Any], request: Mapping[str, Any], key: str) -> LegAnswer:
        same_run = bool(self.invocation) and record.get("invocation") == self.invocation
        by = {name: record.get(name) for name in ("leg", "run", "at")}
        return LegAnswer(restamp(record["observation"], request), "collapsed" if same_run else "cache", 0.0, key, by)


def _twin_fault(fault: EvalQualityFault, key: str) -> EvalQualityFault:
    """The fault an identical leg gets without spawning: the same code and detail, no cost of its own."""
    twin = type(fault).__new__(type(fault))
    twin.__dict__.update(fault.__dict__)
    twin.args = fault.args
    twin.leg_cost = LegFaultCost(False, 0.0, key)  # type: ignore[attr-defined]
    return twin


def restamp(observation: Mapping[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    """The observation carrying this leg's correlation triple (the stored one names whichever leg ran first)."""
    return {
        **observation,
        "probeId": request["probeId"],
        "interfaceId": request["interfaceId"],
        "operationId": request["operationId"],
    }


_OPEN: dict[tuple[str, str, str], Any] = {}
_OPEN_GUARD = threading.Lock()


def open_leg_cache(location: str | Path, mode: LegCacheMode, invocation: str) -> Any:
    """The one leg cache of an invocation in this process (force mode's memory is per invocation).

    ``location`` is a directory (the diskcache backend, one machine) or a ``postgresql://`` URL (the
    PostgreSQL backend, shared by several machines: tasks/leg_cache/postgres.py); both answer legs by
    the same rules through ``answer(key, request, spawn)``.
    """
    handle = (str(location), mode, invocation)
    with _OPEN_GUARD:
        cache = _OPEN.get(handle)
        if cache is None:
            from tasks.leg_cache.postgres import PostgresLegStore, is_postgres_url

            if is_postgres_url(str(location)):
                store = PostgresLegStore(str(location))
                cache = LegCache(store.location, mode, store=store)  # type: ignore[arg-type]  (named in messages)
            else:
                cache = LegCache(Path(location), mode)
            cache.invocation = invocation
            _OPEN[handle] = cache
        return cache


def close_leg_cache(location: str | Path, mode: LegCacheMode, invocation: str) -> None:
    """Forget (and close) an invocation's cache handle."""
    with _OPEN_GUARD:
        cache = _OPEN.pop((str(location), mode, invocation), None)
    if cache is not None:
        cache.close()
