"""Generated mutants in the nightly (issue 18, M4): the suite.toml opt-in, the "generated strength" line of
contract-strength.json, and the HTML report's Survived-mutants section with diffs."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalquality_core.artifacts.contract_strength import generated_strength_of
from evalquality_core.suite.load import StagingError
from evalquality_core.suite.mutants import NIGHTLY_SAMPLE, nightly_settings
from flows.strength_report import REPORT_FILE
from tasks.strength_document import read_suite_strength

ROOT = Path(__file__).resolve().parents[3]


def _suite_with(tmp_path: Path, table: str) -> Path:
    suite = tmp_path / "notes"
    (suite / "system").mkdir(parents=True)
    (suite / "fixtures" / "three-notes").mkdir(parents=True)
    (suite / "contract.json").write_text("{}")
    (suite / "suite.toml").write_text(f'system-id = "notes-cli"\n[fixtures]\nthree-notes = "."\n{table}')
    return suite


def test_the_opt_in_reads_its_table_with_defaults_and_refuses_a_bad_one(tmp_path: Path) -> None:
    assert nightly_settings(_suite_with(tmp_path / "a", "")) is None
    assert nightly_settings(_suite_with(tmp_path / "b", "[mutants]\nnightly = false\n")) is None
    chosen = nightly_settings(_suite_with(tmp_path / "c", '[mutants]\nnightly = true\nseed = 3\noperators = ["comparison"]\n'))
    assert chosen == {"sample": NIGHTLY_SAMPLE, "seed": 3, "per_line": None, "operators": ["comparison"], "trials_sample": None}
    trialled = nightly_settings(_suite_with(tmp_path / "d", "[mutants]\nnightly = true\ntrials-sample = 4\n"))
    assert trialled is not None and trialled["trials_sample"] == 4
    for bad in ("[mutants]\nsample = 4\n", "[mutants]\nnightly = true\nsample = 0\n",
                "[mutants]\nnightly = true\ntrials-sample = 0\n", '[mutants]\nnightly = true\ntrials-sample = "2"\n',
                '[mutants]\nnightly = true\noperators = ["nope"]\n', "[mutants]\nnightly = true\ncolour = 1\n"):
        with pytest.raises(StagingError, match="suite.toml"):
            nightly_settings(_suite_with(tmp_path / str(abs(hash(bad))), bad))


def test_the_generated_line_lists_only_survivors() -> None:
    summary = {
        "killScore": {"detected": 1, "valid": 2, "score": 0.5, "interval95": [0.09, 0.91], "sampled": True, "population": 9},
        "classes": {"Observable": 2},
        "mutants": [
            {"mutantId": "m-1", "mutatorName": "ReturnValue", "target": "system/x.py", "line": 3, "find": "a\n",
             "replace": "b\n", "reason": "Observable: ...", "status": "Killed"},
            {"mutantId": "m-2", "mutatorName": "StringLiteral", "target": "system/x.py", "line": 5, "find": "c\n",
             "replace": "d\n", "reason": "Unobservable: ...", "status": "Survived"},
        ],
    }
    line = generated_strength_of(summary, 7)
    assert [m.mutant_id for m in line.survived] == ["m-2"] and line.seed == 7 and line.population == 9


@pytest.fixture()
def home(tmp_path: Path) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALQUALITY_HOME", str(tmp_path / "home"))
        patch.delenv("EVALQUALITY_SUITES", raising=False)
        yield tmp_path / "home"


@pytest.mark.slow
def test_an_opted_in_suite_gets_its_generated_line_and_survivors_in_the_report(tmp_path: Path, home: Path) -> None:
    from tests.integration.flows.test_contract_strength import make_corpus, run

    corpus = make_corpus(tmp_path)
    settings = corpus / "suites" / "notes" / "suite.toml"
    settings.write_text(settings.read_text() + "\n[mutants]\nnightly = true\nsample = 3\nseed = 11\ntrials-sample = 2\n")
    out = tmp_path / "out"
    result = run(corpus, out)
    assert result.exit_code == 0, result.summary_lines()
    document = read_suite_strength(out / "notes" / "contract-strength.json")
    line = document.generated_strength
    assert line is not None and line.sampled and line.valid + line.classes.get("Stillborn", 0) == 3 and line.seed == 11
    summary = json.loads((out / "mutants" / "notes" / "mutants-summary.json").read_text())
    assert (line.detected, line.valid) == (summary["killScore"]["detected"], summary["killScore"]["valid"])
    survived = [m for m in summary["mutants"] if m["status"] == "Survived"]
    assert [m.mutant_id for m in line.survived] == [m["mutantId"] for m in survived]
    page = (out / REPORT_FILE).read_text()
    assert f"Generated mutants: kill score {line.detected}/{line.valid}" in page
    for mutant in survived:
        assert mutant["mutantId"] in page
        assert any(f'<span class="add">+{html.escape(row)}' in page for row in mutant["replace"].splitlines() if row.strip())
    raw = json.loads((out / "notes" / "contract-strength.json").read_text())
    assert "generatedStrength" in raw
    # trials-sample: the evaluator's trials on sampled mutants, in the summary, the document and the report.
    trials = summary["evaluatorTrials"]
    assert line.evaluator is not None and len(line.evaluator.mutants) == len(trials["rows"]) > 0
    assert [m.mutant_id for m in line.evaluator.mutants] == [row["mutantId"] for row in trials["rows"]]
    assert line.evaluator.detection.caught == trials["strength"]["detection"]["caught"]
    assert raw["generatedStrength"]["evaluator"]["agreement"]["compared"] == trials["strength"]["agreement"]["compared"]
    for row in trials["rows"]:
        assert (out / "mutants" / "notes" / "trials" / row["mutantId"] / "trial-1" / "sealed-run-record.json").is_file()
        assert row["mutantId"] in page
    assert f"Evaluator trials on {len(trials['rows'])} sampled mutants" in page
