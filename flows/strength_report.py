"""The strength report people read: Prefect artifacts on every run, and a self-contained HTML file.

Prefect artifacts (style.md §3.6, prefect.md §6): one table per contract (probe, class, pre-flight
outcome, verdict, basis) and one markdown summary with every strength vector, the leg and score
counts, and the gate's moves. The HTML report (``strength-report.html``) carries inline CSS and
inline SVG only, so it opens from a CI artifact store or a mail attachment with no network: a bar
chart of each contract's strength this night and, when earlier nights are on record in
``strength-history.json`` beside it, a line chart of each contract's strength across nights.

Rendering is pure (documents in, text out); only ``publish_artifacts`` talks to Prefect and only
``write_html_report`` touches files.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.output import write_atomically
from flows.strength_baseline import GateResult
from flows.strength_document import VECTOR_CLASSES, ClassStrength, StrengthVector, SuiteStrength

REPORT_FILE = "strength-report.html"
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
        """The one-line cost summary ("N leg(s) run and M answered from cache ...", harness.md A.6)."""
        collapsed = f" ({self.legs_collapsed} collapsed onto an identical leg)" if self.legs_collapsed else ""
        return (
            f"{self.legs_spawned} leg(s) run and {self.legs_cached} answered from cache{collapsed}, "
            f"{self.spawned_seconds:.1f}s spent in legs; "
            f"{self.scores_run} probe(s) re-scored and {self.scores_cached} answered from cache"
        )


@dataclass(frozen=True)
class StrengthReport:
    """Everything one night's report shows."""

    at: str
    documents: Mapping[str, SuiteStrength]
    gate: GateResult
    counts: RunCounts
    history: Sequence[Mapping[str, Any]] = field(default_factory=tuple)


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
                "basis": "; ".join(probe.basis) if probe.basis else "-",
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
    lines += [f"- {html.escape(line)}" for line in report.gate.lines()]
    lines += ["", f"Cost: {report.counts.sentence()}.", ""]
    lines += ["| suite | contract | probes | " + " | ".join(VECTOR_CLASSES) + " |"]
    lines += ["|---|---|---|" + "---|" * len(VECTOR_CLASSES)]
    for name, doc in sorted(report.documents.items()):
        cells = [format_class(v) for v in vector_classes(doc.strength).values()]
        lines.append(f"| {name} | {doc.contract_id} | {doc.probe_count} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def publish_artifacts(report: StrengthReport) -> None:
    """Publish one table artifact per contract and the markdown summary to the current Prefect run."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    for name, doc in sorted(report.documents.items()):
        create_table_artifact(
            table=contract_table_rows(doc),
            key=artifact_key("strength", name),
            description=f"Contract {doc.contract_id} (suite {name}): per-probe outcome and verdict",
        )
    create_markdown_artifact(
        markdown=summary_markdown(report),
        key="contract-strength-summary",
        description="Strength vector per contract, legs and scores run vs cached, baseline gate",
    )


# ------------------------------------------------------------------------------------------- history


def history_entry(at: str, documents: Mapping[str, SuiteStrength], exit_code: int) -> dict[str, Any]:
    """One night in the history file: when, the gate's exit code, and each suite's vector."""
    return {
        "at": at,
        "exitCode": exit_code,
        "suites": {
            name: {
                "contractId": doc.contract_id,
                "strength": doc.strength.model_dump(mode="json", by_alias=True),
            }
            for name, doc in sorted(documents.items())
        },
    }


def read_history(path: Path) -> list[dict[str, Any]]:
    """The nights on record; a missing or unreadable file is an empty history (the report is advisory)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    nights = value.get("nights") if isinstance(value, dict) else None
    return [n for n in nights if isinstance(n, dict) and isinstance(n.get("suites"), dict)] if isinstance(nights, list) else []


def append_history(path: Path, entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Append one night, keep the newest ``HISTORY_LIMIT``, write the file, return the nights."""
    nights = (read_history(path) + [dict(entry)])[-HISTORY_LIMIT:]
    write_atomically(path, (json.dumps({"nights": nights}, indent=1) + "\n").encode("utf-8"))
    return nights


# ---------------------------------------------------------------------------------------------- html

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px;color:#111827;background:#f9fafb}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px} h3{font-size:15px;margin:18px 0 6px}
.sub{color:#4b5563;margin:0 0 16px}
.gate{padding:10px 14px;border-radius:6px;margin:12px 0;font-weight:600}
.gate.ok{background:#dcfce7;border:1px solid #16a34a} .gate.measured{background:#fef3c7;border:1px solid #d97706}
.gate.env{background:#fee2e2;border:1px solid #dc2626}
.gate ul{margin:6px 0 0;font-weight:400}
table{border-collapse:collapse;background:#fff;margin:6px 0 12px;font-size:13px}
th,td{border:1px solid #d1d5db;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6}
td.v-FAIL{color:#b91c1c;font-weight:600} td.v-Invalid{color:#6b7280;font-style:italic}
td.v-PASS,td.v-CONCERNS{color:#065f46}
.card{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:12px 16px;margin:12px 0}
svg text{font-family:inherit}
"""


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
        out.append(f'<text x="{label_w - 8}" y="{y + row_h}" font-size="12" text-anchor="end">{html.escape(name)}</text>')
        for index, cls in enumerate(CHART_CLASSES):
            value = classes[cls]
            color = _PALETTE[index]
            by = y + index * row_h
            if value is None or value.rate is None:
                out.append(f'<rect x="{label_w}" y="{by + 3}" width="4" height="{row_h - 6}" fill="#d1d5db"/>')
                text = f"{cls}: {format_class(value)}"
            else:
                out.append(f'<rect x="{label_w}" y="{by + 3}" width="{max(value.rate * bar_w, 2):.1f}" '
                           f'height="{row_h - 6}" fill="{color}"><title>{html.escape(name)} {cls} '
                           f'{format_class(value)}</title></rect>')
                text = f"{cls}: {format_class(value)}"
            tx = label_w + (value.rate * bar_w if value and value.rate is not None else 0) + 6
            out.append(f'<text x="{tx:.1f}" y="{by + row_h - 5}" font-size="11" fill="#374151">{html.escape(text)}</text>')
        y += row_h * len(CHART_CLASSES) + 12
    out.append("</svg>")
    return "".join(out)


def _combined_rate(strength: Mapping[str, Any]) -> float | None:
    """Caught over exercised across the charted classes of one night's vector (null when none exercised)."""
    caught = exercised = 0
    for cls in CHART_CLASSES:
        value = strength.get(cls)
        if isinstance(value, dict):
            caught += int(value.get("caught", 0))
            exercised += int(value.get("exercised", 0))
    return None if exercised == 0 else caught / exercised


def _history_chart(nights: Sequence[Mapping[str, Any]]) -> str:
    """Lines across nights: one per contract, its combined defect+gameability rate; gaps where null."""
    suites = sorted({name for night in nights for name in night.get("suites", {})})
    left, top, plot_w, plot_h = 48, 16, 640, 220
    legend_w = 7 * max((len(n) for n in suites), default=0) + 60
    width, height = left + plot_w + 40 + legend_w, max(top + plot_h + 48, top + 16 * len(suites) + 16)
    n = len(nights)

    def x_of(i: int) -> float:
        return left + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    def y_of(rate: float) -> float:
        return top + plot_h * (1 - rate)

    out = [f'<svg role="img" aria-label="Strength across nights" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">']
    for tick in (0, 0.25, 0.5, 0.75, 1):
        out.append(f'<line x1="{left}" y1="{y_of(tick):.1f}" x2="{left + plot_w}" y2="{y_of(tick):.1f}" stroke="#e5e7eb"/>')
        out.append(f'<text x="{left - 6}" y="{y_of(tick) + 4:.1f}" font-size="11" text-anchor="end" fill="#6b7280">{tick:g}</text>')
    for i, night in enumerate(nights):
        if n <= 8 or i in (0, n - 1) or i % max(1, n // 6) == 0:
            label = html.escape(str(night.get("at", ""))[:10])
            out.append(f'<text x="{x_of(i):.1f}" y="{top + plot_h + 18}" font-size="10" text-anchor="middle" fill="#6b7280">{label}</text>')
    for index, name in enumerate(suites):
        color = _PALETTE[index % len(_PALETTE)]
        # Past the palette, lines repeat a colour with a dash pattern so two contracts never look alike.
        dash = "" if index < len(_PALETTE) else ' stroke-dasharray="6 3"'
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
            segment.append(f"{x_of(i):.1f},{y_of(rate):.1f}")
            out.append(f'<circle cx="{x_of(i):.1f}" cy="{y_of(rate):.1f}" r="3" fill="{color}">'
                       f'<title>{html.escape(name)} {html.escape(str(night.get("at", "")))}: {rate:.2f}</title></circle>')
        if segment:
            segments.append(segment)
        for points in segments:
            if len(points) > 1:
                out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{" ".join(points)}"/>')
        ly = top + 4 + index * 16
        lx = left + plot_w + 40
        out.append(f'<line x1="{lx}" y1="{ly + 5}" x2="{lx + 18}" y2="{ly + 5}" stroke="{color}" stroke-width="3"{dash}/>')
        out.append(f'<text x="{lx + 24}" y="{ly + 9}" font-size="11">{html.escape(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def _gate_block(gate: GateResult) -> str:
    css = {0: "ok", 1: "measured"}.get(gate.exit_code, "env")
    title = {0: "Matches the baseline", 1: "A verdict moved"}.get(gate.exit_code, "Could not measure, or the environment moved")
    items = "".join(f"<li>{html.escape(line)}</li>" for line in gate.lines())
    return f'<div class="gate {css}">Gate exit {gate.exit_code}: {html.escape(title)}<ul>{items}</ul></div>'


def _contract_section(name: str, doc: SuiteStrength) -> str:
    vector = " &middot; ".join(f"{cls}: {html.escape(format_class(v))}" for cls, v in vector_classes(doc.strength).items())
    rows = []
    for row in contract_table_rows(doc):
        cells = []
        for key, value in row.items():
            if key == "verdict":
                cells.append(f'<td class="v-{html.escape(value)}">{html.escape(value)}</td>')
            elif key in ("basis", "qualification"):
                # One sentence or code per line: the ladder's reasons read as a list, not a run-on.
                probe = doc.probes[row["probe"]]
                lines = (probe.basis if key == "basis" else sorted(set(probe.qualification or []))) or ["-"]
                cells.append("<td>" + "<br>".join(html.escape(line) for line in lines) + "</td>")
            else:
                cells.append(f"<td>{html.escape(value)}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    head = "".join(f"<th>{html.escape(k)}</th>" for k in next(iter(contract_table_rows(doc)), {}))
    gaps = ", ".join(doc.unsatisfied_coverage_rules) or "none"
    aggregate = (
        f"<br>aggregate-strength refused: {html.escape(doc.aggregate_refusal)}" if doc.aggregate_refusal else ""
    )
    return (
        f'<div class="card"><h3>{html.escape(name)} &mdash; {html.escape(doc.contract_id)}</h3>'
        f"<p>{vector}<br>Unsatisfied coverage rules: {html.escape(gaps)}{aggregate}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def render_html(report: StrengthReport) -> str:
    """The whole report as one HTML document with inline CSS and SVG (no external asset of any kind)."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>Contract strength report</title>',
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Contract strength</h1><p class=\"sub\">Run at {html.escape(report.at)} &middot; "
        f"{html.escape(report.counts.sentence())}</p>",
        _gate_block(report.gate),
        "<h2>Strength per contract</h2>",
        _bar_chart(report.documents) if report.documents else "<p>No suite ran.</p>",
    ]
    if len(report.history) > 1:
        parts += ["<h2>Across nights</h2>",
                  "<p class=\"sub\">Caught over exercised, defect and gameability probes together.</p>",
                  _history_chart(report.history)]
    parts.append("<h2>Probes</h2>")
    parts += [_contract_section(name, doc) for name, doc in sorted(report.documents.items())]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_html_report(out_dir: Path, report: StrengthReport) -> Path:
    """Append this night to the history beside the report, render with it, write the HTML; its path."""
    nights = append_history(out_dir / HISTORY_FILE, history_entry(report.at, report.documents, report.gate.exit_code))
    full = StrengthReport(report.at, report.documents, report.gate, report.counts, tuple(nights))
    path = out_dir / REPORT_FILE
    path.write_text(render_html(full), encoding="utf-8")
    return path
