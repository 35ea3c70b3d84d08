"""Paths and concurrency of the flows, from ``EVALQUALITY_*`` variables; import this before Prefect.

Importing it fixes the environment Prefect reads at import time (prefect.md §1):

* ``PREFECT_HOME`` defaults to ``<eval-quality home>/prefect`` when unset, so the embedded (ephemeral)
  server keeps its SQLite database beside our cache and nobody sets a server up by hand. With
  ``PREFECT_API_URL`` set (e.g. after ``prefect server start``), runs go to that server instead.
* Prefect logs at WARNING, offline telemetry is off, and the embedded server's shutdown chatter is
  silenced (in its own process too, through ``<PREFECT_HOME>/evalquality-logging.yml``: Prefect's
  logging.yml with SQLAlchemy's logger at CRITICAL), so a normal run prints only our table.

``flow_run_settings()`` wraps each of our top-level flow calls: on the embedded server it turns
Prefect's flow-run heartbeats off (below).

| variable | default |
|---|---|
| ``EVALQUALITY_HOME`` | ``<project>/.evalquality`` in a checkout, else ``~/.cache/eval-quality``; for a suites |
|   | folder other than the checkout's ``corpus/suites``: ``<suites>/../.evalquality`` |
| ``EVALQUALITY_SUITES`` | ``<project>/corpus/suites`` (a flow's ``--suites DIR`` sets it: ``choose_suites``) |
| ``EVALQUALITY_OUT`` | ``<home>/preflight`` |
| ``EVALQUALITY_CONCURRENCY`` | ``8`` (legs in flight at once) |
| ``EVALQUALITY_BASELINE`` | ``<suites>/../expected-preflight.json`` (the checkout: ``corpus/expected-preflight.json``) |
| ``EVALQUALITY_LEG_CACHE`` | unset: diskcache under ``<home>/leg-cache``; ``postgresql://user@host/db``: shared |
| ``PREFECT_HOME`` | ``<home>/prefect``, the home as above, beside a foreign ``--suites`` too (below) |

So a suites folder of the user's own keeps its baseline, outputs, leg cache, workspaces and Prefect's
database beside it and never writes into the checkout. ``PREFECT_HOME`` is fixed when this module is
imported, before argparse runs, so the suites folder is read from the command line here: only in a flow
entry process (``python -m flows.preflight|contract_strength|mutants``: flows/entry_point.py), from its
``--suites DIR`` / ``--suites=DIR`` (else ``$EVALQUALITY_SUITES``), and only when that folder exists
(``follow_entry_point_suites``). Every process the flow starts inherits the resulting variables; any
other process importing ``flows`` (pytest, a library import, a Dask worker) keeps the home it had.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tasks.home import PROJECT_ROOT, evalquality_home

DEFAULT_CONCURRENCY = 8

#: The home ``configure_environment`` below fills in when the caller chose none (None: chosen). A home
#: the caller chose (any other ``$EVALQUALITY_HOME``, now or later) is never moved beside a suites folder.
_DEFAULT_HOME: str | None = None if os.environ.get("EVALQUALITY_HOME") else str(evalquality_home())


def _home_chosen() -> bool:
    value = os.environ.get("EVALQUALITY_HOME")
    return bool(value) and value != _DEFAULT_HOME
#: The checkout's own suites folder; every other one keeps its state beside itself.
CHECKOUT_SUITES = (PROJECT_ROOT / "corpus" / "suites").resolve()

#: Marks ``PREFECT_API_URL`` as the embedded server a flow process started itself
#: (flows/embedded_server.py); its Dask workers inherit both.
EMBEDDED_API_URL_VARIABLE = "EVALQUALITY_EMBEDDED_API_URL"


def user_api_url() -> str | None:
    """The Prefect API the user chose with ``PREFECT_API_URL``; None when unset or when it names the
    embedded server a flow process started (``EVALQUALITY_EMBEDDED_API_URL``)."""
    url = os.environ.get("PREFECT_API_URL") or None
    if url is not None and url == os.environ.get(EMBEDDED_API_URL_VARIABLE):
        return None
    return url


def is_embedded_api(url: str | None) -> bool:
    """Whether ``url`` (Prefect's current ``api.url``) means the embedded server: none chosen (Prefect
    starts its own) or the one a flow process started (flows/embedded_server.py)."""
    return not url or url == os.environ.get(EMBEDDED_API_URL_VARIABLE)


def configure_environment() -> None:
    """Set Prefect's home and quiet defaults (only where the caller has not chosen); idempotent."""
    home = evalquality_home()
    os.environ.setdefault("EVALQUALITY_HOME", str(home))
    os.environ.setdefault("PREFECT_HOME", str(home / "prefect"))
    # Prefect creates its home without parents; a fresh eval-quality home has none yet.
    Path(os.environ["PREFECT_HOME"]).expanduser().mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    if not user_api_url():
        # The embedded server is stopped at exit while its recorder may still hold a few events;
        # it then logs a cancelled flush as an ERROR with a traceback. Nothing is lost that a run
        # reads back (our verdicts and cache are files), so keep that shutdown chatter off the console.
        os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
        # The cancelled flush also surfaces through SQLAlchemy's pool logger, which is not under
        # ``prefect.server`` and inherits the root level: raise that level too (embedded mode only).
        os.environ.setdefault("PREFECT_LOGGING_ROOT_LEVEL", "CRITICAL")
        # The same flush can run in this process (the client side of the embedded API) before Prefect
        # has applied its logging configuration; an explicit level on SQLAlchemy's logger covers that.
        logging.getLogger("sqlalchemy").setLevel(logging.CRITICAL)
        # The embedded server itself is a uvicorn child process that inherits our environment and
        # stderr but never imports this module, and SQLAlchemy sets its own logger to WARNING on
        # import, so the root level above does not reach it. Prefect's environment overrides only
        # touch loggers its logging.yml already names, so hand the child a logging file that does.
        _use_quiet_logging_file(Path(os.environ["PREFECT_HOME"]).expanduser())


#: The variables that choose Prefect's flow-run heartbeat frequency (the second is its legacy name).
HEARTBEAT_VARIABLES = ("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "PREFECT_RUNNER_HEARTBEAT_FREQUENCY")


@contextmanager
def flow_run_settings() -> Iterator[None]:
    """Prefect settings for one of our top-level flow calls (its subflows and tasks inherit them).

    On the embedded server, flow-run heartbeats are off. They feed a server's zombie detection (an
    automation marks a run Crashed when its heartbeats stop); the embedded server lives and dies with
    this process, so nothing can ever read them. They are not free: Prefect 3.9 joins the heartbeat
    thread at the end of every flow run and that thread sleeps in 1 s steps, so each flow and subflow
    run ended up to a second late (a flow with one subflow: 2.1 s with heartbeats, 0.3 s without).
    With ``PREFECT_API_URL`` set, or a heartbeat frequency chosen explicitly, nothing changes.
    """
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings

    if not is_embedded_api(get_current_settings().api.url) or any(os.environ.get(n) for n in HEARTBEAT_VARIABLES):
        yield
        return
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


QUIET_LOGGING_FILE = "evalquality-logging.yml"


def _use_quiet_logging_file(prefect_home: Path) -> None:
    """Point ``PREFECT_LOGGING_SETTINGS_PATH`` at Prefect's own logging.yml plus ``sqlalchemy`` at CRITICAL.

    A user's choice wins: an explicit ``PREFECT_LOGGING_SETTINGS_PATH`` (other than such a file of
    ours, inherited from a parent run with another home) or a ``logging.yml`` in Prefect's home (the
    file Prefect reads by default) is left alone. A home we cannot write to keeps Prefect's defaults.
    """
    chosen = os.environ.get("PREFECT_LOGGING_SETTINGS_PATH")
    if (chosen and Path(chosen).name != QUIET_LOGGING_FILE) or (prefect_home / "logging.yml").exists():
        return
    import importlib.util

    import yaml  # a Prefect dependency; importing it does not import Prefect

    spec = importlib.util.find_spec("prefect")
    if spec is None or spec.origin is None:
        return
    target = prefect_home / QUIET_LOGGING_FILE
    try:
        config = yaml.safe_load((Path(spec.origin).parent / "logging" / "logging.yml").read_text())
        config.setdefault("loggers", {})["sqlalchemy"] = {"level": "CRITICAL"}
        text = yaml.safe_dump(config, sort_keys=False)
        if not target.exists() or target.read_text() != text:
            # Written whole and renamed into place: flows starting together never read half a file.
            from tasks.output import write_atomically

            write_atomically(target, text.encode())
    except (OSError, yaml.YAMLError):  # Prefect's file unreadable, or our home not writable: its defaults
        return
    os.environ["PREFECT_LOGGING_SETTINGS_PATH"] = str(target)


@dataclass(frozen=True)
class FlowSettings:
    """Where a pre-flight run reads and writes, and how many legs it runs at once."""

    home: Path
    suites_dir: Path
    out_dir: Path
    concurrency: int
    baseline: Path

    @property
    def leg_cache_dir(self) -> Path:
        """The diskcache leg cache's directory (tasks/leg_cache/)."""
        return self.home / "leg-cache"

    @property
    def leg_cache(self) -> str:
        """Where legs are cached, as flow parameters carry it: ``$EVALQUALITY_LEG_CACHE`` (a ``postgresql://``
        URL several machines share) redacted of its credentials (the store reads the real URL from the
        environment where it opens: tasks/leg_cache/postgres.py), else the diskcache directory under the
        home (one machine)."""
        configured = os.environ.get("EVALQUALITY_LEG_CACHE")
        if not configured:
            return str(self.leg_cache_dir)
        from tasks.leg_cache.postgres import redacted

        return redacted(configured)

    @property
    def workspaces_dir(self) -> Path:
        """Per-leg staged workspaces (tasks/workspace.py)."""
        return self.home / "workspaces"


def _concurrency(raw: str | None) -> int:
    if raw is None or raw == "":
        return DEFAULT_CONCURRENCY
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"EVALQUALITY_CONCURRENCY={raw!r} is not a whole number") from None
    if value < 1:
        raise ValueError(f"EVALQUALITY_CONCURRENCY={raw!r} must be at least 1")
    return value


def _check_leg_cache(raw: str | None) -> None:
    if not raw:
        return
    from tasks.leg_cache.postgres import check_url, is_postgres_url, redacted

    if not is_postgres_url(raw):
        # Shown redacted (a mistyped scheme still carries the password); a value that is no URL at all
        # (a libpq "key=value" string, say) is not shown.
        shown = f"={redacted(raw)}" if "://" in raw else " (its value is not shown)"
        raise ValueError(f"EVALQUALITY_LEG_CACHE{shown} is not a postgresql:// URL (unset it for the local cache)")
    check_url(raw)


def _suites_dir() -> Path:
    return Path(os.environ.get("EVALQUALITY_SUITES") or CHECKOUT_SUITES).resolve()


def _home(suites_dir: Path) -> Path:
    """The home in force: the caller's, the checkout's for its own suites, else beside the suites folder."""
    if _home_chosen() or suites_dir == CHECKOUT_SUITES:
        return evalquality_home()
    return suites_dir.parent / ".evalquality"


def choose_suites(suites: str | None) -> None:
    """A flow's ``--suites DIR`` (None: not given): make it the suites folder every default derives from,
    in this process and in every process it starts (``EVALQUALITY_SUITES``, and ``EVALQUALITY_HOME`` when
    the home moves beside the suites). Call it before ``load_settings``."""
    if suites:
        os.environ["EVALQUALITY_SUITES"] = str(Path(suites).resolve())
    os.environ["EVALQUALITY_HOME"] = str(_home(_suites_dir()))


def load_settings() -> FlowSettings:
    """The settings in force now (environment read at call time; the table in the module docstring)."""
    _check_leg_cache(os.environ.get("EVALQUALITY_LEG_CACHE"))
    suites_dir = _suites_dir()
    home = _home(suites_dir)
    return FlowSettings(
        home=home,
        suites_dir=suites_dir,
        out_dir=Path(os.environ.get("EVALQUALITY_OUT") or home / "preflight").resolve(),
        concurrency=_concurrency(os.environ.get("EVALQUALITY_CONCURRENCY")),
        baseline=Path(os.environ.get("EVALQUALITY_BASELINE") or suites_dir.parent / "expected-preflight.json").resolve(),
    )


def follow_entry_point_suites() -> None:
    """In a flow entry process (``python -m flows.preflight ...``: flows/entry_point.py), apply its
    ``--suites DIR`` (else ``$EVALQUALITY_SUITES``) now, at import, so that ``configure_environment``
    puts Prefect's home beside a foreign suites folder too; a user's ``EVALQUALITY_HOME`` or
    ``PREFECT_HOME`` still wins. Any other process (pytest, a library import, a Dask worker) is left as
    it was. A folder that does not exist is not followed: the flow refuses it in one line, and a typo
    must not create directories beside it."""
    import sys

    from flows.entry_point import SUITES_ENTRY_POINTS, entry_module, suites_argument

    if entry_module(sys.argv, getattr(sys, "orig_argv", ()), PROJECT_ROOT) not in SUITES_ENTRY_POINTS:
        return
    suites = suites_argument(sys.argv[1:])
    if Path(suites or os.environ.get("EVALQUALITY_SUITES") or CHECKOUT_SUITES).is_dir():
        choose_suites(suites)


# Before Prefect is imported anywhere (flows/__init__.py imports this module first).
follow_entry_point_suites()
configure_environment()
