"""What a pre-flight run reports: per-probe rows, the run summary, the console table and the cost line.

The rows live here (an importable module, never the ``python -m`` entry; prefect.md §3) so the flow,
the baseline gate and the strength flow all read the same shape. The cost line follows the reference
harness: "N legs run and M answered from cache, S s spent in legs" (harness.md A.6).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from rich.console import Console
from rich.table import Table


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

    @property
    def spawned(self) -> int:
        """Legs answered by a live spawn in this run."""
        return sum(row.spawned for row in self.probes)

    @property
    def from_cache(self) -> int:
        """Legs answered from the leg cache."""
        return sum(row.from_cache for row in self.probes)

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
            "legsFaulted": self.faulted,
            "legSeconds": round(self.leg_seconds, 3),
            "wallSeconds": round(self.wall_seconds, 3),
        }


def summary_line(run: PreflightRun) -> str:
    """The closing line of a run."""
    faulted = f" ({run.faulted} of them timed out or faulted)" if run.faulted else ""
    return (
        f"{run.spawned} legs run{faulted} and {run.from_cache} answered from cache, "
        f"{run.leg_seconds:.1f} s spent in legs"
    )


def render_table(rows: Iterable[ProbePreflight], failures: Iterable[SuiteFailure] = ()) -> Table:
    """The console table: suite, probe, legs planned, spawned, from cache, outcome."""
    table = Table(title="Pre-flight", show_lines=False)
    for column in ("suite", "probe", "legs planned", "spawned", "from cache", "outcome"):
        table.add_column(column, justify="right" if column in ("legs planned", "spawned", "from cache") else "left")
    for row in rows:
        style = "green" if row.outcome == "passed" else ("red" if row.outcome.startswith("fault") else "yellow")
        planned = "?" if row.legs_planned is None else str(row.legs_planned)
        table.add_row(
            row.suite, row.probe_id, planned, str(row.spawned), str(row.from_cache), f"[{style}]{row.outcome}[/]"
        )
    for failure in failures:
        table.add_row(failure.suite, "-", "?", "0", "0", f"[red]could not run: {failure.message}[/]")
    return table


def markdown_report(run: PreflightRun) -> str:
    """The same table as Markdown, for the Prefect UI's artifact tab."""
    lines = [
        "| suite | probe | legs planned | spawned | from cache | outcome |",
        "|---|---|---:|---:|---:|---|",
    ]
    for row in run.probes:
        planned = "?" if row.legs_planned is None else str(row.legs_planned)
        outcome = row.outcome.replace("|", "\\|")
        lines.append(f"| {row.suite} | {row.probe_id} | {planned} | {row.spawned} | {row.from_cache} | {outcome} |")
    for failure in run.failures:
        lines.append(f"| {failure.suite} | - | ? | 0 | 0 | could not run: {failure.message.replace('|', '/')} |")
    return "\n".join([*lines, "", summary_line(run)])


def publish_report(run: PreflightRun) -> None:
    """Publish the report as the flow run's Markdown artifact (style.md §3: reports are published by the flow)."""
    from prefect.artifacts import create_markdown_artifact

    create_markdown_artifact(key="preflight-report", markdown=markdown_report(run), description=summary_line(run))


def print_report(run: PreflightRun, console: Console | None = None) -> None:
    """Print the table and the cost line."""
    console = console or Console()
    console.print(render_table(run.probes, run.failures))
    console.print(summary_line(run))
