"""The leg cache's PostgreSQL store: one table several machines share, single-flight by advisory locks.

Selected by ``EVALQUALITY_LEG_CACHE=postgresql://user@host:port/database`` (tasks/leg_cache.py). The
diskcache store stays the default for one machine; its SQLite file must never sit on a network
filesystem (SQLite's locking is not reliable there), which is what this store is for.

* **Entries.** Table ``evalquality_leg_cache(key text primary key, entry text, written_at)``: ``entry``
  is the same canonical-JSON text the default SQLite store keeps (``tasks/leg_cache.py``
  ``encode_entry``), bound to its key by digests and verified on every read by ``LegCache`` (a row that
  fails verification is deleted, reported, and its leg runs again). Written in one autocommit
  statement after the observation is complete, so a kill never leaves a partial entry.
* **Errors.** A database that cannot be reached or set up when the cache opens is ``LegCacheUnusable``
  (one line, exit 74, as for a broken SQLite file); a failure mid-run fails that leg with a
  ``port-failure`` fault (never cached; the run goes on and the next run tries again).
* **Single flight.** Identical requests spawn once across threads, processes and machines: the spawn
  runs under the session-level advisory lock ``pg_try_advisory_lock(<first 64 bits of the key>)`` held
  on the spawning thread's own connection. When the holder dies (SIGKILL, a lost machine) its
  connection closes and the server releases the lock; TCP keepalives bound how long a vanished
  machine's half-open connection can hold one. Waiters poll (so an interrupted run stops waiting).
* **No secrets in parameters.** The URL becomes a flow parameter (recorded by Prefect), so a URL with
  a password is refused: give the password by ``PGPASSWORD`` or ``~/.pgpass`` (libpq reads both).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

from evalquality_core.faults import RuntimeFault
from tasks.leg_cache import LEG_CACHE_FAULT_PATH, LegCacheUnusable

TABLE = "evalquality_leg_cache"
URL_SCHEMES = ("postgresql://", "postgres://")
#: Serializes the table's creation when several processes start at once (CREATE IF NOT EXISTS races).
_SCHEMA_LOCK = 0x6576616C7175616C  # "evalqual"
_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}


def is_postgres_url(location: str) -> bool:
    """Whether a leg cache location names the PostgreSQL store."""
    return location.startswith(URL_SCHEMES)


def redacted(url: str) -> str:
    """The URL without user info, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def check_url(url: str) -> None:
    """Refuse a URL carrying a password (it would be recorded as a flow parameter); ``ValueError``."""
    if urlsplit(url).password is not None:
        raise ValueError(
            f"EVALQUALITY_LEG_CACHE={redacted(url)}: the URL carries a password, which would be recorded as a "
            "flow parameter; give it by PGPASSWORD or ~/.pgpass instead"
        )


def lock_id(key: str) -> int:
    """The advisory lock id of a key: its first 64 bits as a signed bigint."""
    return int.from_bytes(bytes.fromhex(key[:16]), "big", signed=True)


class PostgresLegStore:
    """The ``LegStore`` (tasks/leg_cache.py) on one PostgreSQL database (module docstring).

    One connection per thread that uses it (advisory locks are held by a session, so a lock and the
    spawn it guards must stay on one connection), all closed by :meth:`close`.
    """

    def __init__(self, url: str, poll_s: float = 0.02) -> None:
        check_url(url)
        self.url = url
        self.location = redacted(url)
        self._poll_s = poll_s
        self._local = threading.local()
        self._connections: list[object] = []
        self._guard = threading.Lock()
        try:
            with self._errors("create the table"):
                connection = self._connection()
                with connection.transaction():
                    connection.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                    connection.execute(
                        f"CREATE TABLE IF NOT EXISTS {TABLE} ("
                        "key text PRIMARY KEY, entry text NOT NULL, written_at timestamptz NOT NULL DEFAULT now())"
                    )
        except RuntimeFault as fault:
            raise LegCacheUnusable(
                f"{fault.detail}; check EVALQUALITY_LEG_CACHE and that the server is up"
            ) from None

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """A database error becomes a fault naming the store (never cached: the leg fails, the run goes on)."""
        import psycopg

        try:
            yield
        except psycopg.Error as problem:
            self._drop_connection()
            detail = str(problem).strip().splitlines()[0] if str(problem).strip() else type(problem).__name__
            raise RuntimeFault(
                "port-failure", LEG_CACHE_FAULT_PATH, f"leg cache {self.location}: could not {doing}: {detail}"
            ) from None

    def _connection(self):  # noqa: ANN202 (psycopg is imported lazily)
        connection = getattr(self._local, "connection", None)
        if connection is None or connection.closed:
            import psycopg

            connection = psycopg.connect(self.url, autocommit=True, connect_timeout=10, **_KEEPALIVES)
            self._local.connection = connection
            with self._guard:
                self._connections.append(connection)
        return connection

    def _drop_connection(self) -> None:
        connection = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()

    def get(self, key: str) -> str | None:
        """The stored entry text of a key, or None."""
        with self._errors("read an entry"):
            row = self._connection().execute(f"SELECT entry FROM {TABLE} WHERE key = %s", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, entry: str) -> None:
        """Store (or, in force mode, replace) a key's entry in one statement."""
        with self._errors("write an entry"):
            self._connection().execute(
                f"INSERT INTO {TABLE} (key, entry) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET entry = excluded.entry, written_at = now()",
                (key, entry),
            )

    def delete(self, key: str, entry: str | None = None) -> None:
        """Remove a key's entry (only if it still is ``entry``, when given: one that failed verification)."""
        with self._errors("delete an entry"):
            if entry is None:
                self._connection().execute(f"DELETE FROM {TABLE} WHERE key = %s", (key,))
            else:
                self._connection().execute(f"DELETE FROM {TABLE} WHERE key = %s AND entry = %s", (key, entry))

    def count(self) -> int:
        """How many entries are stored."""
        with self._errors("count the entries"):
            return int(self._connection().execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])

    @contextlib.contextmanager
    def claim(self, key: str, abort: threading.Event | None = None) -> Iterator[None]:
        """Hold the key's advisory lock (waiting for another holder, in any process, to finish or die)."""
        ident = lock_id(key)
        with self._errors("take the single-flight lock"):
            connection = self._connection()
            while not connection.execute("SELECT pg_try_advisory_lock(%s)", (ident,)).fetchone()[0]:
                if abort is not None and abort.is_set():
                    raise RuntimeFault("aborted", "ProbeRequest", "the pre-flight run was interrupted while waiting")
                time.sleep(self._poll_s)
        try:
            yield
        finally:
            with contextlib.suppress(RuntimeFault), self._errors("release the single-flight lock"):
                connection.execute("SELECT pg_advisory_unlock(%s)", (ident,))

    def keys(self) -> list[str]:
        """Every stored key (for tests and operators)."""
        with self._errors("list the keys"):
            return [str(row[0]) for row in self._connection().execute(f"SELECT key FROM {TABLE} ORDER BY key")]

    def close(self) -> None:
        """Close every connection this store opened (releasing any lock still held)."""
        with self._guard:
            connections, self._connections = self._connections, []
        for connection in connections:
            with contextlib.suppress(Exception):
                connection.close()  # type: ignore[attr-defined]

