"""The synthetic-suite generator for benchmarks (corpus/tools/synthesize.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from corpus.tools.synthesize import synthesize
from tasks.suites import load_suites

from .conftest import PROJECT_ROOT, SUITES

#: The templates: every corpus suite that does not borrow its probes from a sibling.
SUITE_NAMES = [name for name in sorted(p.name for p in SUITES.iterdir() if (p / "contract.json").is_file())
               if "probes-from" not in (SUITES / name / "suite.toml").read_text()]


def test_synthetic_suites_load_with_their_own_system_digests(tmp_path: Path) -> None:
    count = len(SUITE_NAMES) * 2  # every template twice
    written = synthesize(count, tmp_path / "suites")
    assert len(written) == count
    suites, problems = load_suites(tmp_path / "suites")
    assert problems == []
    assert len(suites) == count
    clean_digests = [suite.staged_digests[None] for suite in suites]
    assert len(set(clean_digests)) == count  # no two suites stage the same system: legs never collapse across them
    corpus, _ = load_suites(SUITES)
    by_template = {suite.name: suite for suite in corpus}
    for suite in suites:
        template = by_template[suite.name.rsplit("-", 1)[0]]
        # the seeded defects carried over: one staged variant per declared mutation, as in the template
        assert set(suite.staged_digests) == set(template.staged_digests)
        assert suite.probe_ids() == template.probe_ids()
        assert suite.staged_digests[None] != template.staged_digests[None]


def test_baseline_predicts_each_synthetic_probe_from_its_template(tmp_path: Path) -> None:
    synthesize(4, tmp_path / "suites")
    recorded = json.loads((PROJECT_ROOT / "corpus" / "expected-preflight.json").read_text())["probes"]
    predicted = json.loads((tmp_path / "suites" / "expected-preflight.json").read_text())["probes"]
    assert predicted
    for name, row in predicted.items():
        suite, probe = name.split("/")
        assert row == recorded[f"{suite.rsplit('-', 1)[0]}/{probe}"]


def test_a_smaller_run_removes_the_suites_of_a_larger_one(tmp_path: Path) -> None:
    synthesize(5, tmp_path)
    synthesize(2, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir() if (p / "contract.json").is_file()) == [
        f"{SUITE_NAMES[0]}-000",
        f"{SUITE_NAMES[1]}-001",
    ]


def test_command_line_refuses_a_bad_count_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "corpus.tools.synthesize", "--suites", "0", "--out", str(tmp_path)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "at least 1" in done.stderr
