"""Hostile suites through the real flows (issue 33): ``python -m flows.preflight`` and ``python -m
flows.contract_strength`` as child processes on a suites folder in a temp dir. Every hostile suite — a
linked ``fixtures/``, a ``probes-from`` out of the suites folder, a ``[service]`` command reading an
attribute, files nested 100k deep — is one "could not run" line naming the file, the run exits 2 (the
environment moved) and prints no traceback. A live night whose evaluator answers with JSON nested 100k deep
records that trial's fault (``malformed-answer``) and goes on: exit 1, the verdicts moved, no crash."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalquality_core.canonical import MAX_NESTING_DEPTH
from tests.integration.flows.test_live_trials import REFERENCE, TRIALS, make_corpus, use_evaluator

PROJECT = Path(__file__).resolve().parents[3]
DEEP = 100_000

pytestmark = pytest.mark.slow


def _flow(module: str, args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "EVALQUALITY_HOME": str(home)}
    for name in ("EVALQUALITY_SUITES", "EVALQUALITY_OUT", "EVALQUALITY_STRENGTH_BASELINE"):
        environment.pop(name, None)
    return subprocess.run([sys.executable, "-m", module, *args], cwd=PROJECT, env=environment, capture_output=True,
                          text=True, timeout=900, stdin=subprocess.DEVNULL)


def _copy(root: Path, source: str, name: str) -> Path:
    suite = root / name
    shutil.copytree(PROJECT / "corpus" / "suites" / source, suite)
    return suite


def hostile_suites(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A suites folder of hostile suites, and for each the text its "could not run" line must hold."""
    root = tmp_path / "corpus" / "suites"
    root.mkdir(parents=True)
    shutil.copy(PROJECT / "corpus" / "scoring-policy.json", root.parent / "scoring-policy.json")
    expected: dict[str, str] = {}

    linked = _copy(root, "notes", "linked-fixtures")
    shutil.copytree(linked / "fixtures", tmp_path / "host-fixtures")
    (tmp_path / "host-fixtures" / "three-notes" / "secret.txt").write_text("host secret\n")
    shutil.rmtree(linked / "fixtures")
    (linked / "fixtures").symlink_to(tmp_path / "host-fixtures", target_is_directory=True)
    expected["linked-fixtures"] = f"{linked / 'fixtures'}: a symlink"

    # probes-from naming a faithful copy of notes outside the suites folder
    wandering = _copy(root, "notes", "wandering")
    shutil.copytree(PROJECT / "corpus" / "suites" / "notes", tmp_path / "elsewhere")
    settings = wandering / "suite.toml"
    settings.write_text('probes-from = "../../elsewhere"\n' + settings.read_text())
    expected["wandering"] = f"{settings}: probes-from must be the name of a sibling suite folder"

    template = _copy(root, "notes-api", "attribute-template")
    targets = template / "targets.toml"
    targets.write_text(targets.read_text().replace('command = ["{python}",', 'command = ["{python.__class__}",', 1))
    expected["attribute-template"] = f"{targets}: [service] command[0] '{{python.__class__}}'"

    deep = "[" * DEEP + "]" * DEEP
    for name, file, body in (
        ("deep-contract", "contract.json", deep),
        ("deep-probe", "probes/P-001.json", deep),
        ("deep-settings", "suite.toml", f'system-id = "notes-cli"\nx = {deep}\n[fixtures]\nthree-notes = "."\n'),
        ("deep-targets", "targets.toml", f"x = {deep}\n"),
    ):
        suite = _copy(root, "notes", name)
        (suite / file).write_text(body)
        expected[name] = f"{suite / file}: nests deeper than {MAX_NESTING_DEPTH} levels"
    return root, expected


def _could_not_run(result: subprocess.CompletedProcess[str], expected: dict[str, str]) -> None:
    """Exit 2, no traceback anywhere, and one "could not run" line per hostile suite naming its file and why."""
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output[-5000:]
    assert result.returncode == 2, (result.returncode, output[-5000:])
    for name, says in expected.items():
        lines = [line for line in output.splitlines() if line.startswith(f"suite {name} could not run: ")]
        assert lines, (name, output[-5000:])
        assert says in lines[0], (name, says, lines[0])


def test_hostile_suites_are_could_not_run_lines_in_the_preflight_flow(tmp_path: Path) -> None:
    root, expected = hostile_suites(tmp_path)
    baseline = tmp_path / "expected-preflight.json"
    baseline.write_text(json.dumps({"probes": {}}))
    result = _flow("flows.preflight", ["--suites", str(root), "--out", str(tmp_path / "out"), "--baseline",
                                       str(baseline), "--concurrency", "2"], tmp_path / "home")
    _could_not_run(result, expected)
    # Nothing of the host was staged: no workspace ever held the linked folder's secret.
    assert not [p for p in (tmp_path / "home").rglob("secret.txt")]


def test_hostile_suites_are_could_not_run_lines_in_the_contract_strength_flow(tmp_path: Path) -> None:
    root, expected = hostile_suites(tmp_path)
    baseline = tmp_path / "expected-strength.json"
    baseline.write_text(json.dumps({}))
    result = _flow("flows.contract_strength", ["--suites", str(root), "--out", str(tmp_path / "out"), "--baseline",
                                               str(baseline), "--concurrency", "2"], tmp_path / "home")
    _could_not_run(result, expected)


#: What the evaluator wrapper prints instead of the reference evaluator's answer: one object nested 100k deep.
DEEP_ANSWER = "'{\"protocol\": \"eval-quality-evaluator/1\", \"findings\": ' + '[' * 100000 + ']' * 100000 + '}'"


def test_a_deep_evaluator_answer_is_that_trials_fault_not_a_crash_of_the_live_night(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path)
    use_evaluator(corpus, tmp_path, REFERENCE, transform=DEEP_ANSWER)
    out = tmp_path / "out"
    result = _flow("flows.contract_strength", ["--trials", "live", "--concurrency", "2", "--suites",
                                               str(corpus / "suites"), "--out", str(out), "--baseline",
                                               str(corpus / "expected-strength.json")], tmp_path / "home")
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "RecursionError" not in output, output[-5000:]
    assert result.returncode == 1, (result.returncode, output[-5000:])  # both verdicts moved to Invalid
    # Every trial is that trial's fault, named as such, and the night reports them (stdout, its summary).
    assert f"0 trials run and 0 answered from cache, {TRIALS} faults" in result.stdout, result.stdout[-5000:]
    flat = " ".join(result.stdout.split())  # the report table wraps long cells at the console's width
    assert f"basis: trial 1 fault: malformed-answer: stdout nests deeper than {MAX_NESTING_DEPTH} levels" in flat, (
        result.stdout[-5000:]
    )
    assert "notes P-001: verdict moved PASS -> Invalid" in result.stdout


def test_a_16_mb_suite_toml_is_parsed_once_by_a_contract_strength_night(tmp_path: Path) -> None:
    """Counted structurally, as in tests/cli/test_hostile_suites.py: the real flow in a child process whose
    ``tomllib.loads`` counts the parses of this suite.toml (it alone holds the marker). Loading, staging
    digests, every leg's staging, the floors and the scoring all ask for it; one parse answers them all."""
    from tests.cli.test_hostile_suites import COUNTING

    root = tmp_path / "corpus" / "suites"
    root.mkdir(parents=True)
    shutil.copy(PROJECT / "corpus" / "scoring-policy.json", root.parent / "scoring-policy.json")
    settings = _copy(root, "notes", "notes") / "suite.toml"
    marker = "# marker-of-the-big-suite-toml\n"
    settings.write_text(settings.read_text() + marker + ("# " + "x" * 1022 + "\n") * (16 * 1024))
    assert settings.stat().st_size > 16 * 1024 * 1024
    baseline = tmp_path / "expected-strength.json"
    baseline.write_text(json.dumps({}))
    report, driver = tmp_path / "parses.txt", tmp_path / "counting.py"
    driver.write_text(COUNTING.format(marker=marker, report=str(report)))
    environment = {**os.environ, "EVALQUALITY_HOME": str(tmp_path / "home"), "PYTHONPATH": str(PROJECT)}
    result = subprocess.run(
        [sys.executable, str(driver), "flows.contract_strength", "--suites", str(root), "--out", str(tmp_path / "out"),
         "--baseline", str(baseline)],
        cwd=PROJECT, env=environment, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
    )
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "could not run" not in output, output[-5000:]
    assert "notes (notes-cli)" in result.stdout, output[-5000:]  # the suite was measured
    assert report.read_text() == "1"
