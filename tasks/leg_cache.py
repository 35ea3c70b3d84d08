"""The leg cache (harness.md A.6, preflight-adapter.md §8): one stored observation per distinct leg request.

Key = digest of the leg's canonical request with its correlation label (``probeId``, i.e. the leg id)
blanked, plus the target's registry entry and budgets (its ``{python}`` placeholder kept as authored),
the identity of the interpreter that placeholder stands for (implementation and version, never its
path), a digest of the staged system and fixtures (file contents and relative names, never where the
checkout or the workspace is), and the tool version. Nothing machine-specific enters it, so several
machines share one cache (tasks/leg_cache_postgres.py) whatever their checkout and venv paths. Nothing secret enters a record: the registry entry names environment keys only,
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

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import sqlite3
import stat
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from evalquality_core.artifacts.port_messages import (
    ApiProbeObservation,
    CliProbeObservation,
    McpProbeObservation,
    read_probe_observation,
)
from evalquality_core.canonical.digest import NotBound, digest_artifact, digest_composite, parse_bound
from evalquality_core.canonical.json import canonical_bytes, scan_json
from evalquality_core.faults import EvalQualityFault, RuntimeFault

LegCacheMode = Literal["default", "force", "from-cache"]
LEG_CACHE_MODES: tuple[LegCacheMode, ...] = ("default", "force", "from-cache")

#: Identifies this process in claim holders, so a recycled pid is never mistaken for a live holder.
_PROCESS_TOKEN = uuid.uuid4().hex
#: The format tag of an entry; bumped if the entry shape changes (older entries then fail verification).
ENTRY_FORMAT = "eval-quality/leg-cache-entry/v1"
DATABASE_NAME = "legs.sqlite3"
#: Where a leg's fault points when the leg cache failed under it, not the system under test (a mutants
#: run never takes such a fault for a finding about the mutant, flows/mutants.py).
LEG_CACHE_FAULT_PATH = "LegCache"
#: Exit code the flows use when the leg cache cannot be used at all (sysexits EX_IOERR).
EXIT_CACHE_UNUSABLE = 74


class LegCacheUnusable(Exception):
    """The cache directory cannot hold a working database (not even after moving a broken one aside).

    ``str()`` is one line naming the directory and the fix."""


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


def _environment_names_only(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request as persisted: environment channel values replaced by their key names (A.6)."""
    channels = request.get("channels") or {}
    if "environment" not in channels:
        return dict(request)
    names = sorted(channels["environment"])
    return {**request, "channels": {**channels, "environment": names}}


def leg_cache_key(
    request: Mapping[str, Any],
    target_entry: Mapping[str, Any],
    staged_digest: str,
    tool_version: str,
    runtime: Mapping[str, str] | None = None,
) -> str:
    """The cache key of a leg (module docstring); the hex of a composite digest.

    ``target_entry`` is the registry entry with its placeholders as authored (``{python}``, never this
    machine's interpreter path) and ``runtime`` what each placeholder it uses stands for, by identity
    (``{"python": "cpython-3.12.3"}``), so machines with the project at different paths share a key and
    a different interpreter never does. The ``runtime`` member is always part of the composite, so a
    key made before it existed (which held the interpreter's path) can never equal one made now: such
    old entries simply miss.
    """
    blank = {**request, "probeId": ""}
    return digest_composite(
        {
            "request": blank,
            "target": dict(target_entry),
            "staged": staged_digest,
            "tool": tool_version,
            "runtime": dict(runtime or {}),
        }
    ).removeprefix("sha256:")


def _key_digest(key: str) -> str:
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def encode_entry(key: str, record: Mapping[str, Any]) -> str:
    """The stored text of one entry: canonical JSON carrying the digests of its key and its record."""
    body = dict(record)
    entry = {
        "format": ENTRY_FORMAT,
        "key": key,
        "keyDigest": _key_digest(key),
        "record": body,
        "recordDigest": digest_artifact(body),
    }
    return canonical_bytes(entry).decode("utf-8")


#: The tail of an entry as ``encode_entry`` writes it: ``,"recordDigest":"sha256:<64 hex>"}``.
_TAIL_HEAD = ',"recordDigest":"'
_TAIL_LENGTH = len(_TAIL_HEAD) + len("sha256:") + 64 + len('"}')


def _bound_record(key: str, text: str) -> dict[str, Any] | None:
    """The record of an entry laid out exactly as ``encode_entry`` writes it, when its bytes are bound to
    the recorded digest (``parse_bound``: no canonical re-encoding to check it); None sends the entry to
    the strict reader of ``decode_entry``, which names what is wrong with it."""
    head = (
        '{"format":' + json.dumps(ENTRY_FORMAT) + ',"key":' + json.dumps(key)
        + ',"keyDigest":' + json.dumps(_key_digest(key)) + ',"record":'
    )
    tail = text[-_TAIL_LENGTH:]
    if not text.startswith(head) or not tail.startswith(_TAIL_HEAD) or not tail.endswith('"}'):
        return None
    try:
        record = parse_bound(text[len(head):-_TAIL_LENGTH].encode("utf-8"), tail[len(_TAIL_HEAD):-2])
    except (NotBound, UnicodeEncodeError):
        return None
    return record if isinstance(record, dict) else None


class EntryRejected(ValueError):
    """A stored entry failed verification; ``str()`` says why (one short clause)."""


def decode_entry(key: str, text: Any) -> dict[str, Any]:
    """The verified record of a stored entry, or ``EntryRejected`` naming the first check it fails."""
    if not isinstance(text, str):
        raise EntryRejected(f"it is stored as {type(text).__name__}, not JSON text")
    record = _bound_record(key, text)
    if record is not None:
        return _checked_record(key, record)
    try:
        entry = scan_json(text, "LegCacheEntry")
    except EvalQualityFault as fault:
        raise EntryRejected(f"it is not strict JSON ({fault.detail})") from None
    if not isinstance(entry, dict) or set(entry) != {"format", "key", "keyDigest", "record", "recordDigest"}:
        raise EntryRejected("it does not have the entry shape")
    if entry["format"] != ENTRY_FORMAT:
        raise EntryRejected(f"its format {str(entry['format'])[:40]!r} is not {ENTRY_FORMAT!r}")
    if entry["key"] != key:
        raise EntryRejected("it names another key than the one it is stored under")
    if entry["keyDigest"] != _key_digest(key):
        raise EntryRejected("its key digest does not match")
    record = entry["record"]
    if not isinstance(record, dict):
        raise EntryRejected("its record is not an object")
    if entry["recordDigest"] != digest_artifact(record):
        raise EntryRejected("its record digest does not match (the record was altered or cut)")
    return _checked_record(key, record)


def _checked_record(key: str, record: dict[str, Any]) -> dict[str, Any]:
    """The record, once it names its key and holds a valid cli, api or mcp observation."""
    if record.get("key") != key:
        raise EntryRejected("its record names another key")
    stored = record.get("observation")
    # A multi-call leg's observation carries its calls' under "calls" (evalquality_core/adapters/leg_calls.py):
    # each must be a valid observation too.
    calls = stored.get("calls", []) if isinstance(stored, dict) else []
    own = {k: v for k, v in stored.items() if k != "calls"} if isinstance(stored, dict) else stored
    if not isinstance(calls, list):
        raise EntryRejected("its observation's calls are not a list")
    for one in [own, *calls]:
        try:
            observation = read_probe_observation(one)
        except EvalQualityFault as fault:
            raise EntryRejected(f"its observation is not a valid ProbeObservation ({fault.detail[:120]})") from None
        if not isinstance(observation, CliProbeObservation | ApiProbeObservation | McpProbeObservation):
            raise EntryRejected("its observation is not a cli, api or mcp observation")
    return record


class LegStore(Protocol):
    """What the leg cache needs from a backend. Values are verified text; a backend never unpickles."""

    def get(self, key: str) -> str | None:
        """The stored entry text of ``key``, or None."""
        ...

    def put(self, key: str, entry: str) -> None:
        """Store (or replace) the entry text of ``key`` in one transaction."""
        ...

    def delete(self, key: str, entry: str | None = None) -> None:
        """Remove ``key``'s entry (only if it still equals ``entry``, when given)."""
        ...

    def claim(self, key: str) -> contextlib.AbstractContextManager[None]:
        """Single flight on ``key`` across threads and processes; a dead holder is reclaimed."""
        ...

    def count(self) -> int:
        """How many entries are stored."""
        ...

    def close(self) -> None:
        """Release the backend."""
        ...


def _pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return True


def holder_is_stale(holder: Any) -> bool:
    """A claim or workspace owned by a process that no longer runs (or an earlier process with our pid)."""
    try:
        pid, token = int(holder[0]), str(holder[1])
    except (TypeError, ValueError, IndexError):
        return True
    if pid <= 0:
        return True
    if pid == os.getpid():
        return token != _PROCESS_TOKEN
    return not _pid_alive(pid)


def process_token() -> str:
    """This process's token (workspaces carry it beside the pid)."""
    return _PROCESS_TOKEN


def _warn(line: str) -> None:
    """One warning line on stderr (newlines in quoted text are flattened, so it stays one line)."""
    sys.stderr.write("eval-quality: warning: " + " ".join(line.split()) + "\n")
    sys.stderr.flush()


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS legs (key TEXT PRIMARY KEY, entry TEXT NOT NULL)",
)


class SqliteLegStore:
    """The default ``LegStore``: one SQLite file (WAL), a connection per thread, no pickle.

    Opening checks the file (``PRAGMA quick_check``); a broken one is moved aside with one warning
    line and replaced by an empty database (module docstring). ``warn`` receives each warning line.
    """

    def __init__(self, directory: Path, *, warn: Callable[[str], None] = _warn) -> None:
        self.directory = directory
        self.path = directory / DATABASE_NAME
        self._warn = warn
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LegCacheUnusable(
                f"leg cache {directory}: cannot create the directory ({exc.strerror or exc}); "
                "point EVALQUALITY_HOME at a writable directory"
            ) from None
        self._open_checked()

    # -- opening, checking, rebuilding -------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA busy_timeout=60000")
        # In WAL mode NORMAL syncs at checkpoints, not at every commit: a SIGKILLed process still loses
        # no committed entry and never corrupts the file (only a power cut may drop the last few, whose
        # legs then run again). A full fsync per entry serialized every spawning thread behind the disk.
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    def _healthy(self) -> str | None:
        """None when the file opens, passes ``quick_check`` and holds our tables; else why not."""
        try:
            connection = self._connect()
        except sqlite3.Error as exc:
            return str(exc)
        try:
            rows = connection.execute("PRAGMA quick_check").fetchall()
            if rows != [("ok",)]:
                return "; ".join(str(row[0]) for row in rows[:3])
            connection.execute("PRAGMA journal_mode=WAL")
            for statement in _SCHEMA:
                connection.execute(statement)
            columns = {row[1] for row in connection.execute("PRAGMA table_info(legs)")}
            if columns != {"key", "entry"}:
                return "its legs table has another shape"
            return None
        except sqlite3.Error as exc:
            return str(exc)
        finally:
            connection.close()

    def _open_checked(self) -> None:
        problem = self._healthy()
        if problem is None:
            return
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = self.path.with_name(f"{DATABASE_NAME}.corrupt-{stamp}-{os.getpid()}")
        try:
            for suffix in ("", "-wal", "-shm"):
                source = Path(str(self.path) + suffix)
                if source.exists():
                    source.replace(Path(str(aside) + suffix))
        except OSError as exc:
            raise LegCacheUnusable(
                f"leg cache {self.directory}: the database is broken ({problem}) and could not be moved aside "
                f"({exc.strerror or exc}); remove {self.path} and run again"
            ) from None
        self._warn(
            f"leg cache {self.directory}: the database was broken ({problem}); moved it to {aside.name} "
            "and started an empty cache (its legs will run again)"
        )
        problem = self._healthy()
        if problem is not None:
            raise LegCacheUnusable(
                f"leg cache {self.directory}: cannot create a working database ({problem}); "
                f"remove {self.path} and check the disk"
            )

    def _db(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._connect()
            self._local.connection = connection
            with self._guard:
                self._connections.append(connection)
        return connection

    def _run(self, statement: str, parameters: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._db().execute(statement, parameters).fetchall()
        except sqlite3.DatabaseError as exc:
            raise LegCacheUnusable(
                f"leg cache {self.directory}: the database failed mid-run ({exc}); "
                f"run again (a broken {DATABASE_NAME} is moved aside on open)"
            ) from None

    # -- the store ---------------------------------------------------------------------------------

    def get(self, key: str) -> str | None:
        """The stored entry text of ``key``, or None (a non-text value comes back as is, to be refused)."""
        rows = self._run("SELECT entry FROM legs WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def put(self, key: str, entry: str) -> None:
        """Store the entry text of ``key`` (one transaction)."""
        self._run("INSERT OR REPLACE INTO legs (key, entry) VALUES (?, ?)", (key, entry))

    def delete(self, key: str, entry: Any = None) -> None:
        """Remove ``key``'s entry (only if it still is ``entry``, when given)."""
        if entry is None:
            self._run("DELETE FROM legs WHERE key = ?", (key,))
        else:
            self._run("DELETE FROM legs WHERE key = ? AND entry IS ?", (key, entry))

    def count(self) -> int:
        """How many entries are stored."""
        return int(self._run("SELECT COUNT(*) FROM legs")[0][0])

    @contextlib.contextmanager
    def claim(self, key: str) -> Iterator[None]:
        """Single flight on ``key``: an exclusive ``flock`` on ``claims/<key>.lock``.

        The kernel drops the lock when its holder dies (even by SIGKILL), so a killed run never blocks
        the next one, and nothing planted in the directory can hold it: only a live open file does.
        """
        claims = self.directory / "claims"
        claims.mkdir(exist_ok=True)
        name = key if key.isascii() and key.isalnum() and len(key) <= 128 else hashlib.sha256(key.encode()).hexdigest()
        path = claims / f"{name}.lock"
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        for _ in range(3):
            try:
                fd = os.open(path, flags, 0o600)
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    break
                os.close(fd)  # a planted FIFO or device: not a claim file
                raise OSError(errno.ENXIO, "not a regular file")
            except OSError as exc:  # a planted symlink or FIFO: remove it and make our own file
                if exc.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
                    raise LegCacheUnusable(f"leg cache {self.directory}: cannot open {path} ({exc.strerror})") from None
                with contextlib.suppress(OSError):
                    (os.rmdir if path.is_dir() and not path.is_symlink() else os.unlink)(path)
        else:
            raise LegCacheUnusable(f"leg cache {self.directory}: cannot make the claim file {path}")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def close(self) -> None:
        """Close every connection this store opened."""
        with self._guard:
            connections, self._connections = self._connections, []
        for connection in connections:
            with contextlib.suppress(sqlite3.Error):
                connection.close()
        self._local = threading.local()


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
        warn: Callable[[str], None] = _warn,
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
                "request": _environment_names_only(request),
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
    PostgreSQL backend, shared by several machines: tasks/leg_cache_postgres.py); both answer legs by
    the same rules through ``answer(key, request, spawn)``.
    """
    handle = (str(location), mode, invocation)
    with _OPEN_GUARD:
        cache = _OPEN.get(handle)
        if cache is None:
            from tasks.leg_cache_postgres import PostgresLegStore, is_postgres_url

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
