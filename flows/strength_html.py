"""The HTML strength report (``strength-report.html``): one self-contained page, rendered from templates.

The page skeleton is ``flows/templates/strength-report.html`` and its style sheet
``flows/templates/strength-report.css`` (``string.Template``: no logic in the templates); the sections
(since the previous run, gate, per contract with its charts, per probe with its filter) are built here
from the run's documents. Inline CSS and inline SVG only (links go to the evidence files beside it and,
when a server is in use, to Prefect's UI), so it opens from a CI artifact store or a mail attachment with
no network. What each section shows is described in ``flows/strength_report.py``.

Every name, id, message and line a user or target wrote is shown escaped with ``html_literal`` (control
characters escaped, then ``html.escape``; evalquality_core/printable.py) before it reaches a template.
Rendering is pure (documents in, text out); only ``write_html_report`` and ``mutations_of`` touch files.
"""

from __future__ import annotations

import difflib
import functools
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any
from urllib.parse import quote

from evalquality_core.artifacts.contract_strength import VECTOR_CLASSES, GeneratedTrialStrength, SuiteStrength
from evalquality_core.artifacts.evidence import ClassStrength
from evalquality_core.printable import html_literal, printable
from flows.strength_baseline import GateResult
from flows.strength_report import (
    CHART_CLASSES,
    HISTORY_FILE,
    PALETTE,
    REPORT_FILE,
    ProbeDetail,
    StrengthReport,
    aggregate_of,
    append_history,
    changes_between,
    distinct_lines,
    floor_view,
    format_class,
    history_entry,
    parse_at,
    vector_classes,
)
from tasks.output import write_atomically


@functools.cache
def _template_text(name: str) -> str:
    """A template file shipped beside this module (package data ``flows/templates/``)."""
    return (resources.files("flows") / "templates" / name).read_text(encoding="utf-8")


def _template(name: str) -> Template:
    return Template(_template_text(name))


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
                           f'height="{row_h - 6}" fill="{PALETTE[index]}"><title>{html_literal(name)} {cls} '
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
        color = PALETTE[index % len(PALETTE)]
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
        view = floor_view(aggregate_of(doc, aggregates, name))
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
    """The whole report as one HTML document with inline CSS and SVG (no external asset of any kind).

    The page is ``templates/strength-report.html`` (``string.Template``); every value put into it is
    already escaped HTML from the section builders below, so the template itself never sees user text."""
    run = ""
    if report.flow_run_name or report.flow_run_id:
        run = f" &middot; flow run {html_literal(report.flow_run_name or '')} ({html_literal(report.flow_run_id or '?')})"
    history = list(report.history)
    if report.documents:
        contracts = _contract_table(report.documents, report.aggregates) + "\n" + _bar_chart(report.documents)
    else:
        contracts = "<p>No suite ran.</p>"
    across = ""
    if len(history) > 1:
        across = ("\n<h2>Across runs</h2>\n<p class=\"sub\">Caught over exercised, defect and gameability probes "
                  "together, at each run's time (UTC).</p>\n" + _history_chart(history))
    labels = ['<label for="f-all">all</label>'] + [f'<label for="f-{s}">{_badge(s)}</label>' for s in STATUSES]
    sections = [_probe_section(name, doc, report.details) for name, doc in sorted(report.documents.items())]
    return _template("strength-report.html").substitute(
        css=_template_text("strength-report.css"),
        filter_css=_filter_css(),
        # The filter's radio buttons precede <main> so CSS alone can hide the other statuses.
        radios='<input type="radio" name="status" id="f-all" checked hidden>'
        + "".join(f'<input type="radio" name="status" id="f-{s}" hidden>' for s in STATUSES),
        at=html_literal(report.at),
        run=run,
        counts=html_literal(report.counts.sentence()),
        since=_since_block(history),
        gate=_gate_block(report.gate),
        contracts=contracts,
        across=across,
        labels="".join(labels),
        probes="".join("\n" + section for section in sections),
    )


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
