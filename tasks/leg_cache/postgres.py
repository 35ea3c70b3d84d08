"""The leg cache's PostgreSQL store: one table several machines share, single-flight by advisory locks.

Selected by ``EVALQUALITY_LEG_CACHE=postgresql://user@host:port/database`` (tasks/leg_cache/store.py). The
diskcache store stays the default for one machine; its SQLite file must never sit on a network
filesystem (SQLite's locking is not reliable there), which is what this store is for.

* **Entries.** Table ``evalquality_leg_cache(key text primary key, entry text, written_at)``: ``entry``
  is the same canonical-JSON text the default SQLite store keeps (``tasks/leg_cache/entry.py``
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
* **No secrets in parameters or messages.** A flow parameter (which Prefect records) and every message
  carry only the redacted URL (no user info, no ``password``/``sslpassword`` query parameter); the
  store reads the real URL from ``EVALQUALITY_LEG_CACHE`` in the process that opens it
  (:func:`with_credentials`), and masks any credential a library error quotes. ``PGPASSWORD`` and
  ``~/.pgpass`` work as well (libpq reads both).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from urllib.parse import unquote

from evalquality_core.faults import RuntimeFault
from tasks.leg_cache.store import LEG_CACHE_FAULT_PATH, LegCacheUnusable

TABLE = "evalquality_leg_cache"
URL_SCHEMES = ("postgresql://", "postgres://")
#: Serializes the table's creation when several processes start at once (CREATE IF NOT EXISTS races).
_SCHEMA_LOCK = 0x6576616C7175616C  # "evalqual"
_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}


def is_postgres_url(location: str) -> bool:
    """Whether a leg cache location names the PostgreSQL store."""
    return location.startswith(URL_SCHEMES)


#: The variable that names the leg cache; the real URL (credentials included) is read from it in the
#: process that opens the store, never passed as a parameter.
LEG_CACHE_VARIABLE = "EVALQUALITY_LEG_CACHE"
#: Query parameters of a libpq URL whose value is a credential: never shown, never a flow parameter.
#: (``passfile`` and ``sslkey`` name files, not secrets, and are kept.)
SECRET_PARAMETERS = frozenset({"password", "sslpassword"})


def _parts(url: str) -> tuple[str, str, str, list[str]]:
    """``(scheme://, user info, host-and-path, query pairs)`` of a URL, split by text, never raising.

    The user info runs to the *last* ``@`` (a password holding an unencoded ``@``, ``/``, ``?`` or ``#``
    still ends up in it, never in what is shown); a fragment is dropped (libpq reads none)."""
    scheme, sep, body = url.partition("://")
    prefix = scheme + sep if sep else ""
    body = body if sep else url
    info, at, rest = body.rpartition("@")
    if not at:
        info, rest = "", body
    rest = rest.partition("#")[0]
    where, _, query = rest.partition("?")
    return prefix, info, where, [pair for pair in query.split("&") if pair]


def _is_secret(pair: str) -> bool:
    return unquote(pair.partition("=")[0]).strip().lower() in SECRET_PARAMETERS


def redacted(url: str) -> str:
    """The URL as messages, logs and flow parameters show it: without user info (user and password)
    and without credential query parameters (``password``, ``sslpassword``); never raises."""
    prefix, _, where, pairs = _parts(url)
    kept = [pair for pair in pairs if not _is_secret(pair)]
    return prefix + where + ("?" + "&".join(kept) if kept else "")


def secrets_of(url: str) -> list[str]:
    """Every credential text in ``url`` (as written and percent-decoded), longest first, for scrubbing."""
    _, info, _, pairs = _parts(url)
    found = [info.partition(":")[2]] if ":" in info else []
    found += [pair.partition("=")[2] for pair in pairs if _is_secret(pair)]
    return sorted({text for value in found for text in (value, unquote(value)) if text}, key=len, reverse=True)


def scrubbed(text: str, url: str) -> str:
    """``text`` (a library's error message) with ``url`` shown redacted and every credential in it masked."""
    text = text.replace(url, redacted(url))
    for secret in secrets_of(url):
        text = text.replace(secret, "***")
    return text


def with_credentials(location: str) -> str:
    """The URL to connect with: ``$EVALQUALITY_LEG_CACHE`` when ``location`` is its redacted form (what a
    flow receives as its parameter), else ``location`` itself."""
    configured = os.environ.get(LEG_CACHE_VARIABLE) or ""
    if configured and is_postgres_url(configured) and location == redacted(configured):
        return configured
    return location


def check_url(url: str) -> None:
    """Refuse a URL libpq cannot use, in one line that never shows a credential; ``ValueError``.

    A password may be in the URL (user info or ``?password=``): it stays in the environment and is
    read where the store opens, so only :func:`redacted` ever reaches a flow parameter or a message."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    name = f"{LEG_CACHE_VARIABLE}={redacted(url)}"
    secret = bool(secrets_of(url))
    try:
        parsed = conninfo_to_dict(url)
    except ProgrammingError as problem:
        # libpq quotes the offending text, which may be (part of) the password: say what to fix instead.
        why = ("percent-encode any space, @, :, /, ?, #, & or % in the password" if secret
               else " ".join(str(problem).split()))
        raise ValueError(f"{name}: not a usable PostgreSQL URL ({why})") from None
    _, info, _, _ = _parts(url)
    if ":" in info and parsed.get("password") not in secrets_of(url):  # libpq split it elsewhere
        raise ValueError(f"{name}: the user info does not read as user:password@host (percent-encode any @, :, "
                         "/, ?, # or % in the password)")
    for port in str(parsed.get("port") or "").split(","):
        if port and not (port.isdigit() and 1 <= int(port) <= 65535):
            shown = f" {port}" if port.isdigit() else ""
            raise ValueError(f"{name}: the port{shown} is not a number from 1 to 65535")


def lock_id(key: str) -> int:
    """The advisory lock id of a key: its first 64 bits as a signed bigint."""
    return int.from_bytes(bytes.fromhex(key[:16]), "big", signed=True)


class PostgresLegStore:
    """The ``LegStore`` (tasks/leg_cache/store.py) on one PostgreSQL database (module docstring).

    One connection per thread that uses it (advisory locks are held by a session, so a lock and the
    spawn it guards must stay on one connection), all closed by :meth:`close`.
    """

    def __init__(self, url: str, poll_s: float = 0.02) -> None:
        url = with_credentials(url)
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
            detail = scrubbed(detail, self.url)  # libpq may quote what it could not parse: the password
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

