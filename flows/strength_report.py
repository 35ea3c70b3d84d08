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

Rendering is pure (documents in, text out); only ``publish_artifacts`` talks to Prefect and only
``write_html_report`` and ``mutations_of`` touch files.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from evalquality_core.artifacts.contract_strength import VECTOR_CLASSES, GeneratedTrialStrength, SuiteStrength
from evalquality_core.artifacts.evidence import ClassStrength, StrengthVector
from evalquality_core.printable import html_literal, markdown_literal, printable
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
_PALETTE = ("#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed", "#0891b2", "#be185d", "#4d7c0f")


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


def _floor_view(aggregate: Mapping[str, Any] | None) -> dict[str, Any]:
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
                "classes": _floor_view(aggregate_of(doc, aggregates, name)),
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


# ---------------------------------------------------------------------------------------------- html

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px;color:#111827;background:#f9fafb}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px} h3{font-size:15px;margin:18px 0 6px}
.sub{color:#4b5563;margin:0 0 16px}
.gate,.since{padding:10px 14px;border-radius:6px;margin:12px 0;font-weight:600}
.gate.ok,.since.same{background:#dcfce7;border:1px solid #16a34a} .gate.measured{background:#fef3c7;border:1px solid #d97706}
.gate.env{background:#fee2e2;border:1px solid #dc2626} .since.moved{background:#eff6ff;border:1px solid #2563eb}
.gate ul,.since ul{margin:6px 0 0;font-weight:400}
table{border-collapse:collapse;background:#fff;margin:6px 0 12px;font-size:13px}
th,td{border:1px solid #d1d5db;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6}
.badge{display:inline-block;padding:1px 7px;border-radius:9px;font-weight:600;font-size:12px;white-space:nowrap}
.b-PASS{background:#dcfce7;color:#166534} .b-CONCERNS{background:#fef3c7;color:#92400e}
.b-FAIL{background:#fee2e2;color:#991b1b} .b-WAIVED{background:#dbeafe;color:#1e40af}
.b-Invalid,.b-refused{background:#ffedd5;color:#9a3412;border:1px dashed #ea580c}
.b-meets{background:#dcfce7;color:#166534} .b-does-not-meet{background:#fee2e2;color:#991b1b}
.b-undeclared{background:#f3f4f6;color:#374151}
.warn{background:#fff7ed;border:1px solid #ea580c;border-radius:6px;padding:8px 12px;margin:8px 0;color:#9a3412}
.warn{display:block;margin-top:4px;padding:3px 6px;font-size:12px}
.sub{color:#6b7280}
.card{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:12px 16px;margin:12px 0}
svg text{font-family:inherit}
pre.diff{background:#f8fafc;border:1px solid #e5e7eb;padding:6px 8px;font-size:12px;overflow-x:auto;margin:4px 0}
.diff .add{color:#166534;background:#f0fdf4} .diff .del{color:#991b1b;background:#fef2f2} .diff .hunk{color:#6b7280}
details summary{cursor:pointer}
.filters{margin:8px 0 4px} .filters label{margin-right:10px;font-size:13px;cursor:pointer}
.filters input{margin-right:3px}
"""

#: The statuses a probe can have in the report, in filter order; each has a badge colour.
STATUSES: tuple[str, ...] = ("PASS", "WAIVED", "CONCERNS", "FAIL", "Invalid")


def _filter_css() -> str:
    rules = [f"#f-{status}:checked ~ main .probe:not(.s-{status}){{display:none}}" for status in STATUSES]
    return "\n".join(rules)


def _badge(text: str, kind: str | None = None) -> str:
    kind = kind or text
    mark = "&#9888; " if kind in ("Invalid", "refused") else ""
    return f'<span class="badge b-{html_literal(kind)}">{mark}{html_literal(text)}</span>'


def _bar_chart(documents: Mapping[str, SuiteStrength]) -> str:
    """Horizontal bars: one group per contract, one bar per charted class, labelled caught/exercised."""
    names = sorted(documents)
    # Room for the longest suite name at ~7 px a character (12 px font), so no label is clipped.
    label_w, bar_w, row_h, pad = max(120, 7 * max(len(n) for n in names) + 16), 360, 18, 28
    height = pad * 2 + len(names) * (row_h * len(CHART_CLASSES) + 12)
    width = label_w + bar_w + 150
    out = [f'<svg role="img" aria-label="Strength per contract" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">']
    for tick in (0, 0.25, 0.5, 0.75, 1):
        x = label_w + tick * bar_w
        out.append(f'<line x1="{x:.1f}" y1="{pad - 6}" x2="{x:.1f}" y2="{height - pad + 4}" stroke="#e5e7eb"/>')
        out.append(f'<text x="{x:.1f}" y="{pad - 10}" font-size="11" text-anchor="middle" fill="#6b7280">{tick:g}</text>')
    y = pad
    for name in names:
        classes = vector_classes(documents[name].strength)
        out.append(f'<text x="{label_w - 8}" y="{y + row_h}" font-size="12" text-anchor="end">{html_literal(name)}</text>')
        for index, cls in enumerate(CHART_CLASSES):
            value = classes[cls]
            by = y + index * row_h
            if value is None or value.rate is None:
                out.append(f'<rect x="{label_w}" y="{by + 3}" width="4" height="{row_h - 6}" fill="#d1d5db"/>')
            else:
                out.append(f'<rect x="{label_w}" y="{by + 3}" width="{max(value.rate * bar_w, 2):.1f}" '
                           f'height="{row_h - 6}" fill="{_PALETTE[index]}"><title>{html_literal(name)} {cls} '
                           f'{format_class(value)}</title></rect>')
            text = f"{cls}: {format_class(value)}"
            tx = label_w + (value.rate * bar_w if value and value.rate is not None else 0) + 6
            out.append(f'<text x="{tx:.1f}" y="{by + row_h - 5}" font-size="11" fill="#374151">{html_literal(text)}</text>')
        y += row_h * len(CHART_CLASSES) + 12
    out.append("</svg>")
    return "".join(out)


def _combined_rate(strength: Mapping[str, Any]) -> float | None:
    """Caught over exercised across the charted classes of one run's vector (null when none exercised)."""
    caught = exercised = 0
    for cls in CHART_CLASSES:
        value = strength.get(cls)
        if isinstance(value, dict):
            caught += int(value.get("caught", 0))
            exercised += int(value.get("exercised", 0))
    return None if exercised == 0 else caught / exercised


def parse_at(value: Any) -> datetime | None:
    """A history timestamp (``2026-12-01T02:00:13Z``, or a bare date) as an aware UTC datetime."""
    text = str(value or "")
    for pattern in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%MZ", "%Y-%m-%d"):
        try:
            return datetime.strptime(text, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


#: Dash patterns and marker shapes, so lines that lie on each other stay distinguishable.
_DASHES = ("", "7 3", "2 3", "10 3 2 3", "4 4", "1 2")
_MARKERS = ("circle", "square", "diamond", "triangle")


def _marker(shape: str, x: float, y: float, color: str, title: str) -> str:
    tip = f"<title>{html_literal(title)}</title>"
    if shape == "square":
        return f'<rect x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7" height="7" fill="{color}">{tip}</rect>'
    if shape == "diamond":
        points = f"{x:.1f},{y - 4.5:.1f} {x + 4.5:.1f},{y:.1f} {x:.1f},{y + 4.5:.1f} {x - 4.5:.1f},{y:.1f}"
        return f'<polygon points="{points}" fill="{color}">{tip}</polygon>'
    if shape == "triangle":
        points = f"{x:.1f},{y - 4.5:.1f} {x + 4.5:.1f},{y + 3.5:.1f} {x - 4.5:.1f},{y + 3.5:.1f}"
        return f'<polygon points="{points}" fill="{color}">{tip}</polygon>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{color}">{tip}</circle>'


def _history_chart(nights: Sequence[Mapping[str, Any]]) -> str:
    """Lines across runs on a real time axis: one per contract, its combined defect+gameability rate.

    Runs are placed by their UTC timestamps (two runs minutes apart sit close together), labelled with
    date and time. Contracts with equal rates would hide each other, so each line is offset by a pixel
    or two and drawn with its own dash pattern and marker shape; gaps where a rate is null.
    """
    suites = sorted({name for night in nights for name in night.get("suites", {})})
    times = [parse_at(night.get("at")) for night in nights]
    left, top, plot_w, plot_h = 48, 16, 640, 220
    legend_w = 7 * max((len(n) for n in suites), default=0) + 60
    width, height = left + plot_w + 40 + legend_w, max(top + plot_h + 56, top + 16 * len(suites) + 16)
    known = [t for t in times if t is not None]
    first, last = (min(known), max(known)) if known else (None, None)
    span = (last - first).total_seconds() if first and last else 0.0

    def x_of(i: int) -> float:
        moment = times[i]
        if moment is None or first is None or span <= 0:
            return left + (plot_w * i / (len(nights) - 1) if len(nights) > 1 else plot_w / 2)
        return left + plot_w * (moment - first).total_seconds() / span

    def y_of(rate: float) -> float:
        return top + plot_h * (1 - rate)

    out = [f'<svg role="img" aria-label="Strength across runs" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">']
    for tick in (0, 0.25, 0.5, 0.75, 1):
        out.append(f'<line x1="{left}" y1="{y_of(tick):.1f}" x2="{left + plot_w}" y2="{y_of(tick):.1f}" stroke="#e5e7eb"/>')
        out.append(f'<text x="{left - 6}" y="{y_of(tick) + 4:.1f}" font-size="11" text-anchor="end" fill="#6b7280">{tick:g}</text>')
    labelled: list[float] = []
    for i, moment in enumerate(times):
        x = x_of(i)
        if any(abs(x - other) < 70 for other in labelled):
            continue  # labels never overlap; every run still has its marker (and a tooltip with its time)
        labelled.append(x)
        day = html_literal(f"{moment:%Y-%m-%d}" if moment else str(nights[i].get("at", ""))[:10])
        clock = html_literal(f"{moment:%H:%M}Z" if moment else "")
        out.append(f'<line x1="{x:.1f}" y1="{top + plot_h}" x2="{x:.1f}" y2="{top + plot_h + 4}" stroke="#9ca3af"/>')
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 16}" font-size="10" text-anchor="middle" fill="#6b7280">{day}</text>')
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 28}" font-size="10" text-anchor="middle" fill="#6b7280">{clock}</text>')
    for index, name in enumerate(suites):
        color = _PALETTE[index % len(_PALETTE)]
        dash = _DASHES[index % len(_DASHES)]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        shape = _MARKERS[index % len(_MARKERS)]
        offset = (index - (len(suites) - 1) / 2) * 1.5  # overlapping lines sit side by side
        segment: list[str] = []
        segments: list[list[str]] = []
        for i, night in enumerate(nights):
            entry = night.get("suites", {}).get(name)
            rate = _combined_rate(entry.get("strength", {})) if isinstance(entry, dict) else None
            if rate is None:
                if segment:
                    segments.append(segment)
                segment = []
                continue
            x, y = x_of(i), y_of(rate) + offset
            segment.append(f"{x:.1f},{y:.1f}")
            out.append(_marker(shape, x, y, color, f"{name} {night.get('at', '')}: {rate:.2f}"))
        if segment:
            segments.append(segment)
        for points in segments:
            if len(points) > 1:
                out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" stroke-opacity="0.85"'
                           f'{dash_attr} points="{" ".join(points)}"/>')
        ly, lx = top + 4 + index * 16, left + plot_w + 40
        out.append(f'<line x1="{lx}" y1="{ly + 5}" x2="{lx + 22}" y2="{ly + 5}" stroke="{color}" stroke-width="3"{dash_attr}/>')
        out.append(_marker(shape, lx + 11, ly + 5, color, name))
        out.append(f'<text x="{lx + 28}" y="{ly + 9}" font-size="11">{html_literal(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def _since_block(history: Sequence[Mapping[str, Any]]) -> str:
    """The top section: what moved since the previous recorded run, or one line saying nothing did."""
    if len(history) < 2:
        return '<div class="since same" id="since">First recorded run: nothing earlier to compare with.</div>'
    before, now = history[-2], history[-1]
    run = str(before.get("flowRunName") or "")
    who = f", flow run {html_literal(run)}" if run else ""
    when = html_literal(str(before.get("at", "")))
    changes = changes_between(before, now)
    if not changes:
        return f'<div class="since same" id="since">No change since the previous run ({when}{who}).</div>'
    items = "".join(f"<li>{html_literal(change.describe())}</li>" for change in changes)
    count = f"{len(changes)} change{'s' if len(changes) != 1 else ''}"
    return f'<div class="since moved" id="since">{count} since the previous run ({when}{who}):<ul>{items}</ul></div>'


def _gate_block(gate: GateResult) -> str:
    css = {0: "ok", 1: "measured"}.get(gate.exit_code, "env")
    title = {0: "Matches the baseline", 1: "A verdict moved"}.get(gate.exit_code, "Could not measure, or the environment moved")
    items = "".join(f"<li>{html_literal(line)}</li>" for line in gate.lines())
    return f'<div class="gate {css}">Gate against the committed baseline: exit {gate.exit_code}, {html_literal(title)}<ul>{items}</ul></div>'


def _class_cell(value: ClassStrength | None, view: Mapping[str, Any] | None) -> str:
    """One class of one contract: the run's vector, the aggregate's numbers and its floor decision."""
    parts = [html_literal(format_class(value))]
    aggregate = (view or {}).get("aggregate")
    if isinstance(aggregate, dict):
        comparable = "" if aggregate.get("comparable") else ", not comparable"
        parts.append(f"aggregate {aggregate.get('caught')}/{aggregate.get('exercised')} of "
                     f"{aggregate.get('eligible')} eligible{comparable}")
    floor = (view or {}).get("floor")
    if isinstance(floor, dict):
        bound = "" if floor.get("floor") is None else f" floor {floor['floor']:g}"
        parts.append(f"{_badge(str(floor.get('decision')))}{html_literal(bound)} "
                     f"<span class=\"sub\">{html_literal(str(floor.get('basis')))}</span>")
    return "<td>" + "<br>".join(parts) + "</td>"


def _verdict_counts(doc: SuiteStrength) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for probe in doc.probes.values():
        counts[probe.verdict or "Invalid"] = counts.get(probe.verdict or "Invalid", 0) + 1
    return counts


def _contract_table(documents: Mapping[str, SuiteStrength], aggregates: Mapping[str, Mapping[str, Any]]) -> str:
    """One row per contract: probes per verdict, each class's strength, aggregate and floor decision."""
    head = "".join(f"<th>{h}</th>" for h in ("contract", "probes by verdict", *VECTOR_CLASSES, "aggregate"))
    rows = []
    for name, doc in sorted(documents.items()):
        counts = _verdict_counts(doc)
        badges = " ".join(_badge(f"{status} {n}", status) for status, n in counts.items() if n)
        if doc.probes and counts["Invalid"] == len(doc.probes):
            badges += ('<div class="warn">every probe of this contract is Invalid: it measured nothing '
                       "this run (see each probe's basis)</div>")
        view = _floor_view(aggregate_of(doc, aggregates, name))
        classes = vector_classes(doc.strength)
        cells = "".join(_class_cell(classes[cls], view.get(cls)) for cls in VECTOR_CLASSES)
        if doc.aggregate_refusal:
            aggregate = f'{_badge("refused")}<br><span class="sub">{html_literal(doc.aggregate_refusal)}</span>'
        elif aggregate_of(doc, aggregates, name) is not None:
            aggregate = "accepted"
        else:
            aggregate = '<span class="sub">none (no evidence minted)</span>'
        gaps = ", ".join(doc.unsatisfied_coverage_rules)
        gap_line = f'<br><span class="sub">unsatisfied coverage: {html_literal(gaps)}</span>' if gaps else ""
        rows.append(
            f'<tr><td><b>{html_literal(name)}</b><br><span class="sub">{html_literal(doc.contract_id)}</span>{gap_line}</td>'
            f"<td>{badges}</td>{cells}<td>{aggregate}</td></tr>"
        )
    return f'<table class="contracts"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def mutations_of(suite_dir: Path) -> dict[str, dict[str, Any]]:
    """A suite's declared mutations by probe id (``mutations/*.json``); unreadable files are skipped."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted((suite_dir / "mutations").glob("*.json")) if (suite_dir / "mutations").is_dir() else ():
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(value, dict) and isinstance(value.get("probeId"), str):
            found[value["probeId"]] = value
    return found


def mutation_diff(mutation: Mapping[str, Any]) -> str:
    """The planted change as a unified diff of its ``find`` → ``replace`` text, against its target file."""
    target = str(mutation.get("target") or "system")
    lines = difflib.unified_diff(
        str(mutation.get("find", "")).splitlines(keepends=True),
        str(mutation.get("replace", "")).splitlines(keepends=True),
        fromfile=f"a/{target}", tofile=f"b/{target}", n=2,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _diff_html(diff: str) -> str:
    out = []
    for line in diff.splitlines():
        css = "add" if line.startswith("+") and not line.startswith("+++") else (
            "del" if line.startswith("-") and not line.startswith("---") else ("hunk" if line.startswith("@@") else ""))
        out.append(f'<span class="{css}">{html_literal(line)}</span>' if css else html_literal(line))
    return '<pre class="diff">' + "\n".join(out) + "</pre>"


def distinct_lines(lines: Sequence[str]) -> list[str]:
    """Each distinct line once, in first-seen order, with ``(×n)`` when it repeated."""
    counts: dict[str, int] = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    return [line + (f" (×{n})" if n > 1 else "") for line, n in counts.items()]


def catch_summary(probe_id: str, evidence: Mapping[str, Any] | None) -> tuple[str, str]:
    """(which oracle caught it, or why not; the trial votes) from the probe's evidence."""
    if not evidence:
        return "not scored: no evidence was minted (Invalid; see the basis)", "-"
    outcomes = [o for o in evidence.get("outcomes", []) if o.get("probeId") == probe_id]
    caught = sorted({str(o.get("oracleId")) for o in outcomes if o.get("state") == "caught"})
    reduced = next((r for r in evidence.get("reducedProbeOutcomes", []) if r.get("probeId") == probe_id), None)
    votes = "-"
    if reduced:
        tally: dict[str, int] = {}
        for vote in reduced.get("trialVotes", []):
            tally[str(vote.get("state"))] = tally.get(str(vote.get("state")), 0) + 1
        threshold = reduced.get("catchThreshold")
        votes = ", ".join(f"{state} {n}" for state, n in sorted(tally.items())) or "none"
        votes += f" of {reduced.get('validCount')} valid trial(s)"
        if threshold is not None:
            votes += f"; catch threshold {threshold:g}"
    if caught:
        return "caught by " + ", ".join(caught), votes
    states: dict[str, set[str]] = {}
    for outcome in outcomes:
        states.setdefault(str(outcome.get("state")), set()).add(str(outcome.get("oracleId")))
    if not states:
        return "not caught: no oracle addressed this probe", votes
    return "not caught: " + "; ".join(f"{state} ({', '.join(sorted(ids))})" for state, ids in sorted(states.items())), votes


def relative_href(path: str) -> str:
    """A link to a file beside the report: ``./`` and each segment percent-encoded, so a suite folder
    named ``javascript:alert(1)`` is a path, never a URL scheme, and ``?``/``#`` in a name stay in it."""
    return "./" + quote(path, safe="/")


def _probe_rows(name: str, doc: SuiteStrength, details: Mapping[str, ProbeDetail]) -> list[str]:
    rows = []
    for pid, probe in sorted(doc.probes.items()):
        status = probe.verdict or "Invalid"
        detail = details.get(f"{name}/{pid}") or ProbeDetail()
        mutation = detail.mutation
        cls = probe.probe_class + (" (clean control)" if probe.expected_clean else "")
        description = html_literal(str(mutation.get("description"))) if mutation else (
            "no planted mutation (clean control)" if probe.expected_clean else "no mutation declared")
        if detail.evidence is not None or probe.verdict is None:
            caught, votes = catch_summary(pid, detail.evidence)
        else:
            caught, votes = "-", "-"  # scored, but its evidence is not at hand (the document alone)
        basis = "<br>".join(html_literal(line) for line in distinct_lines(probe.basis)) or "-"
        qualification = ", ".join(sorted(set(probe.qualification or []))) or "-"
        links = []
        if detail.evidence_href:
            links.append(f'<a href="{html_literal(relative_href(detail.evidence_href))}">evidence JSON</a>')
        if detail.task_run_url:
            links.append(f'<a href="{html_literal(detail.task_run_url)}">Prefect task run</a>')
        elif detail.task_run_id:
            links.append(f"task run {html_literal(detail.task_run_id)}")
        diff = ""
        if mutation:
            operator = html_literal(str(mutation.get("operator", "")))
            diff = f"<p>operator {operator}, target {html_literal(str(mutation.get('target', '')))}</p>" + _diff_html(
                mutation_diff(mutation))
        rows.append(
            f'<tr class="probe s-{html_literal(status)}"><td>{_badge(status)}</td><td>{html_literal(pid)}</td>'
            f"<td>{html_literal(cls)}</td><td>{html_literal(probe.preflight)}</td>"
            f"<td><details><summary>{description}</summary>{diff}</details></td>"
            f"<td>{html_literal(caught)}</td><td>{html_literal(votes)}</td><td>{basis}</td>"
            f"<td>{html_literal(qualification)}</td><td>{' &middot; '.join(links) or '-'}</td></tr>"
        )
    return rows


_PROBE_HEAD = ("status", "probe", "class", "pre-flight", "mutation", "caught?", "trial votes", "basis",
               "qualification", "links")


def _probe_section(name: str, doc: SuiteStrength, details: Mapping[str, ProbeDetail]) -> str:
    head = "".join(f"<th>{h}</th>" for h in _PROBE_HEAD)
    rows = "".join(_probe_rows(name, doc, details))
    return (f'<div class="card"><h3>{html_literal(name)} &mdash; {html_literal(doc.contract_id)}</h3>'
            f"<table class=\"probes\"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
            f"{survived_section(doc)}</div>")


def survived_section(doc: SuiteStrength) -> str:
    """Issue 18: the suite's generated strength and every Survived generated mutant with its diff (the
    defects the contract would let through); empty for a suite that does not opt in."""
    line = doc.generated_strength
    if line is None:
        return ""
    interval = "" if line.interval95 is None else f" [{line.interval95[0]:.2f}, {line.interval95[1]:.2f}]"
    score = "n/a" if line.score is None else f"{line.score:.2f}{interval}"
    kind = f"a sample of {line.valid} of {line.population} valid mutants, seed {line.seed}" if line.sampled else "every valid mutant"
    parts = [f'<h4 id="survived-{html_literal(doc.suite)}">Generated mutants: kill score {line.detected}/{line.valid} = '
             f"{html_literal(score)} ({html_literal(kind)}); {len(line.survived)} survived</h4>"]
    if line.evaluator is not None:
        parts.append(evaluator_trials_block(line.evaluator))
    for mutant in line.survived:
        diff = mutation_diff({"target": mutant.target, "find": mutant.find, "replace": mutant.replace})
        parts.append(f"<details><summary>{html_literal(mutant.mutant_id)} &middot; {html_literal(mutant.mutator_name)} "
                     f"&middot; {html_literal(mutant.target)}:{mutant.line} &mdash; {html_literal(mutant.reason)}</summary>"
                     f"{_diff_html(diff)}</details>")
    return "".join(parts)


def _detection_text(caught: int, exercised: int, rate: float | None, interval: list[float] | None) -> str:
    shown = "n/a" if rate is None else f"{rate:.2f}"
    bounds = "" if interval is None else f" [{interval[0]:.2f}, {interval[1]:.2f}]"
    return f"{caught}/{exercised} = {shown}{bounds}"


def evaluator_trials_block(trials: GeneratedTrialStrength) -> str:
    """The evaluator's strength over the sampled generated mutants: detection and agreement with the oracles
    (Wilson intervals), then one row per sampled mutant, its oracle verdict beside the evaluator's."""
    detection, agreement = trials.detection, trials.agreement
    sampled = ", ".join(f"{n} {name}" for name, n in trials.sampled.items())
    strata = "; ".join(f"on {name} mutants {_detection_text(e.caught, e.exercised, e.rate, e.interval95)}"
                       for name, e in trials.by_oracle_verdict.items())
    head = (f"<p>Evaluator trials on {len(trials.mutants)} sampled mutants ({html_literal(sampled)}; seed {trials.seed}, "
            f"{trials.trials_per_mutant} trials each): detection "
            f"{_detection_text(detection.caught, detection.exercised, detection.rate, detection.interval95)} "
            f"({html_literal(strata)}); agreement with the oracles "
            f"{_detection_text(agreement.agree, agreement.compared, agreement.rate, agreement.interval95)}</p>")
    rows = "".join(
        f"<tr><td>{html_literal(m.mutant_id)}</td><td>{html_literal(m.oracle_verdict)}</td>"
        f"<td>{html_literal(m.evaluator_verdict or 'not exercised')}</td><td>{m.caught_count}/{m.valid_count}</td>"
        f"<td>{'n/a' if m.agrees is None else ('yes' if m.agrees else 'no')}</td></tr>"
        for m in trials.mutants
    )
    return (head + '<table class="probes"><thead><tr><th>mutant</th><th>oracles</th><th>evaluator</th>'
            f"<th>detected in</th><th>agree</th></tr></thead><tbody>{rows}</tbody></table>")


def render_html(report: StrengthReport) -> str:
    """The whole report as one HTML document with inline CSS and SVG (no external asset of any kind)."""
    run = ""
    if report.flow_run_name or report.flow_run_id:
        run = f" &middot; flow run {html_literal(report.flow_run_name or '')} ({html_literal(report.flow_run_id or '?')})"
    history = list(report.history)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>Contract strength report</title>',
        f"<style>{_CSS}\n{_filter_css()}</style></head><body>",
        # The filter's radio buttons precede <main> so CSS alone can hide the other statuses.
        '<input type="radio" name="status" id="f-all" checked hidden>'
        + "".join(f'<input type="radio" name="status" id="f-{s}" hidden>' for s in STATUSES),
        "<main>",
        f"<h1>Contract strength</h1><p class=\"sub\">Run at {html_literal(report.at)}{run} &middot; "
        f"{html_literal(report.counts.sentence())}</p>",
        "<h2>Since the previous run</h2>",
        _since_block(history),
        "<h2>Gate</h2>",
        _gate_block(report.gate),
        "<h2>Per contract</h2>",
    ]
    if report.documents:
        parts += [_contract_table(report.documents, report.aggregates), _bar_chart(report.documents)]
    else:
        parts.append("<p>No suite ran.</p>")
    if len(history) > 1:
        parts += ["<h2>Across runs</h2>",
                  "<p class=\"sub\">Caught over exercised, defect and gameability probes together, "
                  "at each run's time (UTC).</p>",
                  _history_chart(history)]
    labels = ['<label for="f-all">all</label>'] + [f'<label for="f-{s}">{_badge(s)}</label>' for s in STATUSES]
    parts.append("<h2>Probes</h2>")
    parts.append('<div class="filters">Show: ' + "".join(labels) + "</div>")
    parts += [_probe_section(name, doc, report.details) for name, doc in sorted(report.documents.items())]
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


def write_html_report(out_dir: Path, report: StrengthReport, warn: Callable[[str], None] | None = None) -> Path:
    """Append this run to the history beside the report, render with it, write the HTML; its path.

    A malformed history entry is left out of the report with one line to ``warn`` (default: stderr)
    naming the file and the entry's index; a history file that is not one is ``HistoryUnreadable``
    and neither it nor the report is written."""
    history_path = out_dir / HISTORY_FILE
    entry = history_entry(
        report.at, report.documents, report.gate.exit_code,
        flow_run_id=report.flow_run_id, flow_run_name=report.flow_run_name, aggregates=report.aggregates,
    )
    recorded = append_history(history_path, entry)
    for line in recorded.warnings(history_path):
        (warn or _to_stderr)(line)
    full = StrengthReport(
        report.at, report.documents, report.gate, report.counts, recorded.nights,
        report.flow_run_id, report.flow_run_name, report.aggregates, report.details,
    )
    path = out_dir / REPORT_FILE
    write_atomically(path, render_html(full).encode("utf-8"))
    return path


def _to_stderr(line: str) -> None:
    # The history file is ours, but a hand- or target-edited entry may quote anything: shown escaped.
    print(printable(line), file=sys.stderr)
