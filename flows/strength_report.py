"""The strength report people read: Prefect artifacts on every run, and a self-contained HTML file.

Prefect artifacts (style.md §3.6, prefect.md §6): one table per contract (``strength-<suite>``: probe,
class, pre-flight outcome, verdict, basis), one markdown summary (``contract-strength-summary``) with
every strength vector, the leg and score counts and the gate's moves, and one link artifact
(``strength-report``) to the HTML report's file.

The HTML report (``strength-report.html``) carries inline CSS and inline SVG only (links go to the
evidence files beside it and, when a server is in use, to Prefect's UI), so it opens from a CI artifact
store or a mail attachment with no network. From the top:

* **Since the previous run:** ``strength-history.json`` beside the report records every run with its
  UTC timestamp, flow-run id and name, and per suite the vector, each class's aggregate and floor
  decision, and each probe's class, verdict and pre-flight outcome. The report's first section lists
  what moved since the previous recorded run (verdicts, pre-flight outcomes, floor decisions, strength
  rates, probes and suites added or removed), or says in one line that nothing did. Every run is an
  entry, labelled by its full timestamp (two runs in one night are two entries, never one "night" per
  date); the comparison is always with the entry just before.
* **Gate against the committed baseline,** separately (the exit code CI gates on).
* **Per contract:** the aggregate and floor decision per class (from ``strength-aggregate.json``), the
  count of probes per verdict in colours that mean something (PASS green, CONCERNS amber, FAIL red,
  Invalid and a refused aggregate as a warning), and a chart across runs on a real time axis whose
  overlapping lines stay visible (each contract its own dash pattern, marker and a small offset).
* **Per probe** (in the manner of a mutation-testing report): status, class, the planted mutation's
  description and diff, which oracle caught it or why not, the basis (each distinct line once, with a
  count), the trial votes, and links to the evidence JSON and the probe's Prefect task run. A filter by
  status works without script (radio buttons and CSS).

Every name, id, message and line a user or target wrote is shown escaped: ``html_literal`` in the HTML
report (control characters escaped, then ``html.escape``), ``markdown_literal`` in the markdown summary
and in descriptions, ``printable`` in the table artifact's cells (evalquality_core/printable.py).

The HTML page itself is rendered by ``flows/strength_html.py`` from ``flows/templates/``; this module
holds the report's data (``StrengthReport``, the history and what moved) and the Prefect artifacts.
Rendering is pure (documents in, text out); only ``publish_artifacts`` talks to Prefect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalquality_core.artifacts.contract_strength import VECTOR_CLASSES, SuiteStrength
from evalquality_core.artifacts.evidence import ClassStrength, StrengthVector
from evalquality_core.printable import markdown_literal, printable
from flows.lifecycle import EXIT_IO, FlowInputError
from flows.strength_baseline import GateResult
from tasks.output import write_atomically

REPORT_FILE = "strength-report.html"
#: Key of the Prefect link artifact pointing at the HTML report.
REPORT_LINK_KEY = "strength-report"
HISTORY_FILE = "strength-history.json"
#: Nights kept in the history file; older ones fall off so the file and the chart stay small.
HISTORY_LIMIT = 120
#: Classes drawn in the charts: zero-action is always null in a vector by design (scoring.md §5.3).
CHART_CLASSES: tuple[str, ...] = ("defect", "gameability")
PALETTE = ("#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed", "#0891b2", "#be185d", "#4d7c0f")


@dataclass(frozen=True)
class RunCounts:
    """What a run spent: legs spawned vs answered from cache, score tasks run vs cached, seconds."""

    legs_spawned: int = 0
    legs_cached: int = 0
    legs_collapsed: int = 0
    scores_run: int = 0
    scores_cached: int = 0
    spawned_seconds: float = 0.0
    total_seconds: float = 0.0

    def sentence(self) -> str:
        """The one-line cost summary ("N legs run and M answered from cache ...", harness.md A.6; the wording of pre-flight's line)."""
        collapsed = f" ({self.legs_collapsed} collapsed onto an identical leg of this run)" if self.legs_collapsed else ""
        return (
            f"{self.legs_spawned} legs run and {self.legs_cached} answered from cache{collapsed}, "
            f"{self.spawned_seconds:.1f} s spent in legs; "
            f"{self.scores_run} probes re-scored and {self.scores_cached} answered from cache"
        )


@dataclass(frozen=True)
class StrengthReport:
    """Everything one night's report shows."""

    at: str
    documents: Mapping[str, SuiteStrength]
    gate: GateResult
    counts: RunCounts
    history: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    flow_run_id: str | None = None
    flow_run_name: str | None = None
    #: Per suite, its ``StrengthAggregate`` as wire JSON (absent when refused or nothing to aggregate).
    aggregates: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Per ``"<suite>/<probe>"``, what the probe section shows beyond the document.
    details: Mapping[str, ProbeDetail] = field(default_factory=dict)


@dataclass(frozen=True)
class ProbeDetail:
    """One probe's mutation, evidence and links, for the report's probe section."""

    mutation: Mapping[str, Any] | None = None
    evidence: Mapping[str, Any] | None = None
    #: The evidence file relative to the report (``<suite>/evidence-<probe>.json``).
    evidence_href: str | None = None
    task_run_id: str | None = None
    #: The task run's page in Prefect's UI (None on the embedded server, which serves no UI).
    task_run_url: str | None = None


# ---------------------------------------------------------------------------------------------- text


def format_class(value: ClassStrength | None) -> str:
    """``caught/exercised (rate)`` or ``n/a`` for a null class; ``-`` rate when nothing was exercised."""
    if value is None:
        return "n/a"
    rate = "-" if value.rate is None else f"{value.rate:.2f}"
    return f"{value.caught}/{value.exercised} ({rate})"


def vector_classes(vector: StrengthVector) -> dict[str, ClassStrength | None]:
    """The vector as ``{class name: value}`` in the spec's class order."""
    return {"defect": vector.defect, "gameability": vector.gameability, "zero-action": vector.zero_action}


def contract_table_rows(document: SuiteStrength) -> list[dict[str, str]]:
    """The rows of one contract's table artifact: probe, class, pre-flight outcome, legs, verdict, exit,
    basis, and the qualification reasons (unique codes) that refused the probe, if any."""
    rows = []
    for probe_id, probe in sorted(document.probes.items()):
        rows.append(
            {
                "probe": probe_id,
                "class": probe.probe_class + (" (clean)" if probe.expected_clean else ""),
                "pre-flight": probe.preflight,
                "legs": "?" if probe.preflight_legs is None else str(probe.preflight_legs),
                "verdict": probe.verdict or "Invalid",
                "exit": str(probe.exit_code),
                "basis": "; ".join(distinct_lines(probe.basis)) if probe.basis else "-",
                "qualification": "-" if probe.qualification is None else ", ".join(sorted(set(probe.qualification))),
            }
        )
    return rows


def artifact_key(*parts: str) -> str:
    """A Prefect artifact key (lowercase letters, digits, dashes) built from free-form parts."""
    joined = "-".join(parts).lower()
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9]+", "-", joined)).strip("-")


def summary_markdown(report: StrengthReport) -> str:
    """The markdown summary artifact: strength vector per contract, run counts, and the gate's verdict."""
    lines = [f"# Contract strength, {report.at}", "", f"Gate: **exit {report.gate.exit_code}**", ""]
    lines += [f"- {markdown_literal(line)}" for line in report.gate.lines()]
    lines += ["", f"Cost: {report.counts.sentence()}.", ""]
    lines += ["| suite | contract | probes | " + " | ".join(VECTOR_CLASSES) + " |"]
    lines += ["|---|---|---|" + "---|" * len(VECTOR_CLASSES)]
    for name, doc in sorted(report.documents.items()):
        cells = [format_class(v) for v in vector_classes(doc.strength).values()]
        lines.append(f"| {markdown_literal(name)} | {markdown_literal(doc.contract_id)} | {doc.probe_count} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def publish_artifacts(report: StrengthReport, report_path: Path | None = None) -> None:
    """Publish one table artifact per contract, the markdown summary and (given its path) a link
    artifact to the HTML report, to the current Prefect run."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

    if report_path is not None:
        create_link_artifact(
            link=report_path.resolve().as_uri(),
            link_text=f"Contract strength report ({report.at})",
            key=REPORT_LINK_KEY,
            description="The self-contained HTML report: change since the previous run, gate, contracts, probes",
        )

    for name, doc in sorted(report.documents.items()):
        create_table_artifact(
            # A table artifact's cells are shown as plain text (no Markdown): printable is enough.
            table=[{column: printable(value) for column, value in row.items()} for row in contract_table_rows(doc)],
            key=artifact_key("strength", name),
            # A description is rendered as Markdown in the UI.
            description=markdown_literal(f"Contract {doc.contract_id} (suite {name}): per-probe outcome and verdict"),
        )
    create_markdown_artifact(
        markdown=summary_markdown(report),
        key="contract-strength-summary",
        description="Strength vector per contract, legs and scores run vs cached, baseline gate",
    )


# ------------------------------------------------------------------------------------------- history

#: Version of a history entry's shape (entries without it are the first shape: vectors only).
HISTORY_VERSION = 2


def floor_view(aggregate: Mapping[str, Any] | None) -> dict[str, Any]:
    """Per class: the aggregate's caught/exercised/rate/comparable and its floor decision (wire names)."""
    if not aggregate:
        return {}
    classes = aggregate.get("classes") or {}
    floors = aggregate.get("floorDecisions") or {}
    view: dict[str, Any] = {}
    for cls in VECTOR_CLASSES:
        value, floor = classes.get(cls), floors.get(cls)
        if value is None and floor is None:
            continue
        view[cls] = {"aggregate": value, "floor": floor}
    return view


def aggregate_of(doc: SuiteStrength, aggregates: Mapping[str, Mapping[str, Any]] | None, name: str) -> Any:
    """The suite's aggregate as wire JSON: the one given (``strength-aggregate.json``), else the classes
    and floor decisions the document itself carries (document version 2), else None."""
    if aggregates and name in aggregates:
        return aggregates[name]
    classes, floors = getattr(doc, "aggregate", None), getattr(doc, "floor_decisions", None)
    if classes is None and floors is None:
        return None

    def wire(value: Any) -> Any:
        if hasattr(value, "model_dump"):
            return value.model_dump(mode="json", by_alias=True)
        if isinstance(value, Mapping):
            return {str(key): wire(item) for key, item in value.items()}
        return value

    return {"classes": wire(classes) or {}, "floorDecisions": wire(floors) or {}}


def history_entry(
    at: str,
    documents: Mapping[str, SuiteStrength],
    exit_code: int,
    *,
    flow_run_id: str | None = None,
    flow_run_name: str | None = None,
    aggregates: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """One run in the history file: when (UTC, to the second), which flow run, the gate's exit code,
    and per suite its vector, aggregate and floor decisions per class, and each probe's outcome."""
    aggregates = aggregates or {}
    return {
        "historyVersion": HISTORY_VERSION,
        "at": at,
        "flowRunId": flow_run_id,
        "flowRunName": flow_run_name,
        "exitCode": exit_code,
        "suites": {
            name: {
                "contractId": doc.contract_id,
                "strength": doc.strength.model_dump(mode="json", by_alias=True),
                "aggregateRefusal": doc.aggregate_refusal,
                "classes": floor_view(aggregate_of(doc, aggregates, name)),
                "probes": {
                    pid: {
                        "class": probe.probe_class + (" (clean)" if probe.expected_clean else ""),
                        "verdict": probe.verdict or "Invalid",
                        "preflight": probe.preflight,
                    }
                    for pid, probe in sorted(doc.probes.items())
                },
            }
            for name, doc in sorted(documents.items())
        },
    }


class HistoryUnreadable(FlowInputError):
    """``strength-history.json`` is not a history at all (not JSON, or not ``{"nights": [...]}``): the
    run refuses it in one line, exit 74, and leaves the file as it is for the user to repair or move."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_IO)


@dataclass(frozen=True)
class History:
    """What the history file holds: every entry as written (``entries``, malformed ones included, so an
    append never loses one), the ones the report can read (``nights``), and why the others cannot."""

    entries: tuple[Any, ...] = ()
    nights: tuple[dict[str, Any], ...] = ()
    #: ``(index in the file, what is wrong)`` per malformed entry.
    skipped: tuple[tuple[int, str], ...] = ()

    def warnings(self, path: Path) -> list[str]:
        """One line per skipped entry, naming the file and the entry's index."""
        return [f"{path}: history entry {index} skipped ({why}); it stays in the file" for index, why in self.skipped]


#: Shape of a history entry the report reads: key -> (allowed JSON types, required). Decision table:
#: ``None`` allows null; ``int`` allows a whole number only, ``float`` any number.
_ENTRY_KEYS: dict[str, tuple[tuple[Any, ...], bool]] = {
    "at": ((str,), True),
    "suites": ((dict,), True),
    "historyVersion": ((int,), False),
    "exitCode": ((int,), False),
    "flowRunId": ((str, None), False),
    "flowRunName": ((str, None), False),
}
_SUITE_KEYS: dict[str, tuple[tuple[Any, ...], bool]] = {
    "strength": ((dict,), False),
    "classes": ((dict,), False),
    "probes": ((dict,), False),
    "contractId": ((str, None), False),
    "aggregateRefusal": ((str, None), False),
}
#: One class of a recorded vector (``null`` when the suite has no probe of it).
_CLASS_KEYS: dict[str, tuple[tuple[Any, ...], bool]] = {
    "caught": ((int,), False),
    "exercised": ((int,), False),
    "rate": ((float, None), False),
}
#: One class's aggregate and floor decision (``classes.<class>``) and the floor inside it.
_FLOOR_VIEW_KEYS: dict[str, tuple[tuple[Any, ...], bool]] = {"aggregate": ((dict, None), False), "floor": ((dict, None), False)}
_FLOOR_KEYS: dict[str, tuple[tuple[Any, ...], bool]] = {"floor": ((float, None), False)}
_TYPE_NAMES = {str: "a string", dict: "an object", int: "a whole number", float: "a number", None: "null"}


def _is(value: Any, kind: Any) -> bool:
    if kind is None:
        return value is None
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _shape_problem(value: Any, keys: Mapping[str, tuple[tuple[Any, ...], bool]], where: str) -> str | None:
    """The first key of ``value`` (an object) missing or of the wrong type per ``keys``; None if none."""
    for key, (kinds, required) in keys.items():
        if key not in value:
            if required:
                return f"{where}{key}: missing"
            continue
        if not any(_is(value[key], kind) for kind in kinds):
            wanted = " or ".join(_TYPE_NAMES[kind] for kind in kinds)
            return f"{where}{key}: expected {wanted}, got {json.dumps(value[key])[:40]}"
    return None


def history_problem(entry: Any) -> str | None:
    """What keeps the report from reading one history entry (its first problem, with the key path), or
    None when the entry is well formed. Unknown keys are allowed (a later version may add some)."""
    if not isinstance(entry, dict):
        return f"not an object: {json.dumps(entry)[:40]}"
    problem = _shape_problem(entry, _ENTRY_KEYS, "")
    if problem:
        return problem
    if parse_at(entry["at"]) is None:
        return f"at: not a UTC timestamp such as 2026-12-01T02:00:13Z: {json.dumps(entry['at'])[:40]}"
    for name, suite in entry["suites"].items():
        where = f"suites.{name}."
        if not isinstance(suite, dict):
            return f"suites.{name}: expected an object, got {json.dumps(suite)[:40]}"
        problem = _shape_problem(suite, _SUITE_KEYS, where)
        for cls, value in (suite.get("strength") or {}).items():
            if problem is None and value is not None:
                problem = (_shape_problem(value, _CLASS_KEYS, f"{where}strength.{cls}.") if isinstance(value, dict)
                           else f"{where}strength.{cls}: expected an object or null")
        for cls, view in (suite.get("classes") or {}).items():
            if problem is None:
                problem = (_shape_problem(view, _FLOOR_VIEW_KEYS, f"{where}classes.{cls}.") if isinstance(view, dict)
                           else f"{where}classes.{cls}: expected an object")
            if problem is None and isinstance(view.get("floor"), dict):
                problem = _shape_problem(view["floor"], _FLOOR_KEYS, f"{where}classes.{cls}.floor.")
        for pid, probe in (suite.get("probes") or {}).items():
            if problem is None and not isinstance(probe, dict):
                problem = f"{where}probes.{pid}: expected an object"
        if problem:
            return problem
    return None


def load_history(path: Path) -> History:
    """The history file as found: a missing file is an empty history; a file that is not JSON, or not
    an object with a ``nights`` list, is ``HistoryUnreadable`` (the run stops before it could overwrite
    it); a malformed entry is kept in ``entries`` and listed in ``skipped`` (the report leaves it out)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return History()
    except UnicodeDecodeError as problem:
        raise HistoryUnreadable(f"{path}: not a strength history (not UTF-8 text: {problem.reason} at byte "
                                f"{problem.start}); left as it is: repair it or move it aside, then run again") from None
    try:
        value = json.loads(text)
    except ValueError as problem:
        raise HistoryUnreadable(f"{path}: not a strength history (not JSON: {problem}); left as it is: repair "
                                "it or move it aside, then run again") from None
    nights = value.get("nights") if isinstance(value, dict) else None
    if not isinstance(nights, list):
        raise HistoryUnreadable(f'{path}: not a strength history (expected an object with a "nights" list); left '
                                "as it is: repair it or move it aside, then run again")
    kept, skipped = [], []
    for index, entry in enumerate(nights):
        problem = history_problem(entry)
        if problem is None:
            kept.append(entry)
        else:
            skipped.append((index, problem))
    return History(tuple(nights), tuple(kept), tuple(skipped))


def read_history(path: Path) -> list[dict[str, Any]]:
    """The runs on record the report can read (malformed entries left out; ``load_history``)."""
    return list(load_history(path).nights)


def append_history(path: Path, entry: Mapping[str, Any]) -> History:
    """Append one run, keep the newest ``HISTORY_LIMIT`` entries (a malformed one stays in place and
    ages out like any other: never dropped on its own), write the file, return what it now holds."""
    found, new = load_history(path), dict(entry)
    entries = [*found.entries, new][-HISTORY_LIMIT:]
    write_atomically(path, (json.dumps({"nights": entries}, indent=1) + "\n").encode("utf-8"))
    dropped = len(found.entries) + 1 - len(entries)
    skipped = tuple((index - dropped, why) for index, why in found.skipped if index >= dropped)
    nights = tuple(e for e in entries if e is new or history_problem(e) is None)
    return History(tuple(entries), nights, skipped)


@dataclass(frozen=True)
class Change:
    """One thing that moved between two recorded runs."""

    suite: str
    probe: str | None
    what: str
    before: str
    after: str

    def describe(self) -> str:
        """``<suite> [<probe>]: <what> <before> -> <after>``."""
        where = f"{self.suite} {self.probe}" if self.probe else self.suite
        return f"{where}: {self.what} {self.before} -> {self.after}"


def _rate_text(value: Any) -> str:
    if not isinstance(value, dict):
        return "n/a"
    rate = value.get("rate")
    return f"{value.get('caught')}/{value.get('exercised')} ({'-' if rate is None else f'{rate:.2f}'})"


def _floor_text(value: Any) -> str:
    if not isinstance(value, dict) or not isinstance(value.get("floor"), dict):
        return "n/a"
    floor = value["floor"]
    bound = "" if floor.get("floor") is None else f" {floor['floor']:g}"
    return f"{floor.get('decision')}{bound} ({floor.get('basis')})"


def changes_between(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """Everything that moved from one recorded run to the next: suites and probes added or removed,
    verdicts, pre-flight outcomes, strength rates, aggregates' floor decisions and refusals."""
    changes: list[Change] = []
    old_suites, new_suites = before.get("suites", {}), after.get("suites", {})
    for name in sorted(set(old_suites) | set(new_suites)):
        old, new = old_suites.get(name), new_suites.get(name)
        if old is None or new is None:
            changes.append(Change(name, None, "suite", "absent" if old is None else "present",
                                  "absent" if new is None else "present"))
            continue
        for cls in CHART_CLASSES:
            was, now = _rate_text(old.get("strength", {}).get(cls)), _rate_text(new.get("strength", {}).get(cls))
            if was != now:
                changes.append(Change(name, None, f"{cls} strength", was, now))
        if "classes" in old and "classes" in new:
            for cls in VECTOR_CLASSES:
                was = _floor_text(old["classes"].get(cls))
                now = _floor_text(new["classes"].get(cls))
                if was != now:
                    changes.append(Change(name, None, f"{cls} floor decision", was, now))
        if "aggregateRefusal" in old and old.get("aggregateRefusal") != new.get("aggregateRefusal"):
            changes.append(Change(name, None, "aggregate", str(old.get("aggregateRefusal") or "accepted"),
                                  str(new.get("aggregateRefusal") or "accepted")))
        if "probes" not in old or "probes" not in new:
            continue  # an entry of the first shape recorded vectors only
        old_probes, new_probes = old["probes"], new["probes"]
        for pid in sorted(set(old_probes) | set(new_probes)):
            was, now = old_probes.get(pid), new_probes.get(pid)
            if was is None or now is None:
                changes.append(Change(name, pid, "probe", "absent" if was is None else "present",
                                      "absent" if now is None else "present"))
                continue
            for key, label in (("verdict", "verdict"), ("preflight", "pre-flight")):
                if was.get(key) != now.get(key):
                    changes.append(Change(name, pid, label, str(was.get(key)), str(now.get(key))))
    return changes


def parse_at(value: Any) -> datetime | None:
    """A history timestamp (``2026-12-01T02:00:13Z``, or a bare date) as an aware UTC datetime."""
    text = str(value or "")
    for pattern in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%MZ", "%Y-%m-%d"):
        try:
            return datetime.strptime(text, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def distinct_lines(lines: Sequence[str]) -> list[str]:
    """Each distinct line once, in first-seen order, with ``(×n)`` when it repeated."""
    counts: dict[str, int] = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    return [line + (f" (×{n})" if n > 1 else "") for line, n in counts.items()]
