"""The contract-strength gate (harness.md A.5) against the reference's own baseline (A.11)."""

from __future__ import annotations

import json

import pytest

from evalquality_core.faults import RuntimeFault
from flows.strength_baseline import (
    EXIT_ENVIRONMENT,
    EXIT_MATCHED,
    EXIT_MEASURED_MOVE,
    compare_with_baseline,
    project_suite,
    read_baseline,
    render_baseline,
    update_baseline,
)
from tests.integration.flows.strength_samples import document_from_baseline_entry, tea_baseline, tea_documents


@pytest.fixture
def recorded(conformance, tmp_path):
    """The reference's 15-suite baseline, written and read back through our reader."""
    path = tmp_path / "expected-strength.json"
    path.write_text(json.dumps(tea_baseline(conformance)))
    return read_baseline(path)


def _moved(conformance, suite, probe, **changes):
    data = tea_baseline(conformance)
    data[suite]["probes"][probe].update(changes)
    return {name: document_from_baseline_entry(name, entry) for name, entry in data.items()}


def test_the_reference_baseline_reads_and_projects_back_to_itself(conformance, recorded):
    assert len(recorded) == 15 and sum(len(s.probes) for s in recorded.values()) == 59
    documents = tea_documents(conformance)
    suite_wide = {"preflight", "floors", "aggregate", "floor_decisions"}  # ours only; A.11 records none
    for name, document in documents.items():
        assert all(getattr(recorded[name], field) is None for field in suite_wide)
        assert project_suite(document).model_dump(exclude=suite_wide) == recorded[name].model_dump(exclude=suite_wide)


def test_a_run_that_reproduces_every_probe_exits_0(conformance, recorded):
    result = compare_with_baseline(tea_documents(conformance), recorded)
    assert result.exit_code == EXIT_MATCHED and result.moves == []
    assert result.lines() == ["every probe matched the outcome the baseline records"]


def test_a_moved_verdict_exits_1_and_names_the_probe(conformance, recorded):
    result = compare_with_baseline(_moved(conformance, "test-review", "P-004", verdict="FAIL", exitCode=2), recorded)
    assert result.exit_code == EXIT_MEASURED_MOVE
    assert result.lines() == ["test-review P-004: verdict moved CONCERNS -> FAIL"]


def test_movement_in_the_good_direction_fails_too(conformance, recorded):
    # An Invalid test-design probe that starts passing pre-flight is still a move (harness.md A.5).
    result = compare_with_baseline(_moved(conformance, "test-design", "P-001", preflight="passed"), recorded)
    assert result.exit_code == EXIT_ENVIRONMENT
    assert result.lines() == ["test-design P-001: pre-flight moved failed: seeded-fault-fired -> passed"]


def test_a_failed_preflight_outranks_a_moved_verdict_and_names_the_check(conformance, recorded):
    data = tea_baseline(conformance)
    data["nfr"]["probes"]["P-004"].update(preflight="failed: seeded-fault-fired", verdict=None, exitCode=3)
    data["test-review"]["probes"]["P-002"].update(verdict="FAIL")
    documents = {name: document_from_baseline_entry(name, entry) for name, entry in data.items()}
    result = compare_with_baseline(documents, recorded)
    assert result.exit_code == EXIT_ENVIRONMENT
    assert result.lines() == [
        "nfr P-004: pre-flight moved passed -> failed: seeded-fault-fired",
        "nfr P-004: verdict moved CONCERNS -> Invalid",
        "test-review P-002: verdict moved CONCERNS -> FAIL",
    ]


def test_a_null_leg_count_against_a_recorded_count_is_an_environment_move(conformance, recorded):
    result = compare_with_baseline(_moved(conformance, "ci", "P-002", preflightLegs=None), recorded)
    assert result.exit_code == EXIT_ENVIRONMENT
    assert [m.what for m in result.moves] == ["planned legs"]


def test_unknown_and_vanished_probes_and_suites_are_environment_moves(conformance, recorded):
    data = tea_baseline(conformance)
    data["trace"]["probes"]["P-099"] = data["trace"]["probes"].pop("P-001")
    data["brand-new"] = data["nfr"]
    documents = {name: document_from_baseline_entry(name, entry) for name, entry in data.items()}
    result = compare_with_baseline(documents, recorded)
    assert result.exit_code == EXIT_ENVIRONMENT
    assert result.lines() == [
        "brand-new: suite moved not in the baseline -> ran",
        "trace P-001: probe moved recorded -> did not run",
        "trace P-099: probe moved not in the baseline -> ran",
    ]


def test_preflight_only_runs_do_not_compare_verdicts(conformance, recorded):
    documents = _moved(conformance, "test-review", "P-004", verdict=None)
    assert compare_with_baseline(documents, recorded, compare_verdicts=False).exit_code == EXIT_MATCHED


def test_missing_baseline_suite_that_could_not_run_and_schema_failure_exit_2(conformance, recorded):
    documents = tea_documents(conformance)
    assert compare_with_baseline(documents, None).exit_code == EXIT_ENVIRONMENT
    result = compare_with_baseline(documents, recorded, could_not_run={"nfr": "contract does not compile"})
    assert result.exit_code == EXIT_ENVIRONMENT
    assert result.lines()[0] == "could not measure: suite nfr: contract does not compile"
    result = compare_with_baseline(documents, recorded, schema_failures=["out/nfr/evidence-P-001.json"])
    assert result.exit_code == EXIT_ENVIRONMENT


def test_a_subset_run_compares_only_its_suites(conformance, recorded):
    documents = tea_documents(conformance)
    assert compare_with_baseline({"ci": documents["ci"]}, recorded).exit_code == EXIT_MATCHED


def test_a_complete_run_missing_a_recorded_suite_exits_2(conformance, recorded):
    documents = tea_documents(conformance)
    del documents["trace"]
    result = compare_with_baseline(documents, recorded, complete=True)
    assert result.exit_code == EXIT_ENVIRONMENT
    assert result.lines() == ["trace: suite moved recorded -> not found"]
    # A suite that is known not to have run is reported as such, not twice.
    result = compare_with_baseline(documents, recorded, complete=True, could_not_run={"trace": "no probes/"})
    assert result.lines() == ["could not measure: suite trace: no probes/"]


def test_update_rewrites_only_the_suites_that_ran_and_the_file_is_stable(conformance, tmp_path, recorded):
    path = tmp_path / "expected-strength.json"
    path.write_text(render_baseline(recorded))
    documents = _moved(conformance, "test-review", "P-004", verdict="FAIL")
    update_baseline(path, [documents["test-review"]])
    after = read_baseline(path)
    assert after["test-review"].probes["P-004"].verdict == "FAIL"
    assert after["nfr"] == recorded["nfr"]
    assert compare_with_baseline(documents, after).exit_code == EXIT_MATCHED
    text = path.read_text()
    update_baseline(path, [documents["test-review"]])
    assert path.read_text() == text


def test_a_malformed_baseline_is_refused_naming_the_file_and_field(conformance, tmp_path):
    data = tea_baseline(conformance)
    data["ci"]["probes"]["P-001"]["preflightLegs"] = "two"
    path = tmp_path / "expected-strength.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RuntimeFault) as caught:
        read_baseline(path)
    assert caught.value.code == "schema-parse-failure"
    assert "ci" in caught.value.artifact_path and "preflightLegs" in caught.value.artifact_path
    path.write_text('{"ci": {}, "ci": {}}')
    with pytest.raises(RuntimeFault):
        read_baseline(path)


def test_the_command_gates_documents_already_written(conformance, tmp_path, capsys):
    from flows.strength_baseline import main
    from tasks.strength_document import write_suite_strength

    out, baseline = tmp_path / "out", tmp_path / "expected-strength.json"
    for name, document in _moved(conformance, "test-review", "P-004", verdict="FAIL").items():
        write_suite_strength(document, out / name / "contract-strength.json")
    assert main(["--out", str(out), "--baseline", str(baseline)]) == EXIT_ENVIRONMENT  # no baseline yet
    baseline.write_text(json.dumps(tea_baseline(conformance)))
    assert main(["--out", str(out), "--baseline", str(baseline)]) == EXIT_MEASURED_MOVE
    assert "test-review P-004: verdict moved CONCERNS -> FAIL" in capsys.readouterr().out
    assert main(["--out", str(out), "--baseline", str(baseline), "--update-baseline"]) == EXIT_MATCHED
    (out / "nfr" / "contract-strength.json").write_text('{"document": "contract-strength"}')
    assert main(["--out", str(out), "--baseline", str(baseline)]) == EXIT_ENVIRONMENT


def _with_floor_decisions(document, decision):
    """``document`` with a defect floor of 0.8 decided ``decision`` (``meets`` or ``does-not-meet``), or refused (None)."""
    from evalquality_core.artifacts.contract_strength import FloorDecision

    if decision is None:
        return document.model_copy(update={"floor_decisions": None, "aggregate_refusal": "strength-inputs-disagree"})
    basis = "rate-meets-floor" if decision == "meets" else "rate-below-floor"
    undeclared = FloorDecision(floor=None, decision="undeclared", basis="no-floor-declared")
    decisions = {"defect": FloorDecision(floor=0.8, decision=decision, basis=basis), "gameability": undeclared,
                 "zero-action": undeclared}
    return document.model_copy(update={"floors": {"defect": 0.8}, "floor_decisions": decisions})


@pytest.mark.parametrize(
    ("was", "now", "line"),
    [
        ("meets", "does-not-meet", "defect floor decision moved meets (rate-meets-floor) -> does-not-meet (rate-below-floor)"),
        ("does-not-meet", "meets", "defect floor decision moved does-not-meet (rate-below-floor) -> meets (rate-meets-floor)"),
        ("meets", None, "defect floor decision moved meets (rate-meets-floor) -> refused"),
    ],
)
def test_a_moved_floor_decision_exits_1_and_names_the_suite_and_class(conformance, was, now, line):
    documents = tea_documents(conformance)
    recorded_documents = dict(documents, nfr=_with_floor_decisions(documents["nfr"], was))
    recorded = {name: project_suite(document) for name, document in recorded_documents.items()}
    same = compare_with_baseline(recorded_documents, recorded)
    assert same.exit_code == EXIT_MATCHED, same.lines()
    moved = compare_with_baseline(dict(documents, nfr=_with_floor_decisions(documents["nfr"], now)), recorded)
    assert moved.exit_code == EXIT_MEASURED_MOVE
    assert f"nfr: {line}" in moved.lines()


def test_a_moved_suite_wide_preflight_is_an_environment_move(conformance):
    documents = tea_documents(conformance)
    recorded = {name: project_suite(document) for name, document in documents.items()}
    failed = documents["nfr"].model_copy(update={"preflight": "failed: seeded-faults-scoped"})
    result = compare_with_baseline(dict(documents, nfr=failed), recorded)
    assert result.exit_code == EXIT_ENVIRONMENT
    assert "nfr: suite-wide pre-flight moved passed -> failed: seeded-faults-scoped" in result.lines()
