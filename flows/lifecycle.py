"""The process life of a flow run on the embedded Prefect server: exit cleanly, and reap what a kill left.

Without ``PREFECT_API_URL`` a temporary API server runs as a child process: the one each flow's
``main`` starts itself (flows/embedded_server.py), or, when a flow is called as a library, the one
Prefect starts and stops from ``atexit``. Two ways of dying skip a clean stop: SIGTERM (Prefect's own
handler ends the process by re-sending the signal once the flow has cleaned up) and SIGKILL. So
``main()`` turns SIGTERM into ``SystemExit`` (the flow body still kills every live leg on the way out,
and the server is stopped), the server ``main`` starts dies with its parent, and before a run starts
``main`` reaps any embedded server that an earlier killed process under the *same* Prefect home left
behind as an orphan of PID 1 (Prefect's own, which nothing ties to its parent).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import gc
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn, TypeVar

from evalquality_core.printable import printable
from flows.exit_codes import EXIT_IO, EXIT_SOFTWARE, EXIT_UNAVAILABLE, EXIT_USAGE
from flows.settings import FlowSettings, load_settings, user_api_url

#: What identifies Prefect's temporary server in its command line and environment.
_SERVER_FACTORY = "prefect.server.api.server:create_app"
_EPHEMERAL_MARK = "PREFECT__SERVER_EPHEMERAL=1"


#: Allocations between two young-generation collections while a flow runs (Python's default is 700).
_YOUNG_THRESHOLD = 20_000


def freeze_startup_heap() -> None:
    """At a flow's start: collect, then move every object still alive (the imported modules, Prefect's
    settings and client, the pydantic schemas, what earlier flows of the process keep) into the
    collector's permanent generation.

    Why: a full collection walks every tracked object; with Prefect and its dependencies loaded that is
    hundreds of thousands, and one that falls in a fan-out stops every leg's thread for 300-700 ms
    (``benchmarks/bench_fanout_phases.py`` prints the time per round). Frozen, later collections walk
    only what this run makes. The collection first means no garbage is frozen (about 80 ms after the
    imports, once; then only what is new). Frozen objects are still freed when their last reference
    goes; only a reference cycle among them that dies later waits for the process's end. It also sets
    the young generation's threshold to 20,000 allocations (below).
    """
    gc.collect()
    gc.freeze()
    # Young collections every 20,000 allocations, not 700: a cached pre-flight of 100 suites spent 5.8 s
    # of its 26 s in 1,900 collections, and 2.5 s of 22 s with this (benchmarks/bench_scale.py, N=100).
    gc.set_threshold(_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def exit_cleanly_on_sigterm() -> None:
    """Make SIGTERM raise ``SystemExit(143)`` in the main thread, so cleanup and ``atexit`` run."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # the process is gone, or not ours to read
        return b""


def orphaned_servers(prefect_home: str, proc: Path = Path("/proc")) -> list[int]:
    """Pids of embedded Prefect servers whose parent died (now children of PID 1) under ``prefect_home``
    (compared as the exact ``PREFECT_HOME`` string the server was started with)."""
    wanted = f"PREFECT_HOME={prefect_home}".encode()
    found: list[int] = []
    for entry in proc.iterdir() if proc.is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        if _SERVER_FACTORY.encode() not in _read(entry / "cmdline"):
            continue
        stat = _read(entry / "stat").decode(errors="replace")
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) < 2 or fields[1] != "1":  # field 4 of /proc/<pid>/stat: the parent pid
            continue
        environ = _read(entry / "environ").split(b"\0")
        if _EPHEMERAL_MARK.encode() in environ and wanted in environ:
            found.append(int(entry.name))
    return found


def reap_orphaned_servers(prefect_home: str, *, grace_s: float = 5.0) -> list[int]:
    """Stop every orphaned embedded server of ``prefect_home``: SIGTERM, then SIGKILL after ``grace_s``."""
    if user_api_url() or not sys.platform.startswith("linux"):
        return []
    pids = orphaned_servers(prefect_home)
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    return pids


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def _alive(pid: int) -> bool:
    stat = _read(Path("/proc") / str(pid) / "stat").decode(errors="replace")
    fields = stat.rsplit(")", 1)[-1].split()
    return bool(fields) and fields[0] != "Z"


class FlowArgumentParser(argparse.ArgumentParser):
    """The flows' argument parser: a usage error is one line, ``<prog>: usage: <message>``, exit 64.

    argparse would print its whole usage block and exit 2, which the flows use for "the baseline moved".
    A flag is never abbreviated: ``--suite notes`` given to a flow that has only ``--suites`` is refused,
    not read as ``--suites notes``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Report ``message`` as one line and exit 64."""
        self.exit(EXIT_USAGE, f"{self.prog}: usage: {message} (see --help)\n")


def start_flow_main(prog: str, concurrency: int | None) -> FlowSettings:
    """What every flow's ``main()`` does first: exit cleanly on SIGTERM, reap a killed run's embedded
    server, and read the settings. A bad setting or ``--concurrency`` below 1 is one line and exit 64."""
    exit_cleanly_on_sigterm()
    reap_orphaned_servers(os.environ["PREFECT_HOME"])
    try:
        settings = load_settings()
    except ValueError as problem:
        print(printable(f"{prog}: usage: {problem}"), file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    if concurrency is not None and concurrency < 1:
        print(printable(f"{prog}: usage: --concurrency must be at least 1"), file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
    return settings


def check_leg_cache(prog: str, settings: FlowSettings) -> None:
    """Open the leg cache the run will use once, before any task runs: a broken database is moved aside
    and rebuilt (one warning line, tasks/leg_cache/sqlite.py); a cache that cannot be used at all (a diskcache
    home that cannot be written, a PostgreSQL server that refuses or cannot be reached) is one line and
    exit 74, before every leg's task run fails with it."""
    from tasks.leg_cache import LegCache, LegCacheUnusable
    from tasks.leg_cache.postgres import PostgresLegStore, is_postgres_url

    try:
        if is_postgres_url(settings.leg_cache):
            PostgresLegStore(settings.leg_cache).close()
        else:
            LegCache(settings.leg_cache_dir).close()
    except LegCacheUnusable as problem:
        print(printable(f"{prog}: {problem}"), file=sys.stderr)
        raise SystemExit(EXIT_IO) from None


class FlowInputError(Exception):
    """A flow input that cannot be used (``--out`` names a file, ``--suites`` is missing, the API is
    unreachable); ``str()`` is the one line, ``exit_code`` the documented code."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@contextlib.contextmanager
def one_line_errors(prog: str) -> Iterator[None]:
    """Turn the errors a user can cause or fix into one line on stderr and a documented exit code:
    ``FlowInputError`` (its code, 64 or 69), an unusable leg cache (74), an ``OSError`` while writing
    state or output (74: a full disk, a read-only or vanished directory), and the Prefect server named by
    ``PREFECT_API_URL`` refusing or dropping a request after ``/health`` answered (69: a server that wants
    credentials, one stopped mid-run). A bug still shows its trace."""
    from flows.embedded_server import EmbeddedServerError
    from tasks.leg_cache import LegCacheUnusable

    try:
        yield
    except EmbeddedServerError as problem:
        print(printable(f"{prog}: {problem}"), file=sys.stderr)
        raise SystemExit(EXIT_UNAVAILABLE) from None
    except FlowInputError as problem:
        print(printable(f"{prog}: {'usage: ' if problem.exit_code == EXIT_USAGE else ''}{problem}"), file=sys.stderr)
        raise SystemExit(problem.exit_code) from None
    except LegCacheUnusable as problem:
        print(printable(f"{prog}: {problem}"), file=sys.stderr)
        raise SystemExit(EXIT_IO) from None
    except OSError as problem:
        name = errno.errorcode.get(problem.errno or 0, type(problem).__name__)
        where = f" {problem.filename}" if problem.filename else ""
        print(printable(f"{prog}: {name}:{where}: {problem.strerror or problem}"), file=sys.stderr)
        raise SystemExit(EXIT_IO) from None
    except Exception as problem:
        refused = api_refusal(problem)
        if refused is None:
            raise
        print(printable(f"{prog}: {refused}"), file=sys.stderr)
        raise SystemExit(EXIT_UNAVAILABLE) from None




#: The Prefect loggers that flood stderr once the server is gone (one line each few seconds, per event).
_LOST_SERVER_NOISE = ("prefect.events.clients", "prefect._internal.concurrency", "prefect.task_runs", "prefect.flow_runs")


@contextlib.contextmanager
def api_watchdog(prog: str, interval_s: float = 1.0, misses: int = 3) -> Iterator[None]:
    """While a run talks to the server at ``PREFECT_API_URL``: if that server stops accepting connections
    (``misses`` refused ``/health`` checks in a row, ``interval_s`` apart), kill every live leg, print one
    line naming it and the fix, and exit 69 at once.

    Without this the engine waits on the vanished server for many minutes while Prefect's event and
    log workers print a multi-line error every few seconds. Only a *refused* connection counts: a slow
    or busy server (a timeout) is left to Prefect's own retries, so a loaded machine never ends a
    healthy run. What the run answered is safe: each leg is in the leg cache once it completes, a
    killed leg is not cached, and the next run reclaims the workspaces this process leaves.
    """
    url = user_api_url()
    if not url:
        yield
        return
    import httpx

    stop = threading.Event()

    import logging

    def quiet(on: bool) -> None:
        # While a loss is being confirmed, Prefect's workers would print an error per event and per log
        # batch (its API log handler writes to stderr unless logging.raiseExceptions is off).
        for name in _LOST_SERVER_NOISE:
            logging.getLogger(name).disabled = on
        logging.raiseExceptions = not on

    def watch() -> None:
        missed = 0
        while not stop.wait(interval_s):
            try:
                httpx.get(url.rstrip("/") + "/health", timeout=max(interval_s, 5.0))
            except httpx.ConnectError as problem:
                missed += 1
                reason = " ".join(str(problem).split())[:120] or "connection refused"
            except httpx.HTTPError:
                pass  # busy, slow or refusing a request: not gone; errors of the run say the rest
            else:
                if missed:
                    quiet(False)  # it came back
                missed = 0
            if not missed:
                continue
            quiet(True)
            if missed >= misses and not stop.is_set():
                from evalquality_core.adapters.process_group import kill_all_live_groups

                kill_all_live_groups()
                print(
                    f"\n{prog}: PREFECT_API_URL={url} stopped answering during the run ({reason}); the legs "
                    "answered so far are in the leg cache: start that server again (or unset "
                    "PREFECT_API_URL) and run again",
                    file=sys.stderr, flush=True,
                )
                os._exit(EXIT_UNAVAILABLE)

    thread = threading.Thread(target=watch, name="prefect-api-watchdog", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()


def api_refusal(problem: BaseException) -> str | None:
    """The one line for an error of a request to the Prefect API at ``PREFECT_API_URL`` (a refusal such
    as 401/403/5xx, or the connection lost), found on ``problem`` or its causes; None for anything else,
    including an HTTP error of a system under test (its URL is not the API's). The embedded server a
    flow started is named as such: it can refuse a request of a large run (a 500 ended a 100-suite
    pre-flight once, on a slow host), and the user's fix is to run again, not to check credentials."""
    import httpx

    url = os.environ.get("PREFECT_API_URL") or None
    if not url:
        return None
    embedded = user_api_url() is None
    seen: set[int] = set()
    current: BaseException | None = problem
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, httpx.HTTPStatusError | httpx.TransportError):
            try:
                target = str(current.request.url)
            except RuntimeError:  # an error raised without its request
                target = ""
            if target.startswith(url.rstrip("/")):
                if isinstance(current, httpx.HTTPStatusError):
                    response = current.response
                    what = f"answered {response.status_code} {response.reason_phrase}"
                else:
                    what = f"dropped the request ({type(current).__name__}: {' '.join(str(current).split())[:120]})"
                request = f"{current.request.method} {current.request.url.path}"
                if embedded:
                    return (
                        f"the embedded Prefect server ({url}) {what} for {request}; run again (legs already "
                        "answered come from the leg cache), and run nights of this size on a server of its own "
                        "(docs/how-to/deployments.md: Scaling out)"
                    )
                return (
                    f"PREFECT_API_URL={url} {what} for {request}; "
                    "check that server and its credentials (PREFECT_API_KEY or PREFECT_API_AUTH_STRING), "
                    "or unset PREFECT_API_URL to run on the embedded server"
                )
        current = current.__cause__ or current.__context__
    return None


def check_flow_inputs(suites_dir: Path, out_dir: Path | None) -> None:
    """Refuse, before any Prefect start, inputs a run cannot use: a ``--suites`` that is not a
    directory, an ``--out`` that exists and is not a directory, an ``EVALQUALITY_MAX_INPUT_BYTES`` that is
    not a positive whole number (64), an unreachable ``PREFECT_API_URL`` (69)."""
    from evalquality_core.suite.load import input_cap

    try:
        input_cap()
    except ValueError as problem:
        raise FlowInputError(str(problem)) from None
    if not suites_dir.is_dir():
        what = "does not exist" if not suites_dir.exists() else "is not a directory"
        raise FlowInputError(f"--suites {suites_dir} {what}")
    if out_dir is not None and out_dir.exists() and not out_dir.is_dir():
        raise FlowInputError(f"--out {out_dir} is a file, not a directory")
    check_api_reachable()


def check_api_reachable(timeout_s: float = 5.0) -> None:
    """With ``PREFECT_API_URL`` set, its ``/health`` must answer; else one line naming it and the fix."""
    url = user_api_url()
    if not url:
        return
    import httpx

    try:
        response = httpx.get(url.rstrip("/") + "/health", timeout=timeout_s)
        response.raise_for_status()
    except (httpx.HTTPError, ValueError) as problem:
        reason = " ".join(str(problem).split()) or type(problem).__name__
        raise FlowInputError(
            f"PREFECT_API_URL={url} is not reachable ({reason[:160]}); start that server "
            "(prefect server start) or unset PREFECT_API_URL to run on the embedded server",
            EXIT_UNAVAILABLE,
        ) from None


_Main = TypeVar("_Main", bound=Callable[..., int])


def crash_exit(prog: str) -> Callable[[_Main], _Main]:
    """Decorate an entry point's ``main``: an exception that escapes it (a bug, or a flow run that ended
    Crashed or Failed for a reason that is not the gate's) prints its traceback, for the bug report,
    then one last line ``<prog>: crashed (a bug, exit 70): <Type>: <message>``, and exits 70.

    Without this Python exits 1, which CI reads as "a verdict moved". ``SystemExit`` (every documented
    code, 64/69/74 included) and ``KeyboardInterrupt`` pass through unchanged."""

    def decorate(main: _Main) -> _Main:
        @functools.wraps(main)
        def guarded(*args: Any, **kwargs: Any) -> int:
            try:
                return main(*args, **kwargs)
            except Exception as problem:  # noqa: BLE001 — whatever it is, the exit code must say "crash"
                traceback.print_exc()
                what = " ".join(str(problem).split())[:300]
                print(f"{prog}: crashed (a bug, exit {EXIT_SOFTWARE}): {type(problem).__name__}"
                      f"{': ' + what if what else ''}", file=sys.stderr, flush=True)
                raise SystemExit(EXIT_SOFTWARE) from None

        return guarded  # type: ignore[return-value]

    return decorate
