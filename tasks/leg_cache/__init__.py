"""The leg cache (harness.md A.6, preflight-adapter.md §8): one stored observation per distinct leg request.

Key = digest of the leg's canonical request with its correlation label (``probeId``, i.e. the leg id)
blanked, plus the target's registry entry and budgets (its ``{python}`` placeholder kept as authored),
the identity of the interpreter that placeholder stands for (implementation and version, never its
path), a digest of the staged system and fixtures (file contents and relative names, never where the
checkout or the workspace is), and the tool version. Nothing machine-specific enters it, so several
machines share one cache (tasks/leg_cache/postgres.py) whatever their checkout and venv paths. Nothing secret enters a record: the registry entry names environment keys only,
and a persisted request keeps environment key *names* only. Rules:

* faults are never cached (a timeout writes nothing, so the next run spawns again); a non-zero exit
  IS an observation and is cached;
* a hit is re-stamped with the current leg's probeId, interfaceId and operationId;
* an entry names the leg and the run that spawned it (``leg``, ``run``, ``invocation``), so a hit says
  whether it collapsed onto an identical leg of this same invocation or came from an earlier run;
* identical requests collapse into one spawn even when concurrent, across threads and processes: the
  spawn runs under a single-flight claim whose holder is reclaimed when its process is dead, and the
  cache is re-checked under the claim. A leg that *faulted* (a hang that ran into its budget, say) is
  remembered for the rest of the invocation, so its identical twins wait for that one spawn and get
  the same fault instead of each burning the full budget again;
* modes: ``default``; ``force`` (each distinct request runs live once per invocation, later legs with
  that key read what was just written); ``from-cache`` (a miss is an error naming how to fill the cache).

**Nothing read back is trusted.** There is no pickle anywhere: the store (``LegStore``) holds text.
Each entry is canonical JSON ``{"format", "key", "keyDigest", "record", "recordDigest"}``; a read
verifies that the entry parses strictly, is stored under the key it names, that both digests match,
and that the observation is a valid cli or api ``ProbeObservation``. An entry that fails any of it is
deleted, reported as one warning line, and the leg runs again; it is never served. (The digests carry
no secret: they catch corruption, truncation, an entry moved to another key and anything planted
that is not a well-formed entry, but a writer with the user's own rights can forge a consistent
entry. The cache directory must not be writable by the systems under test; see README "Trust
boundary".)

**A broken database is rebuilt, not fatal.** ``SqliteLegStore`` runs SQLite's ``quick_check`` when it
opens; a garbled or truncated file is moved aside (``legs.sqlite3.corrupt-<stamp>``), one warning line
names the cache directory and where the broken file went, and an empty cache takes its place (the
legs simply run again). A database that still cannot be opened raises ``LegCacheUnusable``, which the
flows report as one line and exit 74 when their check before any leg meets it; met later, by a leg
(the database broke mid-run), it fails that leg with one ``port-failure`` line at ``LegCache``
(tasks/preflight.py ``spawn_leg``).

The store interface (``get`` / ``put`` / ``claim`` / ``close``) is all ``LegCache`` uses, so another
backend (a server database) can sit behind the same cache; ``SqliteLegStore`` is the default, one file
``<cache dir>/legs.sqlite3``, safe across threads and processes (single flight is an ``flock`` per key, which the kernel drops when
its holder dies). Crash- and kill-safe: an entry is one
SQLite transaction written after the observation is complete, so a partial entry is never served.
"""

from __future__ import annotations

# The package surface: callers import from ``tasks.leg_cache``; the modules inside import each other
# directly (store <- entry, sqlite, postgres <- cache), so the package holds no import cycle.
from tasks.leg_cache.cache import (
    LEG_CACHE_MODES,
    LegAnswer,
    LegCache,
    LegCacheMode,
    LegFaultCost,
    close_leg_cache,
    open_leg_cache,
    restamp,
)
from tasks.leg_cache.entry import ENTRY_FORMAT, EntryRejected, decode_entry, encode_entry, leg_cache_key
from tasks.leg_cache.postgres import PostgresLegStore, is_postgres_url
from tasks.leg_cache.sqlite import DATABASE_NAME, SqliteLegStore
from tasks.leg_cache.store import (
    EXIT_CACHE_UNUSABLE,
    LEG_CACHE_FAULT_PATH,
    LegCacheUnusable,
    LegStore,
    holder_is_stale,
    process_token,
)

__all__ = [
    "DATABASE_NAME",
    "ENTRY_FORMAT",
    "EXIT_CACHE_UNUSABLE",
    "LEG_CACHE_FAULT_PATH",
    "LEG_CACHE_MODES",
    "EntryRejected",
    "LegAnswer",
    "LegCache",
    "LegCacheMode",
    "LegCacheUnusable",
    "LegFaultCost",
    "LegStore",
    "PostgresLegStore",
    "SqliteLegStore",
    "close_leg_cache",
    "decode_entry",
    "encode_entry",
    "holder_is_stale",
    "is_postgres_url",
    "leg_cache_key",
    "open_leg_cache",
    "process_token",
    "restamp",
]
