"""The leg cache (harness.md A.6, preflight-adapter.md §8): one stored observation per distinct leg request.

Key = digest of the leg's canonical request with its correlation label (``probeId``, i.e. the leg id)
blanked, plus the target's registry entry and budgets, a digest of the staged system and fixtures, and
the tool version. Nothing secret enters a key or a record: the registry entry names environment keys
only, and host values are never added. Rules:

* faults are never cached (a timeout writes nothing, so the next run spawns again); a non-zero exit
  IS an observation and is cached;
* a hit is re-stamped with the current leg's probeId, interfaceId and operationId;
* an entry names the leg and the run that spawned it (``leg``, ``run``, ``invocation``), so a hit says
  whether it collapsed onto an identical leg of this same invocation or came from an earlier run;
* identical requests collapse into one spawn even when concurrent, across threads and processes: the
  spawn runs under a diskcache-backed single-flight lock whose holder is reclaimed when its process is
  dead, and the cache is re-checked under the lock;
* modes: ``default``; ``force`` (each distinct request runs live once per invocation, later legs with
  that key read what was just written); ``from-cache`` (a miss is an error naming how to fill the cache);
* crash- and kill-safe: an entry is one SQLite transaction written after the observation is complete,
  so a partial entry is never served.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import diskcache

from evalquality_core.canonical.digest import digest_composite
from evalquality_core.faults import RuntimeFault

LegCacheMode = Literal["default", "force", "from-cache"]
LEG_CACHE_MODES: tuple[LegCacheMode, ...] = ("default", "force", "from-cache")

#: Identifies this process in lock holders, so a recycled pid is never mistaken for a live holder.
_PROCESS_TOKEN = uuid.uuid4().hex
_LOCK_PREFIX = "lock:"
_ENTRY_PREFIX = "leg:"


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


def _environment_names_only(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request as persisted: environment channel values replaced by their key names (A.6)."""
    channels = request.get("channels") or {}
    if "environment" not in channels:
        return dict(request)
    names = sorted(channels["environment"])
    return {**request, "channels": {**channels, "environment": names}}


def leg_cache_key(
    request: Mapping[str, Any], target_entry: Mapping[str, Any], staged_digest: str, tool_version: str
) -> str:
    """The cache key of a leg (module docstring); the hex of a composite digest."""
    blank = {**request, "probeId": ""}
    return digest_composite(
        {"request": blank, "target": dict(target_entry), "staged": staged_digest, "tool": tool_version}
    ).removeprefix("sha256:")


def _pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return True


def holder_is_stale(holder: Any) -> bool:
    """A lock or workspace owned by a process that no longer runs (or an earlier process with our pid)."""
    try:
        pid, token = int(holder[0]), str(holder[1])
    except (TypeError, ValueError, IndexError):
        return True
    if pid == os.getpid():
        return token != _PROCESS_TOKEN
    return not _pid_alive(pid)


def process_token() -> str:
    """This process's token (workspaces carry it beside the pid)."""
    return _PROCESS_TOKEN


class SingleFlight:
    """A lock on one key shared by every thread and process using the same cache directory.

    Acquired with ``Cache.add`` (atomic in SQLite); a holder whose process died is reclaimed, so a
    SIGKILLed run never blocks the next one.
    """

    def __init__(self, cache: diskcache.Cache, key: str, poll_s: float = 0.02) -> None:
        self._cache, self._name, self._poll_s = cache, _LOCK_PREFIX + key, poll_s

    def __enter__(self) -> SingleFlight:
        holder = (os.getpid(), _PROCESS_TOKEN, threading.get_ident())
        while not self._cache.add(self._name, holder, retry=True):
            current = self._cache.get(self._name, retry=True)
            if current is not None and holder_is_stale(current):
                with self._cache.transact(retry=True):
                    if self._cache.get(self._name) == current:
                        self._cache.delete(self._name)
                continue
            time.sleep(self._poll_s)
        return self

    def __exit__(self, *exc: object) -> None:
        self._cache.delete(self._name, retry=True)


class LegCache:
    """The leg cache over one directory, in one mode, for one invocation (a flow run)."""

    def __init__(self, directory: Path, mode: LegCacheMode = "default") -> None:
        if mode not in LEG_CACHE_MODES:
            raise ValueError(f"leg cache mode {mode!r} is not one of {', '.join(LEG_CACHE_MODES)}")
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.mode = mode
        self._cache = diskcache.Cache(str(directory))
        self._refreshed: set[str] = set()  # force mode: keys run live in this invocation
        #: The invocation (flow run) this handle serves; entries it writes carry it (open_leg_cache sets it).
        self.invocation = ""
        self._guard = threading.Lock()

    def close(self) -> None:
        """Close the underlying store."""
        self._cache.close()

    def lookup(self, key: str) -> Mapping[str, Any] | None:
        """The stored record of a key, or None."""
        record = self._cache.get(_ENTRY_PREFIX + key, retry=True)
        return record if isinstance(record, dict) else None

    def _servable(self, key: str) -> Mapping[str, Any] | None:
        record = self.lookup(key)
        if record is None:
            return None
        if self.mode == "force":
            with self._guard:
                if key not in self._refreshed:
                    return None
        return record

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

        ``spawn`` returns the wire observation or raises (a fault); nothing is stored on a raise.
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
        with SingleFlight(self._cache, key):
            record = self._servable(key)  # another thread or process may have answered meanwhile
            if record is not None:
                return self._hit(record, request, key)
            started = time.perf_counter()
            observation = dict(spawn())
            elapsed = time.perf_counter() - started
            self._cache.set(
                _ENTRY_PREFIX + key,
                {
                    "key": key,
                    "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "elapsedMs": round(elapsed * 1000),
                    "request": _environment_names_only(request),
                    "observation": observation,
                    "leg": leg,
                    "run": run,
                    "invocation": self.invocation,
                },
                retry=True,
            )
            with self._guard:
                self._refreshed.add(key)
        return LegAnswer(restamp(observation, request), "spawned", elapsed, key)

    def _hit(self, record: Mapping[str, Any], request: Mapping[str, Any], key: str) -> LegAnswer:
        same_run = bool(self.invocation) and record.get("invocation") == self.invocation
        by = {name: record.get(name) for name in ("leg", "run", "at")}
        return LegAnswer(restamp(record["observation"], request), "collapsed" if same_run else "cache", 0.0, key, by)


def restamp(observation: Mapping[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    """The observation carrying this leg's correlation triple (the stored one names whichever leg ran first)."""
    return {
        **observation,
        "probeId": request["probeId"],
        "interfaceId": request["interfaceId"],
        "operationId": request["operationId"],
    }


_OPEN: dict[tuple[str, str, str], LegCache] = {}
_OPEN_GUARD = threading.Lock()


def open_leg_cache(directory: Path, mode: LegCacheMode, invocation: str) -> LegCache:
    """The one ``LegCache`` of an invocation in this process (force mode's memory is per invocation)."""
    handle = (str(directory), mode, invocation)
    with _OPEN_GUARD:
        cache = _OPEN.get(handle)
        if cache is None:
            cache = _OPEN[handle] = LegCache(directory, mode)
            cache.invocation = invocation
        return cache


def close_leg_cache(directory: Path, mode: LegCacheMode, invocation: str) -> None:
    """Forget (and close) an invocation's cache handle."""
    with _OPEN_GUARD:
        cache = _OPEN.pop((str(directory), mode, invocation), None)
    if cache is not None:
        cache.close()
