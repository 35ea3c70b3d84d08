"""A throwaway PostgreSQL cluster in a temp dir, for tests (initdb + pg_ctl; stopped and removed after).

The server binaries come from ``PATH`` or Debian's ``/usr/lib/postgresql/<version>/bin`` (the
``postgresql`` package puts them there, and ``.ci/run`` installs it when ``initdb`` is missing).
``initdb`` refuses to run as root, so as root the cluster is created and run by the ``postgres`` user
when it exists (the package creates it), else by ``nobody``, through ``runuser``. The cluster listens
on a free loopback port with its unix socket inside the temp dir, trusts local connections (it lives
only as long as the test), and skips fsync: nothing in it must survive a power cut.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.ports import server_port

SUPERUSER = "evalquality"


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL server binaries are not on this machine."""


def server_bin_dir() -> Path:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``."""
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if candidates:
        return Path(candidates[-1]).parent
    raise PostgresUnavailable(
        "PostgreSQL server binaries not found (no initdb on PATH or in /usr/lib/postgresql/*/bin); "
        "install them with: apt-get install -y postgresql (as .ci/run does)"
    )


def _free_port() -> int:
    return server_port()  # below the ephemeral range: no service a test starts can be handed it meanwhile


def _run_as() -> list[str]:
    """The command prefix that runs the server as a non-root user when we are root."""
    if os.geteuid() != 0:
        return []
    for user in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(user)
            return ["runuser", "-u", user, "--"]
    raise PostgresUnavailable("running as root and neither a postgres nor a nobody user exists for initdb")


@dataclass(frozen=True)
class Cluster:
    """A running throwaway cluster."""

    root: Path
    port: int

    def url(self, database: str = "postgres", driver: str = "postgresql") -> str:
        """A connection URL (``driver`` e.g. ``postgresql+asyncpg`` for Prefect's server)."""
        return f"{driver}://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    @property
    def postmaster_pid(self) -> int:
        """The server's process id (the first line of ``postmaster.pid``)."""
        return int((self.root / "data" / "postmaster.pid").read_text().split()[0])

    def start(self) -> None:
        """Start the server (again, after a stop or a crash: it recovers from its write-ahead log)."""
        _pg_ctl(self.root, "-o", _options(self.root, self.port), "-l", str(self.root / "server.log"), "-w", "-t", "60",
                "start", timeout=90)

    def create_database(self, name: str) -> str:
        """Create a database and return its URL."""
        subprocess.run(
            [str(server_bin_dir() / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER, name],
            check=True, capture_output=True, timeout=60,
        )
        return self.url(name)


def _environment() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}


def _options(root: Path, port: int) -> str:
    return f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"


def _pg_ctl(root: Path, *arguments: str, timeout: float) -> None:
    """Run ``pg_ctl -D <root>/data <arguments>`` as the server's user (``CalledProcessError`` if it fails)."""
    subprocess.run(
        [*_run_as(), str(server_bin_dir() / "pg_ctl"), "-D", str(root / "data"), *arguments],
        check=True, capture_output=True, timeout=timeout, env=_environment(), cwd=root,
    )


@contextlib.contextmanager
def throwaway_cluster() -> Iterator[Cluster]:
    """Start a cluster in a fresh temp dir; stop it and remove everything on the way out."""
    bin_dir = server_bin_dir()
    prefix = _run_as()
    root = Path(tempfile.mkdtemp(prefix="evalquality-pg-", dir="/tmp"))
    data = root / "data"
    if prefix:  # the server's user must own its folder (and reach it: /tmp is world-traversable)
        user = pwd.getpwnam(prefix[2])
        os.chown(root, user.pw_uid, user.pw_gid)
    port = _free_port()
    environment = _environment()
    try:
        subprocess.run(
            [*prefix, str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
             "--no-sync"],
            check=True, capture_output=True, timeout=120, env=environment, cwd=root,
        )
        Cluster(root, port).start()
    except subprocess.CalledProcessError as failure:
        log = (root / "server.log").read_text(errors="replace") if (root / "server.log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise PostgresUnavailable(
            f"could not start a throwaway cluster: {failure.cmd[len(prefix)]} exited {failure.returncode}: "
            f"{failure.stderr.decode(errors='replace')[-800:]} {log[-800:]}"
        ) from None
    try:
        yield Cluster(root, port)
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped (a test killed it)
            _pg_ctl(root, "-m", "immediate", "-w", "stop", timeout=60)
        shutil.rmtree(root, ignore_errors=True)
