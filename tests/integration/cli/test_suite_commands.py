"""``eval-quality suite init|check|generate|trials|digest`` and ``eval-quality explain``, run as a user runs
them: real child processes, from a temporary folder outside the checkout, on a suite that lives there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalquality_core.coverage.rules import COVERAGE_RULES
from evalquality_core.suite.load import corpus_digest
from tests.cli.suite_cli import eq, one_line

# The module fixture (``suite init``) serves every test here: one worker builds it once (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("suite-commands")

PROJECT_ROOT = Path(__file__).resolve().parents[3]
@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``suite init`` once, in a folder outside the checkout; tests copy it before changing anything."""
    where = tmp_path_factory.mktemp("byo")
    proc = eq("suite", "init", "my-notes", cwd=where)
    assert proc.returncode == 0, proc.stderr
    assert "next: eval-quality suite check my-notes" in proc.stdout
    return where / "my-notes"


def copy_of(starter: Path, tmp_path: Path) -> Path:
    target = tmp_path / "suite"
    shutil.copytree(starter, target)
    return target


@pytest.mark.slow
def test_init_writes_a_suite_every_check_holds_for(starter: Path) -> None:
    proc = eq("suite", "check", "my-notes", cwd=starter.parent)
    assert proc.returncode == 0, proc.stderr
    steps = [line.split(":")[0] for line in proc.stdout.splitlines()]
    assert steps == [f"ok   {name}" for name in
                     ("folder", "staging", "mutations", "contract", "registry", "evaluator", "probes", "generated", "trials")]
    # The starter's probes are authored-only; init filled their derived fields and stored three trials each.
    probe = json.loads((starter / "probes" / "P-001.json").read_text())
    assert probe["qualification"]["rollbackVerified"] is True
    assert probe["qualification"]["mutatedFailEvidence"]["path"] == "evidence/P-001/mutant.json"
    assert sorted(p.name for p in (starter / "trials" / "P-002").iterdir()) == [
        "preflight-verdict.json", "trial-1", "trial-2", "trial-3"]


@pytest.mark.slow
def test_init_writes_every_artifact_at_the_newest_stamp(starter: Path) -> None:
    """Issue 11: what the CLI writes is contract 7, probe 6, sealed run record 8, pre-flight verdict 2."""
    from evalquality_core.artifacts.probe import Probe
    from evalquality_core.artifacts.run_record import SealedRunRecord
    from tests.corpus.test_stamps import artifacts_under, assert_newest_stamp, model_of

    written = artifacts_under(starter)
    assert {Probe, SealedRunRecord} <= {model_of(path) for path in written}
    for path in written:
        assert_newest_stamp(path)


@pytest.mark.slow
def test_generate_check_is_up_to_date_and_digest_is_the_flows_corpus_digest(starter: Path) -> None:
    proc = eq("suite", "generate", str(starter), "--check", cwd=starter.parent)
    assert proc.returncode == 0 and "up to date" in proc.stdout, proc.stderr
    digest = eq("suite", "digest", "my-notes", cwd=starter.parent)
    assert digest.returncode == 0 and digest.stdout == corpus_digest(starter) + "\n"
    from tasks.suite_run import corpus_digest_of

    assert digest.stdout.strip() == corpus_digest_of(starter)


@pytest.mark.slow
def test_a_starter_probe_scores_pass_through_the_score_command(starter: Path, tmp_path: Path) -> None:
    trials = starter / "trials" / "P-001"
    records = [arg for n in (1, 2, 3) for arg in ("--record", str(trials / f"trial-{n}" / "sealed-run-record.json"))]
    digest = eq("suite", "digest", str(starter), cwd=tmp_path).stdout.strip()
    out = tmp_path / "evidence.json"
    proc = eq("score", *records, "--contract", str(starter / "contract.json"), "--probe", str(starter / "probes" / "P-001.json"),
              "--preflight-verdict", str(trials / "preflight-verdict.json"), "--policy", str(starter / "scoring-policy.json"),
              "--isolation-manifest", str(trials / "trial-1" / "isolation-manifest.json"),
              "--evaluator-configuration", str(trials / "trial-1" / "evaluator-configuration.json"),
              "--corpus-digest", digest, "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    artifact = json.loads(out.read_text())
    assert (artifact["contractVerdict"], artifact["verdictBasis"]) == ("PASS", [])
    assert artifact["strength"]["vector"]["defect"] == {"caught": 1, "exercised": 1, "rate": 1}
    assert artifact["scoringVersionInputs"]["corpusDigest"] == digest


@pytest.mark.slow
def test_a_stale_suite_is_reported_by_generate_check_and_by_check(starter: Path, tmp_path: Path) -> None:
    suite = copy_of(starter, tmp_path)
    fixture = suite / "fixtures" / "three-notes" / "notes.json"
    fixture.write_text(fixture.read_text().replace("milk, eggs, flour", "milk, eggs, rye flour"))
    proc = eq("suite", "generate", str(suite), "--check", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "stale:" in proc.stdout
    one_line(proc, 1, "suite generate:", "stale", "eval-quality suite generate")
    check = eq("suite", "check", str(suite), cwd=tmp_path)
    one_line(check, 2, "suite check: generated:", "fix: run `eval-quality suite generate DIR`")


@pytest.mark.slow
def test_check_names_the_first_problem_and_its_fix(starter: Path, tmp_path: Path) -> None:
    suite = copy_of(starter, tmp_path)
    mutation = suite / "mutations" / "store-write-deletion.json"
    declared = json.loads(mutation.read_text())
    declared["find"] = "    persist(store)\n"
    mutation.write_text(json.dumps(declared))
    proc = eq("suite", "check", str(suite), cwd=tmp_path)
    one_line(proc, 2, "suite check: mutations:", "store-write-deletion.json", "occurs 0 times", "fix:")
    assert proc.stdout.splitlines() == [line for line in proc.stdout.splitlines() if line.startswith("ok   ")]
    assert len(proc.stdout.splitlines()) == 2  # folder and staging held before it


@pytest.mark.slow
def test_a_probe_missing_hand_written_fields_is_named_field_by_field(starter: Path, tmp_path: Path) -> None:
    suite = copy_of(starter, tmp_path)
    path = suite / "probes" / "P-003.json"
    probe = json.loads(path.read_text())
    del probe["rationale"], probe["qualification"]["noKnownDefectStatement"]
    path.write_text(json.dumps(probe))
    for command in (("suite", "check", str(suite)), ("suite", "generate", str(suite))):
        line = one_line(eq(*command, cwd=tmp_path), 2, "Probe.rationale", "Probe.qualification.noKnownDefectStatement")
        assert "more)" not in line


@pytest.mark.slow
def test_check_refuses_a_probe_the_qualification_gate_refuses() -> None:
    """Our trace suite's artifact-channel probes are refused on purpose; check says so, with the code."""
    proc = eq("suite", "check", str(PROJECT_ROOT / "corpus" / "suites" / "trace"), cwd=PROJECT_ROOT.parent)
    one_line(proc, 2, "suite check: probes:", "P-001.json", "condition-artifact-channel-contract-local")


def test_init_never_overwrites_and_bad_paths_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("keep me")
    one_line(eq("suite", "init", "taken", cwd=tmp_path), 2, "suite init:", "taken", "never overwrites")
    assert (tmp_path / "taken" / "mine.txt").read_text() == "keep me"
    one_line(eq("suite", "check", "nowhere", cwd=tmp_path), 2, "suite check:", "nowhere", "not a suite")
    one_line(eq("suite", "digest", "nowhere", cwd=tmp_path), 2, "suite digest:", "not a suite")
    one_line(eq("suite", "trials", str(tmp_path), cwd=tmp_path), 2, "suite trials:", "not a suite")
    one_line(eq("suite", "frobnicate", cwd=tmp_path), 64, "usage:")
    one_line(eq("suite", "generate", cwd=tmp_path), 64, "usage:", "DIR")


def test_explain_names_every_rule_and_explains_one_with_the_corpus_example(tmp_path: Path) -> None:
    listed = eq("explain", cwd=tmp_path)
    assert listed.returncode == 0
    assert [line.split(":")[0] for line in listed.stdout.splitlines()[:-1]] == [rule.id for rule in COVERAGE_RULES]
    one = eq("explain", "malformed-input", cwd=tmp_path)
    assert one.returncode == 0 and "type-violating" in one.stdout and "corpus/suites/notes" in one.stdout
    one_line(eq("explain", "no-such-rule", cwd=tmp_path), 64, "usage:", "no-such-rule")


def test_explain_contract_lists_exactly_the_contracts_gaps(tmp_path: Path) -> None:
    suites = PROJECT_ROOT / "corpus" / "suites"
    review = eq("explain", "--contract", str(suites / "review" / "contract.json"), cwd=tmp_path)
    assert review.returncode == 0
    assert review.stdout.splitlines()[0].endswith(
        "4 coverage gap(s): success-indicator-separation, whole-body, malformed-input, sibling-cross-check")
    notes = eq("explain", "--contract", str(suites / "notes" / "contract.json"), cwd=tmp_path)
    assert notes.returncode == 0 and notes.stdout.strip().endswith("no coverage gap")
