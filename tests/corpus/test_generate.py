"""The generator's checks, run for real: the committed probes and evidence are what the generator
produces, the evidence shows each baseline passing and each mutation failing, and a broken
declaration is refused loudly."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

from evalquality_core.suite.generate import GenerationError, Output, designated_oracle, generate_suite
from evalquality_core.suite.load import StagingError
from tests.corpus.conftest import SUITE_NAMES, SUITES, probe_ids, read


@pytest.mark.parametrize("suite", SUITE_NAMES)
def test_evidence_shows_baseline_passing_and_mutation_failing(suite: str) -> None:
    for probe_id in probe_ids(suite):
        probe = read(SUITES / suite / "probes" / f"{probe_id}.json")
        evidence = SUITES / suite / "evidence" / probe_id
        baseline = read(evidence / "baseline.json")
        assert baseline["designatedResolution"] == "true", f"{suite} {probe_id}"
        if probe["expectedClean"]:
            # Every oracle holds: an expects-violation oracle's check (it states the failure) resolves false.
            contract = read(SUITES / suite / "contract.json")
            violation = {o["id"] for o in contract["oracles"] if o.get("polarity") == "expects-violation"}
            resolutions = baseline["oracleResolutions"]
            assert resolutions == {k: "false" if k in violation else "true" for k in resolutions}, f"{suite} {probe_id}"
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


#: What the generator derives (README "Bring your own system", step "probes"): an author never writes these.
DERIVED_TOP = ("schemaVersion", "parentDigest", "revisionCount", "systemId", "implementationDigest", "artifactDigest", "commitDigest")
DERIVED_QUALIFICATION = ("route", "mutationSource", "mutationOperator", "targetArtifact", "baselinePassEvidence",
                         "mutatedFailEvidence", "rollbackVerified", "naiveOracleSatisfiedEvidence",
                         "disciplinedOracleRejectedEvidence", "revisionCommitDigest")


def _authored_only(probe: dict) -> dict:
    authored = {k: v for k, v in probe.items() if k not in DERIVED_TOP}
    authored["qualification"] = {k: v for k, v in probe["qualification"].items() if k not in DERIVED_QUALIFICATION}
    authored["defects"] = [{k: v for k, v in d.items() if k != "oracleEvidence"} for d in probe["defects"]]
    return authored


def test_probes_with_only_their_authored_fields_are_completed_to_the_stored_bytes(tmp_path: Path) -> None:
    """The generator fills every derived field: a copy of the notes suite whose probes hold only the
    hand-written fields generates exactly the committed probes (references are relative to the suite)."""
    suite = _copy_suite(tmp_path)
    for path in sorted((suite / "probes").glob("P-*.json")):
        path.write_text(__import__("json").dumps(_authored_only(read(path)), indent=1))
    out = Output()
    generate_suite(suite, out, jobs=2)
    for probe_id in probe_ids("notes"):
        produced = out.files[suite / "probes" / f"{probe_id}.json"]
        assert produced == (SUITES / "notes" / "probes" / f"{probe_id}.json").read_bytes(), probe_id


def test_an_invalid_probe_names_every_missing_or_wrong_field(tmp_path: Path) -> None:
    suite = _copy_suite(tmp_path)
    path = suite / "probes" / "P-001.json"
    probe = _authored_only(read(path))
    del probe["rationale"], probe["behaviorId"], probe["qualification"]["expectedObservableFailure"]
    probe["probeClass"] = "defekt"
    path.write_text(__import__("json").dumps(probe))
    with pytest.raises(GenerationError) as raised:
        generate_suite(suite, Output())
    message = str(raised.value)
    assert "\n" not in message and "more)" not in message
    for field_ in ("Probe.rationale", "Probe.behaviorId", "Probe.qualification.expectedObservableFailure", "Probe.probeClass"):
        assert field_ in message, (field_, message)

