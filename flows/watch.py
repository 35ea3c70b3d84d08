"""Watching a run: flow-run names and tags, the run log (Prefect's run logger and the console), progress.

* **Names.** A flow run is named by what it ran and when: ``preflight 3 suites 2026-12-01T02:00Z``,
  ``contract-strength 3 suites 2026-12-01T02:00Z``, and ``nightly 2026-12-01`` when a deployment of
  that name started it (the deployment's name, then the scheduled date). Its tags carry
  ``suite:<name>`` for every suite it ran, so the UI's filters find a suite's runs.
* **The run log.** :class:`RunLog` sends each line to Prefect's run logger at INFO or WARNING (the
  flow run's Logs tab, also under ``serve`` and workers) and prints it on the console itself; Prefect's
  own console handler is kept from printing it twice, and from printing Prefect's per-task INFO chatter.
* **Progress.** :class:`LegProgress` counts legs planned / done (spawned, collapsed onto an identical
  leg of this run, from the cache, faulted) and running now. On a terminal it is a ``rich`` progress
  bar on stderr; otherwise one line every ``EVALQUALITY_PROGRESS_SECONDS`` (default 30; ``0`` turns it
  off) while the count moves.
* **Tables.** :func:`console` is the console tables print on: the terminal's width, or 120 columns
  (``$COLUMNS`` if set) when piped. :class:`ReadableTable` keeps each row's key cells (suite, probe,
  counts, verdict) whole on one line at any width and writes long text whole under the row.
* **Hostile text.** A line, a table cell or a title may quote what a target printed or a user named:
  each is shown through :func:`evalquality_core.printable.printable` (control characters escaped,
  one line stays one line) on the console and in the run logger alike, so a target's escape
  sequences never reach a terminal or the Logs tab raw.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.text import Text

from evalquality_core.printable import printable
from evalquality_core.probe.policy import MAX_WALL_CLOCK_SECONDS
from flows.settings import user_api_url

#: Width of a piped (non-terminal) console: the logs CI keeps are read at about this width.
PIPED_WIDTH = 120
PROGRESS_VARIABLE = "EVALQUALITY_PROGRESS_SECONDS"
DEFAULT_PROGRESS_SECONDS = 30.0
#: Marks a record our RunLog already printed on the console.
_CONSOLE_MARK = "evalquality_printed"


def console(file: IO[str] | None = None) -> Console:
    """A rich console: the terminal's width, else ``$COLUMNS`` or 120 columns (never rich's 80)."""
    stream = file or sys.stdout
    terminal = hasattr(stream, "isatty") and stream.isatty()
    width = None if terminal else int(os.environ.get("COLUMNS") or PIPED_WIDTH)
    return Console(file=stream, width=width, soft_wrap=False)


def print_line(console: Console, text: str, style: str | None = None) -> None:
    """Print ``text`` as one line, however long: rich would break it at the console's width (120 columns
    when piped), splitting a one-line error or gate line in two for whoever greps or reads the log.
    The text may quote a target's output: it is shown :func:`printable` (a newline in it shows as ``\\n``)."""
    console.print(printable(text), style=style, markup=False, highlight=False, soft_wrap=True)


def as_log_text(renderable: Any) -> str:
    """A table as plain text for the run logger: ``PIPED_WIDTH`` columns, no colour, whatever the console."""
    from io import StringIO

    buffer = StringIO()
    Console(file=buffer, width=PIPED_WIDTH, soft_wrap=False, color_system=None).print(renderable)
    return buffer.getvalue().rstrip()


# ---------------------------------------------------------------------------------------------- names


def suite_names(suites_dir: str | os.PathLike[str] | None) -> list[str]:
    """The suites a folder holds (sub-folders with a ``contract.json``), by name; cheap, no parsing."""
    if not suites_dir:
        return []
    root = Path(suites_dir)
    try:
        return sorted(p.parent.relative_to(root).as_posix() for p in root.rglob("contract.json"))
    except OSError:
        return []


def _when(start: Any) -> datetime:
    return start.astimezone(UTC) if isinstance(start, datetime) else datetime.now(UTC)


def run_name(
    kind: str, suites_dir: Any, start: Any = None, deployment: str | None = None, only: Any = None
) -> str:
    """``<kind> <n> suite(s) <UTC minute>``, or ``<deployment> <UTC date>`` for a deployment's run;
    ``only`` (a batch's suite names) is counted instead of the folder when given."""
    when = _when(start)
    if deployment:
        return f"{deployment} {when:%Y-%m-%d}"
    count = len(only) if only else len(suite_names(suites_dir))
    return f"{kind} {count} suite{'' if count == 1 else 's'} {when:%Y-%m-%dT%H:%MZ}"


def _runtime_name(kind: str, default_suites: Any) -> str:
    from prefect.runtime import deployment, flow_run

    parameters = flow_run.parameters or {}
    suites = parameters.get("suites_dir") or default_suites
    return run_name(kind, suites, flow_run.scheduled_start_time, deployment.name, parameters.get("suites"))


def preflight_run_name() -> str:
    """The ``preflight`` flow's run name (``flow_run_name`` callable; reads the run's parameters)."""
    return _runtime_name("preflight", None)


def strength_run_name() -> str:
    """The ``contract-strength`` flow's run name; its default suites folder comes from the settings."""
    from flows.settings import load_settings

    try:
        default = load_settings().suites_dir
    except ValueError:  # a bad setting is reported by the flow itself; the name just counts nothing
        default = None
    return _runtime_name("contract-strength", default)


def tag_flow_run(tags: Iterable[str]) -> None:
    """Add tags to the current flow run (suite names are known only once it runs) and, for a subflow,
    give its tracking task run in the parent the subflow run's name; best effort."""
    from prefect.client.orchestration import get_client
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return
    wanted = sorted(set(context.flow_run.tags) | {printable(tag) for tag in tags})
    parent = context.flow_run.parent_task_run_id
    try:
        with get_client(sync_client=True) as client:
            client.update_flow_run(context.flow_run.id, tags=wanted)
            if parent is not None:
                # A subflow shows in its parent run as a task run Prefect names "<flow>-<n>"
                # ("preflight-0"): give it the subflow run's own human name.
                client.set_task_run_name(parent, context.flow_run.name)
    except Exception:  # noqa: BLE001 - tags and names are a convenience; a refused update must not fail a run
        logging.getLogger(__name__).debug("could not tag the flow run", exc_info=True)


def announce_flow_run(log: RunLog) -> None:
    """``flow run: <its page in the UI>`` (``subflow run: …`` for a subflow) when a server is in use."""
    from prefect.runtime import flow_run

    url = flow_run_url()
    if url:
        log.info(f"{'subflow' if flow_run.parent_flow_run_id else 'flow'} run: {url}")


def flow_run_url() -> str | None:
    """The flow run's page in the Prefect UI when a server with a UI is in use (``PREFECT_API_URL``)."""
    from prefect.runtime import flow_run

    if not user_api_url():
        return None  # the embedded server serves no UI (prefect.md §1)
    return flow_run.ui_url


def task_run_url(task_run_id: Any) -> str | None:
    """A task run's page in the Prefect UI when a server with a UI is in use, else None."""
    from prefect.settings import PREFECT_UI_URL

    base = PREFECT_UI_URL.value() if user_api_url() else None
    return f"{base}/runs/task-run/{task_run_id}" if base and task_run_id else None


# ------------------------------------------------------------------------------------------ run log


class _QuietConsole(logging.Filter):
    """On Prefect's console handler: drop what RunLog printed itself, and run loggers' INFO chatter."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, _CONSOLE_MARK, False):
            return False
        run_logger = record.name.startswith(("prefect.flow_runs", "prefect.task_runs"))
        return not (run_logger and record.levelno < logging.WARNING)


_QUIET = _QuietConsole()


class GateMoved(Exception):  # noqa: N818 - it is a finding, not an error of ours
    """The data of a flow run that ended ``Failed`` because its gate moved: the one-line message, and the
    run's full result (``run``) for the caller, which still exits with the gate's code.

    A Failed state's data must be an exception: Prefect's engine (a worker, ``serve``) calls
    ``result()`` on the final state, which raises it.
    """

    def __init__(self, message: str, run: Any) -> None:
        super().__init__(message)
        self.run = run


class _NoGateTraceback(logging.Filter):
    """Drop the engine's "exited with unexpected exception" records whose exception is a ``GateMoved``:
    the flow run's Failed state already says what moved in one line; a traceback adds nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], GateMoved))


_NO_GATE_TRACEBACK = _NoGateTraceback()


def enable_run_logs() -> None:
    """Let INFO from run loggers reach the API (PREFECT_LOGGING_LEVEL=WARNING would drop it) while the
    console shows only what we print and warnings; idempotent, called at the start of each flow."""
    for name in ("prefect.flow_runs", "prefect.task_runs"):
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)
    for handler in logging.getLogger().handlers:
        if type(handler).__name__ == "PrefectConsoleHandler" and _QUIET not in handler.filters:
            handler.addFilter(_QUIET)
    for name in ("prefect.flow_runs", "prefect.engine"):
        logger = logging.getLogger(name)
        if _NO_GATE_TRACEBACK not in logger.filters:
            logger.addFilter(_NO_GATE_TRACEBACK)


def _run_logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger] | None:
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger

    try:
        return get_run_logger()
    except MissingContextError:
        return None


class RunLog:
    """Lines for the people watching: to Prefect's run logger and to the console (stderr by default)."""

    def __init__(self, out: Console | None = None) -> None:
        enable_run_logs()
        self.console = out or console(sys.stderr)
        self._logger = _run_logger()

    def _emit(self, level: int, text: str, style: str | None) -> None:
        if self._logger is not None:
            self._logger.log(level, printable(text), extra={_CONSOLE_MARK: True})
        print_line(self.console, text, style)

    def info(self, text: str) -> None:
        """An INFO line."""
        self._emit(logging.INFO, text, None)

    def warning(self, text: str) -> None:
        """A WARNING line (faults, a moved gate)."""
        self._emit(logging.WARNING, text, "yellow")

    def to_logger(self, text: str, level: int = logging.INFO) -> None:
        """A line for the run logger only (the console printed it itself), shown :func:`printable`."""
        if self._logger is not None:
            self._logger.log(level, printable(text), extra={_CONSOLE_MARK: True})

    def table_to_logger(self, table: ReadableTable, level: int = logging.INFO) -> None:
        """A table for the run logger only (the console prints it as a rich table): its plain text, whose
        cells :class:`ReadableTable` already made printable (its line breaks are the layout's own)."""
        if self._logger is not None:
            self._logger.log(level, as_log_text(table), extra={_CONSOLE_MARK: True})


# ----------------------------------------------------------------------------------------- progress


def progress_interval() -> float:
    """Seconds between one-line progress reports when not on a terminal (0: none). A value that is not
    a number of seconds from 0 to the one time-budget bound (``MAX_WALL_CLOCK_SECONDS``, about 24.8
    days; ``inf`` and ``nan`` included) is ignored like any unreadable one: the default applies, and
    no thread waits on a timeout too large for the platform's clock."""
    raw = os.environ.get(PROGRESS_VARIABLE, "")
    try:
        seconds = float(raw) if raw else DEFAULT_PROGRESS_SECONDS
    except ValueError:
        return DEFAULT_PROGRESS_SECONDS
    if not seconds <= MAX_WALL_CLOCK_SECONDS:  # also false for nan
        return DEFAULT_PROGRESS_SECONDS
    return max(0.0, seconds)


class LegProgress:
    """Counts of one run's legs, fed by ``spawn-leg`` (``on_event``), shown while the legs run."""

    OUTCOMES = ("spawned", "collapsed", "cache", "fault")

    def __init__(self, planned: int, stream: IO[str] | None = None, interval: float | None = None) -> None:
        self.planned = planned
        self.counts = dict.fromkeys(self.OUTCOMES, 0)
        self.running = 0
        self._lock = threading.Lock()
        self._stream = stream or sys.stderr
        self._interval = progress_interval() if interval is None else interval
        self._terminal = hasattr(self._stream, "isatty") and self._stream.isatty()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None
        self._task: Any = None
        self._started = time.monotonic()

    @property
    def done(self) -> int:
        """Legs answered or faulted so far."""
        return sum(self.counts.values())

    def on_event(self, event: str, leg: str) -> None:
        """``start`` when a leg begins; then one of ``OUTCOMES`` when it ends. Thread-safe."""
        with self._lock:
            if event == "start":
                self.running += 1
            elif event in self.counts:
                self.counts[event] += 1
                self.running = max(0, self.running - 1)
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, status=self.status())

    def status(self) -> str:
        """``spawned S · collapsed C · from cache K · faulted F · running R``."""
        c = self.counts
        return (
            f"spawned {c['spawned']} · collapsed {c['collapsed']} · from cache {c['cache']} · "
            f"faulted {c['fault']} · running {self.running}"
        )

    def line(self) -> str:
        """The one-line progress report of a piped console."""
        c = self.counts
        return (
            f"progress: {self.done}/{self.planned} legs done ({c['spawned']} spawned, {c['collapsed']} collapsed, "
            f"{c['cache']} from cache, {c['fault']} faulted), {self.running} running, "
            f"{time.monotonic() - self._started:.0f} s"
        )

    def __enter__(self) -> LegProgress:
        if self.planned == 0:
            return self
        if self._terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(
                TextColumn("legs"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
                TimeElapsedColumn(), console=Console(file=self._stream), transient=True,
            )
            self._task = self._bar.add_task("legs", total=self.planned, status=self.status())
            self._bar.start()
        elif self._interval > 0:
            self._thread = threading.Thread(target=self._report, name="leg-progress", daemon=True)
            self._thread.start()
        return self

    def _report(self) -> None:
        last = -1
        while not self._stop.wait(self._interval):
            if self.done != last:
                last = self.done
                print(self.line(), file=self._stream, flush=True)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.stop()


# ------------------------------------------------------------------------------------------- tables


def shown_text(text: str, style: str = "") -> Text:
    """A styled table cell (or line) holding ``text`` made :func:`printable`. Build a ``Text`` cell with
    this, never ``Text(raw)``: rich silently drops BEL, BS, CR, VT and FF from a ``Text`` (and keeps
    ESC), so the escaping must come first."""
    return Text(printable(text), style=style)


def _printable_cell(cell: str | Text) -> Text:
    """A plain cell as :func:`printable` text; a ``Text`` cell is taken as built by :func:`shown_text`."""
    return cell if isinstance(cell, Text) else Text(printable(str(cell)))


class ReadableTable:
    """A console table that stays readable at any width, on a terminal and in a piped log.

    Each row is one line of its *key* columns (every column not in ``long``: names, counts, verdicts),
    always whole, never cut or folded. A ``long`` column (an outcome, a basis, a qualification) stays
    inline when the width left has room for its header; a value longer than that room is replaced by
    ``↓`` in the row and written whole under the row (``  basis: …``, wrapped at the width with a hanging
    indent), as is every value of a long column that gets no room at all (``-`` and empty values are
    then left out); the same text as the row just above reads ``as above``. The width is the
    console's, read when the table is printed.
    """

    GAP = 2
    MARK = "↓"

    def __init__(
        self,
        title: str | None,
        headers: Sequence[str],
        rows: Sequence[Sequence[str | Text]],
        long: Sequence[str] = (),
        right: Sequence[str] = (),
    ) -> None:
        # Titles and cells may quote a target or name a suite: shown printable, styles kept.
        self.title = None if title is None else printable(title)
        self.headers = list(headers)
        self.rows = [[_printable_cell(cell) for cell in row] for row in rows]
        self.long = [i for i, header in enumerate(self.headers) if header in long]
        self.right = {i for i, header in enumerate(self.headers) if header in right}

    def layout(self, width: int) -> dict[int, int]:
        """Inline width of each column at ``width`` (a long column with no room is absent)."""
        needed = [max([len(h), *(row[i].cell_len for row in self.rows)]) for i, h in enumerate(self.headers)]
        widths = {i: needed[i] for i in range(len(self.headers)) if i not in self.long}
        room = width - sum(widths.values()) - self.GAP * (len(widths) - 1)
        candidates = list(self.long)
        while candidates:  # water-filling: a column that needs less than an equal share keeps its need
            share = (room - self.GAP * len(candidates)) // len(candidates)
            modest = [i for i in candidates if needed[i] <= share]
            if modest:
                for i in modest:
                    widths[i] = needed[i]
                    room -= needed[i] + self.GAP
                candidates = [i for i in candidates if i not in modest]
            elif all(share >= max(len(self.headers[i]), len(self.MARK)) for i in candidates):
                widths.update(dict.fromkeys(candidates, share))
                break
            else:  # no room for every header: the last long column goes under the rows
                candidates.pop()
        for i in self.long:  # a column cut short is only as wide as the longest value it still shows
            if i in widths and widths[i] < needed[i]:
                shown = [row[i].cell_len for row in self.rows if row[i].cell_len <= widths[i]]
                widths[i] = max([len(self.headers[i]), len(self.MARK), *shown])
        free = width - sum(widths.values()) - self.GAP * (len(widths) - 1)
        for i in self.long:  # room freed that way goes, in column order, to a column it now fits whole
            if i in widths and 0 < needed[i] - widths[i] <= free:
                free -= needed[i] - widths[i]
                widths[i] = needed[i]
        return dict(sorted(widths.items()))

    def __rich_console__(self, console: Console, options: Any) -> Any:
        width = options.max_width
        widths = self.layout(width)
        if self.title:
            yield Text(self.title, style="bold")
        yield self._line([Text(h, style="bold") for h in self.headers], widths)
        yield self._line([Text("─" * widths.get(i, 0)) for i in range(len(self.headers))], widths)
        above: dict[str, str] = {}  # the text each long column last wrote under a row
        for row in self.rows:
            below = []
            cells = []
            for i, cell in enumerate(row):
                if i in self.long and (i not in widths or cell.cell_len > widths[i]):
                    if cell.plain not in ("", "-"):
                        below.append((self.headers[i], cell))
                    cells.append(Text(self.MARK if i in widths else ""))
                else:
                    cells.append(cell)
            yield self._line(cells, widths)
            for header, cell in below:
                same = above.get(header) == cell.plain
                above[header] = cell.plain
                yield from self._below(console, header, Text("as above", style="dim") if same else cell, widths, width)
            for i in self.long:  # a row that wrote nothing under it breaks the run of "as above"
                if self.headers[i] not in {header for header, _ in below}:
                    above.pop(self.headers[i], None)

    def _below(self, console: Console, header: str, cell: Text, widths: dict[int, int], width: int) -> Any:
        """``header: value`` under the row: from the second column on, wrapped with a hanging indent."""
        indent = widths[0] + self.GAP if 0 in widths and 0 not in self.long else self.GAP
        if width - indent - 2 < 30:  # too narrow to indent usefully
            indent = 2
        text = Text(f"{header}: ", style="dim") + cell
        for n, line in enumerate(text.wrap(console, max(10, width - indent - 2))):
            line.rstrip()
            yield Text(" " * (indent if n == 0 else indent + 2)) + line

    def _line(self, cells: Sequence[Text], widths: dict[int, int]) -> Text:
        line = Text(no_wrap=False, end="\n")
        first = True
        for i, cell in enumerate(cells):
            if i not in widths:
                continue
            if not first:
                line.append(" " * self.GAP)
            first = False
            pad = " " * max(0, widths[i] - cell.cell_len)
            line.append_text(Text(pad) + cell if i in self.right else cell + Text(pad))
        line.rstrip()
        return line
