"""The embedded Prefect server of ``python -m flows.<flow>``: started by us, at once, without Prefect's server code.

Without ``PREFECT_API_URL`` Prefect starts a temporary API server (a uvicorn child) the first time a run
needs the API. It does so from inside the flow engine: the flow process first imports Prefect's whole
server stack (FastAPI, SQLAlchemy, every model and service) only to launch that child, and the child's
boot of several seconds starts only then. Each flow's ``main`` instead enters ``embedded_server`` as soon
as its inputs are checked, which

* starts the same child (same command line, same environment, so ``flows/lifecycle.py`` still knows and
  reaps it) on a socket this process has already bound and listens on, handed over as ``uvicorn --fd``:
  no other process can take the port between choosing and binding it, or answer in the server's place;
* turns the server's block registration off: block types are for the UI, which the embedded server does
  not serve, and checking them imported every installed Prefect collection (Dask with prefect-dask) at
  each start. A ``prefect server start`` on the same home registers them itself;
* ties the child's life to this process (``PR_SET_PDEATHSIG``): a run killed with SIGKILL takes its
  server along instead of leaving it to the next run's reaper;
* points Prefect at it (``PREFECT_API_URL``, and Prefect's global settings refreshed) and marks it as
  ours (``EVALQUALITY_EMBEDDED_API_URL``), so the flows still treat the run as embedded: no UI links,
  no flow-run heartbeats, no advice about a user's server (``user_api_url``);
* ends the run in one line (exit 69) if the server dies under it, instead of Prefect's clients retrying
  for minutes; and on the way out lets Prefect's event and log workers deliver what they hold, stops the
  server (SIGTERM, SIGKILL after 5 s) and restores the environment.

Nothing changes where Prefect must decide: ``PREFECT_API_URL`` set (in the environment or a Prefect
profile), the ephemeral mode turned off, not POSIX, or a Prefect older than 3.7 (no
``refresh_global_settings_context``); Prefect then starts its own server as before.
``python benchmarks/bench_embedded_server.py`` measures the difference.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from flows.exit_codes import EXIT_UNAVAILABLE
from flows.settings import EMBEDDED_API_URL_VARIABLE

#: What Prefect's own temporary server sets for its child; ``flows/lifecycle.py`` recognises servers by it.
_SERVER_ENVIRONMENT = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
#: Block types are registered by a server that serves the UI; the embedded one serves none.
_NO_BLOCK_REGISTRATION = {
    "PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "false",
    "PREFECT_SERVER_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false",
}
_PR_SET_PDEATHSIG = 1
_STOP_GRACE_S = 5.0


class EmbeddedServerError(Exception):
    """The embedded server did not start (it exited, or did not answer ``/health`` in time); one line."""


def _applies() -> bool:
    """Whether this process should start the embedded server itself (see the module docstring)."""
    import prefect.context
    from prefect.settings import get_current_settings

    if os.name != "posix" or not hasattr(prefect.context, "refresh_global_settings_context"):
        return False
    settings = get_current_settings()
    return not settings.api.url and bool(settings.server.ephemeral.enabled)


def _dying_with(parent: int) -> Callable[[], None]:
    """What the child runs before exec: SIGTERM when ``parent`` dies, and exit at once if it already has.
    ``prctl`` is looked up here, in the parent: the child, forked from a process with threads, only calls it."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def in_child() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return in_child


class EmbeddedServer:
    """A running embedded server: its process and API URL."""

    def __init__(self, process: subprocess.Popen[bytes], api_url: str) -> None:
        self.process = process
        self.api_url = api_url
        self.stopping = threading.Event()

    @classmethod
    def start(cls) -> EmbeddedServer:
        """Bind a loopback port, start the server child on it, and return at once (it boots meanwhile)."""
        import prefect
        from prefect.settings import get_current_settings

        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(("127.0.0.1", 0))
            listener.listen(128)  # requests sent while the server boots wait here
            port = listener.getsockname()[1]
            environment = {
                **os.environ,
                **_SERVER_ENVIRONMENT,
                **_NO_BLOCK_REGISTRATION,
                **get_current_settings().to_environment_variables(exclude_unset=True),
            }
            die_with_us = _dying_with(os.getpid())
            process = subprocess.Popen(
                [
                    sys.executable, "-m", "uvicorn", "--app-dir", str(Path(prefect.__file__).parent.parent),
                    "--factory", "prefect.server.api.server:create_app", "--fd", str(listener.fileno()),
                    "--log-level", "error", "--lifespan", "on",
                ],
                env=environment,
                pass_fds=(listener.fileno(),),
                # Its own process group: a Ctrl-C at the terminal interrupts the run, which then ends
                # with a live server, and stop() ends the server after.
                process_group=0,
                preexec_fn=die_with_us,
            )
        finally:
            listener.close()  # the child holds its own copy
        return cls(process, f"http://127.0.0.1:{port}/api")

    def wait_until_healthy(self, timeout_s: float) -> None:
        """Return once ``/health`` answers 200; ``EmbeddedServerError`` if the child exits or time runs out."""
        import httpx

        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=max(1.0, min(timeout_s, 30.0))) as client:
            while True:
                code = self.process.poll()
                if code is not None:
                    raise EmbeddedServerError(f"the embedded Prefect server exited with code {code} while starting")
                try:
                    if client.get(f"{self.api_url}/health").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass  # still booting (a queued request timed out) or not accepting yet
                if time.monotonic() >= deadline:
                    raise EmbeddedServerError(
                        f"the embedded Prefect server did not answer {self.api_url}/health within {timeout_s:g} s "
                        "(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS)"
                    )
                time.sleep(0.05)

    def watch(self, prog: str) -> threading.Thread:
        """End the run in one line (exit 69) if the server dies before ``stopping`` is set."""

        def wait() -> None:
            code = self.process.wait()
            if self.stopping.is_set():
                return
            from evalquality_core.adapters.process_group import kill_all_live_groups

            kill_all_live_groups()
            print(
                f"\n{prog}: the embedded Prefect server exited with code {code} during the run; the legs "
                "answered so far are in the leg cache: run again",
                file=sys.stderr, flush=True,
            )
            os._exit(EXIT_UNAVAILABLE)

        thread = threading.Thread(target=wait, name="embedded-server-watch", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a grace period; always reaped."""
        self.stopping.set()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait()


def _deliver_pending_events_and_logs() -> None:
    """Let Prefect's event and log workers send what they hold while the server still answers."""
    with contextlib.suppress(Exception):
        from prefect.events.worker import EventsWorker

        EventsWorker.drain_all(timeout=10, at_exit=False)
    with contextlib.suppress(Exception):
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=10, at_exit=False)


def _point_prefect_at(values: dict[str, str | None]) -> None:
    """Set (a value) or remove (None) ``PREFECT_API_URL`` and our mark, and refresh Prefect's global settings."""
    import prefect.context

    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    prefect.context.refresh_global_settings_context()


@contextlib.contextmanager
def embedded_server(prog: str) -> Iterator[EmbeddedServer | None]:
    """Around a flow's run in ``main``: start the embedded server now and point Prefect at it (yields it),
    or, where Prefect must decide (see the module docstring), change nothing (yields None).
    A server that cannot start raises ``EmbeddedServerError`` (one line; ``one_line_errors`` exits 69)."""
    if not _applies():
        yield None
        return
    from prefect.settings import get_current_settings

    timeout_s = float(get_current_settings().server.ephemeral.startup_timeout_seconds)
    names = ("PREFECT_API_URL", EMBEDDED_API_URL_VARIABLE)
    before = {name: os.environ.get(name) for name in names}
    server = EmbeddedServer.start()
    try:
        server.wait_until_healthy(timeout_s)
        _point_prefect_at(dict.fromkeys(names, server.api_url))
        server.watch(prog)
        try:
            yield server
        finally:
            _deliver_pending_events_and_logs()
            server.stopping.set()
            _point_prefect_at(before)
    finally:
        server.stop()
