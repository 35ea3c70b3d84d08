"""The strength report: table rows, markdown summary, history, and the HTML rendered in headless Chromium.

Chromium: the test uses Debian's ``chromium`` (``/usr/bin/chromium``). Where it is missing and the test
runs as root with ``apt-get`` (every developer machine and CI here), the session fixture installs it
with ``apt-get install -y --no-install-recommends chromium`` under a file lock, so the project's own
test command brings what it needs (pip's ``playwright`` cannot download browsers on this network).
Only where it can neither be found nor installed does the test skip, saying why.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from flows.strength_baseline import GateResult, Move
from flows.strength_html import catch_summary, mutation_diff, render_html, write_html_report
from flows.strength_report import (
    HISTORY_FILE,
    REPORT_FILE,
    HistoryUnreadable,
    ProbeDetail,
    RunCounts,
    StrengthReport,
    artifact_key,
    changes_between,
    contract_table_rows,
    distinct_lines,
    history_entry,
    read_history,
    summary_markdown,
)
from tests.integration.flows.strength_samples import document_from_baseline_entry, tea_baseline, tea_documents

PIL = pytest.importorskip("PIL.Image", reason="pillow is a test extra: pip install -e '.[test]'")

_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Where to keep screenshots for a person to look at (defaults to the test's tmp_path).
SCREENSHOT_DIR_VARIABLE = "EVALQUALITY_SCREENSHOT_DIR"


def _find_chromium() -> str | None:
    for name in _CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _install_chromium() -> str:
    """Install Debian's chromium when root with apt; returns why not when it cannot."""
    if os.name != "posix" or os.geteuid() != 0:
        return "chromium is not installed and the tests do not run as root (apt-get install -y chromium)"
    if not shutil.which("apt-get"):
        return "chromium is not installed and this machine has no apt-get"
    lock_path = Path(tempfile.gettempdir()) / "evalquality-chromium-install.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # xdist workers: one installs, the others wait and re-check
        if _find_chromium():
            return ""
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        # Wait for another apt (unattended upgrades, a parallel session) rather than fail on its lock.
        wait = ["-o", "DPkg::Lock::Timeout=600"]
        for argv in (["apt-get", *wait, "update", "-q"],
                     ["apt-get", *wait, "install", "-y", "-q", "--no-install-recommends", "chromium"]):
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1200, check=False)
            if done.returncode != 0:
                return f"installing chromium failed: {' '.join(argv)}: {done.stderr.strip()[-300:]}"
    return ""


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of a headless-capable Chromium, installed from Debian's packages if need be."""
    found = _find_chromium()
    if not found:
        reason = _install_chromium()
        found = _find_chromium()
        if not found:
            pytest.skip(reason or "chromium could not be found after installing it")
    return found


def _screenshot(chromium: str, page: Path, png: Path, width: int = 1280, height: int = 1400) -> None:
    argv = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
        "--no-first-run", "--disable-dev-shm-usage", f"--window-size={width},{height}",
        f"--user-data-dir={png.parent / 'chromium-profile'}", f"--screenshot={png}", page.as_uri(),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert png.is_file(), f"chromium wrote no screenshot (rc {done.returncode}): {done.stderr[-800:]}"


def _dump_dom(chromium: str, page: Path, profile: Path) -> str:
    argv = [chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
            "--dump-dom", page.as_uri()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-800:]
    return done.stdout


def _nights(conformance) -> list[dict]:
    """Three nights: test-review strength falling from 9/9 to 7/9 while nfr stays unexercised; ci and
    trace hold the same rate every night (their lines lie on each other)."""
    data = tea_baseline(conformance)
    nights = []
    for day, caught in (("2026-11-27T02:00:05Z", 9), ("2026-11-28T02:00:07Z", 8), ("2026-11-28T02:09:41Z", 7)):
        data["test-review"]["strength"]["defect"] = {"exercised": 9, "caught": caught, "rate": caught / 9}
        docs = {name: document_from_baseline_entry(name, data[name]) for name in ("test-review", "nfr", "ci", "trace")}
        nights.append(history_entry(day, docs, 0, flow_run_id=f"run-{caught}", flow_run_name=f"nightly {day[:10]}"))
    return nights


#: A real StrengthAggregate of the reference's skill-defect evidence with declared floors (computed by the
#: core's aggregate_strength in the test that needs it).
def _aggregate(conformance) -> dict:
    from evalquality_core.aggregate.aggregate import aggregate_strength
    from evalquality_core.artifacts.base import read_artifact, to_wire
    from evalquality_core.artifacts.scoring_policy import ScoringPolicy

    chain = conformance / "latest" / "chains" / "skill-defect"
    evidence = json.loads((chain / "evidence-artifact.json").read_text())
    policy = read_artifact(ScoringPolicy, json.loads((chain / "reconstructed-inputs" / "scoring-policy.json").read_text()))
    return to_wire(aggregate_strength([evidence], {"defect": 0.8, "gameability": 0.5}, policy, engine_version="t"))


def _evidence(conformance) -> dict:
    return json.loads((conformance / "latest" / "chains" / "skill-defect" / "evidence-artifact.json").read_text())


MUTATION = {
    "probeId": "P-001",
    "operator": "store-write-deletion",
    "target": "system/notes.py",
    "description": "The patch handler answers but never persists the store: a silent write.",
    "find": "    save(store)\n    return answer(note)\n",
    "replace": "    return answer(note)\n",
}


def _report(conformance, tmp_path, gate=None, history=(), details=None, aggregates=None) -> StrengthReport:
    documents = tea_documents(conformance)
    gate = gate or GateResult(0)
    counts = RunCounts(legs_spawned=3, legs_cached=160, scores_run=2, scores_cached=57, spawned_seconds=4.2)
    return StrengthReport(
        "2026-11-30T02:00:00Z", documents, gate, counts, tuple(history), "0b7e-run", "nightly 2026-11-30",
        aggregates or {}, details or {},
    )


def test_table_rows_carry_probe_class_outcome_verdict_and_basis(conformance):
    rows = contract_table_rows(tea_documents(conformance)["ci"])
    assert [r["probe"] for r in rows] == ["P-001", "P-002", "P-003", "P-004"]
    assert rows[0] == {
        "probe": "P-001", "class": "defect", "pre-flight": "failed: seeded-fault-fired, seeded-faults-scoped",
        "legs": "3", "verdict": "Invalid", "exit": "3", "basis": rows[0]["basis"],
        "qualification": "condition-artifact-channel-contract-local",
    }
    assert "pre-flight verdict did not pass" in rows[0]["basis"]
    assert rows[3]["verdict"] == "CONCERNS" and rows[3]["class"] == "zero-action (clean)"
    assert rows[3]["qualification"] == "-"


def test_artifact_keys_are_what_prefect_accepts():
    assert artifact_key("strength", "fragment-selection/bmad-testarch-atdd") == "strength-fragment-selection-bmad-testarch-atdd"
    assert re.fullmatch(r"[a-z0-9-]+", artifact_key("Strength", "Notes API", "v2"))


def test_summary_markdown_names_vectors_counts_and_moves(conformance, tmp_path):
    gate = GateResult(1, [Move("measured", "test-review", "P-004", "verdict", "CONCERNS", "FAIL")])
    text = summary_markdown(_report(conformance, tmp_path, gate))
    assert "Gate: **exit 1**" in text
    # Names and lines are Markdown literals: every ASCII punctuation character backslash-escaped.
    assert "- test\\-review P\\-004\\: verdict moved CONCERNS \\-\\> FAIL" in text
    assert "3 legs run and 160 answered from cache" in text
    assert "2 probes re-scored and 57 answered from cache" in text
    assert "| test\\-review | tea\\-test\\-review\\-behavioral | 11 | 9/9 (1.00) | 0/0 (-) | n/a |" in text


def test_history_appends_nights_and_refuses_a_corrupt_file_without_overwriting_it(conformance, tmp_path):
    path = tmp_path / HISTORY_FILE
    assert read_history(path) == []
    report = _report(conformance, tmp_path)
    write_html_report(tmp_path, report)
    write_html_report(tmp_path, report)
    nights = read_history(path)
    assert len(nights) == 2 and nights[0]["suites"]["test-review"]["strength"]["defect"]["caught"] == 9
    path.write_text("{not json")
    with pytest.raises(HistoryUnreadable, match="not JSON"):
        write_html_report(tmp_path, report)
    assert path.read_text() == "{not json"


def test_html_is_self_contained(conformance, tmp_path):
    details = {"test-review/P-001": ProbeDetail(MUTATION, _evidence(conformance), "test-review/evidence-P-001.json", "abc")}
    text = render_html(_report(conformance, tmp_path, history=_nights(conformance), details=details))
    assert "<svg" in text and "<style>" in text
    # No external asset: no src attribute, no stylesheet or script link, no url(...) in the CSS, no @import;
    # the only links are to the evidence files beside the report.
    assert not re.search(r"""\bsrc\s*=|<link|<script|url\(|@import""", text)
    assert re.findall(r'href="([^"]*)"', text) == ["./test-review/evidence-P-001.json"]
    assert "Across runs" in text


def test_a_moved_run_lists_what_changed_and_an_unmoved_one_says_so_in_one_line(conformance):
    data = tea_baseline(conformance)
    docs = {name: document_from_baseline_entry(name, data[name]) for name in ("test-review", "ci")}
    before = history_entry("2026-11-29T02:00:04Z", docs, 0, flow_run_id="r1", flow_run_name="nightly 2026-11-29")
    assert changes_between(before, before) == []

    moved = json.loads(json.dumps(data))
    review = moved["test-review"]
    review["probes"]["P-004"]["verdict"] = "FAIL"
    review["probes"]["P-002"]["preflight"] = "failed: seeded-fault-fired"
    review["probes"]["P-099"] = dict(review["probes"]["P-001"])
    del review["probes"]["P-003"]
    review["strength"]["defect"] = {"exercised": 9, "caught": 8, "rate": 8 / 9}
    now_docs = {name: document_from_baseline_entry(name, moved[name]) for name in ("test-review",)}
    after = history_entry("2026-11-30T02:00:09Z", now_docs, 1, flow_run_id="r2")
    lines = [change.describe() for change in changes_between(before, after)]
    assert lines == [
        "ci: suite present -> absent",
        "test-review: defect strength 9/9 (1.00) -> 8/9 (0.89)",
        "test-review P-002: pre-flight passed -> failed: seeded-fault-fired",
        "test-review P-003: probe present -> absent",
        "test-review P-004: verdict CONCERNS -> FAIL",
        "test-review P-099: probe absent -> present",
    ]


def test_floor_decisions_that_moved_are_changes(conformance):
    docs = {"test-review": tea_documents(conformance)["test-review"]}
    aggregate = _aggregate(conformance)
    before = history_entry("2026-11-29T02:00:00Z", docs, 0, aggregates={"test-review": aggregate})
    met = json.loads(json.dumps(aggregate))
    met["floorDecisions"]["defect"] = {"floor": 0.8, "decision": "meets", "basis": "rate-meets-floor"}
    after = history_entry("2026-11-30T02:00:00Z", docs, 0, aggregates={"test-review": met})
    assert [c.describe() for c in changes_between(before, after)] == [
        "test-review: defect floor decision does-not-meet 0.8 (not-comparable) -> meets 0.8 (rate-meets-floor)"
    ]


def test_probe_details_name_the_catching_oracle_votes_and_the_mutation(conformance):
    caught, votes = catch_summary("P-001", _evidence(conformance))
    assert caught == "caught by O-002"
    assert votes == "caught 1 of 1 valid trial(s); catch threshold 0.5"
    assert catch_summary("P-001", None)[0].startswith("not scored")
    diff = mutation_diff(MUTATION)
    assert diff.splitlines()[:2] == ["--- a/system/notes.py", "+++ b/system/notes.py"]
    assert "-    save(store)" in diff.splitlines()
    assert distinct_lines(["resolved infrastructure-error"] * 12 + ["x"]) == ["resolved infrastructure-error (×12)", "x"]


def test_the_report_renders_in_headless_chromium(conformance, tmp_path, chromium):
    gate = GateResult(1, [Move("measured", "test-review", "P-004", "verdict", "CONCERNS", "FAIL")])
    out = Path(os.environ.get(SCREENSHOT_DIR_VARIABLE) or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    nights = _nights(conformance)
    (out / HISTORY_FILE).write_text(json.dumps({"nights": nights}))
    details = {"test-review/P-001": ProbeDetail(MUTATION, _evidence(conformance), "test-review/evidence-P-001.json", "abc")}
    report = _report(conformance, tmp_path, gate, details=details, aggregates={"test-review": _aggregate(conformance)})
    page = write_html_report(out, report)
    assert page == out / REPORT_FILE
    recorded = read_history(out / HISTORY_FILE)[-1]
    assert (recorded["at"], recorded["flowRunId"], recorded["flowRunName"]) == (
        "2026-11-30T02:00:00Z", "0b7e-run", "nightly 2026-11-30")

    dom = _dump_dom(chromium, page, tmp_path / "dom-profile")
    # The parsed page holds both charts, the aggregate table and one probe table per contract.
    assert dom.count("<svg") == 2
    assert dom.count('<table class="probes">') == 15 and dom.count('<table class="contracts">') == 1
    # This run against the previous one (7/9 on 2026-11-28 at 02:09): it moved, and says what.
    since = re.search(r'<div class="since moved" id="since">(.*?)</div>', dom, re.S)
    assert since, "the change section is missing"
    assert "since the previous run (2026-11-28T02:09:41Z, flow run nightly 2026-11-28)" in since.group(1)
    assert "test-review: defect strength 7/9 (0.78) -&gt; 9/9 (1.00)" in since.group(1)
    assert "fragment-selection/bmad-testarch-atdd: suite absent -&gt; present" in since.group(1)
    assert "test-review P-004: verdict moved CONCERNS -&gt; FAIL" in dom  # the gate, separately
    assert "does-not-meet" in dom and "not-comparable" in dom
    assert "caught by O-002" in dom and "store-write-deletion" in dom
    # Real timestamps on the time axis: the two runs of 2026-11-28 are labelled with their times.
    assert "02:00Z" in dom

    png = out / "strength-report.png"
    _screenshot(chromium, page, png)
    image = PIL.open(png).convert("RGB")
    assert image.size == (1280, 1400)
    colors = image.getcolors(maxcolors=1 << 20)
    painted = {rgb for _, rgb in colors}
    # The defect bars (#2563eb) and gameability bars (#d97706) were painted, the gate banner of a
    # measured move and the CONCERNS badges in amber (#fef3c7), the change section (#eff6ff), and the
    # Invalid badges and warnings in orange (#ffedd5, #fff7ed): the SVG and CSS rendered, not just the text.
    for rgb in ((0x25, 0x63, 0xEB), (0xD9, 0x77, 0x06), (0xFE, 0xF3, 0xC7), (0xEF, 0xF6, 0xFF), (0xFF, 0xED, 0xD5)):
        assert rgb in painted, f"colour {rgb} not found in {png}"


def test_a_contract_whose_every_probe_is_invalid_is_a_warning_not_grey(conformance, tmp_path, chromium):
    data = tea_baseline(conformance)
    data["ci"]["probes"]["P-004"].update(verdict=None, exitCode=3, strictPromotable=None, strength=None)
    documents = {"ci": document_from_baseline_entry("ci", data["ci"]), "test-review": tea_documents(conformance)["test-review"]}
    text = render_html(StrengthReport("2026-11-30T02:00:00Z", documents, GateResult(0), RunCounts()))
    assert text.count("every probe of this contract is Invalid") == 1
    (tmp_path / "r.html").write_text(text)
    _screenshot(chromium, tmp_path / "r.html", tmp_path / "r.png")
    painted = {rgb for _, rgb in PIL.open(tmp_path / "r.png").convert("RGB").getcolors(maxcolors=1 << 20)}
    # The warning box (#fff7ed), the Invalid badges (#ffedd5), and the PASS-free CONCERNS badges in amber.
    for rgb in ((0xFF, 0xF7, 0xED), (0xFF, 0xED, 0xD5), (0xFE, 0xF3, 0xC7)):
        assert rgb in painted, f"colour {rgb} not painted"


def test_the_status_filter_hides_other_probes_in_chromium(conformance, tmp_path, chromium):
    """The filter is CSS only (no script): checking a status hides every probe row of another status.

    Contract ``ci`` has three Invalid probes and one CONCERNS probe; with the FAIL filter checked (none is
    FAIL) their orange and amber row badges are no longer painted, while the contract card's badges stay.
    """
    documents = {"ci": tea_documents(conformance)["ci"]}
    report = StrengthReport("2026-11-30T02:00:00Z", documents, GateResult(0), RunCounts())
    text = render_html(report)
    assert text.count('<tr class="probe s-Invalid">') == 3 and text.count('<tr class="probe s-CONCERNS">') == 1
    pages = {"all": text, "fail": text.replace('id="f-all" checked hidden', 'id="f-all" hidden').replace(
        'id="f-FAIL" hidden', 'id="f-FAIL" checked hidden')}
    painted = {}
    for name, html_text in pages.items():
        (tmp_path / f"{name}.html").write_text(html_text)
        _screenshot(chromium, tmp_path / f"{name}.html", tmp_path / f"{name}.png")
        image = PIL.open(tmp_path / f"{name}.png").convert("RGB")
        painted[name] = {rgb: n for n, rgb in image.getcolors(maxcolors=1 << 20)}
    amber, orange = (0xFE, 0xF3, 0xC7), (0xFF, 0xED, 0xD5)
    for colour in (amber, orange):
        assert 0 < painted["fail"].get(colour, 0) < painted["all"].get(colour, 0)


def test_pass_is_painted_green_and_fail_red_in_chromium(conformance, tmp_path, chromium):
    """The verdict colours mean something: a PASS badge green (#dcfce7), a FAIL badge red (#fee2e2), a
    CONCERNS one amber (#fef3c7); none of them the neutral grey of an undeclared floor."""
    data = tea_baseline(conformance)
    probes = data["test-review"]["probes"]
    probes["P-001"].update(verdict="PASS", exitCode=0)
    probes["P-002"].update(verdict="FAIL", exitCode=2)
    documents = {"test-review": document_from_baseline_entry("test-review", data["test-review"])}
    text = render_html(StrengthReport("2026-11-30T02:00:00Z", documents, GateResult(0), RunCounts()))
    assert '<tr class="probe s-PASS">' in text and '<tr class="probe s-FAIL">' in text
    (tmp_path / "v.html").write_text(text)
    _screenshot(chromium, tmp_path / "v.html", tmp_path / "v.png")
    painted = {rgb: n for n, rgb in PIL.open(tmp_path / "v.png").convert("RGB").getcolors(maxcolors=1 << 20)}
    for name, rgb in (("PASS green", (0xDC, 0xFC, 0xE7)), ("FAIL red", (0xFE, 0xE2, 0xE2)),
                      ("CONCERNS amber", (0xFE, 0xF3, 0xC7))):
        assert rgb in painted, f"{name} {rgb} not painted"
    # Against the same contract without them, the badges add green and red (the gate banner of an
    # unmoved run is green too, so the control compares amounts).
    plain = {"test-review": tea_documents(conformance)["test-review"]}
    (tmp_path / "p.html").write_text(render_html(StrengthReport("2026-11-30T02:00:00Z", plain, GateResult(0), RunCounts())))
    _screenshot(chromium, tmp_path / "p.html", tmp_path / "p.png")
    before = {rgb: n for n, rgb in PIL.open(tmp_path / "p.png").convert("RGB").getcolors(maxcolors=1 << 20)}
    for rgb in ((0xDC, 0xFC, 0xE7), (0xFE, 0xE2, 0xE2)):
        assert painted[rgb] > before.get(rgb, 0), rgb
