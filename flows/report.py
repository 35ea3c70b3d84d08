"""What a pre-flight run reports: per-probe rows, the run summary, the console table and the cost line.

The rows live here (an importable module, never the ``python -m`` entry; prefect.md §3) so the flow,
the baseline gate and the strength flow all read the same shape. The cost line follows the reference
harness: "N legs run and M answered from cache, S s spent in legs" (harness.md A.6), with the legs that
collapsed onto an identical leg of the same run counted apart from those an earlier run answered: on a
fresh clone nothing is answered from cache, however many requests repeat.

Tables stay readable in a 120-column or piped log: suite, probe and counts are whole on one line per
row; an outcome too long for the width is written whole under its row (and is in ``preflight-summary.json``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from rich.console import Console

from evalquality_core.printable import markdown_literal
from flows.watch import ReadableTable, shown_text


def outcome_of(verdict: Mapping[str, Any]) -> str:
    """``passed``, or ``failed: <sorted unique kinds of the failed checks>`` (harness.md A.5)."""
    if verdict["passed"]:
        return "passed"
    kinds = sorted({check["kind"] for check in verdict["checks"] if check["outcome"] == "failed"})
    return "failed: " + ", ".join(kinds)


@dataclass(frozen=True)
class ProbePreflight:
    """One probe's pre-flight in one run: how many legs, how they were answered, and the outcome.

    ``outcome`` is ``passed``, ``failed: <kinds>``, or ``fault: <code>: <detail>`` when a leg or the
    plan raised (a failed probe is a fault, a failed pre-flight is a verdict; preflight-adapter.md §2.6).
    ``from_cache`` counts legs an earlier run answered, ``collapsed`` legs an identical leg of this run did.
    """

    suite: str
    probe_id: str
    legs_planned: int | None
    spawned: int
    from_cache: int
    leg_seconds: float
    outcome: str
    verdict_file: str | None
    #: Of ``spawned``, the legs whose run ended in a fault (a timeout, say): run and paid for, not answered.
    faulted: int = 0
    collapsed: int = 0


@dataclass(frozen=True)
class SuiteFailure:
    """A suite that could not run at all."""

    suite: str
    message: str


@dataclass(frozen=True)
class PreflightRun:
    """The summary of one run of the pre-flight flow."""

    probes: tuple[ProbePreflight, ...]
    failures: tuple[SuiteFailure, ...]
    distinct_spawns: int
    wall_seconds: float
    #: The baseline gate's exit code and lines, when the flow gated (``python -m flows.preflight``).
    gate_exit: int | None = None
    gate_lines: tuple[str, ...] = ()

    @property
    def spawned(self) -> int:
        """Legs answered by a live spawn in this run."""
        return sum(row.spawned for row in self.probes)

    @property
    def from_cache(self) -> int:
        """Legs an earlier run answered (from the leg cache)."""
        return sum(row.from_cache for row in self.probes)

    @property
    def collapsed(self) -> int:
        """Legs an identical leg of this same run answered."""
        return sum(row.collapsed for row in self.probes)

    @property
    def faulted(self) -> int:
        """Spawned legs whose run ended in a fault (their seconds are in ``leg_seconds``)."""
        return sum(row.faulted for row in self.probes)

    @property
    def leg_seconds(self) -> float:
        """Wall-clock seconds spent inside spawned legs (summed over legs)."""
        return sum(row.leg_seconds for row in self.probes)

    def to_json(self) -> dict[str, Any]:
        """The run summary written beside the verdicts (``preflight-summary.json``)."""
        return {
            "probes": [asdict(row) for row in self.probes],
            "failures": [asdict(failure) for failure in self.failures],
            "legsSpawned": self.spawned,
            "legsFromCache": self.from_cache,
            "legsCollapsed": self.collapsed,
            "legsFaulted": self.faulted,
            "legSeconds": round(self.leg_seconds, 3),
            "wallSeconds": round(self.wall_seconds, 3),
        }


def cost_sentence(spawned: int, from_cache: int, collapsed: int, seconds: float, faulted: int = 0) -> str:
    """``N legs run (F of them timed out or faulted) and M answered from cache (C collapsed onto an
    identical leg of this run), S s spent in legs``; each parenthesis only when its count is not 0."""
    failed = f" ({faulted} of them timed out or faulted)" if faulted else ""
    also = f" ({collapsed} collapsed onto an identical leg of this run)" if collapsed else ""
    return f"{spawned} legs run{failed} and {from_cache} answered from cache{also}, {seconds:.1f} s spent in legs"


def summary_line(run: PreflightRun) -> str:
    """The closing line of a run."""
    return cost_sentence(run.spawned, run.from_cache, run.collapsed, run.leg_seconds, run.faulted)


_COUNTS = ("legs planned", "spawned", "collapsed", "from cache")


def render_table(rows: Iterable[ProbePreflight], failures: Iterable[SuiteFailure] = ()) -> ReadableTable:
    """The console table: suite, probe, legs planned, spawned, collapsed, from cache, outcome.

    Suite, probe and the counts are always whole on the row's one line; an outcome too long for the
    width left is written whole under its row, wrapped (never folded into a column of fragments;
    ``preflight-summary.json`` has it too). See :class:`flows.watch.ReadableTable`.
    """
    cells = [
        (row.suite, row.probe_id, "?" if row.legs_planned is None else str(row.legs_planned), str(row.spawned),
         str(row.collapsed), str(row.from_cache), shown_text(row.outcome, _style(row.outcome)))
        for row in rows
    ] + [
        (failure.suite, "-", "?", "0", "0", "0", shown_text(f"could not run: {failure.message}", "red"))
        for failure in failures
    ]
    return ReadableTable("Pre-flight", ("suite", "probe", *_COUNTS, "outcome"), cells, long=("outcome",), right=_COUNTS)


def _style(outcome: str) -> str:
    return "green" if outcome == "passed" else ("red" if outcome.startswith("fault") else "yellow")


def markdown_report(run: PreflightRun) -> str:
    """The same table as Markdown, for the Prefect UI's artifact tab.

    Every suite name, probe id, outcome, message and gate line is written :func:`markdown_literal`: a
    suite folder named ``[x](javascript:alert(1))``, ``<script>`` or ``a|b`` shows as that literal text,
    never a link, a tag or a broken row, and a target's control characters show escaped."""
    lines = [
        "| suite | probe | legs planned | spawned | collapsed | from cache | outcome |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for row in run.probes:
        planned = "?" if row.legs_planned is None else str(row.legs_planned)
        suite, probe, outcome = (markdown_literal(text) for text in (row.suite, row.probe_id, row.outcome))
        lines.append(
            f"| {suite} | {probe} | {planned} | {row.spawned} | {row.collapsed} | {row.from_cache} | {outcome} |"
        )
    for failure in run.failures:
        suite, message = markdown_literal(failure.suite), markdown_literal(f"could not run: {failure.message}")
        lines.append(f"| {suite} | - | ? | 0 | 0 | 0 | {message} |")
    lines += ["", summary_line(run)]
    if run.gate_exit is not None:
        lines += ["", f"Baseline gate: **exit {run.gate_exit}**", ""] + [f"- {markdown_literal(line)}" for line in run.gate_lines]
    return "\n".join(lines)


def publish_report(run: PreflightRun) -> None:
    """Publish the report as the flow run's Markdown artifact (style.md §3: reports are published by the flow)."""
    from prefect.artifacts import create_markdown_artifact

    create_markdown_artifact(key="preflight-report", markdown=markdown_report(run), description=summary_line(run))


def print_report(run: PreflightRun, console: Console | None = None) -> None:
    """Print the table and the cost line (stdout; 120 columns when piped)."""
    from flows.watch import console as make_console
    from flows.watch import print_line

    console = console or make_console()
    console.print(render_table(run.probes, run.failures))
    print_line(console, summary_line(run))
