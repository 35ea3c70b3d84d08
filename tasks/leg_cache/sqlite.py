"""The default leg store: one SQLite file ``<cache dir>/legs.sqlite3`` (WAL), single flight by ``flock``.

A garbled or truncated file is moved aside with one warning line and replaced by an empty database
(tasks/leg_cache/__init__.py).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tasks.leg_cache.store import LegCacheUnusable, warn_line

DATABASE_NAME = "legs.sqlite3"


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS legs (key TEXT PRIMARY KEY, entry TEXT NOT NULL)",
)


class SqliteLegStore:
    """The default ``LegStore``: one SQLite file (WAL), a connection per thread, no pickle.

    Opening checks the file (``PRAGMA quick_check``); a broken one is moved aside with one warning
    line and replaced by an empty database (module docstring). ``warn`` receives each warning line.
    """

    def __init__(self, directory: Path, *, warn: Callable[[str], None] = warn_line) -> None:
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


