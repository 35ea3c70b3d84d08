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
from flows.strength_report import (
    HISTORY_FILE,
    REPORT_FILE,
    RunCounts,
    StrengthReport,
    artifact_key,
    contract_table_rows,
    history_entry,
    read_history,
    render_html,
    summary_markdown,
    write_html_report,
)
from tests.flows.strength_samples import document_from_baseline_entry, tea_baseline, tea_documents

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
    """Three nights: test-review strength falling from 9/9 to 7/9 while nfr stays unexercised."""
    data = tea_baseline(conformance)
    nights = []
    for day, caught in (("2026-11-27", 9), ("2026-11-28", 8), ("2026-11-29", 7)):
        data["test-review"]["strength"]["defect"] = {"exercised": 9, "caught": caught, "rate": caught / 9}
        docs = {name: document_from_baseline_entry(name, data[name]) for name in ("test-review", "nfr")}
        nights.append(history_entry(f"{day}T02:00:00Z", docs, 0))
    return nights


def _report(conformance, tmp_path, gate=None, history=()) -> StrengthReport:
    documents = tea_documents(conformance)
    gate = gate or GateResult(0)
    counts = RunCounts(legs_spawned=3, legs_cached=160, scores_run=2, scores_cached=57, spawned_seconds=4.2)
    return StrengthReport("2026-11-30T02:00:00Z", documents, gate, counts, tuple(history))


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
    assert "- test-review P-004: verdict moved CONCERNS -&gt; FAIL" in text
    assert "3 leg(s) run and 160 answered from cache" in text
    assert "2 probe(s) re-scored and 57 answered from cache" in text
    assert "| test-review | tea-test-review-behavioral | 11 | 9/9 (1.00) | 0/0 (-) | n/a |" in text


def test_history_appends_nights_and_survives_a_corrupt_file(conformance, tmp_path):
    path = tmp_path / HISTORY_FILE
    assert read_history(path) == []
    path.write_text("{not json")
    assert read_history(path) == []
    report = _report(conformance, tmp_path)
    write_html_report(tmp_path, report)
    write_html_report(tmp_path, report)
    nights = read_history(path)
    assert len(nights) == 2 and nights[0]["suites"]["test-review"]["strength"]["defect"]["caught"] == 9


def test_html_is_self_contained(conformance, tmp_path):
    text = render_html(_report(conformance, tmp_path, history=_nights(conformance)))
    assert "<svg" in text and "<style>" in text
    # No external asset: no src/href attribute, no url(...) in the CSS, no @import.
    assert not re.search(r"""\b(src|href)\s*=|url\(|@import""", text)
    assert "Across nights" in text


def test_the_report_renders_in_headless_chromium(conformance, tmp_path, chromium):
    gate = GateResult(1, [Move("measured", "test-review", "P-004", "verdict", "CONCERNS", "FAIL")])
    out = Path(os.environ.get(SCREENSHOT_DIR_VARIABLE) or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    (out / HISTORY_FILE).write_text(json.dumps({"nights": _nights(conformance)}))
    page = write_html_report(out, _report(conformance, tmp_path, gate))
    assert page == out / REPORT_FILE

    dom = _dump_dom(chromium, page, tmp_path / "dom-profile")
    # The parsed page holds both charts and one probe table per contract.
    assert dom.count("<svg") == 2
    assert dom.count("<table>") == 15
    assert "test-review P-004: verdict moved CONCERNS -&gt; FAIL" in dom

    png = out / "strength-report.png"
    _screenshot(chromium, page, png)
    image = PIL.open(png).convert("RGB")
    assert image.size == (1280, 1400)
    colors = image.getcolors(maxcolors=1 << 20)
    painted = {rgb for _, rgb in colors}
    # The defect bars (#2563eb) and gameability bars (#d97706) were painted, and the gate banner
    # of a measured move (#fef3c7) too: the SVG and CSS rendered, not just the text.
    for rgb in ((0x25, 0x63, 0xEB), (0xD9, 0x77, 0x06), (0xFE, 0xF3, 0xC7)):
        assert rgb in painted, f"colour {rgb} not found in {png}"
