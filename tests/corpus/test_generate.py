"""The generator's checks, run for real: the committed probes and evidence are what the generator
produces, the evidence shows each baseline passing and each mutation failing, and a broken
declaration is refused loudly."""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalquality_core.suite.generate import GenerationError, Output, designated_oracle, generate_suite
from evalquality_core.suite.load import StagingError
from tests.corpus.conftest import PROJECT_ROOT, SUITE_NAMES, SUITES, probe_ids, read


def test_generate_check_finds_every_probe_and_evidence_file_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "corpus.tools.generate", "--check"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout


@pytest.mark.parametrize("suite", SUITE_NAMES)
def test_evidence_shows_baseline_passing_and_mutation_failing(suite: str) -> None:
    for probe_id in probe_ids(suite):
        probe = read(SUITES / suite / "probes" / f"{probe_id}.json")
        evidence = SUITES / suite / "evidence" / probe_id
        baseline = read(evidence / "baseline.json")
        assert baseline["designatedResolution"] == "true", f"{suite} {probe_id}"
        if probe["expectedClean"]:
            assert set(baseline["oracleResolutions"].values()) == {"true"}
            continue
        arm = "degenerate" if probe["probeClass"] == "gameability" else "mutant"
        failed = read(evidence / f"{arm}.json")
        assert failed["designatedResolution"] == "false", f"{suite} {probe_id}"
        assert baseline["signatureMatches"] == [] and failed["signatureMatches"], f"{suite} {probe_id}"
        assert baseline["mutation"] is None and failed["mutation"] is not None
        assert baseline["systemDigest"] != failed["systemDigest"]
        if arm == "degenerate":
            assert failed["naiveCheckResolution"] == "true", "the degenerate response satisfies the naive oracle"
        else:
            assert probe["qualification"]["rollbackVerified"] is True


def test_trace_evidence_records_that_the_exit_code_discriminates_nothing() -> None:
    for probe_id in ("P-001", "P-002", "P-003"):
        evidence = SUITES / "trace" / "evidence" / probe_id
        codes = set(read(evidence / "baseline.json")["exitCodes"].values()) | set(read(evidence / "mutant.json")["exitCodes"].values())
        assert codes == {0}
        assert read(evidence / "mutant.json")["exitCodeDiscriminates"] is False


def test_review_evidence_shows_the_exit_code_separating_plant_from_clean() -> None:
    for probe_id in probe_ids("review")[:6]:
        evidence = SUITES / "review" / "evidence" / probe_id
        matched = read(evidence / "mutant.json")["signatureMatches"]
        assert [read(evidence / "baseline.json")["exitCodes"][m] for m in matched] == [1]
        assert [read(evidence / "mutant.json")["exitCodes"][m] for m in matched] == [0]
        assert read(evidence / "mutant.json")["exitCodeDiscriminates"] is True


def test_a_behaviour_with_two_oracles_has_no_designated_oracle() -> None:
    contract = read(SUITES / "notes" / "contract.json")
    probe = read(SUITES / "notes" / "probes" / "P-001.json")
    assert designated_oracle(contract, probe)["id"] == "O-001"
    widened = copy.deepcopy(contract)
    widened["behaviors"][0]["oracles"] = ["O-001", "O-002"]
    with pytest.raises(GenerationError, match="exactly one"):
        designated_oracle(widened, probe)


def _copy_suite(tmp_path: Path) -> Path:
    target = tmp_path / "notes"
    shutil.copytree(SUITES / "notes", target, ignore=shutil.ignore_patterns("trials", "evidence"))
    return target


def test_a_mutation_that_no_longer_applies_fails_the_generator(tmp_path: Path) -> None:
    suite = _copy_suite(tmp_path)
    path = suite / "mutations" / "store-write-deletion.json"
    path.write_text(path.read_text().replace("save(store)", "persist(store)"))
    with pytest.raises((GenerationError, StagingError), match="occurs 0 times"):
        generate_suite(str(suite), Output())


def test_a_mutation_the_oracle_cannot_see_fails_the_generator(tmp_path: Path) -> None:
    """A mutation that changes the system without breaking the designated oracle is not evidence."""
    suite = _copy_suite(tmp_path)
    path = suite / "mutations" / "store-write-deletion.json"
    declared = read(path)
    declared["replace"] = declared["find"].replace("    save(store)\n", "    save(store)  # unchanged behaviour\n")
    path.write_text(__import__("json").dumps(declared))
    with pytest.raises(GenerationError, match="resolves true under the mutation, not false"):
        generate_suite(str(suite), Output())
